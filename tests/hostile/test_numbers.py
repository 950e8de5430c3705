"""Hostile corpus, numbers and smaller findings (issue 14, findings 5 and 10).

- Data: `tests/hostile/numbers/`: configurations (`config-*.yml`), test files
  (`est_*.py.txt`), an estimates file, and a labels file; each names the finding it proves
  in its first line.
- Each case builds a checkout from them in a temporary directory and runs the command in
  process, asserting its exact exit code, stdout and stderr: a located error (file, line,
  column, code, the range in the hint), never a traceback.
- Property: any float or int literal written as an est_time either registers within
  [0, 604800] or is a located CP223 error, never an exception.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import run_cli as run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_policy.adapters.github.access import pin_pattern_problem
from ci_policy.adapters.github.grammar import Command, parse
from ci_policy.config.top import parse_config
from ci_policy.model.registry import registrations_of
from ci_policy.read.labels import LabelRegistry
from ci_policy.read.markers import scan

DATA = Path(__file__).resolve().parent / "numbers"
LINT_FAILED = "ci-policy lint: FAILED: {} error{}, 0 warnings\n"


def checkout(root: Path, *, config: str = "config-ok.yml", test: str = "est_7_days.py.txt",
             estimates: str | None = None) -> Path:
    (root / ".github").mkdir(parents=True)
    (root / "tests").mkdir()
    text = (DATA / config).read_text(encoding="utf-8")
    if estimates is not None:
        text += "estimates_file: ci/estimates.json\n"
        (root / "ci").mkdir()
        shutil.copy(DATA / estimates, root / "ci" / "estimates.json")
    (root / ".github" / "ci-policy.yml").write_text(text, encoding="utf-8")
    shutil.copy(DATA / "labels.py.txt", root / "labels.py")
    shutil.copy(DATA / test, root / "tests" / "test_x.py")
    return root


CFG = ".github/ci-policy.yml"


@pytest.mark.parametrize("config, lines", [
    # finding 5: a 400-digit integer in a numeric config field is refused before it is converted
    ("config-partitions-400-digits.yml",
     [f"{CFG}:10:61: CP105 config-invalid-value: stages[1].partitions: expected a number in [1, 10000], got a "
      "scalar of 400 characters", "    hint: the range is [1, 10000]"]),
    # finding 5: 1e300 seconds is no timeout
    ("config-timeout-1e300.yml",
     [f"{CFG}:10:82: CP105 config-invalid-value: stages[1].timeout_per_file: must be at most 604800, got 1.0e+300",
      "    hint: the range is (0, 604800]"]),
    ("config-timeout-nan.yml",
     [f"{CFG}:10:82: CP105 config-invalid-value: stages[1].timeout_per_file: expected a finite number, got '.nan'"]),
    ("config-timeout-inf.yml",
     [f"{CFG}:10:82: CP105 config-invalid-value: stages[1].timeout_per_file: expected a finite number, got '.inf'"]),
    ("config-implicit-est-1e308.yml",
     [f"{CFG}:7:62: CP105 config-invalid-value: discovery.implicit[0].est_time: must be at most 604800, got "
      "1.0e+308", "    hint: the range is [0, 604800]"]),
    # finding 5: a 5,000-digit requires exceeded Python's int conversion limit
    ("config-requires-5000-digits.yml",
     [f"{CFG}:3:11: CP105 config-invalid-value: requires: the version specifier has 5004 characters, more than 200",
      "    hint: write a PEP 440 specifier such as '>=0.1'"]),
    # finding 5: a stage without a name beside an implicit root was a TypeError
    ("config-nameless-stage.yml",
     [f"{CFG}:7:47: CP108 config-inconsistent: discovery.implicit[0].suite: 'cpu' is not a configured cpu stage "
      "(configured cpu stages: none)",
      f"{CFG}:9:5: CP103 config-missing-key: stages[0].name: required key is missing"]),
])
def test_an_out_of_range_configuration_is_a_located_error(tmp_path, capsys, monkeypatch, config, lines):
    repo = checkout(tmp_path / "pr", config=config)
    monkeypatch.chdir(repo)
    errors = sum(1 for line in lines if not line.startswith("    hint"))
    assert run(["lint", "--repo", "."], capsys) == (
        1, "\n".join(lines) + "\n" + LINT_FAILED.format(errors, "s" if errors > 1 else ""), "")


EST_RANGE_HINT = "    hint: the range is [0, 604800]"


@pytest.mark.parametrize("test, lines", [
    # finding 5: est_time=1e308 crashed file-run (OverflowError) and printed Infinity in plan JSON
    ("est_1e308.py.txt", ["tests/test_x.py:6:18: CP223 est-time-invalid: register_cuda_ci: est_time must be at most "
                          "604800 seconds (7 days), got 1e+308", EST_RANGE_HINT]),
    # finding 5: est_time=1e300 dispatched an unbounded timeout
    ("est_1e300.py.txt", ["tests/test_x.py:6:18: CP223 est-time-invalid: register_cuda_ci: est_time must be at most "
                          "604800 seconds (7 days), got 1e+300", EST_RANGE_HINT]),
    ("est_inf.py.txt", ["tests/test_x.py:6:18: CP223 est-time-invalid: register_cuda_ci: est_time must be a finite "
                        "non-negative number of seconds, got inf", "    hint: write e.g. est_time=300"]),
    ("est_400_digits.py.txt", ["tests/test_x.py:6:18: CP223 est-time-invalid: register_cuda_ci: est_time must be a "
                               "finite non-negative number of seconds, got 99999999999999999999... (400 characters)",
                               "    hint: write e.g. est_time=300"]),
])
def test_an_out_of_range_est_time_is_refused_by_file_run_and_left_out_of_the_plan(tmp_path, capsys, test, lines):
    repo = checkout(tmp_path / "pr", test=test)
    assert run(["file-run", "--repo", str(repo), "--file", "tests/test_x.py"], capsys) == (
        1, "", "\n".join(lines) + "\nci-policy: 1 error\n")
    rc, out, err = run(["plan", "--repo", str(repo), "--event", "pull_request", "--labels-json", '["run-ci-gpu"]',
                        "--format", "json"], capsys)
    doc = json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} in JSON output"))
    assert (rc, err) == (1, "ci-policy plan: incomplete: 1 invalid test file(s) left out: tests/test_x.py\n")
    (invalid,) = doc["invalid"]
    assert [(d["code"], d["line"], d["col"]) for d in invalid["diagnostics"]] == [("CP223", 6, 18)]


def test_seven_days_is_valid_and_the_files_timeout_is_capped_by_its_stages(tmp_path, capsys):
    # finding 5: max(900, 3 * 604800) would be three weeks; the stage allows 3600 s per file.
    repo = checkout(tmp_path / "pr")
    rc, out, err = run(["file-run", "--repo", str(repo), "--file", "tests/test_x.py"], capsys)
    assert (rc, err, json.loads(out)["timeout_seconds"]) == (0, "", 3600)


def test_an_estimates_file_with_1e308_is_a_located_error(tmp_path, capsys):
    repo = checkout(tmp_path / "pr", estimates="estimates-1e308.json")
    assert run(["file-run", "--repo", str(repo), "--file", "tests/test_x.py"], capsys) == (
        1, "", "ci/estimates.json: CP422 estimates-entry-invalid: estimates[0].est_time must be at most 604800 "
        "seconds (7 days), got 1e+308\n" + EST_RANGE_HINT + "\nci-policy: 1 error\n")


# -- finding 10: the smaller ones ------------------------------------------------------------------

def test_a_diff_file_that_does_not_exist_is_a_usage_error(tmp_path, capsys):
    repo = checkout(tmp_path / "pr")
    assert run(["plan", "--repo", str(repo), "--event", "pull_request", "--diff", str(tmp_path / "none.diff")],
               capsys) == (2, "", f"ci-policy plan: error: --diff: {tmp_path / 'none.diff'} does not exist\n"
                                  "    hint: pass the file `git diff --name-status -z -M BASE HEAD` wrote, or omit "
                                  "--diff\n")


@pytest.mark.parametrize("pattern, problem", [
    ("a{9999999999}", "repetition count 9999999999 in '{9999999999}' is larger than 1000"),
    ("(a{1000}){1000}", None),
    ("[0-9]{1,7}", None),
    ("a{1," + "9" * 200 + "}", f"repetition count {'9' * 20} in '{{1,{'9' * 37}' is larger than 1000"),
    ("x" * 300, "the pattern has 300 characters, more than 256"),
])
def test_pin_patterns_are_bounded(pattern, problem):
    # finding 10: `a{9999999999}` overflowed `re`
    assert pin_pattern_problem(pattern) == problem


@pytest.mark.parametrize("body, command", [
    ("/rerun-test tests/e2e/test_rocm_fsdp_grpo.py rocm", Command("rerun_test", "tests/e2e/test_rocm_fsdp_grpo.py",
                                                                   "rocm")),
    ("/rerun-test tests/e2e/test_rocm_fsdp_grpo.py", Command("rerun_test", "tests/e2e/test_rocm_fsdp_grpo.py")),
])
def test_rerun_test_takes_an_optional_backend_or_stage(body, command):
    assert parse(body) == command


# -- property: any number literal as est_time --------------------------------------------------------

CONFIG = parse_config("version: 1\ndiscovery: {roots: [tests]}\nstages:\n  - {name: cpu, backend: cpu}\n",
                      "ci-policy.yml")
LITERALS = (st.integers(min_value=-(10**500), max_value=10**500).map(str)
            | st.floats(allow_nan=False).map(repr).filter(lambda text: text not in ("inf", "-inf"))
            | st.sampled_from(["1e308", "1e309", "1e999", "-1e999", "604800", "604800.0", "604800.000001",
                               "0x" + "f" * 200, "1_000_000", "0.0", "-0.0"]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(literal=LITERALS)
def test_any_est_time_literal_registers_in_range_or_is_a_located_error(literal):
    result = scan(f'register_cpu_ci({literal}, "cpu")\n', "tests/test_x.py")
    regs = registrations_of(result, CONFIG, LabelRegistry("labels.py", ()))
    if regs:
        (reg,) = regs
        assert 0 <= reg.est_time <= 604800
        assert result.errors == []
    else:
        (error,) = result.errors
        assert (error.code, error.path, error.line, error.col) == ("CP223", "tests/test_x.py", 1, 17)
