"""Random checkouts and triggers for the plan-compatibility corpus (`tests/plan/test_compat.py`).

- `case(seed)` builds, from `random.Random(seed)` only, one checkout (configuration,
  label registry, test files) written with none of the stage-policy keys added after the
  corpus was recorded, plus a trigger and a diff.
- The plan JSON of every case was recorded in `tests/data/golden/plan/compat.json`;
  regenerate only on purpose (`pytest --regen-goldens`), and review the diff: every
  change there is a change of behaviour for configurations that did not ask for one.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

LABELS = ("megatron", "fsdp", "sglang", "long", "session")
CRONS = {"0 1 * * *": "nightly", "0 2 * * 6": "weekly", "0 3 * * *": "regular", "0 4 1 * *": "release"}
PATHS = ("docs/guide.md", "README.md", "minirl/backends/megatron.py", "minirl/rollout/sglang.py",
         "minirl/core/loss.py", "setup.py", "tests/e2e/test_new.py", "kernels/jit/fused.cu")
MAIN = '\nif __name__ == "__main__":\n    main()\n'


@dataclass(frozen=True)
class Case:
    seed: int
    files: dict[str, str]
    event: str
    labels: tuple[str, ...]
    schedule: str | None
    cadence: str | None
    diff: tuple[tuple[str, str], ...] | None  # (status, path); None: unavailable

    def write(self, root: Path) -> Path:
        for rel, text in self.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return root

    def diff_bytes(self) -> bytes | None:
        if self.diff is None:
            return None
        return b"".join(f"{status}\0{path}\0".encode() for status, path in self.diff)


def _stages(r: random.Random) -> list[dict]:
    stages = []
    for i in range(r.randint(1, 5)):
        backend = r.choice(("cpu", "cuda", "cuda", "rocm"))
        stage: dict = {"name": f"stage-{chr(97 + i)}-{backend}", "backend": backend}
        if backend != "cpu":
            stage["runs_on"] = [f"{backend}-runner"]
        if r.random() < 0.6:
            stage["partitions"] = r.randint(1, 4)
        if r.random() < 0.3:
            stage["diff_pruned"] = r.random() < 0.5
        if r.random() < 0.08:
            stage["external"] = True
        stages.append(stage)
    return stages


def case(seed: int) -> Case:
    r = random.Random(seed)
    labels = sorted(r.sample(LABELS, r.randint(2, 5)))
    stages = _stages(r)
    gpu_requires_labels = r.random() < 0.5
    config: dict = {"version": 1, "gpu_requires_labels": gpu_requires_labels,
                    "discovery": {"roots": ["tests/e2e"]}, "stages": stages}
    cpu = [s["name"] for s in stages if s["backend"] == "cpu"]
    if cpu and r.random() < 0.5:
        config["discovery"]["roots"].append("tests/unit")
        config["discovery"]["implicit"] = [{"root": "tests/unit", "backend": "cpu", "suite": r.choice(cpu),
                                            "est_time": r.choice((1, 5, 30))}]
    if r.random() < 0.7:
        config["cadences"] = {"schedules": dict(r.sample(sorted(CRONS.items()), r.randint(1, 4)))}
        if r.random() < 0.5:
            config["cadences"]["nightly_exclude"] = r.sample(labels, r.randint(1, 2))
    if r.random() < 0.4:
        config["scopes"] = {"run-ci-all": None}
        if r.random() < 0.5:
            config["scopes"]["run-ci-most"] = {"exclude": r.sample(labels, 1)}
    selection: dict = {}
    if r.random() < 0.6:
        selection["no_gpu_paths"] = r.sample(["docs/**", "**/*.md", "setup.py"], r.randint(1, 3))
    if r.random() < 0.6:
        selection["rules"] = [{"paths": ["minirl/backends/**"], "labels": [r.choice(labels)]}]
        if r.random() < 0.5:
            selection["rules"].append({"paths": ["minirl/rollout/*.py"], "labels": r.sample(labels, 2)})
    if r.random() < 0.3:
        selection["explicit"] = r.choice(("run", "prune"))
    if selection:
        config["selection"] = selection

    files = {".github/ci-policy.yml": json.dumps(config, indent=1) + "\n",
             "labels.py": "KNOWN_LABELS = {\n" + "".join(f'    "{n}": "the {n} tests",\n' for n in labels) + "}\n"}
    for i in range(r.randint(1, 9)):
        regs = []
        main = False
        for stage in r.sample(stages, r.randint(1, min(2, len(stages)))):
            marker = {"cpu": "register_cpu_ci", "cuda": "register_cuda_ci", "rocm": "register_rocm_ci"}
            args = [f"est_time={r.choice((10, 60, 120, 300, 600, 1800))}", f'suite="{stage["name"]}"']
            if stage["backend"] != "cpu" and gpu_requires_labels or r.random() < 0.5:
                args.append(f"labels={r.sample(labels, r.randint(1, 2))!r}")
            if r.random() < 0.2:
                args.append("nightly=True")
            if r.random() < 0.1:
                args.append('disabled="flaky"')
            regs.append(f"{marker[stage['backend']]}({', '.join(args)})\n")
            main = main or stage["backend"] != "cpu"
        files[f"tests/e2e/test_{i}.py"] = "".join(regs) + (MAIN if main or r.random() < 0.5 else "")
    if r.random() < 0.06:  # an invalid test file: the plan is partial
        files["tests/e2e/test_broken.py"] = 'register_cuda_ci(est_time="soon", suite="nowhere")\n'
    if "implicit" in config["discovery"]:
        for i in range(r.randint(1, 3)):
            files[f"tests/unit/test_u{i}.py"] = "def test_x():\n    pass\n"

    event = r.choice(("pull_request", "pull_request", "pull_request", "schedule", "workflow_dispatch"))
    pr_labels: tuple[str, ...] = ()
    schedule = cadence = None
    diff: tuple[tuple[str, str], ...] | None = None
    if event == "pull_request":
        pool = [f"run-ci-{n}" for n in labels] + ["documentation", "nightly", "bypass-fastfail"]
        pool += list(config.get("scopes", {}))
        pr_labels = tuple(r.sample(pool, r.randint(0, 3)))
        if r.random() < 0.9:
            changed = r.sample(PATHS + tuple(f for f in files if f.startswith("tests/")), r.randint(1, 4))
            diff = tuple((r.choice("MAD"), p) for p in sorted(changed))
    elif event == "schedule":
        crons = list(config.get("cadences", {}).get("schedules", {}))
        if not crons:
            event = "workflow_dispatch"
        else:
            schedule = r.choice(crons)
    if event == "workflow_dispatch" and r.random() < 0.5:
        cadence = r.choice(("regular", "nightly", "weekly", "release"))
    return Case(seed=seed, files=files, event=event, labels=pr_labels, schedule=schedule, cadence=cadence, diff=diff)
