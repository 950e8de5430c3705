"""The outcome of a pipeline run: what its one required check (`ci-policy result`) decides.

- In: the plan job's `plan_complete` output (`true`, `false`, or None when the plan job
  wrote none) and the needed jobs' results: job id -> `{"result", "outputs"}` (GitHub's
  `toJSON(needs)` shape; `outputs` optional); from the plan file, when the result job has
  it, the stages held back for trust (`held_for_trust`: each stage skipped with
  `UNTRUSTED_REASON` or `UNLABELLED_REASON`, and its reason), the invalid files, and the head SHA
  the plan is for.
- Out: a frozen `Outcome`: `ok`, one reason per failure, each job's result, a one-line
  summary, and the head awaiting a maintainer's approval (None when none is).
- Fails, one reason each: a head awaiting approval (any stage held back for trust: an
  outside contributor's head whose accelerator stages never ran is never a pass), then one
  per such stage with its reason; a missing plan (no `plan_complete`), a partial plan
  (`plan_complete` false; the invalid files named, from the plan file or a job's
  `invalid_files` output), every needed job whose result is `failure` or `cancelled`.
- Passes otherwise, saying why: every job succeeded or was skipped; when no job but the plan
  job (the one with a `plan_complete` output, else the one named `plan`) ran, "every stage
  skipped", with the jobs skipped and the stages the plan skipped
  (a job's `skipped_stages` output). A skipped job is a decision the plan explained, never a
  failure.
- Refused: as a `UsageError` naming its option (exit 2): `needs` that is not an object of jobs,
  each with a known `result` and, when given, an `outputs` object of strings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ci_policy.errors import UsageError
from ci_policy.plan.policy import UNLABELLED_REASON, UNTRUSTED_REASON
from ci_policy.read.strictjson import no_constants

RESULTS = ("success", "failure", "cancelled", "skipped")
NEEDS_HINT = ("pass the needed jobs' results as a JSON object of job id -> {\"result\": ...} through an env: "
              "variable")


@dataclass(frozen=True)
class Job:
    name: str
    result: str
    outputs: tuple[tuple[str, str], ...] = ()

    def output(self, name: str) -> str | None:
        return dict(self.outputs).get(name)


@dataclass(frozen=True)
class Outcome:
    ok: bool
    failures: tuple[str, ...]
    jobs: tuple[Job, ...]
    summary: str
    # The head SHA that waits for `/ok-to-test` (stages were held back for trust), else None.
    awaiting_approval: str | None = None
    held_for_trust: tuple[tuple[str, str], ...] = ()   # (stage, reason), in the plan's order

    def with_result(self, result: str) -> tuple[str, ...]:
        return tuple(job.name for job in self.jobs if job.result == result)


def parse_needs(text: str, source: str = "--needs-json") -> tuple[Job, ...]:
    """GitHub's `toJSON(needs)`, in its order; every error names the key at fault."""
    try:
        value = json.loads(text, parse_constant=no_constants)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"not valid JSON: {exc}", source=source, hint=NEEDS_HINT) from None
    if not isinstance(value, dict):
        raise UsageError(f"expected a JSON object of job id -> {{result, outputs}}, got {text[:80]!r}",
                         source=source, hint=NEEDS_HINT)
    jobs = []
    for name, job in value.items():
        if not isinstance(job, dict):
            raise UsageError(f"{name}: expected an object with a result, got {json.dumps(job)[:80]}",
                             source=source, hint=NEEDS_HINT)
        result = job.get("result")
        if result not in RESULTS:
            raise UsageError(f"{name}.result: expected one of {', '.join(RESULTS)}, got {json.dumps(result)[:80]}",
                             source=source, hint=NEEDS_HINT)
        outputs = job.get("outputs", {})
        if not isinstance(outputs, dict) or not all(isinstance(v, str) for v in outputs.values()):
            raise UsageError(f"{name}.outputs: expected an object of strings, got {json.dumps(outputs)[:80]}",
                             source=source, hint=NEEDS_HINT)
        jobs.append(Job(name, result, tuple(outputs.items())))
    return tuple(jobs)


def _names(jobs: tuple[Job, ...], output: str) -> list[str]:
    """The names a job's JSON-list output holds (`skipped_stages`, `invalid_files`); unreadable: none."""
    for job in jobs:
        text = job.output(output)
        if not text:
            continue
        try:
            value: Any = json.loads(text, parse_constant=no_constants)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
    return []


def held_for_trust(stages: Iterable[tuple[str, str, tuple[str, ...]]]) -> tuple[tuple[str, str], ...]:
    """The (stage, reason) of each stage held for a maintainer: skipped because the head was not
    approved or its diff calls for labels no maintainer set, or run without the tests its diff
    calls for (a `run:` reason saying so). `stages` are the plan's (name, decision, reasons), each reason as
    the plan writes it (`skip: untrusted head not approved`)."""
    held = []
    for name, decision, reasons in stages:
        bare = [r.removeprefix(f"{decision}: ") for r in reasons]
        reason = next((r for r in bare if r.startswith(UNLABELLED_REASON)
                       or (decision == "skip" and r.startswith(UNTRUSTED_REASON))), None)
        if reason is not None:
            held.append((name, reason))
    return tuple(held)


def awaiting_text(head_sha: str, held: tuple[tuple[str, str], ...] = ()) -> str:
    """The one reason an outside contributor's head fails while stages wait for a maintainer:
    an approval (`/ok-to-test`) when any stage waits for one, else the labels its diff calls for."""
    if held and not any(reason.startswith(UNTRUSTED_REASON) for _stage, reason in held):
        return ("awaiting a maintainer's labels: this head is an outside contributor's, and its diff calls for "
                "tests that no maintainer's label selects, so they did not run")
    return (f"awaiting `/ok-to-test {head_sha or '<head sha>'}` from a maintainer: this head is an outside "
            "contributor's, not approved, so its accelerator stages did not run")


def outcome(plan_complete: bool | None, jobs: tuple[Job, ...], *,
            held: tuple[tuple[str, str], ...] = (), head_sha: str = "",
            invalid: tuple[str, ...] | None = None, skipped_stages: tuple[str, ...] | None = None) -> Outcome:
    """`held`: the stages held back for trust (`held_for_trust`); `invalid` and `skipped_stages`:
    the plan file's invalid files and skipped stages (None: a job's `invalid_files` and
    `skipped_stages` outputs, if any)."""
    failures = []
    if held:
        # Never a pass while a stage was skipped only because nobody approved the head: a
        # required check that is green here would let a fork PR merge untested.
        failures.append(awaiting_text(head_sha, held))
        failures += [f"stage {stage} did not run: {reason}" if reason.startswith(UNTRUSTED_REASON)
                     else f"stage {stage} waits for a maintainer: {reason}" for stage, reason in held]
    if plan_complete is None:
        failures.append("the plan is missing: the plan job wrote no plan_complete output, so nothing says "
                        "which stages had to run")
    elif not plan_complete:
        files = list(invalid) if invalid is not None else _names(jobs, "invalid_files")
        named = f": {len(files)} invalid test file(s) not scheduled: {', '.join(files)}" if files else ""
        failures.append(f"the plan is partial{named} (see the plan job's annotations)")
    for job in jobs:
        if job.result == "failure":
            failures.append(f"job {job.name} failed")
        elif job.result == "cancelled":
            failures.append(f"job {job.name} was cancelled")
    if failures:
        return Outcome(False, tuple(failures), jobs, f"{len(failures)} reason(s) to fail",
                       head_sha if held else None, held)
    ran = [job.name for job in jobs if job.result == "success"]
    skipped = [job.name for job in jobs if job.result == "skipped"]
    # The plan job: the one with a plan_complete output (or, without outputs, named plan).
    planners = {job.name for job in jobs if job.output("plan_complete") is not None} or {"plan"}
    if skipped and not set(ran) - planners:
        # Only the plan ran: what ran nothing is the plan's decision, with its reasons in its summary.
        why = [f"jobs skipped: {', '.join(skipped)}"]
        stages = list(skipped_stages) if skipped_stages is not None else _names(jobs, "skipped_stages")
        if stages:
            why.append(f"stages the plan skipped: {', '.join(stages)}")
        return Outcome(True, (), jobs, "every stage skipped: " + "; ".join(why))
    if not jobs:
        return Outcome(True, (), jobs, "no job was needed")
    summary = f"every needed job succeeded ({', '.join(ran)})"
    if skipped:
        summary += f" or was skipped ({', '.join(skipped)})"
    return Outcome(True, (), jobs, summary)


def parse_plan_complete(value: str) -> bool | None:
    """`true`/`false`; "" (the output of a plan job that did not finish) is None."""
    if value == "":
        return None
    if value not in ("true", "false"):
        raise UsageError(f"expected true, false or empty, got {value[:80]!r}", source="--plan-complete",
                         hint="pass ${{ needs.plan.outputs.plan_complete }}")
    return value == "true"
