"""`plan`: the plan of a trigger (the plan inputs) for a checkout, and the documents written from it.

- In: a `PlanRequest`: the checkout and configuration, the `PlanInputs` (event, labels, schedule,
  cadence, a diff file or git revisions, trust, forced), how to scan (`ScanRequest`).
- Out: `plan(request)`: a `Planned` (the `Plan`, and the `Scan` it read the checkout with; the
  shard splits taken from and stored in the scan cache's directory when it has one);
  `plan_inputs(request, planned)` the plan JSON's `inputs` (the content ids of what it was built
  from, one `git ls-files` per command); `plan_command(...)` the `plan` command's `PlanResult`
  (the plan, its JSON document, each stage's plan), with `--json-out` and `--stage-plans` written;
  `explain(...)` why one file runs where it runs.
- Refused: inconsistent or malformed plan inputs, as `UsageError` naming the option (`--head`
  needs `--base`, a `--trust` that is no trust, a `--forced` not `true`/`false` or not with a push,
  a `--diff` file that does not exist); a `--json-out` or `--stage-plans` that cannot be written,
  or a `--stage-plans` directory inside the checkout (exit 2). Configuration and checkout errors
  are the core's (exit 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ci_policy.adapters.files import write_atomically
from ci_policy.adapters.git import CleanTree, git_diff
from ci_policy.adapters.scan_cache import DirSplitCache, inside
from ci_policy.app.requests import PlanRequest
from ci_policy.app.scanning import Scan, start_scan
from ci_policy.errors import InputError, UsageError
from ci_policy.plan.build import Plan, build_plan
from ci_policy.plan.policy import TRUSTS, Trigger, parse_labels_json, push_diff_unavailable
from ci_policy.read.checkout import check_relative
from ci_policy.read.diff import Diff, read_diff_file

if TYPE_CHECKING:
    from ci_policy.plan.explain import Explanation
    from ci_policy.plan.jobs import StageJobs


@dataclass(frozen=True)
class Planned:
    plan: Plan
    scan: Scan
    tree: CleanTree | None = None  # git's clean-tree check, started while the plan was built


def _given(value: str | None) -> str | None:
    return value or None  # a workflow passes every input on one line; GitHub gives "" for what the event lacks


def trigger_and_diff(request: PlanRequest) -> tuple[Trigger, Callable[[], Diff]]:
    """The trigger of the plan inputs, once they are consistent, and how to read their diff."""
    given = request.inputs
    schedule, cadence, base, head, forced = (_given(given.schedule), _given(given.cadence), _given(given.base),
                                             _given(given.head), _given(given.forced))
    trust = "trusted" if given.trust is None else given.trust
    if trust not in TRUSTS:
        # An empty value too: a workflow whose trust step failed must not run as trusted.
        raise UsageError(f"expected one of {', '.join(TRUSTS)}, got {trust!r}", source="--trust",
                         hint="pass the trust output of ci-policy pull-request")
    if forced not in (None, "true", "false"):
        raise UsageError(f"expected true or false, got {forced!r}", source="--forced",
                         hint="pass ${{ github.event.forced }}")
    if forced == "true" and given.event != "push":
        raise UsageError(f"only a push is forced, not a {given.event} event", source="--forced",
                         hint="pass --forced only with --event push")
    if head and not base:
        raise UsageError("needs --base", source="--head", hint="pass --base REV, or --diff FILE without --head")
    if given.diff and base:
        raise UsageError("pass either --diff or --base, not both", source="--diff")
    if given.labels_json is not None and given.labels:
        raise UsageError("pass either --labels-json or --label, not both", source="--labels-json")
    if given.diff and not Path(given.diff).exists():
        # A mistyped path is the caller's error: read as an unavailable diff, it would
        # silently run every stage. A workflow passes "" (no --diff) when it has none.
        raise UsageError(f"{given.diff} does not exist", source="--diff",
                         hint="pass the file `git diff --name-status -z -M BASE HEAD` wrote, or omit --diff")
    labels = parse_labels_json(given.labels_json) if given.labels_json is not None else given.labels
    trigger = Trigger(event=given.event, labels=labels, schedule=schedule, cadence=cadence, trust=trust)
    return trigger, lambda: _diff(request.repo, given.diff, base, head, forced == "true")


def _diff(repo: Path, diff_file: str | None, base: str | None, head: str | None, forced: bool) -> Diff:
    untrusted = push_diff_unavailable(base, head, forced)
    if untrusted is not None:
        return Diff.unavailable(untrusted)
    if diff_file:
        return read_diff_file(Path(diff_file))
    if base:
        return git_diff(repo, base, head or "HEAD")
    return Diff.unavailable("no --diff or --base was given")


def plan(request: PlanRequest, *, tree: bool = False) -> Planned:
    """The plan of these plan inputs; with `tree`, the clean-tree check `plan_inputs` needs runs
    while the plan is built."""
    trigger, diff = trigger_and_diff(request)  # the inputs are checked before the checkout is read
    scan = start_scan(request.scan)
    snapshot = scan.load(request.config)
    started = CleanTree(request.repo) if tree else None  # git answers while the plan is built
    splits = DirSplitCache(scan.cache) if scan.cache is not None else None
    built = build_plan(snapshot, trigger, diff(), splits)
    if splits is not None:
        splits.save()
    return Planned(built, scan, started)


def plan_inputs(request: PlanRequest, planned: Planned) -> dict[str, object]:
    """The plan JSON's `inputs` for a plan built here: the content ids of what it was built from."""
    # Imported here: a plan written nowhere needs no content ids
    # (tests/cli/test_startup.py::test_plan_imports_only_what_its_format_uses).
    from ci_policy.adapters.inputs import checkout_inputs
    from ci_policy.plan.inputs import inputs_dict

    config = planned.plan.config
    inputs = checkout_inputs(request.repo, request.config, config.labels_file, planned.plan.snapshot.files,
                             planned.scan.index())
    tree = (planned.tree or CleanTree(request.repo)).result()
    return inputs_dict(inputs.config, inputs.labels, dict(inputs.files), tree)


@dataclass(frozen=True)
class PlanCommand:
    plan: PlanRequest
    head_sha: str | None = None
    whole: bool = False               # the whole plan's JSON document is wanted (`--format json`)
    json_out: str | None = None       # `--json-out FILE`
    stage_plans: str | None = None    # `--stage-plans DIR`


@dataclass(frozen=True)
class PlanResult:
    plan: Plan
    jobs: StageJobs                   # its stage jobs: the waves and merged lanes the outputs show
    document: str | None              # the plan JSON, when wanted
    stage_plans: dict[str, str]       # stage -> its per-stage plan JSON, with `--stage-plans`


def plan_command(command: PlanCommand) -> PlanResult:
    wants_json = command.whole or command.json_out is not None or command.stage_plans is not None
    planned = plan(command.plan, tree=wants_json)  # one git listing for the scan and the plan's inputs
    # Imported here: `--explain` shows no stage jobs
    # (tests/cli/test_startup.py::test_plan_imports_only_what_its_format_uses).
    from ci_policy.plan.jobs import stage_jobs

    jobs = stage_jobs(planned.plan, command.head_sha)
    if not wants_json:
        return PlanResult(planned.plan, jobs, None, {})
    # Imported here: a plan printed as text or Markdown writes no plan document
    # (tests/cli/test_startup.py::test_plan_imports_only_what_its_format_uses).
    from ci_policy.app.plan_documents import plan_jsons

    inputs = plan_inputs(command.plan, planned)
    document, stage_plans = plan_jsons(planned.plan, command.head_sha, inputs,
                                       whole=command.whole or command.json_out is not None,
                                       stages=command.stage_plans is not None, jobs=jobs)
    if command.json_out is not None:
        _write_json_out(command.json_out, document)
    if command.stage_plans is not None:
        _write_stage_plans(command.stage_plans, command.plan.repo, stage_plans)
    return PlanResult(planned.plan, jobs, document, stage_plans)


def _write_json_out(path: str, document: str) -> None:
    try:
        write_atomically(Path(path), (document + "\n").encode("utf-8"), 0o644)
    except OSError as exc:
        raise UsageError(f"cannot write the plan file: {exc.strerror or exc}", source="--json-out",
                         hint="name a file in an existing, writable directory") from None


def _write_stage_plans(directory: str, repo: Path, documents: dict[str, str]) -> None:
    where = Path(directory)
    if inside(where, repo):
        raise UsageError(f"{directory} is inside the checkout", source="--stage-plans",
                         hint="name a directory outside the checkout (a pull request could have put a symlink there)")
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {directory}: {exc.strerror or exc}", source="--stage-plans",
                         hint="name a directory that can be created and written") from None
    for stage, document in documents.items():  # stage names are names (`read.names.NAME`): no slash, no dot first
        try:
            write_atomically(where / f"{stage}.json", (document + "\n").encode("utf-8"), 0o644)
        except OSError as exc:
            raise UsageError(f"cannot write the plan file of stage {stage}: {exc.strerror or exc}",
                             source="--stage-plans", hint="name a directory that can be written") from None


@dataclass(frozen=True)
class Explained:
    explanation: Explanation
    plan: Plan


def explain(request: PlanRequest, file: str) -> Explained:
    """Why `file` (repo-relative, else refused naming `--explain`) runs where it runs."""
    try:
        path = check_relative(file, field="path")
    except InputError as exc:
        raise UsageError(exc.message, source="--explain", hint=exc.hint) from None
    # Imported here: only `--explain` explains (tests/cli/test_startup.py::test_plan_imports_only_what_its_format_uses).
    from ci_policy.plan.explain import explain as explain_file

    built = plan(request).plan
    return Explained(explain_file(built, path), built)
