"""gitignore-style globs (`ci_policy.read.globs`): a match table, negation, the refused globs, properties."""

from __future__ import annotations

import fnmatch
import string

import pytest
from glob_reference import reference
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pathspec import GitIgnoreSpec

from ci_policy.read.globs import Glob, GlobError, any_name_match, compile_glob, deciding_glob, matches, matches_any

# (pattern, path, expected)
MATCH_TABLE = [
    # `**` crosses directories; `dir/**` is everything below `dir`, not `dir` itself
    ("docs/**", "docs/guide.md", True),
    ("docs/**", "docs/sub/deep/x.py", True),
    ("docs/**", "docs", False),
    ("docs/**", "docsx/guide.md", False),
    ("docs/**", "src/docs/guide.md", False),  # contains '/': anchored to the root
    ("**", "any/path/at/all.py", True),
    ("**/*.md", "README.md", True),  # `**/` also matches zero directories
    ("**/*.md", "docs/guide.md", True),
    ("**/*.md", "a/b/c/d.md", True),
    ("**/*.md", "README.mdx", False),
    ("**/*.md", "docs/md", False),
    ("**/tests", "pkg/tests/test_a.py", True),
    ("a/**/b", "a/b", True),
    ("a/**/b", "a/x/y/b", True),
    ("a/**/b", "a/xb", False),
    ("src/**/test_*.py", "src/x/y/test_a.py", True),
    ("src/**/test_*.py", "src/x/y/a_test.py", False),
    # `*` and `?` stay within one path segment
    ("src/*.py", "src/a.py", True),
    ("src/*.py", "src/sub/a.py", False),
    ("src/*.py", "other/src/a.py", False),
    ("a*b", "a/b", False),
    ("a?b", "a/b", False),
    ("?.py", "a.py", True),
    ("?.py", "ab.py", False),
    ("*.py", "a.py.bak", False),
    # a pattern without '/' matches at any depth
    ("*.md", "README.md", True),
    ("*.md", "docs/deep/x.md", True),
    ("*.md", "README.txt", False),
    ("setup.py", "pkg/setup.py", True),
    ("tests", "tests", True),
    ("tests", "src/tests", True),
    ("tests", "src/tests/test_a.py", True),  # everything inside a matched directory
    ("tests", "testsuite/a.py", False),
    ("*.md", "notes.md/inner.py", True),  # a directory named *.md: everything inside
    ("src*", "src/a.py", True),  # `*` matching nothing, then a directory's '/'
    ("src/a?*", "src/a/b.py", False),
    ("docs/*", "docs/a/b.md", True),
    # a leading '/' anchors to the root
    ("/setup.py", "setup.py", True),
    ("/setup.py", "pkg/setup.py", False),
    ("/src/", "lib/src/a.py", False),
    # a trailing '/' matches a directory and everything below it, not a file of that name
    ("docs/", "docs/guide.md", True),
    ("docs/", "src/docs/guide.md", True),
    ("docs/", "docs", False),
    ("src/", "lib/src/a.py", True),
    # character classes, negated with '!' or '^'; never matching '/'
    ("test_[0-9].py", "tests/test_3.py", True),
    ("test_[0-9].py", "test_x.py", False),
    ("test_[!0-9].py", "test_x.py", True),
    ("test_[!0-9].py", "test_3.py", False),
    ("test_[^0-9].py", "test_x.py", True),
    ("test_[^0-9].py", "test_3.py", False),
    ("[]a].txt", "].txt", True),  # ']' first in a class is a member
    ("[]a].txt", "a.txt", True),
    ("[]a].txt", "b.txt", False),
    ("[!]a].txt", "b.txt", True),
    ("[!]a].txt", "].txt", False),
    ("a[+-0]b", "a.b", True),
    ("a[+-0]b", "a/b", False),  # the range +-0 contains '/', which a class never matches
    ("a[!x]b", "a/b", False),
    ("[a&&b]", "&", True),  # no regex set operations inside a class
    ("[a&&b]", "c", False),
    # everything else is literal
    ("a.b", "axb", False),
    ("a+b(c)|d", "a+b(c)|d", True),
    ("a+b(c)|d", "aab(c)", False),
    ("minirl/backends/megatron.py", "minirl/backends/megatron.py", True),
    ("minirl/backends/megatron.py", "minirl/backends/megatron.pyc", False),
    ("minirl/backends/megatron.py", "x/minirl/backends/megatron.py", False),
    ("ünï/*.md", "ünï/x.md", True),
    ("ünï/*.md", "uni/x.md", False),
]


@pytest.mark.parametrize("pattern, path, expected", MATCH_TABLE,
                         ids=[f"{p}|{q}" for p, q, _ in MATCH_TABLE])
def test_match_table(pattern, path, expected):
    assert matches(pattern, path) is expected


def test_match_table_has_both_outcomes_and_forty_rows():
    assert len(MATCH_TABLE) >= 40
    assert {expected for _, _, expected in MATCH_TABLE} == {True, False}


INVALID = [
    ("", "invalid glob '': empty or surrounded by whitespace"),
    (" docs/**", "invalid glob ' docs/**': empty or surrounded by whitespace"),
    ("docs/** ", "invalid glob 'docs/** ': empty or surrounded by whitespace"),
    ("a\\b", "invalid glob 'a\\\\b': backslashes are not supported"),
    ("/", "invalid glob '/': matches nothing"),
    ("//", "invalid glob '//': matches nothing"),
    ("a**b", "invalid glob 'a**b': '**' must be a whole path segment"),
    ("docs/**.md", "invalid glob 'docs/**.md': '**' must be a whole path segment"),
    ("[abc", "invalid glob '[abc': unclosed '['"),
    ("[]", "invalid glob '[]': unclosed '['"),
    ("[!]", "invalid glob '[!]': unclosed '['"),
    ("a[/]b", "invalid glob 'a[/]b': unclosed '['"),
    ("[z-a]", "invalid glob '[z-a]': bad character range z-a"),
    ("!", "invalid glob '!': matches nothing"),
    ("!/", "invalid glob '!/': matches nothing"),
    ("#notes.md", "invalid glob '#notes.md': a leading '#' makes a comment in gitignore, which matches nothing; "
                  "write [#] for the character"),
    ("!a**", "invalid glob '!a**': '**' must be a whole path segment"),
    ("\\!a\\b", "invalid glob '\\\\!a\\\\b': backslashes are not supported"),
    ("a/\\!b", "invalid glob 'a/\\\\!b': backslashes are not supported"),
]


@pytest.mark.parametrize("pattern, message", INVALID, ids=[repr(p) for p, _ in INVALID])
def test_invalid_globs(pattern, message):
    with pytest.raises(GlobError) as info:
        compile_glob(pattern)
    assert str(info.value) == message


def test_compile_returns_the_same_glob_for_the_same_pattern():
    assert compile_glob("docs/**") is compile_glob("docs/**")
    assert isinstance(compile_glob("docs/**"), Glob)
    assert (compile_glob("docs/**").include, compile_glob("!docs/**").include) == (True, False)


GLOB_CHARS = "*?[]!^-/.az0+&"


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(), st.text(alphabet=GLOB_CHARS, max_size=12)), st.text(max_size=20))
def test_compile_raises_nothing_but_glob_error(pattern, path):
    try:
        glob = compile_glob(pattern)
    except GlobError as exc:
        assert str(exc).startswith(f"invalid glob {pattern!r}: ")
        return
    assert isinstance(glob, Glob)
    # A compiled glob matches any text without raising.
    assert isinstance(matches(pattern, path), bool)


SEGMENT = st.text(alphabet=string.ascii_letters + string.digits + "_.-", min_size=1, max_size=8).filter(
    lambda s: s not in (".", ".."))
PATHS = st.lists(SEGMENT, min_size=1, max_size=4).map("/".join)


@given(PATHS)
def test_a_literal_path_matches_itself_anywhere_under_double_star(path):
    assert matches(path, path)
    assert matches("/" + path, path)
    assert matches("**/" + path, "x/y/" + path)
    assert matches(path + "/", path + "/inner")
    assert not matches(path + "/", path)


@given(PATHS, SEGMENT)
def test_star_never_crosses_a_directory(directory, name):
    assert matches(f"{directory}/*", f"{directory}/{name}")
    assert matches(f"{directory}/*/leaf", f"{directory}/{name}/leaf")
    assert not matches(f"{directory}/*/leaf", f"{directory}/{name}/{name}/leaf")
    assert matches(f"{directory}/**/leaf", f"{directory}/{name}/{name}/leaf")
    assert matches(f"{directory}/?", f"{directory}/{name}") is (len(name) == 1)


# -- lists of globs: gitignore's negation, the last match wins ------------------------------

# (globs, path, the deciding glob or None)
LIST_TABLE = [
    (("docs/**", "!docs/api/**"), "docs/guide.md", "docs/**"),
    (("docs/**", "!docs/api/**"), "docs/api/x.md", None),
    (("docs/**", "!docs/api/**", "docs/api/index.md"), "docs/api/index.md", "docs/api/index.md"),
    (("!docs/api/**", "docs/**"), "docs/api/x.md", "docs/**"),  # the last match wins, not the negation
    (("*.md", "!README.md"), "pkg/README.md", None),
    (("*.md", "!/README.md"), "pkg/README.md", "*.md"),  # the negation is anchored to the root
    (("*.md", "!/README.md"), "README.md", None),
    (("!docs/**",), "docs/a.md", None),  # a lone negation matches nothing
    (("a/", "b/"), "b/c.py", "b/"),
    ((), "anything", None),
    (("src/**", "!*.md", "!*.txt"), "src/a.py", "src/**"),
    (("src/**", "!*.md", "!*.txt"), "src/a.txt", None),
    # gitignore's escapes: a name that starts with '!' or '#'
    (("\\!important/",), "!important/a.py", "\\!important/"),
    (("\\!important/",), "important/a.py", None),
    (("\\#notes.md",), "docs/#notes.md", "\\#notes.md"),
    (("\\!",), "a/!", "\\!"),
    # a glob matching the path itself outranks one matching only a directory above it
    (("*.md", "!docs/"), "docs/a.md", "*.md"),
    (("docs/", "!*.md"), "docs/a.md", None),
    (("!docs/a.md", "docs/"), "docs/a.md", None),
]


@pytest.mark.parametrize("globs, path, decided", LIST_TABLE, ids=[f"{g}|{p}" for g, p, _ in LIST_TABLE])
def test_a_list_of_globs_reads_like_a_gitignore(globs, path, decided):
    assert deciding_glob(globs, path) == decided
    assert matches_any(globs, path) is (decided is not None)
    assert matches_any(list(globs), path) is (decided is not None)


def test_a_negation_alone_matches_nothing():
    assert not matches("!docs/**", "docs/a.md")
    assert not matches("!docs/**", "src/a.py")


# -- agreement with pathspec ------------------------------------------------------------------

NO_CLASS_CHARS = "*?!/.az"
LIST_GLOB = st.text(alphabet=NO_CLASS_CHARS, min_size=1, max_size=8)
PATH_SEGMENT = st.sampled_from(["a", "z", "az", "a.z", "za", "!a", ".a", "aa.z"])
PATH = st.lists(PATH_SEGMENT, min_size=1, max_size=4).map("/".join)


def valid(glob: str) -> bool:
    try:
        compile_glob(glob)
    except GlobError:
        return False
    return True


@settings(max_examples=800, deadline=None)
@given(st.lists(LIST_GLOB.filter(valid), min_size=1, max_size=4), PATH)
def test_the_matcher_is_pathspecs_gitignore_spec(globs, path):
    """Every glob ci-policy accepts means what pathspec's `GitIgnoreSpec` says, lists included.

    Character classes are left out here: they are the one deliberate difference (below).
    """
    assert matches_any(globs, path) is GitIgnoreSpec.from_lines(globs).match_file(path)


CLASS_GLOB = st.text(alphabet="[]!^-+0az*/", min_size=1, max_size=8)


@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")  # pathspec's own regex of "[[]"
@pytest.mark.filterwarnings("ignore:Possible set difference:FutureWarning")  # ... and of "[--]"
@settings(max_examples=800, deadline=None)
@given(CLASS_GLOB.filter(valid), st.text(alphabet="+-./0az", min_size=1, max_size=8))
def test_a_class_differs_from_pathspec_only_by_never_matching_a_slash(glob, path):
    ours = matches(glob, path)
    theirs = GitIgnoreSpec.from_lines([glob]).match_file(path)
    if ours is not theirs:
        assert theirs and not ours and "/" in path and "[" in glob
    # Without a '/' for a class to take, both always agree.
    flat = path.replace("/", ".")
    assert matches(glob, flat) is GitIgnoreSpec.from_lines([glob]).match_file(flat)


_NAME_GLOBS = st.sampled_from(["*", "GITHUB_*", "*_TOKEN", "A?C", "[AB]*", "[!A]*", "[[]x]", "x]", "*.py", "te[st"])
_NAMES = st.text(alphabet="ABCGHIT_xy.[]!\n-", max_size=10)


@given(patterns=st.lists(_NAME_GLOBS, max_size=4).map(tuple), names=st.lists(_NAMES, max_size=10))
@example(patterns=(), names=["", "A"])
@example(patterns=("*_TOKEN", "GITHUB_*"), names=["GITHUB_X", "MY_TOKEN", "TOKEN", "A\nGITHUB_X"])
def test_any_name_match_is_fnmatchcase_of_any_pattern(patterns, names):
    match = any_name_match(patterns)
    for name in names:
        assert match(name) == any(fnmatch.fnmatchcase(name, p) for p in patterns)


# -- the matcher is pathspec's, exactly: lists, directory marks, classes, odd paths ---------------


# Pieces of globs and of paths where gitignore's edge cases live: `**` chains, a directory's
# trailing '/', empty segments, a leading '/' or './', line feeds (Python's `.` and `$`).
GLOB_PIECE = st.sampled_from(["*", "**", "?", "/", "a", "b", ".", "[a-c]", "[!a]", "[^b]", "[]a]", "[+-0]", "-",
                              "!", "\\!", "\\#", "\n", "é"])
ANY_GLOB = st.lists(GLOB_PIECE, min_size=1, max_size=7).map("".join).filter(valid)
PATH_PIECE = st.sampled_from(["a", "b", "ab", "ba", "a.b", "/", "//", "\n", "!", "#", "-", ".", "c", "é", "+"])
ANY_PATH = st.tuples(st.sampled_from(["", "/", "./"]), st.lists(PATH_PIECE, min_size=1, max_size=8).map("".join),
                     st.sampled_from(["", "/"])).map("".join)


@settings(max_examples=1500, deadline=None)
@given(st.lists(ANY_GLOB, min_size=1, max_size=4), ANY_PATH)
@example(["a/", "!a/b"], "a/b")                 # a negation as a file outranks a directory match before it
@example(["a/b", "!a/"], "a/b")                 # ... and a directory's negation does not outrank a file match
@example(["a", "!a/**"], "a/a")                 # the directory mark of `a` (`a/a` is below a directory `a`)
@example(["**/"], "a/")
@example(["*/", "!*"], "a/b")
@example(["!a/a/a", "a"], "a/a/a")             # `(?:.+/)?` is greedy: `a` matches `a/a/a` as a file
@example(["!a/b/b/b", "a/**/b"], "a/b/b/b")     # `(?:/.+)?` is greedy too
@example(["a"], "a\n")                          # Python's `$` before a final LF
@example(["*"], "\n")                           # `.` does not match a LF
@example(["a/**/b"], "a/\n/b")
def test_the_deciding_glob_is_pathspecs(globs, path):
    assert deciding_glob(globs, path) == reference(globs, path)


@pytest.mark.parametrize("pattern", ["*a*a*a*a*b", "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", "**/*a*a*a*b/**/x",
                                     "a*/**/**/**/*a*a*b", "**/" * 20 + "*a*a*b", "[a-z]*[!b]*a?*a*b",
                                     "*/*/*/*a*a*a*b*"])
@pytest.mark.parametrize("path", ["a" * 255, "x/" + "a" * 255, "/".join(["a" * 255] * 4), "a" * 254 + "/",
                                  "aac/" * 60 + "a" * 255])
def test_matching_reads_each_character_once_without_backtracking(pattern, path):
    """issue 32, finding 3: `*a*a*a*a*b` against a 255-character segment took minutes with
    pathspec's regexes. The matcher holds one list of at most `len(program)` threads per
    position of the path and reads each character once: (n + 1) x m steps at most."""
    glob = compile_glob(pattern)
    sizes = glob.work(path)
    assert len(sizes) == len(path) + 1
    assert max(sizes) <= len(glob.program)
    assert glob.match(path) is None  # no 'b' where each of these needs one


def test_a_long_almost_matching_segment_is_answered_like_pathspec_answers_a_short_one():
    glob = "*a*a*a*a*b"
    for n in (5, 12, 255):
        assert matches(glob, "a" * n) is False
        assert matches(glob, "a" * n + "b") is True
        assert matches(glob, "x/" + "a" * n + "b/y") is True   # a directory named so: everything below it
    assert reference((glob,), "a" * 12) is None and reference((glob,), "a" * 12 + "b") == glob


def test_name_patterns_scan_a_long_name_once_per_star():
    """`any_name_match` (discovery patterns, env and stage-name patterns) is `fnmatch`'s: its
    translation makes every `*` but the last atomic (3.11's `(?>.*?x)`, 3.10's look-ahead and
    back-reference), so `*a*a*a*a*b` cannot backtrack into an earlier `*` on a long name."""
    regex = fnmatch.translate("*a*a*a*a*b")
    assert regex.count("(?>.*?a)") == 4 or regex.count("(?=(?P<g") == 4
    match = any_name_match(("*a*a*a*a*b", "*a*a*a*a*a*a*a*a*a*a*c"))
    assert not match("a" * 255) and match("a" * 254 + "b") and match("a" * 254 + "c")
