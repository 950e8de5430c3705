"""`ci-policy tune`: propose est_time values from the timings of past runs.

- In: --repo, --config, evidence (--from files or directories, --github-run runs), a
  mode (report, --check, --apply, --write-estimates), --csv, --format text|json.
- Out: the proposals and each stage's shard balance before and after; with --apply the
  est_time literals rewritten, with --write-estimates the estimates file. Exit 1 when
  --check finds a change, or when --apply could not make an edit.
- Refused (exit 2): no evidence, a token missing for --github-run, a malformed run,
  --apply in a repository that keeps est_time in an estimates file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ci_policy.cli.options import add_checkout, add_format, add_token, api_url, token
from ci_policy.errors import UsageError

NAME = "tune"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help="propose est_time values from the timings of past runs",
                       description="Propose est_time values from the timings of past runs (timing records "
                                   "or job logs), show each stage's shard balance before and after, and "
                                   "optionally apply them.")
    add_checkout(p)
    p.add_argument("--from", dest="sources", action="append", default=[], metavar="PATH",
                   help="timing records (*.jsonl) or job logs (*.txt, *.log), files or directories; repeatable")
    p.add_argument("--github-run", action="append", default=[], metavar="OWNER/REPO/RUN_ID",
                   help="download a run's job logs and timing artifacts (or give its URL); repeatable")
    add_token(p, "for --github-run")
    p.add_argument("--csv", default=None, metavar="OUT", help="one row per (run, job, file), citing its source")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--apply", action="store_true", help="rewrite the est_time literals (libcst)")
    mode.add_argument("--check", action="store_true", help="exit 1 when a proposal would change a file")
    mode.add_argument("--write-estimates", default=None, metavar="FILE",
                      help="write the proposals to a JSON estimates file instead of editing tests")
    add_format(p, ("text", "json"))
    return p


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
    from ci_policy.model.snapshot import load_snapshot

    if not args.sources and not args.github_run:
        raise UsageError("no evidence", source="--from", hint="pass --from PATH or --github-run RUN")
    if args.github_run:
        from ci_policy.adapters.github.download import download_run, parse_run

        for spec in args.github_run:  # every run is checked before anything is read or requested
            parse_run(spec)
        secret = token(args, "--github-run")
    repo = Path(args.repo)
    snapshot = load_snapshot(repo, args.config).require_valid()
    config = snapshot.config
    if args.apply and config.estimates_file:
        raise UsageError(f"this repository keeps est_time in {config.estimates_file} (estimates_file); "
                         "--apply would edit literals the plan does not use", source="--apply",
                         hint=f"use --write-estimates {config.estimates_file}")
    evidence = collect([Path(p) for p in args.sources])
    if args.github_run:
        for spec in args.github_run:
            evidence += download_run(spec, secret, api_url(args))
    evidence = normalise_paths(evidence, snapshot.files)
    counted = deduplicate(evidence)
    applying = bool(args.apply or args.check or args.write_estimates)
    proposals = propose(counted, snapshot, config.tune, applying=applying)
    if args.csv:
        Path(args.csv).write_text(csv_text(evidence, proposals, lambda row: backend_of(row, snapshot) or "?",
                                           counted=counted), encoding="utf-8")
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

        count = merge_estimates(target, changing)
        done["estimates_written"] = {"file": str(target), "entries": count}
        if not as_json:
            print(f"ci-policy tune: wrote {count} estimate(s) to {target}")
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
