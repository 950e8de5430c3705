"""`ci-policy registry`: every test registration of a checkout.

- In: --repo, --config, --format text|json.
- Out: one row (text) or object (json) per registration, sorted by file and line; then the
  stages with a command (suites without markers), one line (text) or object (json: `commands`) each.
- Partial: an invalid test file is left out and listed with its diagnostics (json:
  `invalid`, `plan_complete`; text: on stderr); everything else is printed, exit 1.
- Refused: a configuration, labels, discovery or estimates-file error (exit 1; every
  error printed, as `lint` would).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ci_policy.app.registry import registry
from ci_policy.app.requests import CheckoutRequest
from ci_policy.cli.main import examples, summary
from ci_policy.cli.options import add_cache, add_checkout, add_format, scan_request
from ci_policy.cli.output import report_incomplete
from ci_policy.render.text import commands_text, registry_text

NAME = "registry"
EXAMPLES = examples(
    ("every registration of the example checkout: file, backend, suite, est_time, labels",
     "ci-policy registry --repo examples/gpu-repo"),
    ("the same as JSON, for a program",
     "ci-policy registry --repo examples/gpu-repo --format json"))


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="List every test registration of a checkout: file, backend, "
                                   "suite, est_time, labels and notes; invalid test files are listed "
                                   "with their errors and make the exit code 1.",
                       epilog=EXAMPLES)
    add_checkout(p)
    add_cache(p)
    add_format(p, ("text", "json"))
    return p


def run(args: argparse.Namespace) -> int:
    snapshot = registry(CheckoutRequest(Path(args.repo), args.config, scan_request(args)))
    commands = [stage for stage in snapshot.config.stages if stage.command]
    if args.format == "json":
        # Imported here: the text listing needs no JSON document's classes
        # (tests/cli/test_startup.py::test_registry_imports_neither_lint_nor_the_planner).
        from ci_policy.render.jsondoc import registry_json

        print(registry_json(snapshot.registrations, snapshot.invalid_files, commands))
        return report_incomplete(NAME, snapshot.invalid_files, section=False)
    print(registry_text(snapshot.registrations))
    if commands:
        print()
        print(commands_text(commands))
    return report_incomplete(NAME, snapshot.invalid_files)
