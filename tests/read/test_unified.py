"""The API's unified diff to name-status bytes (ci_policy/read/unified.py)."""

from __future__ import annotations

import pytest

from ci_policy.errors import InputError
from ci_policy.read.diff import parse_name_status
from ci_policy.read.unified import name_status_from_unified


def block(header: str, *lines: str, hunk: bool = True) -> str:
    body = ["--- a/x", "+++ b/x", "@@ -1 +1 @@", "-diff --git a/evil b/evil", "+new file mode 100644"] if hunk else []
    return "\n".join([f"diff --git {header}", *lines, *body]) + "\n"


def test_every_kind_of_change():
    text = "".join([
        block("a/docs/guide.md b/docs/guide.md", "index 1..2 100644"),
        block("a/tests/e2e/test_new.py b/tests/e2e/test_new.py", "new file mode 100644", "index 0..3"),
        block("a/old.py b/old.py", "deleted file mode 100644", "index 3..0"),
        block("a/src/a.py b/src/b c.py", "similarity index 90%", "rename from src/a.py", "rename to src/b c.py"),
        block("a/src/d.py b/src/e.py", "similarity index 100%", "copy from src/d.py", "copy to src/e.py", hunk=False),
        block("a/model.bin b/model.bin", "index 4..5 100644", "Binary files a/model.bin and b/model.bin differ",
              hunk=False),
        block("a/run.sh b/run.sh", "old mode 100644", "new mode 100755", hunk=False),
        block("a/a b/a b b/a b/a b", "index 1..2 100644"),  # the path "a b/a b" (spaces), no rename
    ])
    data = name_status_from_unified(text)
    assert data == (b"M\0docs/guide.md\0A\0tests/e2e/test_new.py\0D\0old.py\0R090\0src/a.py\0src/b c.py\0"
                    b"C100\0src/d.py\0src/e.py\0M\0model.bin\0M\0run.sh\0M\0a b/a b\0")
    assert [c.paths for c in parse_name_status(data)][3] == ("src/a.py", "src/b c.py")


def test_quoted_paths_are_unquoted_as_git_quotes_them():
    text = (block('"a/tests/t\\303\\244st.py" "b/tests/t\\303\\244st.py"', "new file mode 100644")
            + block('a/x.py "b/y\\tz.py"', "rename from x.py", 'rename to "y\\tz.py"'))
    assert name_status_from_unified(text) == "A\0tests/täst.py\0R100\0x.py\0y\tz.py\0".encode()


@pytest.mark.parametrize("text, message", [
    ("", "diff: the diff names no changed file"),
    ("not a diff at all\n", "diff: the diff names no changed file"),
    ("diff --git a/x b/y\n--- a/x\n", "diff: cannot read the path of diff --git 'a/x b/y'"),
    ('diff --git "a/x\\q" "b/x"\n', "diff: unknown escape \\q in a quoted path"),
    ("diff --git a/../etc/passwd b/../etc/passwd\n", "diff: invalid path '../etc/passwd' in record 1"),
    ("diff --git a/x b/y\nrename from x\n", "diff: a R record without both paths"),
    # A closing quote without an opening one (found by fuzzing: it raised ValueError).
    ('diff --git b/x.py"\n', "diff: cannot read the path of diff --git 'b/x.py\"'"),
])
def test_what_cannot_be_read_is_refused(text, message):
    with pytest.raises(InputError) as info:
        name_status_from_unified(text)
    assert info.value.message == message
