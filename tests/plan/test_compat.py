"""Plans of configurations without the newer stage-policy keys keep the behaviour they had.

The property test writes those keys out at their defaults (stage cadences, the nightly
split, the merge-queue cadence, schedule entries as mappings, priority labels) for random
checkouts and checks the plan document is the same, field for field.

Each case of `compat_cases` (a random checkout, trigger and diff built from a seed) is
planned by `ci-policy plan --format json`; the outcome is compared with the one recorded
in `tests/data/golden/plan/compat.json` before the stage-policy keys (gated stages,
cadence-only stages, schedules choosing stages, path-owned stages, budgeted shards)
existed. Fields added to the plan document since are ignored; every recorded field,
reason texts included, must be equal.
"""

from __future__ import annotations

import json
from typing import Any

from compat_cases import Case, case
from helpers import assert_golden, read_golden
from helpers import run_cli as run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SEEDS = range(200)
GOLDEN = "plan/compat.json"


def outcome(seed: int, root, capsys, c: Case | None = None) -> dict[str, Any]:
    c = c or case(seed)
    root.mkdir(parents=True, exist_ok=True)
    repo = c.write(root / f"repo-{seed}")
    argv = ["plan", "--repo", str(repo), "--format", "json", "--event", c.event]
    argv += [arg for label in c.labels for arg in ("--label", label)]
    if c.schedule is not None:
        argv += ["--schedule", c.schedule]
    if c.cadence is not None:
        argv += ["--cadence", c.cadence]
    diff = c.diff_bytes()
    if diff is not None:
        (root / f"diff-{seed}").write_bytes(diff)
        argv += ["--diff", str(root / f"diff-{seed}")]
    rc, out, err = run(argv, capsys)
    return {"rc": rc, "plan": json.loads(out) if out else None, "stderr": err.replace(str(repo), "REPO")}


def recorded_part(actual: Any, recorded: Any) -> Any:
    """`actual` restricted to the keys `recorded` has, recursively (lists element by element)."""
    if isinstance(actual, dict) and isinstance(recorded, dict):
        return {k: recorded_part(actual[k], recorded[k]) if k in actual else "<missing>" for k in recorded}
    if isinstance(actual, list) and isinstance(recorded, list) and len(actual) == len(recorded):
        return [recorded_part(a, b) for a, b in zip(actual, recorded, strict=True)]
    return actual


def test_the_corpus_plans_as_recorded(tmp_path, capsys):
    outcomes = {str(seed): outcome(seed, tmp_path, capsys) for seed in SEEDS}
    import helpers

    if helpers.REGENERATE:
        assert_golden(GOLDEN, json.dumps(outcomes, indent=1, sort_keys=True) + "\n")
        return
    recorded = json.loads(read_golden(GOLDEN))
    assert sorted(recorded, key=int) == [str(s) for s in SEEDS]
    for seed in SEEDS:
        assert recorded_part(outcomes[str(seed)], recorded[str(seed)]) == recorded[str(seed)], f"seed {seed}"


def test_the_corpus_covers_what_it_is_for():
    """Plans of every event, both diff states, run and skip decisions, and some partial plans."""
    recorded = json.loads(read_golden(GOLDEN))
    plans = [o["plan"] for o in recorded.values() if o["plan"] is not None]
    assert len(plans) >= 150
    assert {p["event"] for p in plans} == {"pull_request", "schedule", "workflow_dispatch"}
    assert {p["diff"]["available"] for p in plans if p["event"] == "pull_request"} == {True, False}
    decisions = {s["decision"] for p in plans for s in p["stages"]}
    assert decisions == {"run", "skip"}
    assert any(o["rc"] == 1 and not o["plan"]["plan_complete"] for o in recorded.values())


def spelled_out(config_text: str) -> str:
    """The same configuration with every stage-policy key that can be written at its default, written."""
    config = json.loads(config_text)
    config.setdefault("cadences", {}).update({"nightly_selects": "all", "merge_group": "regular"})
    schedules = config["cadences"].get("schedules", {})
    config["cadences"]["schedules"] = {cron: {"cadence": cadence} for cron, cadence in schedules.items()}
    config["pull_request"] = {"priority_labels": []}
    for stage in config["stages"]:
        stage["cadences"] = ["regular", "nightly", "weekly", "release"]
    return json.dumps(config, indent=1) + "\n"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=10**9))
def test_the_new_keys_at_their_defaults_plan_the_same_json(tmp_path_factory, capsys, seed):
    root = tmp_path_factory.mktemp("compat")
    plain = outcome(seed, root, capsys)
    c = case(seed)
    c.files[".github/ci-policy.yml"] = spelled_out(c.files[".github/ci-policy.yml"])
    explicit = outcome(seed, root / "explicit", capsys, c)
    # The configuration's bytes differ by design: its content id, and so the inputs digest.
    for plan in (plain["plan"], explicit["plan"]):
        if plan is not None:
            assert plan["inputs"].pop("config").startswith("sha256:") and plan["inputs"].pop("digest")
    assert explicit == plain
