"""`ci-policy tune`: propose est_time values from the timings of past runs.

- In: --repo, --config, evidence (--from files or directories, --github-run runs,
  --github-runs N --workflow FILE: the last N completed `schedule` runs of that workflow
  on the default branch, or --branch; `push` runs too only with --include-push; never a
  pull_request run), a mode (report, --check, --apply, --write-estimates), --csv,
  --open-pr, --format text|json.
- An artifact archive that cannot be read within the `tune` table's expansion caps is
  skipped; each is one warning on stderr naming the artifact and why.
- `--github-run` reads only runs it can trust, by the run's metadata from the API: a
  `schedule` or `push` run on the default branch. Another run (a pull request's, a
  branch's) ran code nobody reviewed whose tests could write its timing artifacts; it is
  refused (exit 1, before anything is downloaded) unless `--allow-untrusted-runs` is given,
  and its rows are then marked `(untrusted)` in the CSV's `origin` column. Likewise
  `--github-runs` with a `--branch` that is not the default branch (exit 2).
- `--github-run(s)` shows its downloads on stderr: on a terminal one line that updates
  (`ci-policy tune: run ID: job log 2/40 NAME`, then each timing artifact), cleared when the
  downloads are done; otherwise one line per timing artifact (`ci-policy tune: run ID: timing
  artifact 1/3 'NAME' (BYTES bytes)`). Only timing artifacts and job logs are downloaded; one
  over its cap is a warning, not the end of the run (see `adapters.github.download`).
- A torn last line of a timing-records file (see `records.py`) is dropped with a warning on
  stderr; the file's complete records are used.
- Out: the proposals and each stage's shard balance before and after; with --apply the
  est_time literals rewritten, with --write-estimates the estimates file; with --open-pr
  also one pull request (branch `ci-policy/tune-estimates`, force-updated) holding the
  estimates file and the CSV evidence, opened or updated, and none when the estimates
  file did not change. Exit 1 when --check finds a change, or when --apply could not
  make an edit.
- Refused (exit 2): no evidence, a token missing for --github-run(s) or --open-pr, a
  malformed run, --workflow without --github-runs (and back), --open-pr without
  --write-estimates or with an estimates file outside the checkout, no repository for
  --github-runs/--open-pr, --apply in a repository that keeps est_time in an estimates file.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

from ci_policy.app.scanning import start_scan
from ci_policy.cli.main import summary
from ci_policy.cli.options import (
    add_cache,
    add_checkout,
    add_format,
    add_token,
    api_url,
    positive_int,
    scan_request,
    token,
)
from ci_policy.errors import UsageError

NAME = "tune"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Propose est_time values from the timings of past runs (timing records "
                                   "or job logs), show each stage's shard balance before and after, and "
                                   "optionally apply them.")
    add_checkout(p)
    add_cache(p)
    p.add_argument("--from", dest="sources", action="append", default=[], metavar="PATH",
                   help="timing records (*.jsonl) or job logs (*.txt, *.log), files or directories; repeatable")
    p.add_argument("--github-run", action="append", default=[], metavar="OWNER/REPO/RUN_ID",
                   help="download a run's job logs and timing artifacts (or give its URL); repeatable")
    p.add_argument("--github-runs", type=positive_int, default=None, metavar="N",
                   help="read the last N completed scheduled runs of --workflow on the default branch")
    p.add_argument("--workflow", default=None, metavar="FILE",
                   help="the workflow file name whose runs --github-runs reads (e.g. pr-test.yml)")
    p.add_argument("--branch", default=None, metavar="B",
                   help="the branch of those runs (default: the repository's default branch)")
    p.add_argument("--include-push", action="store_true",
                   help="read push runs of that branch too (default: schedule runs only; never pull requests)")
    p.add_argument("--allow-untrusted-runs", action="store_true",
                   help="let --github-run read a run that is not a schedule or push run of the default branch "
                        "(a pull request's), and --github-runs the runs of another --branch: RISK: their tests "
                        "could have written the timings they report")
    p.add_argument("--repository", default=None, metavar="OWNER/REPO",
                   help="for --github-runs and --open-pr (default $GITHUB_REPOSITORY)")
    add_token(p, "for --github-run, --github-runs and --open-pr")
    p.add_argument("--csv", default=None, metavar="OUT", help="one row per (run, job, file), citing its source")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--apply", action="store_true", help="rewrite the est_time literals (libcst)")
    mode.add_argument("--check", action="store_true", help="exit 1 when a proposal would change a file")
    mode.add_argument("--write-estimates", default=None, metavar="FILE",
                      help="write the proposals to a JSON estimates file instead of editing tests")
    p.add_argument("--open-pr", action="store_true",
                   help="with --write-estimates: open or update one pull request (branch ci-policy/tune-estimates) "
                        "with the estimates file and the CSV evidence")
    add_format(p, ("text", "json"))
    return p


class Progress:
    """The downloads of `--github-run(s)` on `stream`: one updating line on a terminal, else one
    line per timing artifact."""

    def __init__(self, stream: Any) -> None:
        from ci_policy.render.console import GuardedStream

        self.stream = stream
        # A guarded stream (GitHub Actions) reads a CR as a line break: never an updating line there.
        self.tty = bool(stream.isatty()) and not isinstance(stream, GuardedStream)
        self.showing = False

    def __call__(self, step: Any) -> None:
        from ci_policy.adapters.github.download import shown_name

        what = "job log" if step.kind == "log" else "timing artifact"
        line = f"ci-policy tune: run {step.run_id}: {what} {step.index}/{step.count} {shown_name(step.name)}"
        if self.tty:
            self.stream.write("\r\x1b[K" + line)
            self.stream.flush()
            self.showing = True
        elif step.kind == "artifact":
            size = "" if step.size is None else f" ({step.size} bytes)"
            print(line + size, file=self.stream, flush=True)

    def done(self) -> None:
        if self.showing:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.showing = False

    def notice(self, line: str) -> None:
        """A retry's line (`client.NOTICE`) on a line of its own: the updating line is cleared
        first, and the next download draws it again below."""
        self.done()
        print(line, file=self.stream, flush=True)


def _repository(args: argparse.Namespace, needed_for: str) -> str:
    value = args.repository or os.environ.get("GITHUB_REPOSITORY") or ""
    parts = value.split("/")
    if len(parts) != 2 or not all(parts) or any(p in (".", "..") for p in parts):
        raise UsageError(f"{needed_for} needs OWNER/REPO, got {value!r}", source="--repository",
                         hint="pass --repository OWNER/REPO, or run in GitHub Actions ($GITHUB_REPOSITORY)")
    return value


def _check_github_options(args: argparse.Namespace, repo: Path) -> str | None:
    """Refuse inconsistent options before any request; the estimates file's repo-relative path."""
    if (args.github_runs is None) != (args.workflow is None):
        raise UsageError("--github-runs and --workflow go together", source="--workflow" if args.workflow is None
                         else "--github-runs", hint="e.g. --github-runs 10 --workflow pr-test.yml")
    if args.github_runs is None and (args.branch or args.include_push):
        raise UsageError("only applies to --github-runs", source="--branch" if args.branch else "--include-push")
    if args.allow_untrusted_runs and not args.github_run and args.github_runs is None:
        raise UsageError("only applies to --github-run and --github-runs", source="--allow-untrusted-runs")
    if not args.open_pr:
        return None
    if not args.write_estimates:
        raise UsageError("needs --write-estimates FILE (the estimates file the pull request changes)",
                         source="--open-pr")
    target = os.path.relpath(os.path.abspath(args.write_estimates), os.path.abspath(repo))
    if target.startswith(".."):
        raise UsageError(f"{args.write_estimates} is outside the checkout {repo}; the pull request changes a file "
                         "of the repository", source="--write-estimates")
    return Path(target).as_posix()


def run(args: argparse.Namespace) -> int:
    from ci_policy import render
    from ci_policy.adapters.tuning.propose import (
        LOWER,
        RAISE,
        backend_of,
        balance,
        deduplicate,
        normalise_paths,
        propose,
    )
    from ci_policy.adapters.tuning.report import csv_text, summary_text
    from ci_policy.adapters.tuning.sources import collect

    if not args.sources and not args.github_run and args.github_runs is None:
        raise UsageError("no evidence", source="--from",
                         hint="pass --from PATH or --github-run RUN")
    repo = Path(args.repo)
    estimates_rel = _check_github_options(args, repo)
    from ci_policy.adapters.github.download import download_run, parse_run

    secret = ""
    for spec in args.github_run:  # every run is checked before anything is read or requested
        parse_run(spec)
    repository = None
    if args.github_runs is not None or args.open_pr:
        repository = _repository(args, "--github-runs" if args.github_runs is not None else "--open-pr")
    if args.github_run or repository is not None:
        secret = token(args, "--github-run" if args.github_run else
                       "--github-runs" if args.github_runs is not None else "--open-pr")
    snapshot = start_scan(scan_request(args)).load(args.config).require_valid()
    config = snapshot.config
    if args.apply and config.estimates_file:
        raise UsageError(f"this repository keeps est_time in {config.estimates_file} (estimates_file); "
                         "--apply would edit literals the plan does not use", source="--apply",
                         hint=f"use --write-estimates {config.estimates_file}")
    warnings: list = []  # each a warning naming the file, archive or artifact and why
    evidence = collect([Path(p) for p in args.sources], warnings)
    progress = Progress(sys.stderr)

    def download(spec: str) -> list:
        from ci_policy.adapters.github import client

        before, client.NOTICE = client.NOTICE, progress.notice  # retries never write into the progress line
        try:
            return download_run(spec, secret, api_url(args), archive_max_bytes=config.tune.archive_max_bytes,
                                run_max_bytes=config.tune.run_max_bytes, warnings=warnings, progress=progress)
        finally:
            client.NOTICE = before
            progress.done()

    for spec, trust in _trusted_runs(args, secret):
        evidence += [dataclasses.replace(row, origin=trust.origin) for row in download(spec)]
    requester = None
    base = args.branch
    base_for_pr = ""
    runs_read: list[int] = []
    if repository is not None:
        from ci_policy.adapters.github.client import github_requester
        from ci_policy.adapters.github.scheduled import default_branch, scheduled_runs

        requester = github_requester(secret, api_url(args), timeout=60)
        if base is None or args.open_pr or args.github_runs is not None:
            default = default_branch(requester, repository)
            base = base or default
            base_for_pr = default
            if args.github_runs is not None and base != default and not args.allow_untrusted_runs:
                # Another branch's runs ran code nobody reviewed: their tests wrote the timings.
                raise UsageError(f"{base} is not the default branch {default}: its runs ran code nobody reviewed, "
                                 "whose tests could have written the timings they report", source="--branch",
                                 hint="read the default branch's runs (leave out --branch), or pass "
                                      "--allow-untrusted-runs to read these anyway")
        if args.github_runs is not None:
            runs = scheduled_runs(requester, repository, args.workflow, base, args.github_runs,
                                  include_push=args.include_push)
            runs_read = [r.id for r in runs]
            events = "schedule or push" if args.include_push else "schedule"
            print(f"ci-policy tune: {len(runs)} completed {events} run(s) of {args.workflow} on {base}"
                  + (f": {', '.join(str(i) for i in runs_read)}" if runs else ""),
                  file=sys.stderr if args.format == "json" else sys.stdout)
            for r in runs:
                origin = f"github {r.event} on {base}" + ("" if base == base_for_pr else " (untrusted)")
                evidence += [dataclasses.replace(row, origin=origin) for row in download(f"{repository}/{r.id}")]
    for warning in warnings:
        print(render.diagnostic_text(warning), file=sys.stderr)
    evidence = normalise_paths(evidence, snapshot.files)
    counted = deduplicate(evidence)
    applying = bool(args.apply or args.check or args.write_estimates)
    proposals = propose(counted, snapshot, config.tune, applying=applying)
    evidence_csv = csv_text(evidence, proposals, lambda row: backend_of(row, snapshot) or "?", counted=counted)
    if args.csv:
        Path(args.csv).write_text(evidence_csv, encoding="utf-8")
    balances = balance(snapshot, proposals)
    as_json = args.format == "json"
    done: dict[str, Any] = {}
    if not as_json:
        print(summary_text(proposals, balances))
    changing = [p for p in proposals if p.action in (RAISE, LOWER)]
    rc = 0
    if args.check:
        rc = 1 if changing else 0
    elif args.write_estimates:
        target = Path(args.write_estimates)
        from ci_policy.adapters.tuning.estimates import merge_estimates

        before = target.read_text(encoding="utf-8") if target.is_file() else None
        count = merge_estimates(target, changing)
        done["estimates_written"] = {"file": str(target), "entries": count}
        if not as_json:
            print(f"ci-policy tune: wrote {count} estimate(s) to {target}")
        if args.open_pr:
            assert requester is not None and repository is not None and estimates_rel is not None
            after = target.read_text(encoding="utf-8")
            done["pull_request"] = _pull_request(requester, repository, base_for_pr, estimates_rel, before, after,
                                                 evidence_csv, summary_text(proposals, balances), runs_read,
                                                 len(changing))
            if not as_json:
                pr = done["pull_request"]
                print(f"ci-policy tune: {pr['action']} pull request #{pr['number']} {pr['url']}" if pr["number"]
                      else "ci-policy tune: the estimates file did not change; no pull request")
    elif args.apply:
        from ci_policy.adapters.tuning.apply import apply_to_file

        applied = []
        for p in changing:
            assert p.proposed is not None  # a raise or a lower always proposes a value
            result = apply_to_file(repo / p.file, p.backend, p.proposed, p.marker)
            applied.append({"file": p.file, "backend": p.backend, "current": p.current, "proposed": p.proposed,
                            "status": result.status, "reason": result.reason or None})
            if not as_json:
                detail = f": {result.reason}" if result.reason else ""
                print(f"{p.file}: {result.status} ({p.backend} est_time {p.current:g} -> {p.proposed}){detail}")
        done["applied"] = applied
        skipped = sum(a["status"] == "skipped" for a in applied)
        if skipped:
            # The balance printed above assumed every edit; say plainly that some were not made.
            print(f"ci-policy tune: {skipped} proposal(s) were not applied (see above); edit them by hand",
                  file=sys.stderr)
            rc = 1
    if as_json:
        print(render.tune_json(proposals, balances, **done))
    return rc


def _trusted_runs(args: argparse.Namespace, secret: str) -> list[tuple[str, Any]]:
    """Each `--github-run` with its trust; every run is checked before any is downloaded."""
    from ci_policy.adapters.github.client import github_requester
    from ci_policy.adapters.github.download import parse_run
    from ci_policy.adapters.github.scheduled import default_branch, run_trust
    from ci_policy.errors import InputError, InputErrors

    if not args.github_run:
        return []
    requester = github_requester(secret, api_url(args), timeout=60)
    defaults: dict[str, str] = {}
    found, errors = [], []
    for spec in args.github_run:
        repository, run_id = parse_run(spec)
        if repository not in defaults:
            defaults[repository] = default_branch(requester, repository)
        trust = run_trust(requester, repository, run_id, defaults[repository])
        if not trust.trusted and not args.allow_untrusted_runs:
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


def _pull_request(requester: Any, repository: str, base: str, estimates_rel: str, before: str | None, after: str,
                  evidence_csv: str, summary: str, runs: list[int], changes: int) -> dict[str, Any]:
    """Open or update the one tune pull request; nothing when the estimates file did not change."""
    from ci_policy.adapters.github.scheduled import PR_BRANCH, open_or_update_pr

    if not changes or after == before:
        return {"action": "none", "number": None, "url": None, "branch": PR_BRANCH}
    evidence_rel = Path(estimates_rel).with_suffix(".evidence.csv").as_posix()
    cited = ", ".join(str(r) for r in runs) or "the evidence given"
    body = (f"est_time estimates from the timings of runs {cited}.\n\n"
            f"- `{estimates_rel}`: {changes} estimate(s) changed\n"
            f"- `{evidence_rel}`: one row per (run, job, file), citing its source\n\n"
            f"```\n{summary}\n```\n\nWritten by `ci-policy tune --open-pr`; this branch is force-updated by "
            "each scheduled tune run.\n")
    action, number, url = open_or_update_pr(
        requester, repository, base, [(estimates_rel, after), (evidence_rel, evidence_csv)],
        title="ci-policy: update est_time estimates", body=body,
        message=f"ci-policy tune: update {estimates_rel} from runs {cited}")
    return {"action": action, "number": number, "url": url, "branch": PR_BRANCH}
