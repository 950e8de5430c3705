"""The comment command grammar.

- In: the body of a PR comment (anyone on the internet wrote it).
- Out: a `Command`, `None` for an ordinary comment (no API call is made for it), or a
  `GrammarError` for a body that mentions a command but is not exactly one.
- Refused: as a `GrammarError` (the gateway replies with its message): a body that starts like
  a command but is not exactly one of the accepted forms, a SHA prefix out of form, a path of
  unsafe segments.
- Accepted, as the whole trimmed body: `/run-ci-<name>`, `/bypass-fastfail`,
  `/clear-labels`, `/rerun-failed-ci`, `/ok-to-test <sha>` with `<sha>` 16 to 40 lower-case
  hex digits (a prefix of the head being approved; a shorter one could be matched by a commit
  crafted for it and pushed after the review), `/rerun-test <path> [<target>]` with `<path>` a repo-relative
  `DIR/.../NAME.py` path of safe segments (the checkout's discovery configuration then
  decides whether it is a test file) and `<target>` an optional backend, stage name or stage
  key `NAME@BACKEND` (which registration to rerun when the file has several). Nothing is normalised: a look-alike slash
  (U+2215, U+FF0F, ...) is not a slash, and a second line is a second command.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ci_policy.errors import CiPolicyError
from ci_policy.plan.filerun import MAX_TEST_PATH, TEST_PATH_RE
from ci_policy.read.names import CI_LABEL_PREFIX, NAME

# A backend or stage name, as the configuration spells them, or a stage key `NAME@BACKEND`, `KEY+VARIANT` (a
# name several backends configure; no mention: GitHub mentions only an `@` that starts a word);
# anything else after the path makes the comment "not exactly one command".
TARGET = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}(?:@[a-z][a-z0-9_]{0,39})?(?:\+[A-Za-z0-9][A-Za-z0-9_.-]{0,99})?"
COMMAND_RE = re.compile(
    rf"/(?:(?P<label>{CI_LABEL_PREFIX}{NAME})|(?P<simple>bypass-fastfail|clear-labels|rerun-failed-ci)"
    rf"|rerun-test (?P<path>\S+)(?: (?P<target>{TARGET}))?|ok-to-test (?P<sha>\S+))")
MARKERS = ("/run-ci-", "/bypass-fastfail", "/clear-labels", "/rerun-failed-ci", "/rerun-test", "/ok-to-test")
# At least 16 hex digits (64 bits): GitHub's 7-digit short SHA is 28 bits, which a commit
# crafted to share it reaches in seconds; the gateway reads the head when it runs, after
# the comment, so a fork author could push such a commit in between and have it approved.
MIN_SHA_PREFIX = 16
SHA_PREFIX_RE = re.compile(rf"[0-9a-f]{{{MIN_SHA_PREFIX},40}}")

USAGE = ("Accepted commands (the whole comment, one command): `/run-ci-<label>`, `/bypass-fastfail`, "
         "`/clear-labels`, `/rerun-failed-ci`, `/rerun-test <dir>/.../<test file>.py [backend or stage]`, "
         "`/ok-to-test <head sha>`.")


@dataclass(frozen=True)
class Command:
    kind: str  # add_label | bypass_fastfail | clear_labels | rerun_failed_ci | rerun_test | ok_to_test
    argument: str | None = None
    target: str | None = None  # rerun_test: the backend or stage named after the path

    def __str__(self) -> str:
        rerun = f"/rerun-test {self.argument}" + (f" {self.target}" if self.target else "")
        return {"add_label": f"/{self.argument}", "rerun_test": rerun,
                "ok_to_test": f"/ok-to-test {self.argument}"}.get(
            self.kind, "/" + self.kind.replace("_", "-"))


class GrammarError(CiPolicyError, ValueError):
    pass


def parse(body: str) -> Command | None:
    text = body.strip(" \t\r\n")
    if not any(marker in text for marker in MARKERS):
        return None
    m = COMMAND_RE.fullmatch(text)
    if not m:
        raise GrammarError(f"this comment is not exactly one command. {USAGE}")
    if m.group("label"):
        return Command("add_label", m.group("label"))
    if m.group("simple"):
        return Command(m.group("simple").replace("-", "_"))
    if m.group("sha") is not None:
        sha = m.group("sha")
        if not SHA_PREFIX_RE.fullmatch(sha):
            raise GrammarError(f"`{_shown(sha)}` is not a commit SHA prefix ({MIN_SHA_PREFIX} to 40 lower-case hex "
                               f"digits; the full SHA of the head you reviewed). {USAGE}")
        return Command("ok_to_test", sha)
    path = m.group("path")
    if len(path) > MAX_TEST_PATH or not TEST_PATH_RE.fullmatch(path):
        raise GrammarError(f"`{_shown(path)}` is not a repo-relative test file path of safe segments "
                           f"(letters, digits, '_', '.', '-'; no '..') ending in .py. {USAGE}")
    return Command("rerun_test", path, m.group("target"))


def _shown(text: str) -> str:
    """Echo untrusted text without Markdown, mentions or links: unsafe characters become '?'."""
    return re.sub(r"[^A-Za-z0-9_./-]", "?", text[:120])
