"""`ci-policy pull-request` output: a pull request, its trust and its diff file.

- In: a `PullRequest`, its `TrustDecision` and the path the diff was written to ("" when
  it was not written).
- Out: text (one `name: value` line each), JSON (schema 1:
  `{"schema", "number", "head_sha", "base_sha", "labels", "trust", "trust_reason",
  "diff_file"}`) or `$GITHUB_OUTPUT` values (`number`, `head_sha`, `base_sha`,
  `labels_json` (a compact JSON list), `trust`, `diff_file`).
- Refused: nothing: the pull request was checked when the API answer was read
  (`adapters.github.pulls`).
"""

from __future__ import annotations

from ci_policy.plan.trust import PullRequest, TrustDecision
from ci_policy.render.escape import one_line
from ci_policy.render.github import github_output_lines
from ci_policy.render.jsondoc import JSON_SCHEMA_VERSION, dumps


def pull_request_outputs(pull: PullRequest, decision: TrustDecision, diff_file: str, delimiter: str) -> str:
    return github_output_lines({
        "number": str(pull.number), "head_sha": pull.head_sha, "base_sha": pull.base_sha,
        "labels_json": dumps(list(pull.labels), separators=(",", ":")), "trust": decision.trust,
        "diff_file": diff_file}, delimiter)


def pull_request_json(pull: PullRequest, decision: TrustDecision, diff_file: str) -> str:
    return dumps({"schema": JSON_SCHEMA_VERSION, "number": pull.number, "head_sha": pull.head_sha,
                       "base_sha": pull.base_sha, "labels": list(pull.labels), "trust": decision.trust,
                       "trust_reason": decision.reason, "diff_file": diff_file}, indent=2)


def pull_request_text(pull: PullRequest, decision: TrustDecision, diff_file: str) -> str:
    rows = [("pull request", f"#{pull.number}"), ("head", pull.head_sha), ("base", pull.base_sha),
            ("labels", ", ".join(pull.labels) or "-"), ("trust", f"{decision.trust} ({decision.reason})"),
            ("diff file", diff_file or "-")]
    return "\n".join(f"{name}: {one_line(value)}" for name, value in rows)
