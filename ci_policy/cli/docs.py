"""The generated reference pages of the documentation site: `python -m ci_policy.cli.docs`.

- In: a docs directory (`docs`): its `data/diagnostics.yml` (each code's explanation and example
  files, over a baseline checkout it also holds); the command line's parser (`main.build_parser`).
- Out: the pages of `render.docs.pages`, each diagnostic's example run first: its files written
  over the baseline in a temporary directory and `ci-policy lint --verbose --no-cache` run there,
  in-process, its lines of that code kept. `--update DIR` writes the pages; `--check DIR` exits 1
  naming each page that differs from what it would write (tests/test_docs_site.py runs it); without
  either, the paths are printed.
- Refused: an example that does not produce its own code (`ValueError`, naming it): no page shows
  an example that does not do what it says.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ci_policy.cli.main import build_parser, main
from ci_policy.render.docs import Example, Explained, pages

DATA = Path("data") / "diagnostics.yml"


def load_data(docs: Path) -> tuple[dict[str, str], dict[str, Explained]]:
    """The baseline checkout's files and each code's explanation, from DOCS/data/diagnostics.yml."""
    data: Mapping[str, Any] = yaml.safe_load((docs / DATA).read_text(encoding="utf-8"))
    explained = {code: Explained(entry["triggers"].strip(), entry["fix"].strip(), entry.get("example"))
                 for code, entry in data["codes"].items()}
    return dict(data["baseline"]), explained


def _lint_output(root: Path) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        main(["lint", "--repo", str(root), "--no-cache", "--verbose"])
    return out.getvalue() + err.getvalue()


def lines_of(code: str, output: str) -> str:
    """The diagnostics of `code` in lint's text output, each with its hint line."""
    kept: list[str] = []
    keeping = False
    for line in output.splitlines():
        if line.startswith("    ") and keeping:
            kept.append(line)
            continue
        keeping = re.search(rf"(^|: )(warning: )?{code} ", line) is not None
        if keeping:
            kept.append(line)
    return "\n".join(kept)


def run_example(code: str, baseline: Mapping[str, str], files: Mapping[str, str]) -> Example:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel, text in {**baseline, **files}.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        output = lines_of(code, _lint_output(root)).replace(f"{root}/", "")
    if not output:
        raise ValueError(f"docs/{DATA}: the example of {code} does not produce {code}")
    return Example(files, output)


def generate(docs: Path) -> dict[str, str]:
    baseline, explained = load_data(docs)
    examples = {code: run_example(code, baseline, e.example) for code, e in explained.items()
                if e.example is not None}
    return pages(build_parser(), explained, examples)


def stale(docs: Path) -> list[str]:
    """The generated pages under `docs` that differ from what `generate` writes (or are missing)."""
    found = []
    for rel, text in generate(docs).items():
        path = docs / rel
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            found.append(rel)
    return found


def update(docs: Path) -> list[str]:
    """Write every generated page; the diagnostic pages of codes that no longer exist are removed."""
    generated = generate(docs)
    for old in (docs / "reference" / "diagnostics").glob("CP*.md"):
        if f"reference/diagnostics/{old.name}" not in generated:
            old.unlink()
    for rel, text in generated.items():
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text(text, encoding="utf-8")
    return list(generated)


def cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ci_policy.cli.docs",
                                     description="Print, --check or --update the generated reference pages.")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--update", metavar="DOCS", help="write the pages under DOCS (the docs directory)")
    group.add_argument("--check", metavar="DOCS", help="exit 1 when a page under DOCS differs")
    args = parser.parse_args(argv)
    if args.update:
        update(Path(args.update))
        return 0
    if args.check:
        differing = stale(Path(args.check))
        for rel in differing:
            print(f"{args.check.rstrip('/')}/{rel}: stale; run python -m ci_policy.cli.docs --update "
                  f"{args.check}", file=sys.stderr)
        return 1 if differing else 0
    sys.stdout.write("".join(f"{rel}\n" for rel in generate(Path("docs"))))
    return 0


if __name__ == "__main__":
    sys.exit(cli())
