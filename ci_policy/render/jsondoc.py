"""JSON renderers: the public documents of `registry` and `plan` (`"schema": 1`).

- In: registrations, a `Plan`.
- Out: JSON text (two-space indented) or the dict it is made of; field order is stable.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ci_policy.model.registry import Registration
from ci_policy.plan.build import Plan

JSON_SCHEMA_VERSION = 1


def registry_json(registrations: Iterable[Registration]) -> str:
    return json.dumps({"schema": JSON_SCHEMA_VERSION,
                       "registrations": [r.as_dict() for r in registrations]}, indent=2)


def plan_dict(plan: Plan) -> dict[str, Any]:
    policy = plan.policy
    return {
        "schema": JSON_SCHEMA_VERSION,
        "event": policy.event,
        "cadence": policy.cadence,
        "raw_labels": list(policy.raw_labels),
        "include_labels": list(policy.include_labels),
        "bypass_fastfail": policy.bypass_fastfail,
        "write_baseline": policy.write_baseline,
        "diff": {"available": plan.diff.available, "files": list(plan.diff.files),
                 **({} if plan.diff.available else {"reason": plan.diff.reason})},
        "stages": [{
            "name": s.name,
            "backend": s.stage.backend,
            "decision": s.decision,
            "reasons": list(s.reasons),
            "runs_on": list(s.stage.runs_on),
            "tests": [{"file": r.file, "est_time": r.est_time, "est_source": r.est_source} for r in s.tests],
            "shards": [sh.as_dict() for sh in s.shards],
            "invalid": [{"file": r.file, "reason": why} for r, why in s.invalid],
        } for s in plan.stages],
        "skipped_stages": list(plan.skipped_stages),
        "images": dict(plan.images),
        "warnings": list(plan.warnings),
    }


def plan_json(plan: Plan) -> str:
    return json.dumps(plan_dict(plan), indent=2)
