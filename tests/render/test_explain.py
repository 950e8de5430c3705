"""render: `plan --explain` as text and JSON; a hostile path stays on its line."""

from __future__ import annotations

import json

from render_cases import pr_plan, write_repo

from ci_policy.plan.explain import explain
from ci_policy.render.jsondoc import explain_json
from ci_policy.render.text import explain_text


def test_explain_text_of_a_registered_file(tmp_path):
    plan = pr_plan(write_repo(tmp_path), "run-ci-megatron")
    assert explain_text(explain(plan, "tests/test_small.py"), plan) == (
        "ci-policy plan --explain: pull_request, cadence regular, trust trusted\n"
        "tests/test_small.py is registered to 1 stage (gpu); it runs in gpu\n"
        "  gpu (cuda, line 3): RUN\n"
        "    stage: run: the diff is unavailable (no --diff or --base was given), so every runnable stage runs\n"
        "    stage: run: requested by run-ci-megatron\n"
        "    file: selected: label megatron included by run-ci-megatron\n"
        "    est_time 1m0s; shard 1 of 2")


def test_a_path_with_a_newline_cannot_start_a_line_of_its_own(tmp_path):
    plan = pr_plan(write_repo(tmp_path))
    text = explain_text(explain(plan, "::error::x\n::warning::y.py"), plan)
    assert text.splitlines()[1] == ("./::error::x\\n::warning::y.py is not under a discovery root (tests), "
                                    "so it is not a test file")
    assert len(text.splitlines()) == 2


def test_explain_json_of_a_file_no_stage_selects(tmp_path):
    plan = pr_plan(write_repo(tmp_path))
    doc = json.loads(explain_json(explain(plan, "tests/test_small.py"), plan))
    assert doc == {
        "schema": 1, "file": "tests/test_small.py", "event": "pull_request", "cadence": "regular",
        "trust": "trusted",
        "status": "registered", "summary": "tests/test_small.py is registered to 1 stage (gpu); it runs in no stage",
        "changed": None,
        "stages": [{"stage": "gpu", "backend": "cuda", "line": 3, "decision": "skip",
                    "reasons": ["skip: no selected tests (its tests need one of: megatron)"], "selected": False,
                    "why": "not selected: needs one of: megatron", "est_time": 60, "est_source": "literal",
                    "shard": None, "shards": 0}],
        "invalid_stages": [], "diagnostics": []}
