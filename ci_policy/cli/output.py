"""What every command writes alike: a warning, a file GitHub Actions names, the job summary, the
invalid test files a partial output left out.

- In: the command's name and format, the text to write.
- Out: a warning in the command's format; a line appended to `$GITHUB_OUTPUT` or
  `$GITHUB_STEP_SUMMARY`, and the delimiter of a `$GITHUB_OUTPUT` block (`output_delimiter`);
  the invalid test files on stderr and the command's exit code.
- Refused: a variable GitHub Actions sets that is not set, or a file it names that cannot be
  written, as `UsageError` (exit 2) naming the variable.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ci_policy.errors import UsageError
from ci_policy.render.console import write_commands
from ci_policy.render.escape import escape_data, one_line
from ci_policy.render.text import invalid_text


def github_file(name: str) -> Path:
    """A file GitHub Actions names in the environment ($GITHUB_OUTPUT, $GITHUB_STEP_SUMMARY)."""
    value = os.environ.get(name)
    if not value:
        raise UsageError("is not set; --format github runs inside a GitHub Actions step", source=f"${name}",
                         hint="use --format text or json outside GitHub Actions")
    return Path(value)


def output_delimiter() -> str:
    """A `$GITHUB_OUTPUT` block's delimiter, `ghadelimiter_<uuid4>` as GitHub's toolkit makes
    one: random, so no value can end its block early. The UUID's text is made here from 16
    random bytes with its version and variant bits set, as `uuid.uuid4()` makes it, without
    importing `uuid` (which imports `platform`: 2 ms of the plan job's start;
    tests/cli/test_startup.py::test_a_plan_imports_no_module_of_running_it)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
    h = raw.hex()
    return f"ghadelimiter_{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def append_github_file(name: str, path: Path, text: str) -> None:
    """Append `text` to a file GitHub Actions named in `$name`; a failure is a usage error
    naming the variable and the path (not a checkout that could not be read)."""
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}", source=f"${name}",
                         hint=f"${name} must name a writable file (GitHub Actions sets it for each step)") from None


def append_step_summary(command: str, markdown: str) -> None:
    """`--format github`'s job summary: appended to `$GITHUB_STEP_SUMMARY` when it is set.

    Every subcommand with a job summary (plan, run, gate, result) writes it here, once per
    command. Unset (outside Actions), nothing is written and one notice line on stderr
    says so; the exit code is the command's own.
    """
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        print(f"ci-policy {command}: notice: $GITHUB_STEP_SUMMARY is not set; the job summary is not written",
              file=sys.stderr)
        return
    if markdown:
        append_github_file("GITHUB_STEP_SUMMARY", Path(summary), markdown)


def warn(command: str, fmt: str | None, message: str) -> None:
    """A warning, printed once in the command's format: an `::warning::` annotation (github
    format, on stdout, nothing else), else `ci-policy COMMAND: warning: MESSAGE` on stderr
    (text; json documents carry their own warnings, and stdout stays the document)."""
    if fmt == "github":
        write_commands(f"::warning::{escape_data(f'ci-policy {command}: {message}')}")
    else:
        print(f"ci-policy {command}: warning: {one_line(message)}", file=sys.stderr)


def report_incomplete(command: str, invalid: Sequence[Any], *, section: bool = True) -> int:
    """After a command printed everything it could: the invalid test files on stderr, and its exit code.

    1 when a test file is invalid (the output is partial), else 0. `section=False` when the
    command's own output already holds the invalid files' diagnostics.
    """
    if not invalid:
        return 0
    if section:
        print(invalid_text(invalid), file=sys.stderr)
    whole = [f.file for f in invalid if not getattr(f, "kept", ())]
    partly = [f.file for f in invalid if getattr(f, "kept", ())]
    parts = []
    if whole:
        parts.append(f"{len(whole)} invalid test file(s) left out: " + ", ".join(whole))
    if partly:
        parts.append(f"{len(partly)} test file(s) partly read (their invalid registrations left out): "
                     + ", ".join(partly))
    print(f"ci-policy {command}: incomplete: " + one_line("; ".join(parts)), file=sys.stderr)
    return 1
