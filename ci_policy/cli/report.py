"""`ci-policy report`: CI health over the store's test history.

- In: --since (default 30d: the last 30 days, today included), --today YYYY-MM-DD (the last day;
  default today, UTC), --store URL or --store-file FILE (else `$CI_POLICY_DATABASE_URL`, else the
  checkout's default SQLite file), --repository OWNER/REPO (default `$GITHUB_REPOSITORY`) for run
  links, --repo DIR and --config FILE (the configuration whose `accelerators:` give each stage's
  GPUs and cost; default DIR/.github/ci-policy.yml when it exists, else runner-hours only),
  --propose-quarantine with --threshold (default 0.1) and --min-runs (default 5), --format
  text|json|markdown, --release-after SPAN (default 14d: a quarantined file that passed every run
  of the last SPAN, at least one, is ready to leave quarantine).
- --publish-issue (the `github` extra, a token in $GITHUB_TOKEN or --token-env, --api-url): the
  Markdown report also becomes the repository's one open issue titled "CI health report"
  (label ci-health), its body replaced each time; the issue's number on stderr.
- Out: runner-hours per week and stage, the slowest files, est_time drift, flaky files with
  their first and last flaky runs, the slowest stage's latest run, and with
  --propose-quarantine the `quarantine:` entries to add; with a configuration, each of its
  `quarantine:` entries ready to leave (with the entry to delete), failing or not run
  (`render.health`); JSON schema `report`.
- Refused: a --store URL holding a password, a --today that is not a date, a --threshold outside
  0 to 1 (exit 2); a bad --since or --release-after (CP702), a store of a schema before the test history (CP701), a
  store that does not exist (exit 1).
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

from ci_policy.app.health import ReportRequest, report
from ci_policy.cli.main import examples, summary
from ci_policy.cli.options import add_config, add_format, add_repo, add_store, add_token, api_url, positive_int, token
from ci_policy.render.health import report_json, report_markdown, report_text

NAME = "report"


def _date(text: str) -> datetime.date:
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text[:40]!r}") from None


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"a flake rate is a number above 0 and at most 1, got {text[:40]!r}")
    return value


# Run by tests/cli/test_help_examples.py where `history import` has filled health.sqlite first.
EXAMPLES = examples(
    ("the last 30 days of the history `ci-policy history import` filled (see its examples)",
     "ci-policy report --store health.sqlite --since 30d --today 2026-12-06"),
    ("as Markdown with its charts, proposing to quarantine files flaky in 10% of at least 1 run",
     "ci-policy report --store health.sqlite --today 2026-12-06 --format markdown\n--propose-quarantine --min-runs 1"))


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Report CI health from the store's test history: runner-hours per week and "
                                   "stage, the slowest files, est_time drift, flaky tests with links to their "
                                   "runs, and quarantine proposals.", epilog=EXAMPLES)
    p.add_argument("--since", default="30d", metavar="SPAN",
                   help="the window: the last N days (Nd) or weeks (Nw), the last day included (default 30d)")
    p.add_argument("--today", type=_date, default=None, metavar="YYYY-MM-DD",
                   help="the window's last day (default: today, UTC)")
    p.add_argument("--repository", default=None, metavar="OWNER/REPO",
                   help="the repository the run links name (default $GITHUB_REPOSITORY; none: no links)")
    p.add_argument("--release-after", default="14d", metavar="SPAN",
                   help="a quarantined file that passed every run of the last SPAN (Nd or Nw, ending on --today) "
                        "and ran at least once is listed as ready to leave quarantine (default 14d)")
    p.add_argument("--propose-quarantine", action="store_true",
                   help="list the files above the flake-rate threshold, with the quarantine: YAML to add")
    p.add_argument("--threshold", type=_rate, default=0.1, metavar="RATE",
                   help="the flake rate (flaky runs / runs) a proposal needs (default 0.1)")
    p.add_argument("--min-runs", type=positive_int, default=5, metavar="N",
                   help="the fewest runs in the window a proposal needs (default 5)")
    p.add_argument("--publish-issue", action="store_true",
                   help="also publish the Markdown report as the repository's one open issue titled "
                        "'CI health report' (label ci-health): updated if open, else opened; needs the github "
                        "extra and a token with issues: write")
    add_token(p, "for publishing the issue")
    add_repo(p, help="the checkout: its configuration's accelerators give GPU-hours and cost, and it names the "
                     "default store (default: the current directory)")
    add_config(p, help="the configuration whose accelerators: give each stage's GPUs and cost (default: "
                       "DIR/.github/ci-policy.yml when it exists; without one, runner-hours only)")
    add_store(p)
    add_format(p, ("text", "json", "markdown"))
    return p


def run(args: argparse.Namespace) -> int:
    result = report(ReportRequest(Path(args.repo), since=args.since, today=args.today, repository=args.repository,
                                  store=args.store, store_file=args.store_file, config=args.config,
                                  threshold=args.threshold if args.propose_quarantine else None,
                                  min_runs=args.min_runs, release_after=args.release_after))
    render = {"json": report_json, "markdown": report_markdown}.get(args.format, report_text)
    sys.stdout.write(render(result))
    if args.publish_issue:
        # Imported here: a report that publishes nothing loads no PyGithub (tests/cli/test_startup.py::
        # test_a_report_that_publishes_nothing_loads_no_github_module).
        from ci_policy.app.publish import PublishRequest, publish

        published = publish(PublishRequest(report_markdown(result), result.repository, api_url(args),
                                           lambda: token(args, "publishing the report")))
        print(f"ci-policy report: {published.action} issue #{published.number} {published.url}".rstrip(),
              file=sys.stderr)
    return 0
