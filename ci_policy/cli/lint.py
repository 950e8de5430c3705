"""`ci-policy lint`: check a checkout's configuration, labels, registrations and gates.

- In: --repo, --config, --format text|json|github, --verbose.
- Out: every diagnostic (errors and warnings) and a summary line on stdout; in text, several
  disabled registrations (CP905) are one line unless --verbose; exit 0 when there are no
  errors, 1 otherwise.
- Refused: an unknown --format (argparse, exit 2). A checkout's problems are not refused but
  reported: `model.lint` never raises for them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ci_policy.app.lint import lint
from ci_policy.app.requests import CheckoutRequest
from ci_policy.cli.main import examples, summary
from ci_policy.cli.options import add_cache, add_checkout, add_format, scan_request
from ci_policy.cli.paths import workspace_paths
from ci_policy.render.console import write_commands
from ci_policy.render.report import lint_report

NAME = "lint"
EXAMPLES = examples(
    ("check the example checkout: configuration, labels, registrations and gate"
     " declarations",
     "ci-policy lint --repo examples/gpu-repo"),
    ("the same report as JSON, every test file read and parsed again",
     "ci-policy lint --repo examples/gpu-repo --format json --no-cache"))


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Check a checkout's configuration, labels file, test registrations and "
                                   "metric-gate declarations; report every problem, located, with a hint.",
                       epilog=EXAMPLES)
    add_checkout(p)
    add_cache(p)
    add_format(p, ("text", "json", "github"))
    p.add_argument("-v", "--verbose", action="store_true",
                   help="text: list every disabled registration (CP905) instead of one line for them all")
    return p


def run(args: argparse.Namespace) -> int:
    repo = Path(args.repo)
    report = lint(CheckoutRequest(repo, args.config, scan_request(args)))
    text = lint_report(report, args.format, workspace_paths(repo, args.config), verbose=args.verbose)
    if args.format == "github":
        write_commands(text)
    else:
        print(text)
    return 0 if report.ok else 1
