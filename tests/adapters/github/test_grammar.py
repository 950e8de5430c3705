"""The comment command grammar (ci_policy/adapters/github/grammar.py): one command, the whole body."""

from __future__ import annotations

import pytest

from ci_policy.adapters.github.grammar import USAGE, Command, GrammarError, parse

USAGE_TEXT = ("Accepted commands (the whole comment, one command): `/run-ci-<label>`, `/bypass-fastfail`, "
              "`/clear-labels`, `/rerun-failed-ci`, `/rerun-test <dir>/.../<test file>.py [backend or stage]`, "
         "`/ok-to-test <head sha>`.")
NOT_ONE = f"this comment is not exactly one command. {USAGE_TEXT}"


def bad_path(shown: str) -> str:
    return (f"`{shown}` is not a repo-relative test file path of safe segments (letters, digits, '_', '.', '-'; "
            f"no '..') ending in .py. {USAGE_TEXT}")


def test_usage_text_names_every_accepted_form():
    assert USAGE == USAGE_TEXT


@pytest.mark.parametrize("body, command", [
    ("/run-ci-megatron", Command("add_label", "run-ci-megatron")),
    ("/run-ci-a.b_c-9", Command("add_label", "run-ci-a.b_c-9")),
    ("/run-ci-X", Command("add_label", "run-ci-X")),
    ("/run-ci-megatron.", Command("add_label", "run-ci-megatron.")),  # a label name; the policy decides
    ("  /run-ci-fsdp \r\n", Command("add_label", "run-ci-fsdp")),
    ("\n\t/bypass-fastfail\n\n", Command("bypass_fastfail")),
    ("/clear-labels", Command("clear_labels")),
    ("/rerun-failed-ci", Command("rerun_failed_ci")),
    ("/rerun-test tests/e2e/test_fsdp_grpo.py", Command("rerun_test", "tests/e2e/test_fsdp_grpo.py")),
    ("/rerun-test tests/test_top.py", Command("rerun_test", "tests/test_top.py")),
    ("/rerun-test tests/e2e/session_server/test_session_multiturn.py",
     Command("rerun_test", "tests/e2e/session_server/test_session_multiturn.py")),
    ("/rerun-test tests/_a/0b/c.d-e/test_x.y-z_.py", Command("rerun_test", "tests/_a/0b/c.d-e/test_x.y-z_.py")),
    ("/rerun-test tests/e2e/test_.py", Command("rerun_test", "tests/e2e/test_.py")),
    (" /rerun-test tests/e2e/test_a.py\t\r\n", Command("rerun_test", "tests/e2e/test_a.py")),
    # Any layout: the checkout's discovery configuration decides what is a test file.
    ("/rerun-test test/registered/core/test_srt_engine.py",
     Command("rerun_test", "test/registered/core/test_srt_engine.py")),
    ("/rerun-test python/pkg/jit_kernel/benchmark/bench_rmsnorm.py",
     Command("rerun_test", "python/pkg/jit_kernel/benchmark/bench_rmsnorm.py")),
    ("/rerun-test src/test_x.py", Command("rerun_test", "src/test_x.py")),
    ("/rerun-test test_top.py", Command("rerun_test", "test_top.py")),
    # finding 10: an optional backend or stage names the registration to rerun
    ("/rerun-test tests/e2e/test_rocm_fsdp_grpo.py rocm",
     Command("rerun_test", "tests/e2e/test_rocm_fsdp_grpo.py", "rocm")),
    ("/rerun-test tests/e2e/test_rocm_fsdp_grpo.py stage-c-4-gpu-mi350",
     Command("rerun_test", "tests/e2e/test_rocm_fsdp_grpo.py", "stage-c-4-gpu-mi350")),
    # the key of one backend's stage of a name several backends configure
    ("/rerun-test test/registered/test_large.py base-b-test-2-gpu-large@rocm",
     Command("rerun_test", "test/registered/test_large.py", "base-b-test-2-gpu-large@rocm")),
])
def test_exactly_one_command_is_parsed(body, command):
    assert parse(body) == command


@pytest.mark.parametrize("body", [
    "",
    "   \n",
    "LGTM, thanks!",
    "run-ci-megatron",                       # no slash
    "please rerun the tests",
    "/run-cimegatron",                       # not the marker /run-ci-
    "/rerun",
    "/Run-CI-megatron",                      # commands are case-sensitive
    "/CLEAR-LABELS",
    "\u2215run-ci-megatron",                 # DIVISION SLASH is not a slash
    "\uff0frun-ci-megatron",                 # FULLWIDTH SOLIDUS is not a slash
    "\u2215rerun-test tests/e2e/test_fsdp_grpo.py",
    "\uff0frerun-test tests/e2e/test_fsdp_grpo.py",
    "\uff0fclear-labels",
    "\u2044bypass-fastfail",                 # FRACTION SLASH
    "see https://example.com/docs/run",
])
def test_ordinary_comments_are_not_commands(body):
    assert parse(body) is None


@pytest.mark.parametrize("body", [
    "/run-ci-megatron /run-ci-fsdp",
    "/run-ci-megatron\n/run-ci-fsdp",
    "/clear-labels\n/run-ci-megatron",
    "please /run-ci-megatron",
    "/run-ci-megatron please",
    "/clear-labels now",
    "/bypass-fastfail!",
    "/rerun-failed-ci /rerun-failed-ci",
    "/run-ci-",                              # no label name
    "/run-ci--x",                            # a label name starts with a letter or digit
    "/run-ci-meg atron",
    "/run-ci-megatron`",
    "/run-ci-megatron\u00a0",               # no-break space is not trimmed
    "/bypass-fastfail\u200b",               # nor is a zero-width space
    "/rerun-test",                           # no path
    "/rerun-test ",
    "/rerun-test  tests/e2e/test_a.py",      # two spaces
    "/rerun-test\ttests/e2e/test_a.py",
    "/rerun-test\ntests/e2e/test_a.py",
    "/rerun-test tests/e2e/test_a.py tests/e2e/test_b.py",
    "/rerun-test tests/e2e/test_a.py @rocm",               # a mention, not a stage key
    "/rerun-test tests/e2e/test_a.py large@@rocm",
    "/rerun-test tests/e2e/test_a.py large@ROCm",
    "/rerun-test tests/e2e/test_a.py\n/run-ci-megatron",   # newline injection: a second command
    "/rerun-test tests/e2e/test_a.py\nrm -rf /",
    "/rerun-test tests/e2e/test_a.py\r\n/clear-labels",
    "/rerun-test tests/e2e/$(id) /test_a.py",
    "> /run-ci-megatron",                    # a quoted command
    "`/clear-labels`",
    "https://example.com/run-ci-logs",
    "\u2215run-ci-megatron\n/clear-labels",  # one real command after a look-alike line
])
def test_a_body_with_a_marker_that_is_not_exactly_one_command_is_refused(body):
    with pytest.raises(GrammarError) as info:
        parse(body)
    assert str(info.value) == NOT_ONE


@pytest.mark.parametrize("path, shown", [
    ("tests/../etc/test_passwd.py", "tests/../etc/test_passwd.py"),
    ("tests/e2e/../../test_x.py", "tests/e2e/../../test_x.py"),
    ("tests/./test_x.py", "tests/./test_x.py"),
    ("tests/.hidden/test_x.py", "tests/.hidden/test_x.py"),
    ("tests//test_x.py", "tests//test_x.py"),
    ("/etc/test_x.py", "/etc/test_x.py"),
    ("/tests/e2e/test_x.py", "/tests/e2e/test_x.py"),
    ("../tests/test_x.py", "../tests/test_x.py"),
    (".github/test_x.py", ".github/test_x.py"),
    ("tests/e2e/.test_x.py", "tests/e2e/.test_x.py"),
    ("tests/e2e/test_x.pyc", "tests/e2e/test_x.pyc"),
    ("tests/e2e/test_x", "tests/e2e/test_x"),
    ("tests", "tests"),
    ("tests/e2e/$(id)/test_x.py", "tests/e2e/??id?/test_x.py"),
    ("tests/e2e/test_$(id).py", "tests/e2e/test_??id?.py"),
    ("tests/e2e/test_`id`.py", "tests/e2e/test_?id?.py"),
    ("tests/e2e/test_x.py;id", "tests/e2e/test_x.py?id"),
    ("tests/e2e/test_x.py&&curl", "tests/e2e/test_x.py??curl"),
    ("tests/e2e/test_x.py|sh", "tests/e2e/test_x.py?sh"),
    ("tests/e2e/test_x.py#frag", "tests/e2e/test_x.py?frag"),
    ("tests/e2e/${HOME}/test_x.py", "tests/e2e/??HOME?/test_x.py"),
    ("tests\\e2e\\test_x.py", "tests?e2e?test_x.py"),
    ("tests/e2e/test_\u00fcn\u00efcode.py", "tests/e2e/test_?n?code.py"),
    ("tests\u2215e2e\u2215test_x.py", "tests?e2e?test_x.py"),
    ("@acme/maintainers", "?acme/maintainers"),
    ("[x](https://evil.example)", "?x??https?//evil.example?"),
    ("tests/" + "a" * 200 + "/test_$.py", "tests/" + "a" * 114),   # echoed at most 120 characters
    ("tests/" + "a" * 242 + "/test_x.py", "tests/" + "a" * 114),   # 256 characters: longer than any checkout path
])
def test_rerun_test_paths_are_checked_and_echoed_without_unsafe_characters(path, shown):
    with pytest.raises(GrammarError) as info:
        parse(f"/rerun-test {path}")
    assert str(info.value) == bad_path(shown)


@pytest.mark.parametrize("command, text", [
    (Command("add_label", "run-ci-megatron"), "/run-ci-megatron"),
    (Command("bypass_fastfail"), "/bypass-fastfail"),
    (Command("clear_labels"), "/clear-labels"),
    (Command("rerun_failed_ci"), "/rerun-failed-ci"),
    (Command("rerun_test", "tests/e2e/test_a.py"), "/rerun-test tests/e2e/test_a.py"),
])
def test_a_command_prints_as_it_is_written(command, text):
    assert str(command) == text
    assert parse(text) == command


# -- /ok-to-test <sha prefix> ----------------------------------------------------------------------------------

@pytest.mark.parametrize("sha", ["1a2b3c4d5e6f7a8b", "1a2b3c4d5e6f7a8b9c0d",
                                 "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"])
def test_ok_to_test_takes_a_sha_prefix_of_16_to_40_hex_digits(sha):
    assert parse(f" /ok-to-test {sha}\r\n") == Command("ok_to_test", sha)
    assert str(Command("ok_to_test", sha)) == f"/ok-to-test {sha}"


@pytest.mark.parametrize("sha, shown", [
    ("1a2b3c", "1a2b3c"),                                          # 6 digits: too short to name a commit
    # GitHub's short SHA (7 digits) and up to 15: a commit crafted to share them could be
    # pushed between the review and the gateway's run, and be approved.
    ("1a2b3c4", "1a2b3c4"),
    ("1a2b3c4d5e6f", "1a2b3c4d5e6f"),
    ("1a2b3c4d5e6f7a8", "1a2b3c4d5e6f7a8"),
    ("1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b0", "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b0"),
    ("1A2B3C4D", "1A2B3C4D"),                                      # git prints lower case; so do we
    ("HEAD", "HEAD"),
    ("main", "main"),
    ("1a2b3c4;id", "1a2b3c4?id"),
])
def test_ok_to_test_refuses_anything_but_a_sha_prefix(sha, shown):
    with pytest.raises(GrammarError) as info:
        parse(f"/ok-to-test {sha}")
    assert str(info.value) == (f"`{shown}` is not a commit SHA prefix (16 to 40 lower-case hex digits; the full "
                               f"SHA of the head you reviewed). {USAGE_TEXT}")


@pytest.mark.parametrize("body", ["/ok-to-test", "/ok-to-test ", "/ok-to-test  1a2b3c4", "/ok-to-test 1a2b3c4 x"])
def test_ok_to_test_without_exactly_one_argument_is_not_one_command(body):
    with pytest.raises(GrammarError) as info:
        parse(body)
    assert str(info.value) == NOT_ONE
