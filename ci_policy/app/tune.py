"""`tune`: est_time proposals from the timings of past runs, and what is done with them.

- In: a `TuneRequest`: the checkout, configuration and scan; the evidence (timing-record files
  or job logs, `--github-run` runs, or the last N completed runs of a workflow); the mode (report,
  check, apply, write an estimates file, open a pull request); the GitHub API URL, how to get the
  token (`token(needed_for)`), where a download's progress, the runs read and each warning go.
- Out: `prepare(request)` a `Tuning`: the proposals, each stage's shard balance before and after,
  the summary text and the evidence CSV (written to `csv` when named); then, by mode,
  `write_estimates` (the estimates file merged: `EstimatesWritten`), `open_pull_request` (the one
  tune pull request opened or updated, none when the estimates file did not change), `apply` (each
  est_time literal rewritten or skipped, with why: `Applied`). `shown_name` is how a download's
  name is shown.
- Refused: as a `UsageError` naming the option, before any request: no evidence; `--github-runs`
  without `--workflow` (and back), `--branch` or `--include-push` without `--github-runs`,
  `--allow-untrusted-runs` without runs; `--open-pr` without `--write-estimates` or with an
  estimates file outside the checkout; a malformed run; no repository for `--github-runs` or
  `--open-pr`; a missing token; `--apply` where est_time lives in an estimates file; the runs of
  a branch that is not the default one unless untrusted runs are allowed. A run that is not
  trusted (`InputErrors`, before anything is downloaded) unless allowed; unreadable evidence
  (`InputErrors`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ci_policy.adapters.github import client
from ci_policy.adapters.github.client import github_requester
from ci_policy.adapters.github.download import download_run, parse_run, shown_name
from ci_policy.adapters.github.scheduled import PR_BRANCH, default_branch, open_or_update_pr, run_trust, scheduled_runs
from ci_policy.adapters.tuning.apply import apply_to_file
from ci_policy.adapters.tuning.estimates import merge_estimates
from ci_policy.adapters.tuning.evidence import FileEvidence
from ci_policy.adapters.tuning.propose import (
    LOWER,
    RAISE,
    Proposal,
    StageBalance,
    backend_of,
    balance,
    deduplicate,
    normalise_paths,
    propose,
)
from ci_policy.adapters.tuning.report import csv_text, summary_text
from ci_policy.adapters.tuning.sources import collect
from ci_policy.app.requests import ScanRequest, github_repository
from ci_policy.app.scanning import start_scan
from ci_policy.errors import Diagnostic, InputError, InputErrors, UsageError

__all__ = ["Applied", "EstimatesWritten", "Progress", "PullRequest", "TuneRequest", "Tuning", "apply",
           "open_pull_request", "prepare", "shown_name", "write_estimates"]


class Progress(Protocol):
    """Where a run's downloads are shown (`adapters.github.download.Step` each)."""

    def __call__(self, step: Any) -> None: ...

    def done(self) -> None: ...

    def notice(self, line: str) -> None: ...


def _ignore(_line: Any) -> None:
    pass


class _Quiet:
    def __call__(self, step: Any) -> None:
        pass

    def done(self) -> None:
        pass

    def notice(self, line: str) -> None:
        pass


def _no_token(needed_for: str) -> str:
    raise UsageError(f"is empty: {needed_for} needs a token", source="$GITHUB_TOKEN")


@dataclass(frozen=True)
class TuneRequest:
    repo: Path
    config: str | None
    scan: ScanRequest
    sources: tuple[str, ...] = ()           # --from
    runs: tuple[str, ...] = ()              # --github-run
    last_runs: int | None = None            # --github-runs N
    workflow: str | None = None
    branch: str | None = None
    include_push: bool = False
    allow_untrusted: bool = False
    repository: str | None = None           # None: $GITHUB_REPOSITORY
    api_url: str = "https://api.github.com"
    token: Callable[[str], str] = _no_token  # the token, given what needs it
    csv: str | None = None
    apply: bool = False
    check: bool = False
    write_estimates: str | None = None
    open_pr: bool = False
    progress: Progress = dataclasses.field(default_factory=_Quiet)
    announce: Callable[[str], None] = _ignore   # the runs `--github-runs` read, before they are downloaded
    warn: Callable[[Diagnostic], None] = _ignore  # each file, archive or artifact skipped, and why

    @property
    def applying(self) -> bool:
        return bool(self.apply or self.check or self.write_estimates)


@dataclass(frozen=True)
class Tuning:
    proposals: list[Proposal]
    balances: list[StageBalance]
    summary: str                        # the proposals and balances, as text
    evidence_csv: str
    changing: list[Proposal]            # the proposals that raise or lower an est_time
    requester: Any = None               # the GitHub API, when a repository was named
    repository: str | None = None
    base: str = ""                      # the default branch, the pull request's base
    runs_read: tuple[int, ...] = ()
    estimates_rel: str | None = None    # the estimates file, repo-relative, for the pull request


@dataclass(frozen=True)
class EstimatesWritten:
    file: str
    entries: int
    before: str | None                  # the file's text before (None: there was none)


@dataclass(frozen=True)
class PullRequest:
    action: str                         # "none" when the estimates file did not change
    number: int | None
    url: str | None
    branch: str = PR_BRANCH


@dataclass(frozen=True)
class Applied:
    file: str
    backend: str
    current: float | None
    proposed: int
    status: str
    reason: str | None


def _check_github_options(request: TuneRequest) -> str | None:
    """Refuse inconsistent options before any request; the estimates file's repo-relative path."""
    if (request.last_runs is None) != (request.workflow is None):
        raise UsageError("--github-runs and --workflow go together", source="--workflow" if request.workflow is None
                         else "--github-runs", hint="e.g. --github-runs 10 --workflow pr-test.yml")
    if request.last_runs is None and (request.branch or request.include_push):
        raise UsageError("only applies to --github-runs", source="--branch" if request.branch else "--include-push")
    if request.allow_untrusted and not request.runs and request.last_runs is None:
        raise UsageError("only applies to --github-run and --github-runs", source="--allow-untrusted-runs")
    if not request.open_pr:
        return None
    if not request.write_estimates:
        raise UsageError("needs --write-estimates FILE (the estimates file the pull request changes)",
                         source="--open-pr")
    target = os.path.relpath(os.path.abspath(request.write_estimates), os.path.abspath(request.repo))
    if target.startswith(".."):
        raise UsageError(f"{request.write_estimates} is outside the checkout {request.repo}; the pull request "
                         "changes a file of the repository", source="--write-estimates")
    return Path(target).as_posix()


def prepare(request: TuneRequest) -> Tuning:
    """The evidence read and downloaded, and the proposals made from it (nothing is edited yet)."""
    if not request.sources and not request.runs and request.last_runs is None:
        raise UsageError("no evidence", source="--from", hint="pass --from PATH or --github-run RUN")
    estimates_rel = _check_github_options(request)
    secret = ""
    for spec in request.runs:  # every run is checked before anything is read or requested
        parse_run(spec)
    repository = None
    if request.last_runs is not None or request.open_pr:
        repository = github_repository(request.repository,
                                       "--github-runs" if request.last_runs is not None else "--open-pr")
    if request.runs or repository is not None:
        secret = request.token("--github-run" if request.runs else
                               "--github-runs" if request.last_runs is not None else "--open-pr")
    snapshot = start_scan(request.scan).load(request.config).require_valid()
    config = snapshot.config
    if request.apply and config.estimates_file:
        raise UsageError(f"this repository keeps est_time in {config.estimates_file} (estimates_file); "
                         "--apply would edit literals the plan does not use", source="--apply",
                         hint=f"use --write-estimates {config.estimates_file}")
    warnings: list[Diagnostic] = []  # each a warning naming the file, archive or artifact and why
    evidence = collect([Path(p) for p in request.sources], warnings)
    progress = request.progress

    def download(spec: str) -> list[FileEvidence]:
        before, client.NOTICE = client.NOTICE, progress.notice  # retries never write into the progress line
        try:
            return download_run(spec, secret, request.api_url, archive_max_bytes=config.tune.archive_max_bytes,
                                run_max_bytes=config.tune.run_max_bytes, warnings=warnings, progress=progress)
        finally:
            client.NOTICE = before
            progress.done()

    for spec, trust in _trusted_runs(request, secret):
        evidence += [dataclasses.replace(row, origin=trust.origin) for row in download(spec)]
    requester = None
    base = request.branch
    base_for_pr = ""
    runs_read: list[int] = []
    if repository is not None:
        requester = github_requester(secret, request.api_url, timeout=60)
        if base is None or request.open_pr or request.last_runs is not None:
            default = default_branch(requester, repository)
            base = base or default
            base_for_pr = default
            if request.last_runs is not None and base != default and not request.allow_untrusted:
                # Another branch's runs ran code nobody reviewed: their tests wrote the timings.
                raise UsageError(f"{base} is not the default branch {default}: its runs ran code nobody reviewed, "
                                 "whose tests could have written the timings they report", source="--branch",
                                 hint="read the default branch's runs (leave out --branch), or pass "
                                      "--allow-untrusted-runs to read these anyway")
        if request.last_runs is not None:
            assert request.workflow is not None and base is not None  # checked with the options
            runs = scheduled_runs(requester, repository, request.workflow, base, request.last_runs,
                                  include_push=request.include_push)
            runs_read = [r.id for r in runs]
            events = "schedule or push" if request.include_push else "schedule"
            request.announce(f"ci-policy tune: {len(runs)} completed {events} run(s) of {request.workflow} on {base}"
                             + (f": {', '.join(str(i) for i in runs_read)}" if runs else ""))
            for r in runs:
                origin = f"github {r.event} on {base}" + ("" if base == base_for_pr else " (untrusted)")
                evidence += [dataclasses.replace(row, origin=origin) for row in download(f"{repository}/{r.id}")]
    for warning in warnings:
        request.warn(warning)
    evidence = normalise_paths(evidence, snapshot.files)
    counted = deduplicate(evidence)
    proposals = propose(counted, snapshot, config.tune, applying=request.applying)
    evidence_csv = csv_text(evidence, proposals, lambda row: backend_of(row, snapshot) or "?", counted=counted)
    if request.csv:
        Path(request.csv).write_text(evidence_csv, encoding="utf-8")
    balances = balance(snapshot, proposals)
    return Tuning(proposals=proposals, balances=balances, summary=summary_text(proposals, balances),
                  evidence_csv=evidence_csv, changing=[p for p in proposals if p.action in (RAISE, LOWER)],
                  requester=requester, repository=repository, base=base_for_pr, runs_read=tuple(runs_read),
                  estimates_rel=estimates_rel)


def _trusted_runs(request: TuneRequest, secret: str) -> list[tuple[str, Any]]:
    """Each `--github-run` with its trust; every run is checked before any is downloaded."""
    if not request.runs:
        return []
    requester = github_requester(secret, request.api_url, timeout=60)
    defaults: dict[str, str] = {}
    found, errors = [], []
    for spec in request.runs:
        repository, run_id = parse_run(spec)
        if repository not in defaults:
            defaults[repository] = default_branch(requester, repository)
        trust = run_trust(requester, repository, run_id, defaults[repository])
        if not trust.trusted and not request.allow_untrusted:
            errors.append(InputError(
                f"run {run_id} of {repository} is a {trust.event or '?'} run on {trust.branch or '?'}, not a schedule "
                f"or push run on the default branch {defaults[repository]}: its tests could have written the "
                "timings it reports", path=spec,
                hint="read scheduled runs (--github-runs N --workflow FILE), or pass --allow-untrusted-runs to "
                     "read this one anyway"))
        found.append((spec, trust))
    if errors:
        raise InputErrors(errors)
    return found


def write_estimates(request: TuneRequest, tuning: Tuning) -> EstimatesWritten:
    """The changing proposals merged into the `write_estimates` file."""
    assert request.write_estimates is not None
    target = Path(request.write_estimates)
    before = target.read_text(encoding="utf-8") if target.is_file() else None
    count = merge_estimates(target, tuning.changing)
    return EstimatesWritten(str(target), count, before)


def open_pull_request(request: TuneRequest, tuning: Tuning, written: EstimatesWritten) -> PullRequest:
    """Open or update the one tune pull request; none when the estimates file did not change."""
    assert tuning.requester is not None and tuning.repository is not None and tuning.estimates_rel is not None
    after = Path(written.file).read_text(encoding="utf-8")
    changes = len(tuning.changing)
    if not changes or after == written.before:
        return PullRequest("none", None, None)
    estimates_rel = tuning.estimates_rel
    evidence_rel = Path(estimates_rel).with_suffix(".evidence.csv").as_posix()
    cited = ", ".join(str(r) for r in tuning.runs_read) or "the evidence given"
    body = (f"est_time estimates from the timings of runs {cited}.\n\n"
            f"- `{estimates_rel}`: {changes} estimate(s) changed\n"
            f"- `{evidence_rel}`: one row per (run, job, file), citing its source\n\n"
            f"```\n{tuning.summary}\n```\n\nWritten by `ci-policy tune --open-pr`; this branch is force-updated by "
            "each scheduled tune run.\n")
    action, number, url = open_or_update_pr(
        tuning.requester, tuning.repository, tuning.base,
        [(estimates_rel, after), (evidence_rel, tuning.evidence_csv)],
        title="ci-policy: update est_time estimates", body=body,
        message=f"ci-policy tune: update {estimates_rel} from runs {cited}")
    return PullRequest(action, number, url)


def apply(request: TuneRequest, tuning: Tuning) -> list[Applied]:
    """Each changing proposal's est_time literal rewritten in its test file, or skipped and why."""
    applied = []
    for p in tuning.changing:
        assert p.proposed is not None  # a raise or a lower always proposes a value
        result = apply_to_file(request.repo / p.file, p.backend, p.proposed, p.marker)
        applied.append(Applied(p.file, p.backend, p.current, p.proposed, result.status, result.reason or None))
    return applied
