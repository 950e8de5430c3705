"""`ci-policy schema`: the JSON Schema of the configuration or of one JSON output.

- In: NAME (`config`, `plan`, `registry`, `lint`, `timings`, and one per other JSON
  document: `ci_policy.render.schemas.NAMES`), --format json|text.
- Out: json (the default): the schema, exactly the file `ci_policy/schemas/NAME.schema.json`
  the package ships (two-space indented, keys in a fixed order, a trailing newline); text:
  its title and `$id`, then one line per field path with what it accepts and its
  description.
- Reads no checkout: `--repo` is accepted, as by every subcommand, and unused.
- Refused: an unknown NAME (exit 2), listing the names.
"""

from __future__ import annotations

import argparse
import sys

from ci_policy.cli.main import examples, summary
from ci_policy.cli.options import add_format, add_repo
from ci_policy.errors import UsageError
from ci_policy.render.schemas import NAMES, document_text, outline

NAME = "schema"
EXAMPLES = examples(
    ("the configuration's JSON Schema, as editors read it",
     "ci-policy schema config"),
    ("the plan file's fields, one line each",
     "ci-policy schema plan --format text"))


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Print the JSON Schema (draft 2020-12) of the configuration (config) or of a "
                                   "JSON document ci-policy writes (plan, registry, lint, timings, ...), as the "
                                   "package ships it.",
                       epilog=EXAMPLES)
    p.add_argument("name", metavar="NAME",
                   help="config, plan, registry, lint, timings, explain, list, init, result, file-run, tune, "
                        "estimates, comment, pull-request, report-status, history or report")
    add_repo(p, help="accepted as by every subcommand; schema reads no checkout")
    add_format(p, ("json", "text"), default="json")
    return p


def run(args: argparse.Namespace) -> int:
    if args.name not in NAMES:
        raise UsageError(f"no schema named {args.name!r}", source="NAME",
                         hint="the schemas: " + ", ".join(NAMES))
    sys.stdout.write(document_text(args.name) if args.format == "json" else outline(args.name))
    return 0
