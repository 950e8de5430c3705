"""`ci-policy registry`: every test registration of a checkout.

- In: --repo, --config, --format text|json.
- Out: one row (text) or object (json) per registration, sorted by file and line.
- Refused: a checkout with errors (exit 1; every error printed, as `lint` would).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ci_policy.cli.options import add_checkout, add_format

NAME = "registry"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help="list every test registration",
                       description="List every test registration of a valid checkout: file, backend, "
                                   "suite, est_time, labels and notes.")
    add_checkout(p)
    add_format(p, ("text", "json"))
    return p


def run(args: argparse.Namespace) -> int:
    from ci_policy.model.snapshot import load_snapshot
    from ci_policy.render import registry_json, registry_text

    snapshot = load_snapshot(Path(args.repo), args.config).require_valid()
    render = registry_json if args.format == "json" else registry_text
    print(render(snapshot.registrations))
    return 0
