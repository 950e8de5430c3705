"""`ci-policy gate` and the gates of `ci-policy run`, end to end, on SQLite and PostgreSQL.

Every test builds a small checkout with `make_repo` (a CUDA stage, a test file declaring
gates), writes metric records with `ci_policy.read.records.write_record` (or lets a real test
file record them through `MetricRecorder`), and runs `ci-policy` against a real store: a
SQLite file, or a fresh database on the throwaway PostgreSQL server of tests/pgserver.py.
`ci-policy run` and the calls with GitHub's variables run the installed console script in a
subprocess; the other `gate` calls run `main` in process (see `cli`). Faults are real (a killed server); the
store is read back with `open_store` to check exactly what was written.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from helpers import assert_golden, clean_env, console_script, in_process, root_warning

from ci_policy.adapters.store import DATABASE_URL_ENV, open_store
from ci_policy.read.records import read_record, write_record

CONFIG = """\
version: 1
discovery:
  roots: [tests]
  implicit:
    - {root: tests/unit, backend: cpu, suite: cpu, est_time: 1, cpu_only: true}
stages:
  - {name: cpu, backend: cpu}
  - {name: gpu-a, backend: cuda, runs_on: [h200], partitions: 2}
  - {name: gpu-b, backend: cuda, runs_on: [h200, 4gpu]}
"""

MAIN = '\nif __name__ == "__main__":\n    main()\n'

TRAIN = "tests/gpu/test_train.py"
SESSION = "tests/gpu/test_session.py"
STEPS = "tests/gpu/test_steps.py"
GRAD, KL, REWARD = "train/grad_norm", "train/ppo_kl", "rollout/raw_reward"
V1 = "rollout/tito_session_mismatch_rate/v1/assistant_text"
V2 = "rollout/tito_session_mismatch_rate/v2/assistant_text"

GRAD_CONSTRAINT = '{"rel_up": 0.5, "rel_down": 0.5}'
TRAIN_SOURCE = f"""\
from ci_policy import register_ci_gate, register_cuda_ci

register_cuda_ci(est_time=60, suite="gpu-a", labels=["megatron"])
register_ci_gate(metric_key="train/grad_norm", steps="last", constraint={GRAD_CONSTRAINT}, enforce=True)
register_ci_gate(metric_key="train/ppo_kl", steps="last")
register_ci_gate(metric_key="rollout/raw_reward", steps="last", enforce=True,
                 allowlist_reason="reward model swap, see #42")
""" + MAIN

SESSION_SOURCE = """\
from ci_policy import register_ci_gate, register_cuda_ci

register_cuda_ci(est_time=60, suite="gpu-b", labels=["megatron"])
register_ci_gate(metric_key="rollout/tito_session_mismatch_rate/v1/assistant_text")
register_ci_gate(metric_key="rollout/tito_session_mismatch_rate/v2/assistant_text")
""" + MAIN

STEPS_SOURCE = """\
from ci_policy import register_ci_gate, register_cuda_ci

register_cuda_ci(est_time=60, suite="gpu-a", labels=["megatron"])
register_ci_gate(metric_key="train/grad_norm", steps="all", enforce=True)
register_ci_gate(metric_key="train/ppo_kl", steps=[0, 2, 5])
""" + MAIN

# The stored series' identities: (file, backend, suite, metric key, the literals as written).
GRAD_ID = (TRAIN, "cuda", "gpu-a", GRAD, '{"constraint":{"rel_down":0.5,"rel_up":0.5},"steps":"last"}')
KL_ID = (TRAIN, "cuda", "gpu-a", KL, '{"constraint":null,"steps":"last"}')
REWARD_ID = (TRAIN, "cuda", "gpu-a", REWARD, '{"constraint":null,"steps":"last"}')
V1_ID = (SESSION, "cuda", "gpu-b", V1, '{"constraint":null,"steps":null}')
V2_ID = (SESSION, "cuda", "gpu-b", V2, '{"constraint":null,"steps":null}')

PASSWORD = "s3cr3t/Pa55@word"
PASSWORD_IN_URL = "s3cr3t%2FPa55%40word"


# -- helpers ----------------------------------------------------------------------------------------



def no_secret(*texts: str) -> None:
    for text in texts:
        assert PASSWORD not in text and PASSWORD_IN_URL not in text and "Pa55" not in text


def cli(cwd: Path, *args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """`ci-policy ARGS` run from `cwd`: in a subprocess of the console script when the call is about
    the process (`run`, which starts the tests' processes, or an explicit environment such as
    GitHub's variables), otherwise `main` in this process with the same clean environment,
    working directory and streams (each gate test still makes at least one subprocess call)."""
    if env is not None or args[0] == "run":
        proc = subprocess.run([console_script(), *args], cwd=cwd, env=env or clean_env(),
                              capture_output=True, text=True, timeout=timeout)
    else:
        proc = in_process(cwd, list(args))
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    no_secret(proc.stdout, proc.stderr)
    return proc


def store_args(store: str, where: Path) -> list[str]:
    """`--store`, or `--store-file` for a URL with a password (refused on a command line)."""
    if PASSWORD_IN_URL not in store:
        return ["--store", store]
    path = where / "store-url"
    path.write_text(store + "\n", encoding="utf-8")
    return ["--store-file", str(path)]


def gate(repo: Path, record: Path, store: str, *args: str, file: str = TRAIN,
         env: dict | None = None) -> subprocess.CompletedProcess:
    return cli(repo.parent, "gate", "--repo", repo.name, "--file", file, "--record", str(record),
               *store_args(store, record.parent), *args, env=env)


def nightly(repo: Path, record: Path, store: str, run_id: str, *args: str, **kw) -> subprocess.CompletedProcess:
    return gate(repo, record, store, "--cadence", "nightly", "--run-id", run_id, *args, **kw)


def baseline_line(proc: subprocess.CompletedProcess) -> str:
    [line] = [ln for ln in proc.stdout.splitlines() if ln.startswith("run: ")]
    return line


def train_record(path: Path, grad: float, kl: float, reward: float) -> Path:
    write_record({GRAD: [(0, 3.0), (1, 2.0), (2, grad)], KL: [(0, 0.5), (1, kl)],
                  REWARD: [(0, 0.1), (1, reward)]}, path)
    return path


def stored_runs(store: str, tmp_path: Path) -> list[tuple]:
    with open_store(store, default_path=tmp_path / "unused" / "h.db") as opened:
        return [(r["run_id"], r["run_attempt"], r["file"], r["cadence"], r["commit"], r["trusted"],
                 r["write_baseline"], r["outcome"], r["samples"]) for r in opened.runs()]


def stored_baseline(store: str, tmp_path: Path, identity: tuple, step: int = -1) -> list[float]:
    with open_store(store, default_path=tmp_path / "unused" / "h.db") as opened:
        return opened.baseline(identity, step, 100)


@pytest.fixture(autouse=True)
def _no_database_url(monkeypatch):
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path: Path) -> str:
    """A fresh, empty store of each backend, created (a read never creates one) (the PostgreSQL
    URL carries a password, to check that it never appears in any output; the throwaway server
    trusts every connection)."""
    if request.param == "sqlite":
        url = str(tmp_path / "history.sqlite")
    else:
        url = request.getfixturevalue("postgres_database")
        assert url.startswith("postgresql://postgres@")
        url = url.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD_IN_URL}@", 1)
    open_store(url, default_path=tmp_path / "unused.sqlite").close()
    return url


@pytest.fixture
def repo(make_repo) -> Path:
    return make_repo({TRAIN: TRAIN_SOURCE, SESSION: SESSION_SOURCE, STEPS: STEPS_SOURCE}, config=CONFIG)


def build_baseline(repo: Path, store: str, tmp_path: Path) -> None:
    """Three nightly runs: grad_norm 1.0, 1.2, 0.8 (mean 1), ppo_kl 0.01-0.03 (mean 0.02),
    raw_reward 0.5-0.7 (mean 0.6)."""
    for i, (grad, kl, reward) in enumerate([(1.0, 0.01, 0.5), (1.2, 0.02, 0.6), (0.8, 0.03, 0.7)]):
        proc = nightly(repo, train_record(tmp_path / f"nightly-{i}.json", grad, kl, reward), store,
                       f"100{i}", "--commit", f"c{i}")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert baseline_line(proc) == "run: trusted; baseline: written (3 value(s))"


# -- verdicts ---------------------------------------------------------------------------------------

def test_empty_store_baseline_then_pass_fail_report_only_and_allowlisted(repo, store, tmp_path):
    summary = tmp_path / "summary.md"
    github = clean_env(GITHUB_STEP_SUMMARY=str(summary))

    # An empty store: NO_BASELINE everywhere, never a pass, and not a failure even where enforced.
    first = train_record(tmp_path / "first.json", 1.0, 0.01, 0.5)
    proc = gate(repo, first, store, "--format", "github", env=github)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert_golden("cli/gate/no-baseline.txt", proc.stdout)
    assert_golden("cli/gate/no-baseline.md", summary.read_text())
    assert stored_runs(store, tmp_path) == []

    # Three nightly runs with distinct run ids build the baseline, one value per coordinate each.
    values = [(1.0, 0.01, 0.5), (1.2, 0.02, 0.6), (0.8, 0.03, 0.7)]
    for i, (grad, kl, reward) in enumerate(values):
        proc = nightly(repo, train_record(tmp_path / f"nightly-{i}.json", grad, kl, reward), store,
                       f"100{i}", "--commit", f"c{i}")
        assert (proc.returncode, proc.stderr) == (0, "")
        assert proc.stdout == f"""\
ci-policy gate: tests/gpu/test_train.py (cuda, gpu-a)
METRIC              STEP  VALUE  BASELINE  BAND  VERDICT      DETAIL
train/grad_norm     last  {grad:<5g}  -         -     NO_BASELINE  {i} baseline value(s), 3 needed
train/ppo_kl        last  {kl:<5g}  -         -     NO_BASELINE  {i} baseline value(s), 3 needed
rollout/raw_reward  last  {reward:<5g}  -         -     NO_BASELINE  {i} baseline value(s), 3 needed
run: trusted; baseline: written (3 value(s))
"""
    assert stored_runs(store, tmp_path) == [
        (f"100{i}", 1, TRAIN, "nightly", f"c{i}", True, True, "written", 3) for i in range(3)]
    assert stored_baseline(store, tmp_path, GRAD_ID) == [1.0, 1.2, 0.8]
    assert stored_baseline(store, tmp_path, KL_ID) == [0.01, 0.02, 0.03]
    assert stored_baseline(store, tmp_path, REWARD_ID) == [0.5, 0.6, 0.7]

    # Within every band: PASS.
    proc = gate(repo, train_record(tmp_path / "pass.json", 1.1, 0.025, 0.65), store)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert_golden("cli/gate/pass.txt", proc.stdout)

    # An enforced gate out of its band: FAIL, exit 1, an ::error annotation and the summary table.
    summary.unlink()
    proc = gate(repo, train_record(tmp_path / "fail.json", 2.0, 0.025, 0.65), store, "--format", "github",
                env=github)
    assert (proc.returncode, proc.stderr) == (1, "")
    assert_golden("cli/gate/enforced-fail.txt", proc.stdout)
    assert_golden("cli/gate/enforced-fail.md", summary.read_text())
    # Below the band fails as well.
    proc = gate(repo, train_record(tmp_path / "low.json", 0.4, 0.025, 0.65), store)
    assert proc.returncode == 1
    assert ("train/grad_norm     last  0.4    1 (n=3)     [0.5, 1.5]    FAIL     "
            "0.4 is below the band [0.5, 1.5] (baseline mean 1 of 3)\n") in proc.stdout

    # A report-only gate out of its band: FAIL, shown as such, exit 0 and no annotation.
    proc = gate(repo, train_record(tmp_path / "kl.json", 1.1, 0.05, 0.65), store, "--format", "github", env=github)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert_golden("cli/gate/report-only-fail.txt", proc.stdout)

    # An enforced but allowlisted gate out of its band: FAIL with the reason, exit 0.
    proc = gate(repo, train_record(tmp_path / "rw.json", 1.1, 0.025, 0.1), store, "--format", "github", env=github)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert_golden("cli/gate/allowlisted-fail.txt", proc.stdout)
    # Evaluating never wrote: the history is the three nightly runs.
    assert [r[0] for r in stored_runs(store, tmp_path)] == ["1000", "1001", "1002"]
    assert stored_baseline(store, tmp_path, GRAD_ID) == [1.0, 1.2, 0.8]


# -- when the baseline is written ---------------------------------------------------------------------

def test_only_trusted_first_attempts_of_nightly_and_weekly_runs_write(repo, store, tmp_path):
    build_baseline(repo, store, tmp_path)
    good = train_record(tmp_path / "good.json", 1.1, 0.025, 0.65)

    # A pull request never writes, even when told the cadence is nightly (--event, or GitHub's).
    proc = nightly(repo, good, store, "2001", "--event", "pull_request")
    assert (proc.returncode, baseline_line(proc)) == (
        0, "run: trusted; baseline: not written: pull request runs never write baselines")
    proc = nightly(repo, good, store, "2002", env=clean_env(GITHUB_EVENT_NAME="pull_request"))
    assert baseline_line(proc) == "run: trusted; baseline: not written: pull request runs never write baselines"
    # Release and regular runs never write.
    for run_id, cadence in (("2003", "release"), ("2004", "regular")):
        proc = gate(repo, good, store, "--cadence", cadence, "--run-id", run_id)
        assert (proc.returncode, baseline_line(proc)) == (
            0, f"run: trusted; baseline: not written: the {cadence} cadence does not write baselines")
    # Without a run id nothing is recorded at all.
    proc = gate(repo, good, store, "--cadence", "nightly")
    assert baseline_line(proc) == ("run: trusted; baseline: not written: no run id "
                                   "(pass --run-id, or run in GitHub Actions)")

    # Weekly writes; the same run id and attempt again is refused, whatever it now reports.
    proc = gate(repo, good, store, "--cadence", "weekly", "--run-id", "3001", "--commit", "w1")
    assert baseline_line(proc) == "run: trusted; baseline: written (3 value(s))"
    other = train_record(tmp_path / "other.json", 0.9, 0.015, 0.55)
    proc = gate(repo, other, store, "--cadence", "weekly", "--run-id", "3001", "--run-attempt", "1")
    assert baseline_line(proc) == "run: trusted; baseline: not written: this run attempt was already recorded"
    # A later attempt of a run whose first attempt was recorded does not write.
    proc = nightly(repo, other, store, "3001", "--run-attempt", "2")
    assert baseline_line(proc) == "run: trusted; baseline: not written: only a run's first attempt may write baselines"

    # An untrusted run (a report-only FAIL) does not write; its rerun cannot shop for a pass.
    bad = train_record(tmp_path / "bad.json", 1.1, 0.05, 0.65)
    proc = nightly(repo, bad, store, "4001")
    assert (proc.returncode, baseline_line(proc)) == (
        0, "run: NOT trusted; baseline: not written: the run is not trusted (a gate FAILed or ERRORed)")
    proc = nightly(repo, good, store, "4001", "--run-attempt", "2")
    assert (proc.returncode, baseline_line(proc)) == (
        0, "run: trusted; baseline: not written: only a run's first attempt may write baselines")
    proc = nightly(repo, good, store, "4001")
    assert baseline_line(proc) == "run: trusted; baseline: not written: this run attempt was already recorded"
    # An enforced FAIL is not trusted either, and exits 1.
    proc = nightly(repo, train_record(tmp_path / "fail.json", 2.0, 0.025, 0.65), store, "4002")
    assert (proc.returncode, baseline_line(proc)) == (
        1, "run: NOT trusted; baseline: not written: the run is not trusted (a gate FAILed or ERRORed)")

    # The run identity defaults to GitHub's variables.
    env = clean_env(GITHUB_RUN_ID="5001", GITHUB_RUN_ATTEMPT="1", GITHUB_SHA="feedface", GITHUB_EVENT_NAME="schedule")
    proc = gate(repo, good, store, "--cadence", "nightly", env=env)
    assert baseline_line(proc) == "run: trusted; baseline: written (3 value(s))"
    proc = gate(repo, good, store, "--cadence", "nightly", env=env)
    assert baseline_line(proc) == "run: trusted; baseline: not written: this run attempt was already recorded"
    # The store's rule: an attempt writes when no earlier attempt of its run was recorded (here
    # attempt 1 never reached the gate), so "first attempt" means the first one recorded.
    proc = gate(repo, good, store, "--cadence", "nightly",
                env=clean_env(GITHUB_RUN_ID="6001", GITHUB_RUN_ATTEMPT="2", GITHUB_EVENT_NAME="schedule"))
    assert baseline_line(proc) == "run: trusted; baseline: written (3 value(s))"

    assert stored_runs(store, tmp_path) == [
        ("1000", 1, TRAIN, "nightly", "c0", True, True, "written", 3),
        ("1001", 1, TRAIN, "nightly", "c1", True, True, "written", 3),
        ("1002", 1, TRAIN, "nightly", "c2", True, True, "written", 3),
        ("3001", 1, TRAIN, "weekly", "w1", True, True, "written", 3),
        ("3001", 2, TRAIN, "nightly", None, True, True, "not_first_attempt", 0),
        ("4001", 1, TRAIN, "nightly", None, False, True, "not_trusted", 0),
        ("4001", 2, TRAIN, "nightly", None, True, True, "not_first_attempt", 0),
        ("4002", 1, TRAIN, "nightly", None, False, True, "not_trusted", 0),
        ("5001", 1, TRAIN, "nightly", "feedface", True, True, "written", 3),
        ("6001", 2, TRAIN, "nightly", None, True, True, "written", 3),
    ]
    # Only the written runs' values are in the history, each once.
    assert stored_baseline(store, tmp_path, GRAD_ID) == [1.0, 1.2, 0.8, 1.1, 1.1, 1.1]
    assert stored_baseline(store, tmp_path, KL_ID) == [0.01, 0.02, 0.03, 0.025, 0.025, 0.025]


# -- identities ---------------------------------------------------------------------------------------

def session_record(path: Path, v1: float, v2: float) -> Path:
    write_record({V1: [(0, 0.5), (1, v1)], V2: [(0, 0.5), (1, v2)]}, path)
    return path


def test_v1_and_v2_tito_keys_are_separate_series(repo, store, tmp_path):
    for i in range(3):
        proc = nightly(repo, session_record(tmp_path / f"s{i}.json", 0.25, 0.0), store, f"700{i}", file=SESSION)
        assert baseline_line(proc) == "run: trusted; baseline: written (2 value(s))"
    assert stored_baseline(store, tmp_path, V1_ID) == [0.25, 0.25, 0.25]
    assert stored_baseline(store, tmp_path, V2_ID) == [0.0, 0.0, 0.0]

    # v2's rate rising to v1's level fails against v2's own history (a merged series would pass it).
    proc = gate(repo, session_record(tmp_path / "both.json", 0.25, 0.25), store, file=SESSION)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert_golden("cli/gate/tito-v1-and-v2.txt", proc.stdout)


def test_editing_a_written_constraint_starts_a_new_series_and_a_default_change_does_not(make_repo, store,
                                                                                        tmp_path):
    repo = make_repo({TRAIN: TRAIN_SOURCE}, config=CONFIG)
    build_baseline(repo, store, tmp_path)
    record = train_record(tmp_path / "r.json", 1.1, 0.025, 0.7)

    def rows(proc):
        return [re.sub(r"\s+", " ", line) for line in proc.stdout.splitlines()[2:5]]

    assert rows(gate(repo, record, store)) == [
        "train/grad_norm last 1.1 1 (n=3) [0.5, 1.5] PASS",
        "train/ppo_kl last 0.025 0.02 (n=3) [0, 0.04] PASS",
        "rollout/raw_reward last 0.7 0.6 (n=3) [0.42, 0.78] PASS"]

    # A tighter configured default for raw_reward: same series (n=3), judged by the new band.
    config = repo / ".github" / "ci-policy.yml"
    config.write_text(CONFIG + "gates:\n  defaults:\n    rollout/raw_reward:\n      steps: all\n"
                      "      constraint: {rel_up: 0.1, rel_down: 0.1}\n")
    assert rows(gate(repo, record, store)) == [
        "train/grad_norm last 1.1 1 (n=3) [0.5, 1.5] PASS",
        "train/ppo_kl last 0.025 0.02 (n=3) [0, 0.04] PASS",
        "rollout/raw_reward last 0.7 0.6 (n=3) [0.54, 0.66] FAIL (allowlisted: reward model swap, see #42) "
        "0.7 is above the band [0.54, 0.66] (baseline mean 0.6 of 3)"]

    # Toggling enforce keeps the series; editing the written constraint starts a new one.
    source = repo / TRAIN
    source.write_text(TRAIN_SOURCE.replace('steps="last")', 'steps="last", enforce=True)'))
    assert rows(gate(repo, record, store))[1] == "train/ppo_kl last 0.025 0.02 (n=3) [0, 0.04] PASS"
    source.write_text(TRAIN_SOURCE.replace(GRAD_CONSTRAINT, '{"rel_up": 0.5, "rel_down": 0.25}'))
    proc = nightly(repo, record, store, "8001")
    assert rows(proc) == [
        "train/grad_norm last 1.1 - - NO_BASELINE 0 baseline value(s), 3 needed",
        "train/ppo_kl last 0.025 0.02 (n=3) [0, 0.04] PASS",
        "rollout/raw_reward last 0.7 0.6 (n=3) [0.54, 0.66] FAIL (allowlisted: reward model swap, see #42) "
        "0.7 is above the band [0.54, 0.66] (baseline mean 0.6 of 3)"]
    assert stored_baseline(store, tmp_path, GRAD_ID) == [1.0, 1.2, 0.8]
    edited = GRAD_ID[:4] + ('{"constraint":{"rel_down":0.25,"rel_up":0.5},"steps":"last"}',)
    assert stored_baseline(store, tmp_path, edited) == []


# -- step selection -----------------------------------------------------------------------------------

def steps_record(path: Path, grads: list, kl_steps: list, extra: list = ()) -> Path:
    write_record({GRAD: [(step, value) for step, value in enumerate(grads)] + list(extra),
                  KL: [(step, 0.01 * (step + 1)) for step in kl_steps]}, path)
    return path


def test_all_steps_and_a_step_list_with_a_missing_step(repo, store, tmp_path):
    for i, scale in enumerate((1.0, 1.1, 0.9)):
        record = steps_record(tmp_path / f"n{i}.json", [3.0 * scale, 2.0 * scale, 1.0 * scale], range(6))
        proc = nightly(repo, record, store, f"900{i}", file=STEPS)
        assert baseline_line(proc) == "run: trusted; baseline: written (6 value(s))"

    # ppo_kl step 5 was not recorded: ERROR for that coordinate only; every grad_norm step has
    # its own baseline. The ERROR is report-only (exit 0) but the run is not trusted.
    proc = nightly(repo, steps_record(tmp_path / "missing.json", [3.0, 2.0, 1.0], range(4)), store, "9100",
                   file=STEPS)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert_golden("cli/gate/steps-all.txt", proc.stdout)

    # One step of an enforced "all" gate out of its own band: FAIL for that step only.
    proc = gate(repo, steps_record(tmp_path / "step1.json", [3.0, 3.5, 1.0], range(6)), store, "--format", "github",
                file=STEPS)
    assert (proc.returncode, proc.stderr) == (1, NOTICE)
    assert_golden("cli/gate/steps-list-with-a-missing-step.txt", proc.stdout)
    assert stored_runs(store, tmp_path) == [
        (f"900{i}", 1, STEPS, "nightly", None, True, True, "written", 6) for i in range(3)] + [
        ("9100", 1, STEPS, "nightly", None, False, True, "not_trusted", 0)]


def test_unusable_steps_in_a_record_are_errors_of_their_coordinates(repo, store, tmp_path):
    # A step recorded twice, a NaN, a negative step and one beyond 64 bits: each an ERROR of
    # its own coordinate (the enforced ones fail the job), never a crash; the largest step the
    # store holds is evaluated like any other.
    record = tmp_path / "odd.json"
    write_record({GRAD: [(0, 3.0), (1, 4.0), (1, 2.0), (2, float("nan")), (-3, 1.0), (2**63, 1.0),
                         (2**63 - 1, 7.0)],
                  KL: [(0, 0.01), (2, 0.03), (5, 0.06)]}, record)
    proc = nightly(repo, record, store, "9200", "--format", "github", file=STEPS)
    assert (proc.returncode, proc.stderr) == (1, NOTICE)
    assert_golden("cli/gate/unusable-steps.txt", proc.stdout)
    assert stored_runs(store, tmp_path) == [("9200", 1, STEPS, "nightly", None, False, True, "not_trusted", 0)]

    # A trusted run at the largest step writes it, and reads it back.
    for i in range(3):
        write_record({GRAD: [(2**63 - 1, 7.0 + i)], KL: [(0, 0.01), (2, 0.03), (5, 0.06)]}, record)
        assert baseline_line(nightly(repo, record, store, f"930{i}", file=STEPS)) == (
            "run: trusted; baseline: written (4 value(s))")
    grad_all = (STEPS, "cuda", "gpu-a", GRAD, '{"constraint":null,"steps":"all"}')
    assert stored_baseline(store, tmp_path, grad_all, 2**63 - 1) == [7.0, 8.0, 9.0]


# -- refused inputs -----------------------------------------------------------------------------------

HINT = "    hint: pass the record ci-policy run merged for this file\nci-policy: 1 error\n"


@pytest.mark.parametrize("name, content, reason", [
    ("notes.txt", b"not json\n", "Expecting value: line 1 column 1 (char 0)"),
    # A per-process file of the recorder, not the merged record.
    ("metrics-12-0123456789ab.jsonl",
     b'{"schema": 1, "pid": 12}\n{"key": "train/grad_norm", "points": [[0, 1.0]]}\n',
     "Extra data: line 2 column 1 (char 25)"),
    ("list.json", b"[1, 2]\n", "list.json: not a ci-policy metric record (schema 1)"),
    ("future.json", b'{"schema": 2, "series": {}}\n', "future.json: not a ci-policy metric record (schema 1)"),
    ("nan.json", b'{"schema": 1, "series": {"train/grad_norm": [[0, NaN]]}}\n', "non-standard JSON constant NaN"),
    ("binary.json", b"\xff\xfe\x00", "binary.json: not valid UTF-8"),
    ("missing.json", None, "[Errno 2] No such file or directory: 'missing.json'"),
])
def test_a_record_that_is_not_a_record_is_refused_clearly(repo, tmp_path, name, content, reason):
    if content is not None:
        (tmp_path / name).write_bytes(content)
    store = tmp_path / "history.sqlite"
    proc = cli(tmp_path, "gate", "--repo", "repo", "--file", TRAIN, "--record", name, "--store", str(store),
               "--cadence", "nightly", "--run-id", "1")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == f"{name}: --record: {name} is not a readable metric record: {reason}\n" + HINT
    assert not store.exists()  # refused before the store is opened


def test_a_directory_as_the_record_is_refused(repo, tmp_path):
    (tmp_path / "records").mkdir()
    proc = cli(tmp_path, "gate", "--repo", "repo", "--file", TRAIN, "--record", "records",
               "--store", str(tmp_path / "h.sqlite"))
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == ("records: --record: records is not a readable metric record: "
                           "[Errno 21] Is a directory: 'records'\n" + HINT)


def test_unregistered_file_unknown_cadence_and_a_file_without_gates(repo, tmp_path, make_repo):
    record = train_record(tmp_path / "r.json", 1.0, 0.01, 0.5)
    store = str(tmp_path / "h.sqlite")
    proc = gate(repo, record, store, file="tests/gpu/test_nope.py")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == ("tests/gpu/test_nope.py: --file: tests/gpu/test_nope.py has no registration\n"
                           "    hint: pass a registered test file (see ci-policy registry)\nci-policy: 1 error\n")
    # A bad --cadence is a usage error: exit 2, before the checkout or the record is read.
    proc = gate(repo, record, store, "--cadence", "hourly")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == ("ci-policy gate: error: --cadence: unknown cadence 'hourly'; "
                           "expected one of regular, nightly, weekly, release\n")
    proc = gate(repo, record, store, "--cadence", "bogus", "--format", "github")
    assert proc.returncode == 2
    assert proc.stdout == ("::error::ci-policy gate: --cadence: unknown cadence 'bogus'; "
                           "expected one of regular, nightly, weekly, release\n")
    assert proc.stderr == ("ci-policy gate: error: --cadence: unknown cadence 'bogus'; "
                           "expected one of regular, nightly, weekly, release\n")
    big = "9" * 5000
    for attempt, message in (("x", "is not a number: 'x'"), ("0", "must be at least 1, got 0"),
                             ("000", "must be at least 1, got 0"),
                             # int() takes these; a run attempt is ASCII digits only
                             ("1_0", "is not a number: '1_0'"), ("\u0663", "is not a number: '\u0663'"),
                             (" 2 ", "is not a number: ' 2 '"), ("+2", "is not a number: '+2'"),
                             # stored as a 64-bit integer
                             ("9223372036854775808",
                              "must be at most 9223372036854775807, got '9223372036854775808'"),
                             (big, f"must be at most 9223372036854775807, got {big[:40]!r}...")):
        proc = gate(repo, record, store, "--cadence", "nightly", env=clean_env(GITHUB_RUN_ATTEMPT=attempt))
        assert (proc.returncode, proc.stdout) == (2, "")
        assert proc.stderr == (f"ci-policy gate: error: $GITHUB_RUN_ATTEMPT: {message}\n"
                               "    hint: pass --run-attempt N, or leave GITHUB_RUN_ATTEMPT to GitHub Actions\n")
    for attempt, message in (("1_0", "is not a number: '1_0'"),
                             ("9223372036854775808",
                              "must be at most 9223372036854775807, got '9223372036854775808'")):
        proc = gate(repo, record, store, "--cadence", "nightly", "--run-attempt", attempt, env=clean_env())
        assert (proc.returncode, proc.stdout) == (2, "")
        assert proc.stderr.endswith(f"ci-policy gate: error: argument --run-attempt: {message}\n")
    assert stored_runs(store, tmp_path) == []
    # --stage picks one registration of a file registered for several stages.
    (repo / "tests/gpu/test_plain.py").write_text(
        "from ci_policy import register_cuda_ci\n\n"
        'register_cuda_ci(est_time=5, suite="gpu-a", labels=["megatron"])\n'
        'register_cuda_ci(est_time=5, suite="gpu-b", labels=["megatron"])\n' + MAIN)
    proc = gate(repo, record, store, "--cadence", "nightly", "--run-id", "1", file="tests/gpu/test_plain.py")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == ("tests/gpu/test_plain.py: --file: tests/gpu/test_plain.py is registered for several "
                           "stages (gpu-a, gpu-b); pass --stage\nci-policy: 1 error\n")
    proc = gate(repo, record, store, "--cadence", "nightly", "--run-id", "1", "--stage", "gpu-b",
                file="tests/gpu/test_plain.py")
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0, "ci-policy gate: tests/gpu/test_plain.py (cuda, gpu-b): no gates declared\n", "")
    assert stored_runs(store, tmp_path) == []


# -- faults -------------------------------------------------------------------------------------------

def test_a_killed_postgres_server_makes_every_coordinate_an_error(repo, postgres_server, tmp_path):
    postgres_server.create_database("history")
    url = postgres_server.url("history", password=PASSWORD_IN_URL)
    shown = f"postgresql://postgres:***@127.0.0.1:{postgres_server.port}/history"
    build_baseline(repo, url, tmp_path)
    good = train_record(tmp_path / "good.json", 1.1, 0.025, 0.65)
    proc = gate(repo, good, url)
    assert [line.split()[-1] for line in proc.stdout.splitlines()[2:5]] == ["PASS"] * 3

    postgres_server.kill()
    summary = tmp_path / "summary.md"
    proc = nightly(repo, good, url, "2001", "--format", "github", env=clean_env(GITHUB_STEP_SUMMARY=str(summary)))
    assert (proc.returncode, proc.stderr) == (1, "")
    lines = proc.stdout.splitlines()
    assert lines[0] == "ci-policy gate: tests/gpu/test_train.py (cuda, gpu-a)"
    unavailable = f"metric history unavailable: PostgreSQL metric history {shown}: connection failed: "
    rows = [re.split(r"\s{2,}", line, maxsplit=4) for line in lines[2:5]]
    assert [row[:4] for row in rows] == [["train/grad_norm", "last", "1.1", "-"],
                                         ["train/ppo_kl", "last", "0.025", "-"],
                                         ["rollout/raw_reward", "last", "0.65", "-"]]
    assert [row[4].split(unavailable)[0].split() for row in rows] == [
        ["-", "ERROR"], ["-", "ERROR", "(report", "only)"],
        ["-", "ERROR", "(allowlisted:", "reward", "model", "swap,", "see", "#42)"]]
    for row in rows:
        assert unavailable in row[4] and "Connection refused" in row[4]
    assert "PASS" not in proc.stdout
    assert lines[5:7] == ["run: NOT trusted; baseline: not written: metric history unavailable",
                          "FAILED: 1 enforced gate coordinate(s) failed"]
    [annotation] = lines[7:]
    assert annotation.startswith(f"::error file=tests/gpu/test_train.py::gate train/grad_norm step last: ERROR: "
                                 f"{unavailable}")
    text = summary.read_text()
    assert text.count("ERROR") == 3 and "PASS" not in text
    no_secret(text)

    # Nothing was recorded during the outage: back up, the history is the three nightly runs,
    # and the same run (never recorded) can still write.
    postgres_server.start()
    assert stored_runs(url, tmp_path) == [
        (f"100{i}", 1, TRAIN, "nightly", f"c{i}", True, True, "written", 3) for i in range(3)]
    proc = nightly(repo, good, url, "2001")
    assert (proc.returncode, baseline_line(proc)) == (0, "run: trusted; baseline: written (3 value(s))")
    assert stored_baseline(url, tmp_path, GRAD_ID) == [1.0, 1.2, 0.8, 1.1]


def test_an_unusable_sqlite_store_makes_every_coordinate_an_error(repo, tmp_path):
    store = tmp_path / "history.sqlite"
    store.write_bytes(b"this is not a database\n" * 200)
    proc = nightly(repo, train_record(tmp_path / "r.json", 1.0, 0.01, 0.5), str(store), "1")
    assert (proc.returncode, proc.stderr) == (1, "")
    why = f"metric history unavailable: SQLite metric history {store}: file is not a database"
    assert proc.stdout.splitlines()[2:] == [
        f"train/grad_norm     last  1      -         -     ERROR                                            {why}",
        f"train/ppo_kl        last  0.01   -         -     ERROR (report only)                              {why}",
        f"rollout/raw_reward  last  0.5    -         -     ERROR (allowlisted: reward model swap, see #42)  {why}",
        "run: NOT trusted; baseline: not written: metric history unavailable",
        "FAILED: 1 enforced gate coordinate(s) failed"]
    assert store.read_bytes() == b"this is not a database\n" * 200


# -- ci-policy run: records per attempt, merged, gated ---------------------------------------------------

RUN_CONFIG = """\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: gpu, backend: cuda, runs_on: [h200], timeout_per_file: 60}
cadences:
  schedules: {"0 3 * * *": nightly}
runner: {kill_grace: 1, env: {allow: [PATH, TOY_RUN]}}
"""

# A toy training job: a grad-norm trace from the trainer process and the TITO rates of both
# session-server versions from a forked rollout worker (its own record file). $TOY_RUN says what
# to log; with a flaky marker, the first attempt logs bad values, prints an NCCL timeout (an infra
# failure: retried) and reports "flaky" (which alone would not be retried), and fails.
TOY_TEST = '''\
"""A toy training run recording metrics for the CI gates."""

import json
import os
import sys

from ci_policy import register_ci_gate, register_cuda_ci
from ci_policy.sdk.metrics import MetricRecorder, rollout_metrics

register_cuda_ci(est_time=60, suite="gpu", labels=["megatron"])
register_ci_gate(metric_key="train/grad_norm", steps="all", enforce=True)
register_ci_gate(metric_key="rollout/tito_session_mismatch_rate/v1/assistant_text")
register_ci_gate(metric_key="rollout/tito_session_mismatch_rate/v2/assistant_text")


def samples(mismatched, n=4):
    return [[{"type": "assistant_text"}] if i < mismatched else [] for i in range(n)]


def train(recorder, grads, v1, v2):
    for step, grad in enumerate(grads):
        recorder.log({"train/grad_norm": grad, "train/loss": 1.0 / (step + 1)}, step)
    pid = os.fork()
    if pid == 0:
        # True is the backward-compatible spelling of session server v1.
        recorder.log(rollout_metrics({True: samples(v1), "v2": samples(v2)}, ci_test=True), len(grads) - 1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert status == 0


def main():
    recorder = MetricRecorder.from_env()
    plan = json.loads(os.environ["TOY_RUN"])
    marker = plan.get("flaky_marker")
    if marker and not os.path.exists(marker):
        open(marker, "w").close()
        train(recorder, [99.0, 99.0, 99.0], 4, 4)
        with open(os.environ["CI_POLICY_FAILURE_KIND_FILE"], "w") as fh:
            fh.write("flaky\\n")
        print("NCCL watchdog timeout (simulated)")
        sys.exit(1)
    train(recorder, plan["grads"], plan["v1"], plan["v2"])
    print("trained", plan["grads"])


if __name__ == "__main__":
    main()
'''

TOY = "tests/gpu/test_toy.py"
TOY_RECORD = "tests__gpu__test_toy.py.json"
TOY_GRAD_ID = (TOY, "cuda", "gpu", GRAD, '{"constraint":null,"steps":"all"}')
TOY_V1_ID = (TOY, "cuda", "gpu", V1, '{"constraint":null,"steps":null}')
TOY_V2_ID = (TOY, "cuda", "gpu", V2, '{"constraint":null,"steps":null}')
SCHEDULE = ["--event", "schedule", "--schedule", "0 3 * * *"]
DISPATCH = ["--event", "workflow_dispatch", "--label", "run-ci-megatron"]


# `--format github` outside a step with a job summary: nothing written, one line says so.
NOTICE = "ci-policy gate: notice: $GITHUB_STEP_SUMMARY is not set; the job summary is not written\n"


def mask(text: str) -> str:
    text = re.sub(r"elapsed=\d+\.\ds", "elapsed=<T>", text)
    # The Markdown table's Elapsed column (after Attempts): a duration such as `3s`, `<1s` or `1m5s`.
    return re.sub(r"(\| \d+ \| )(?:<1s|(?:\d+[dhm])*\d+s)( \|)", r"\1<T>\2", text)


@pytest.fixture
def toy(make_repo) -> Path:
    return make_repo({TOY: TOY_TEST}, config=RUN_CONFIG)


def warned(store: str, tmp_path: Path) -> str:
    """What `run` prints on stderr with this store: as root, the warning that the tests could read
    a store URL it holds (one with a password comes in a --store-file)."""
    return root_warning(store_file=str(tmp_path / "store-url")) if PASSWORD_IN_URL in store else ""


def run(repo: Path, store: str, tmp_path: Path, *args: str, plan: dict, **env: str) -> subprocess.CompletedProcess:
    return cli(repo, "run", "--stage", "gpu", *args, "--records-out", str(tmp_path / "records"),
               *store_args(store, tmp_path), "--timings-out", str(tmp_path / "timings.jsonl"),
               env=clean_env(TOY_RUN=json.dumps(plan), **env))


def test_only_the_passing_attempts_records_are_merged_and_gated(toy, tmp_path):
    store = str(tmp_path / "history.sqlite")
    open_store(store, default_path=tmp_path / "unused.sqlite").close()
    marker = tmp_path / "attempted"
    proc = run(toy, store, tmp_path, *DISPATCH, "--max-attempts", "2", GITHUB_RUN_ID="77",
               plan={"grads": [1.0, 0.8, 0.6], "v1": 1, "v2": 0, "flaky_marker": str(marker)})
    assert (proc.returncode, proc.stderr) == (0, warned(store, tmp_path))
    assert marker.exists()
    assert_golden("cli/gate/run-merges-passing-attempts.txt", mask(proc.stdout))
    # The merged record: attempt 2's values only (attempt 1 logged 99.0 and 100% mismatches),
    # the trainer's and the rollout worker's files together, only the captured keys (no
    # train/loss, no other TITO rates), v1 and v2 under their own keys.
    records = tmp_path / "records"
    assert sorted(p.name for p in records.iterdir()) == [TOY_RECORD]
    expected = {"schema": 1, "series": {
        V1: [[2, 0.25]],
        V2: [[2, 0.0]],
        GRAD: [[0, 1.0], [1, 0.8], [2, 0.6]],
    }}
    assert (records / TOY_RECORD).read_text() == json.dumps(expected, indent=1) + "\n"
    assert read_record(records / TOY_RECORD) == {V1: [(2, 0.25)], V2: [(2, 0.0)], GRAD: [(0, 1.0), (1, 0.8), (2, 0.6)]}
    assert stored_runs(store, tmp_path) == []  # a run that may not write never writes


def test_nightly_runs_write_baselines_and_an_enforced_gate_fail_fails_the_run(toy, store, tmp_path):
    # Three nightly runs: a configured schedule, and a dispatch with the nightly cadence.
    traces = [[1.0, 0.8, 0.6], [1.1, 0.9, 0.7], [0.9, 0.7, 0.5]]
    # Outside GitHub Actions (no $GITHUB_RUN_ID) a nightly run records nothing.
    proc = run(toy, store, tmp_path, *SCHEDULE, plan={"grads": traces[0], "v1": 1, "v2": 0})
    assert (proc.returncode, proc.stderr) == (0, warned(store, tmp_path))
    assert "run: trusted; baseline: not written: no run id (pass --run-id, or run in GitHub Actions)\n" in proc.stdout
    assert stored_runs(store, tmp_path) == []
    for run_id, args, grads in (("101", SCHEDULE, traces[0]), ("102", SCHEDULE, traces[1]),
                                ("103", ["--event", "workflow_dispatch", "--cadence", "nightly"], traces[2])):
        proc = run(toy, store, tmp_path, *args, plan={"grads": grads, "v1": 1, "v2": 0},
                   GITHUB_RUN_ID=run_id, GITHUB_SHA=f"sha{run_id}")
        assert (proc.returncode, proc.stderr) == (0, warned(store, tmp_path))
        assert "run: trusted; baseline: written (5 value(s))\n" in proc.stdout
    assert stored_runs(store, tmp_path) == [
        (run_id, 1, TOY, "nightly", f"sha{run_id}", True, True, "written", 5) for run_id in ("101", "102", "103")]
    assert stored_baseline(store, tmp_path, TOY_GRAD_ID, 1) == [0.8, 0.9, 0.7]
    assert stored_baseline(store, tmp_path, TOY_V1_ID) == [0.25, 0.25, 0.25]
    assert stored_baseline(store, tmp_path, TOY_V2_ID) == [0.0, 0.0, 0.0]

    # A pull request labelled nightly has the nightly cadence but never writes.
    proc = run(toy, store, tmp_path, "--event", "pull_request", "--label", "nightly", "--label", "run-ci-megatron",
               plan={"grads": traces[0], "v1": 1, "v2": 0}, GITHUB_RUN_ID="104")
    assert (proc.returncode, proc.stderr) == (0, warned(store, tmp_path))
    assert_golden("cli/gate/run-nightly-baseline.txt", mask(proc.stdout))

    # An enforced gate out of its band: the test passed, the file is GATE-FAIL, the job fails.
    summary = tmp_path / "summary.md"
    proc = run(toy, store, tmp_path, *DISPATCH, "--format", "github", plan={"grads": [1.0, 2.0, 0.6], "v1": 1, "v2": 2},
               GITHUB_RUN_ID="105", GITHUB_STEP_SUMMARY=str(summary))
    assert (proc.returncode, proc.stderr) == (1, "")
    # In github format the warning about who can read the store URL is an annotation, first.
    warning = warned(store, tmp_path).replace("ci-policy run: warning: ", "::warning::")
    assert proc.stdout.startswith(warning)
    assert_golden("cli/gate/run-nightly-enforced-fail.txt", mask(proc.stdout[len(warning):]))
    assert_golden("cli/gate/run-nightly-enforced-fail.md", mask(summary.read_text()))
    # The failing run's record is still kept for inspection; only nightly runs are in the history.
    assert read_record(tmp_path / "records" / TOY_RECORD)[GRAD] == [(0, 1.0), (1, 2.0), (2, 0.6)]
    assert len(stored_runs(store, tmp_path)) == 3  # runs that may not write never write
    assert stored_baseline(store, tmp_path, TOY_GRAD_ID, 1) == [0.8, 0.9, 0.7]


def test_the_store_url_in_the_environment_still_reaches_the_gates_after_run_sheds_it(toy, store, tmp_path):
    # Issue 32, finding 7: `ci-policy run` re-executes itself without its secrets in its environment
    # block and reads them back from an anonymous file; the gates still find the store.
    proc = cli(toy, "run", "--stage", "gpu", *SCHEDULE, "--records-out", str(tmp_path / "records"),
               "--timings-out", str(tmp_path / "timings.jsonl"),
               env=clean_env(TOY_RUN=json.dumps({"grads": [1.0, 0.8, 0.6], "v1": 1, "v2": 0}),
                             CI_POLICY_DATABASE_URL=store, GITHUB_RUN_ID="201", GITHUB_SHA="sha201"))
    assert (proc.returncode, proc.stderr) == (0, root_warning("CI_POLICY_DATABASE_URL")), proc.stdout
    assert "run: trusted; baseline: written (5 value(s))\n" in proc.stdout
    assert PASSWORD_IN_URL not in proc.stdout
    assert stored_runs(store, tmp_path) == [("201", 1, TOY, "nightly", "sha201", True, True, "written", 5)]


def test_another_files_error_does_not_stop_a_files_gates_but_its_own_does(repo, tmp_path):
    (repo / "tests/gpu/test_broken.py").write_text(
        "from ci_policy import register_cuda_ci\n\n"
        'register_cuda_ci(est_time="soon", suite="gpu-a", labels=["megatron"])\n' + MAIN)
    record = train_record(tmp_path / "r.json", 1.0, 0.01, 0.5)
    store = str(tmp_path / "h.sqlite")
    open_store(store, default_path=tmp_path / "unused.sqlite").close()
    proc = gate(repo, record, store)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.startswith("ci-policy gate: tests/gpu/test_train.py (cuda, gpu-a)")
    proc_ok_stdout = proc.stdout
    proc = gate(repo, record, store, file="tests/gpu/test_broken.py")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        "tests/gpu/test_broken.py:3:27: CP223 est-time-invalid: register_cuda_ci: est_time must be a finite "
        "non-negative number of seconds, got 'soon'\n    hint: write e.g. est_time=300\nci-policy: 1 error\n")
    # A partly read file (one bad registration dropped, its gpu-a one kept) has its gates evaluated.
    (repo / TRAIN).write_text(TRAIN_SOURCE.replace(
        "register_ci_gate(metric_key=\"train/ppo_kl\"",
        "register_cuda_ci(est_time=60, suite=\"nosuch\", labels=[\"megatron\"])\n"
        "register_ci_gate(metric_key=\"train/ppo_kl\"", 1))
    partly = gate(repo, record, store)
    assert (partly.returncode, partly.stderr) == (0, "")
    assert partly.stdout == proc_ok_stdout
