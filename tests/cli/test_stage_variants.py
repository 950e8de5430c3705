"""`stages[].variants`: one suite on several runner pools or images, each variant a stage of its own.

sglang runs its AMD suites on mi325 and mi355, and nightly on a second ROCm image. A stage with
variants plans as its variants, keyed `KEY+VARIANT`: each with the stage's selected tests split
into its own shards, its own jobs in the stage's wave, and a reason why it runs or is skipped
(its cadences, its labels). Every output and refusal is asserted exactly.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli.test_run import cli
from helpers import run_cli as run

CONFIG = """\
version: 1
discovery:
  roots: [tests]
stages:
  - name: amd
    backend: rocm
    runs_on: [mi325]
    partitions: 2
    variants:
      - {name: mi325}
      - {name: mi355, runs_on: [mi355], timeout_per_file: 900}
      - {name: rocm720, image: "ghcr.io/org/ci-rocm:rocm720", cadences: [nightly]}
      - {name: x8, runs_on: [mi355x8], requires_labels: [run-x8]}
  - {name: amd-tail, backend: rocm, runs_on: [mi325], after: [amd]}
"""

LABELS = 'KNOWN_LABELS = {"megatron": "Megatron tests"}\n'


def amd_file(est: int, suite: str = "amd") -> str:
    return (f"from ci_policy import register_rocm_ci\n\nregister_rocm_ci(est_time={est}, suite={suite!r}, "
            "labels=[\"megatron\"])\n\n\ndef main():\n    print(__file__.rsplit('/', 1)[-1])\n\n\n"
            "if __name__ == \"__main__\":\n    main()\n")


FILES = {"tests/test_a.py": amd_file(60), "tests/test_b.py": amd_file(40), "tests/test_c.py": amd_file(30),
         "tests/test_tail.py": amd_file(10, "amd-tail")}

PR = ["--event", "pull_request", "--label", "run-ci-megatron"]
NIGHTLY = ["--event", "schedule", "--cadence", "nightly"]


@pytest.fixture
def repo(make_repo) -> Path:
    return make_repo(FILES, config=CONFIG, labels=LABELS)


def stages_of(repo: Path, capsys, *argv: str) -> list[tuple]:
    rc, out, err = run(["plan", "--repo", str(repo), *argv, "--format", "json"], capsys)
    assert (rc, err) == (0, ""), err
    doc = json.loads(out)
    return [(s["name"], s["decision"], s["reasons"], s["runs_on"], [sh["files"] for sh in s["shards"]])
            for s in doc["stages"]]


PR_TEXT = """\
ci-policy plan: pull_request, cadence regular, trust trusted
PR labels: run-ci-megatron
included labels: megatron
diff: unavailable (no --diff or --base was given)

STAGE        BACKEND  DECISION  TESTS  SHARDS  EST WALL
amd+mi325    rocm     RUN           3       2     1m10s
  run: the diff is unavailable (no --diff or --base was given), so every runnable stage runs
  run: requested by run-ci-megatron
  run: variant mi325 of amd on runs_on [mi325]
amd+mi355    rocm     RUN           3       2     1m10s
  run: the diff is unavailable (no --diff or --base was given), so every runnable stage runs
  run: requested by run-ci-megatron
  run: variant mi355 of amd on runs_on [mi355]
amd+rocm720  rocm     SKIP          0       0         -
  skip: the regular cadence is not one of variant rocm720's cadences (nightly)
amd+x8       rocm     SKIP          0       0         -
  skip: the PR lacks the label run-x8, which variant x8 requires (variants[].requires_labels)
amd-tail     rocm     RUN           1       1       10s
  run: the diff is unavailable (no --diff or --base was given), so every runnable stage runs
  run: requested by run-ci-megatron

waves, one after another: a failed wave skips the later ones (fast-fail; the bypass-fastfail label runs them all)
  0: amd+mi325, amd+mi355, amd+rocm720 (skipped), amd+x8 (skipped); 4 jobs
  1: amd-tail; 1 job

shards:
  amd+mi325: makespan 1m10s / lower bound 1m5s (optimal)
  amd+mi325[0] est 1m0s, 1 file:
    tests/test_a.py
  amd+mi325[1] est 1m10s, 2 files:
    tests/test_b.py
    tests/test_c.py
  amd+mi355: makespan 1m10s / lower bound 1m5s (optimal)
  amd+mi355[0] est 1m0s, 1 file:
    tests/test_a.py
  amd+mi355[1] est 1m10s, 2 files:
    tests/test_b.py
    tests/test_c.py
  amd-tail: makespan 10s / lower bound 10s (optimal)
  amd-tail[0] est 10s, 1 file:
    tests/test_tail.py

images: cuda=skip, rocm=build

accelerator hours (est_time x accelerators per runner): 0.07 scheduled, 0.07 skipped (labels 0.04, cadence 0.04)
  amd+mi325: 0.04 scheduled, 0.00 skipped; 1 accelerator per runner (no accelerators entry matches)
  amd+mi355: 0.04 scheduled, 0.00 skipped; 1 accelerator per runner (no accelerators entry matches)
  amd+rocm720: 0.00 scheduled, 0.04 skipped; 1 accelerator per runner (no accelerators entry matches)
  amd+x8: 0.00 scheduled, 0.04 skipped; 1 accelerator per runner (no accelerators entry matches)
  amd-tail: 0.00 scheduled, 0.00 skipped; 1 accelerator per runner (no accelerators entry matches)
warning: diff unavailable: no --diff or --base was given
"""

NIGHTLY_TEXT = """\
ci-policy plan: schedule, cadence nightly, trust trusted
PR labels: (none)
included labels: megatron
flags: bypass-fastfail, write-baseline, admit-nightly

STAGE        BACKEND  DECISION  TESTS  SHARDS  EST WALL
amd+mi325    rocm     RUN           3       2     1m10s
  run: schedule event runs every stage with selected tests (3 selected)
  run: variant mi325 of amd on runs_on [mi325]
amd+mi355    rocm     RUN           3       2     1m10s
  run: schedule event runs every stage with selected tests (3 selected)
  run: variant mi355 of amd on runs_on [mi355]
amd+rocm720  rocm     RUN           3       2     1m10s
  run: schedule event runs every stage with selected tests (3 selected)
  run: variant rocm720 of amd on runs_on [mi325], image ghcr.io/org/ci-rocm:rocm720: the nightly cadence is \
one of its cadences (nightly)
amd+x8       rocm     RUN           3       2     1m10s
  run: schedule event runs every stage with selected tests (3 selected)
  run: variant x8 of amd on runs_on [mi355x8]: its requires_labels (run-x8) gate pull requests only
amd-tail     rocm     RUN           1       1       10s
  run: schedule event runs every stage with selected tests (1 selected)

waves, one after another: every wave runs, whatever the earlier ones did (bypass_fastfail)
  0: amd+mi325, amd+mi355, amd+rocm720, amd+x8; 8 jobs
  1: amd-tail; 1 job

shards:
  amd+mi325: makespan 1m10s / lower bound 1m5s (optimal)
  amd+mi325[0] est 1m0s, 1 file:
    tests/test_a.py
  amd+mi325[1] est 1m10s, 2 files:
    tests/test_b.py
    tests/test_c.py
  amd+mi355: makespan 1m10s / lower bound 1m5s (optimal)
  amd+mi355[0] est 1m0s, 1 file:
    tests/test_a.py
  amd+mi355[1] est 1m10s, 2 files:
    tests/test_b.py
    tests/test_c.py
  amd+rocm720: makespan 1m10s / lower bound 1m5s (optimal)
  amd+rocm720[0] est 1m0s, 1 file:
    tests/test_a.py
  amd+rocm720[1] est 1m10s, 2 files:
    tests/test_b.py
    tests/test_c.py
  amd+x8: makespan 1m10s / lower bound 1m5s (optimal)
  amd+x8[0] est 1m0s, 1 file:
    tests/test_a.py
  amd+x8[1] est 1m10s, 2 files:
    tests/test_b.py
    tests/test_c.py
  amd-tail: makespan 10s / lower bound 10s (optimal)
  amd-tail[0] est 10s, 1 file:
    tests/test_tail.py

images: cuda=skip, rocm=build

accelerator hours (est_time x accelerators per runner): 0.15 scheduled, 0.00 skipped
  amd+mi325: 0.04 scheduled, 0.00 skipped; 1 accelerator per runner (no accelerators entry matches)
  amd+mi355: 0.04 scheduled, 0.00 skipped; 1 accelerator per runner (no accelerators entry matches)
  amd+rocm720: 0.04 scheduled, 0.00 skipped; 1 accelerator per runner (no accelerators entry matches)
  amd+x8: 0.04 scheduled, 0.00 skipped; 1 accelerator per runner (no accelerators entry matches)
  amd-tail: 0.00 scheduled, 0.00 skipped; 1 accelerator per runner (no accelerators entry matches)
"""


def test_a_pull_request_runs_the_variants_of_its_cadence_and_a_nightly_run_every_variant(repo, capsys):
    assert run(["plan", "--repo", str(repo), *PR], capsys) == (0, PR_TEXT, "")
    assert run(["plan", "--repo", str(repo), *NIGHTLY], capsys) == (0, NIGHTLY_TEXT, "")


def test_a_variant_s_requires_labels_select_it_on_a_pull_request(repo, capsys):
    without = {name: (decision, reasons[-1]) for name, decision, reasons, _on, _sh in stages_of(repo, capsys, *PR)}
    assert without["amd+x8"] == (
        "skip", "skip: the PR lacks the label run-x8, which variant x8 requires (variants[].requires_labels)")
    labelled = {name: (decision, reasons[-1], on, shards)
                for name, decision, reasons, on, shards in stages_of(repo, capsys, *PR, "--label", "run-x8")}
    assert labelled["amd+x8"] == (
        "run", "run: variant x8 of amd on runs_on [mi355x8]: the PR carries run-x8 (variants[].requires_labels)",
        ["mi355x8"], [["tests/test_a.py"], ["tests/test_b.py", "tests/test_c.py"]])
    # The label gates the variant alone: the other variants run the same either way.
    assert {k: v[:2] for k, v in labelled.items() if k != "amd+x8"} == {
        k: v for k, v in without.items() if k != "amd+x8"}


def test_each_variant_has_its_own_shards_and_jobs_in_the_stage_s_wave(repo, capsys):
    rc, out, _err = run(["plan", "--repo", str(repo), *NIGHTLY, "--format", "json"], capsys)
    doc = json.loads(out)
    assert rc == 0
    split = [["tests/test_a.py"], ["tests/test_b.py", "tests/test_c.py"]]
    assert [(s["name"], s["runs_on"], [sh["files"] for sh in s["shards"]], s["wave"]) for s in doc["stages"]] == [
        ("amd+mi325", ["mi325"], split, 0), ("amd+mi355", ["mi355"], split, 0), ("amd+rocm720", ["mi325"], split, 0),
        ("amd+x8", ["mi355x8"], split, 0), ("amd-tail", ["mi325"], [["tests/test_tail.py"]], 1)]
    assert [(j["stage"], j["lane"], j["shards"], j["runs_on"], j["image"], j["timeout_minutes"], j["wave"])
            for j in doc["jobs"]] == [
        ("amd+mi325", 0, "0", ["mi325"], "", 360, 0),
        ("amd+mi325", 1, "1", ["mi325"], "", 360, 0),
        # The variant's timeout_per_file (900 s a file), not the stage's none.
        ("amd+mi355", 0, "0", ["mi355"], "", 25, 0),
        ("amd+mi355", 1, "1", ["mi355"], "", 40, 0),
        ("amd+rocm720", 0, "0", ["mi325"], "ghcr.io/org/ci-rocm:rocm720", 360, 0),
        ("amd+rocm720", 1, "1", ["mi325"], "ghcr.io/org/ci-rocm:rocm720", 360, 0),
        ("amd+x8", 0, "0", ["mi355x8"], "", 360, 0),
        ("amd+x8", 1, "1", ["mi355x8"], "", 360, 0),
        ("amd-tail", 0, "0", ["mi325"], "", 360, 1),
    ]


def test_a_plan_directory_runs_one_variant_by_its_key(repo, tmp_path, capsys):
    planned = tmp_path / "planned"
    planned.mkdir()
    assert run(["plan", "--repo", str(repo), *NIGHTLY, "--json-out", str(planned / "plan.json"),
                "--stage-plans", str(planned / "stages")], capsys)[0] == 0
    assert sorted(p.name for p in (planned / "stages").iterdir()) == [
        "amd+mi325.json", "amd+mi355.json", "amd+rocm720.json", "amd+x8.json", "amd-tail.json"]
    own = json.loads((planned / "stages" / "amd+mi355.json").read_text())
    assert ([(s["name"], s["runs_on"]) for s in own["stages"]], own["run_settings"]["timeout_per_file"]) == (
        [("amd+mi355", ["mi355"])], 900)
    assert run(["list", "--repo", str(repo), "--plan", str(planned), "--stage", "amd+rocm720", "--shard", "1"],
               capsys) == (0, "tests/test_b.py\ntests/test_c.py\n", "")
    assert run(["list", "--repo", str(repo), "--plan", str(planned), "--stage", "amd", "--shard", "1"], capsys) == (
        2, "", "ci-policy list: error: --stage: 'amd' names 4 planned stages, one per backend or variant: amd+mi325, "
               "amd+mi355, amd+rocm720, amd+x8\n    hint: pass --stage amd+mi325 or amd+mi355 or amd+rocm720 or "
               "amd+x8\n")
    proc = cli(repo, "run", "--plan", str(planned), "--stage", "amd+mi355", "--shard", "1", "--python", sys.executable,
               "--timings-out", str(tmp_path / "t.jsonl"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Enabled 2 test(s) (est total 70s) for amd+mi355 shard 1:\n"
                                  "  tests/test_b.py (est 40s)\n  tests/test_c.py (est 30s)\ntest_b.py\n")
    assert [(r["file"], r["stage"], r["status"]) for r in map(json.loads, (tmp_path / "t.jsonl").read_text()
                                                                 .splitlines())] == [
        ("tests/test_b.py", "amd+mi355", "pass"), ("tests/test_c.py", "amd+mi355", "pass")]


def test_file_run_takes_a_variant_by_its_key_else_the_first(repo, capsys):
    def shown(*named: str) -> tuple[int, str, str]:
        return run(["file-run", "--repo", str(repo), "--file", "tests/test_a.py", *named, "--format", "text"], capsys)

    options = "container options: --device /dev/kfd --device /dev/dri --group-add video --group-add render\n"
    assert shown() == (0, "file: tests/test_a.py\nstage: amd (rocm)\nruns on: mi325\nimage: -\n" + options
                       + "timeout: 15m0s\n", "")
    assert shown("--stage", "amd+rocm720") == (
        0, "file: tests/test_a.py\nstage: amd (rocm)\nruns on: mi325\nimage: ghcr.io/org/ci-rocm:rocm720\n" + options
        + "timeout: 15m0s\n", "")
    assert shown("--stage", "amd+mi355")[1].splitlines()[2] == "runs on: mi355"
    assert shown("--stage", "amd+mi300") == (1, "", (
        "tests/test_a.py: stage amd has no variant 'mi300' (its variants: amd+mi325, amd+mi355, amd+rocm720, "
        "amd+x8)\n    hint: name one of: amd+mi325, amd+mi355, amd+rocm720, amd+x8\nci-policy: 1 error\n"))


HEAD = "version: 1\ndiscovery:\n  roots: [tests]\nstages:\n  - name: amd\n    backend: rocm\n"
GATED = "    runs_on: [mi325]\n    cadences: [regular, nightly]\n    variants:\n"

VARIANT_ERRORS = [
    (GATED + "      - {name: mi325, colour: red}\n",
     [(".github/ci-policy.yml:10:23", "CP102 config-unknown-key", "stages[0].variants[0].colour: unknown key")]),
    (GATED + "      - {name: mi325}\n      - {name: mi325, runs_on: [mi355]}\n",
     [(".github/ci-policy.yml:11:16", "CP106 config-duplicate",
       "stages[0].variants[1].name: duplicate variant name 'mi325' (also stages[0].variants[0])")]),
    (GATED + "      - {name: mi355, cadences: [weekly]}\n",
     [(".github/ci-policy.yml:10:9", "CP108 config-inconsistent",
       "stages[0].variants[0].cadences: weekly is not a cadence of the stage (regular, nightly), so the variant "
       "would never run in it")]),
    (GATED + "      - {name: mi355, image: 'docker.io/org/rocm:7'}\n",
     [(".github/ci-policy.yml:10", "CP108 config-inconsistent",
       "stages[0].variants[0].image: 'docker.io/org/rocm:7' is not in the image registry ghcr.io "
       "(image_build.registry)")]),
    (GATED + "      - {name: mi355, image: ghcr.io/org/rocm}\n",
     [(".github/ci-policy.yml:10:30", "CP105 config-invalid-value",
       "stages[0].variants[0].image: 'ghcr.io/org/rocm' is not an image reference REPOSITORY:TAG "
       "(e.g. ghcr.io/org/ci-rocm:rocm720)")]),
    ("    external: true\n    variants:\n      - {name: mi355, runs_on: [mi355]}\n",
     [(".github/ci-policy.yml:9:7", "CP108 config-inconsistent",
       "stages[0].variants: has no effect: an external stage is run by another system, never planned here")]),
    ("    variants:\n      - {name: mi325, runs_on: [mi325]}\n      - {name: mi355}\n",
     [(".github/ci-policy.yml:9:9", "CP103 config-missing-key",
       "stages[0].variants[1].runs_on: required: the stage has no runs_on for its variants to default to")]),
    ("    runs_on: [mi325]\n    variants: [{name: a}, {name: b}]\n"
     "  - {name: tail, backend: rocm, runs_on: [mi325], after: [amd+a]}\n",
     [(".github/ci-policy.yml:9:59", "CP109 config-after-unknown",
       "stages[1].after[0]: names the variant 'amd+a': a stage waits for every variant of 'amd', which share its "
       "wave")]),
]


@pytest.mark.parametrize("stage, expected", VARIANT_ERRORS)
def test_a_wrong_variant_is_a_located_error(make_repo, capsys, stage, expected):
    repo = make_repo(FILES, config=HEAD + stage, labels=LABELS)
    rc, out, _err = run(["lint", "--repo", str(repo), "--format", "json"], capsys)
    assert rc == 1
    assert [(f"{d['path']}:{d['line']}" + (f":{d['col']}" if d.get("col") else ""), f"{d['code']} {d['name']}",
             d["message"]) for d in json.loads(out)["errors"]] == expected


def test_a_changed_test_file_affects_every_variant_of_its_stage(repo, tmp_path, capsys):
    diff = tmp_path / "diff"
    diff.write_bytes(b"M\0tests/test_a.py\0")
    got = {name: (decision, reasons) for name, decision, reasons, _on, _sh
           in stages_of(repo, capsys, *PR, "--diff", str(diff))}
    assert got["amd+mi355"] == ("run", ["run: tests/test_a.py changed", "run: requested by run-ci-megatron",
                                        "run: variant mi355 of amd on runs_on [mi355]"])
    assert got["amd+mi325"][1][0] == "run: tests/test_a.py changed"
