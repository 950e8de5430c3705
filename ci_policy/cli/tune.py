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
- Refused: with exit 2: no evidence, a token missing for --github-run(s) or --open-pr, a
  malformed run, --workflow without --github-runs (and back), --open-pr without
  --write-estimates or with an estimates file outside the checkout, no repository for
  --github-runs/--open-pr, --apply in a repository that keeps est_time in an estimates file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ci_policy.app import tune
from ci_policy.app.tune import TuneRequest, shown_name
from ci_policy.cli.main import examples, summary
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
from ci_policy.render.console import GuardedStream
from ci_policy.render.jsondoc import tune_json
from ci_policy.render.text import diagnostic_text

NAME = "tune"
EXAMPLES = examples(
    ("propose est_time values from the timing records of past runs (run --timings-out)",
     "ci-policy tune --repo examples/gpu-repo --from examples/timings.jsonl"),
    ("a check for CI: a proposal would change a file (exits 1)",
     "ci-policy tune --repo examples/gpu-repo --from examples/timings.jsonl --check"))


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Propose est_time values from the timings of past runs (timing records "
                                   "or job logs), show each stage's shard balance before and after, and "
                                   "optionally apply them.",
                       epilog=EXAMPLES)
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
        self.stream = stream
        # Under GitHub Actions the guard writes a CR as the line break the runner reads: never an
        # updating line there.
        self.tty = bool(stream.isatty()) and not (isinstance(stream, GuardedStream) and stream.actions)
        self.showing = False

    def __call__(self, step: Any) -> None:
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


def run(args: argparse.Namespace) -> int:
    as_json = args.format == "json"
    request = TuneRequest(
        Path(args.repo), args.config, scan_request(args), sources=tuple(args.sources), runs=tuple(args.github_run),
        last_runs=args.github_runs, workflow=args.workflow, branch=args.branch, include_push=args.include_push,
        allow_untrusted=args.allow_untrusted_runs, repository=args.repository, api_url=api_url(args),
        token=lambda needed_for: token(args, needed_for), csv=args.csv, apply=args.apply, check=args.check,
        write_estimates=args.write_estimates, open_pr=args.open_pr, progress=Progress(sys.stderr),
        announce=lambda line: print(line, file=sys.stderr if as_json else sys.stdout),
        warn=lambda warning: print(diagnostic_text(warning), file=sys.stderr))
    tuning = tune.prepare(request)
    done: dict[str, Any] = {}
    if not as_json:
        print(tuning.summary)
    rc = 0
    if args.check:
        rc = 1 if tuning.changing else 0
    elif args.write_estimates:
        written = tune.write_estimates(request, tuning)
        done["estimates_written"] = {"file": written.file, "entries": written.entries}
        if not as_json:
            print(f"ci-policy tune: wrote {written.entries} estimate(s) to {written.file}")
        if args.open_pr:
            pr = tune.open_pull_request(request, tuning, written)
            done["pull_request"] = {"action": pr.action, "number": pr.number, "url": pr.url, "branch": pr.branch}
            if not as_json:
                print(f"ci-policy tune: {pr.action} pull request #{pr.number} {pr.url}" if pr.number
                      else "ci-policy tune: the estimates file did not change; no pull request")
    elif args.apply:
        applied = []
        for a in tune.apply(request, tuning):
            applied.append({"file": a.file, "backend": a.backend, "current": a.current, "proposed": a.proposed,
                            "status": a.status, "reason": a.reason})
            if not as_json:
                detail = f": {a.reason}" if a.reason else ""
                print(f"{a.file}: {a.status} ({a.backend} est_time {a.current:g} -> {a.proposed}){detail}")
        done["applied"] = applied
        skipped = sum(a["status"] == "skipped" for a in applied)
        if skipped:
            # The balance printed above assumed every edit; say plainly that some were not made.
            print(f"ci-policy tune: {skipped} proposal(s) were not applied (see above); edit them by hand",
                  file=sys.stderr)
            rc = 1
    if as_json:
        print(tune_json(tuning.proposals, tuning.balances, **done))
    return rc
