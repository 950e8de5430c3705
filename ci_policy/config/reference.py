"""The README's configuration reference, rendered from the field tables.

- In: the tables of `ci_policy.config` (every key's name, accepted values, default, description).
- Out: `markdown()`, the body of the README section `## Configuration reference`
  (an example, then one table per mapping); `replace_section(readme)` puts it in place.
- Refused: a README without the `## Configuration reference` section, and a default with no
  reference text (`ValueError`: the page or the tables are wrong, not a user's input).
- Regenerate the reference with `python -m ci_policy.config.reference --update docs/reference.md`;
  without `--update` the section is printed. A test fails when the README differs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from ci_policy.config.fields import Key, Table
from ci_policy.config.top import TOP

HEADING = "## Configuration reference: `.github/ci-policy.yml`"

INTRO = """\
Loaded with `yaml.safe_load` semantics, capped at 1 MiB; aliases, anchors and duplicate
keys are refused; unknown keys are errors with a did-you-mean; every error names its
location and carries a code (`.github/ci-policy.yml:14:14: stages[2].backend: expected one
of cpu, cuda, rocm, got 'gpu'`, code CP105; see `ci_policy/config/codes.py`).

This section is generated from the key tables in `ci_policy/config/` by
`python -m ci_policy.config.reference --update docs/reference.md`.

**Editor support.** The same tables generate the file's JSON Schema (draft 2020-12), shipped
in the package as `ci_policy/schemas/config.schema.json` and printed by `ci-policy schema
config`: each key with its description, default, type and range, and no unknown key. With
the YAML language server (VS Code's YAML extension, Neovim, Helix, JetBrains IDEs), a first
line

```yaml
# yaml-language-server: $schema=https://raw.githubusercontent.com/ci-policy/ci-policy/main/ci_policy/schemas/config.schema.json
```

gives completion, the descriptions on hover, and validation as you type (the example's
`examples/gpu-repo/.github/ci-policy.yml` names the file by its relative path). To match
the installed ci-policy rather than `main`, commit its schema next to the configuration
(`ci-policy schema config > .github/ci-policy.schema.json`) and name that file
(`$schema=./ci-policy.schema.json`); `check-jsonschema --schemafile
.github/ci-policy.schema.json .github/ci-policy.yml` validates with the same schema in a
hook or a CI step. The schema checks each key by itself; what spans keys (a stage's
backend is declared, an implicit root's suite names a stage of that backend, a glob
matches a stage) is checked by `ci-policy lint`."""

EXAMPLE = """\
version: 1
requires: ">=0.1"
labels_file: labels.py
backends:
  npu: {accelerator: true}
markers:
  names: {register_amd_ci: rocm, register_npu_ci: npu}
  extra_arguments: {stage: string, runner_config: string}
  suite: "{stage}-test-{runner_config}"
discovery:
  roots: [tests/fast, tests/e2e]
  implicit:
    - {root: tests/fast, backend: cpu, suite: stage-a-cpu, est_time: 1, cpu_only: true}
stages:
  - {name: stage-a-cpu, backend: cpu}
  - name: stage-c-4-gpu-h200
    backend: cuda
    runs_on: [h200, 4gpu]
    partitions: 3
    timeout_per_file: 1800
  - {name: base-b-test-1-npu-a3, backend: npu, runs_on: [npu-a3]}
cadences:
  schedules: {"0 15 * * 0-5": nightly, "0 15 * * 6": weekly}
  nightly_exclude: [long]
scopes:
  run-ci-all:
  run-ci-image: {exclude: [long]}
selection:
  no_gpu_paths: ["docs/**", "**/*.md"]
  rules:
    - {paths: ["src/backends/megatron/**"], labels: [megatron]}
runner:
  timeout_from_est_time: {factor: 2, floor: 600}
gates:
  defaults: {train/grad_norm: {steps: all, constraint: {rel_up: 0.5, rel_down: 0.5}}}
  require:
    - {files: "tests/e2e/session_server/test_*.py",
       metric_keys: ["rollout/tito_session_mismatch_rate/{version}/assistant_text"], versions: [v1, v2]}
file_run:
  image: {cuda: ghcr.io/org/ci-cuda, rocm: ghcr.io/org/ci-rocm}
  prefer: [cuda, rocm]
image_build: {runs_on: [self-hosted, docker], registry: ghcr.io}
images:
  cuda: {repository: ghcr.io/org/ci-cuda, dockerfile: docker/cuda.Dockerfile}
estimates_file: .github/ci-estimates.json
quarantine:
  - file: tests/e2e/test_nccl_init.py
    stage: stage-c-4-gpu-h200
    reason: NCCL init times out on one host in ten
    issue: https://github.com/org/repo/issues/123
    owner: "@alice"
    until: 2027-01-15
"""

GLOBS = """\
Globs are gitignore-style, with the meaning the `pathspec` library's `GitIgnoreSpec` gives
them, matched in time linear in the path (a glob with many `*`, such as `*a*a*a*a*b`, takes
no longer on a 255-character name than a plain one: no backtracking): `*` stays
within a path segment, `**` crosses directories (`**/*.md` matches `README.md` at the
root), a pattern without `/` matches at any depth, a trailing `/` or `/**` matches
everything below, and a character class never matches `/`. A list of globs reads like a
`.gitignore`: a glob starting with `!` takes back what earlier ones matched, and the last
matching glob wins (`["docs/**", "!docs/api/**"]`), except that, as in pathspec, a glob that
matches the path itself outranks one that matches only a directory above it (with
`["*.md", "!docs/"]`, `docs/a.md` matches). In `discovery.exclude`, as in git, a
`!` glob cannot bring back a file of an excluded directory (exclude `vendor/*` and
`!vendor/keep/`, not `vendor/**`). A name that starts with `!` or `#` is written `\\!`
or `\\#`, as in gitignore; a bare leading `#` (a comment there), any other backslash and
`**` inside a segment are refused."""


def _tables(table: Table) -> Iterator[Table]:
    """`table`, then every table nested in it, depth first in key order."""
    yield table
    for key in table.keys:
        if key.parser.table is not None:
            yield from _tables(key.parser.table)


def _value(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, float):
        return f"`{value:g}`"
    if isinstance(value, (int, str)):
        return f"`{value}`"
    if isinstance(value, tuple) and not value:
        return "none"
    if isinstance(value, Mapping) and not value:
        return "none"
    raise ValueError(f"no reference text for the default {value!r}: give the key a shown_default")


def _default(key: Key) -> str:
    if key.required:
        return "required"
    return key.shown_default if key.shown_default is not None else _value(key.default)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(table: Table) -> str:
    title = "Top level" if table is TOP else f"`{table.title}`"
    rows = [f"### {title}", "", table.doc, "", "| key | accepts | default | description |",
            "|---|---|---|---|"]
    rows += [f"| `{key.name}` | {_cell(key.parser.kind)} | {_cell(_default(key))} | {_cell(key.doc)} |"
             for key in table.keys]
    return "\n".join(rows)


def markdown() -> str:
    """The README section's body (without its heading), ending in a newline."""
    parts = [INTRO, "```yaml\n" + EXAMPLE + "```", *(_table(t) for t in _tables(TOP)), GLOBS]
    return "\n\n".join(parts) + "\n"


def section_of(readme: str) -> str:
    """The body of the README's configuration reference section ('' if there is none)."""
    start = readme.find(HEADING + "\n")
    if start < 0:
        return ""
    body = start + len(HEADING) + 1
    end = readme.find("\n## ", body)
    return readme[body:] if end < 0 else readme[body:end + 1]


def replace_section(readme: str) -> str:
    """`readme` with the configuration reference section regenerated."""
    old = section_of(readme)
    start = readme.find(HEADING + "\n")
    if start < 0:
        raise ValueError(f"the README has no section {HEADING!r}")
    body = start + len(HEADING) + 1
    return readme[:body] + "\n" + markdown() + "\n" + readme[body + len(old):].lstrip("\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ci_policy.config.reference",
                                     description="Print (or --update in a README) the configuration reference.")
    parser.add_argument("--update", metavar="README", help="rewrite the section in this file")
    args = parser.parse_args(argv)
    if args.update is None:
        sys.stdout.write(markdown())
        return 0
    with open(args.update, encoding="utf-8") as fh:
        text = fh.read()
    with open(args.update, "w", encoding="utf-8") as fh:
        fh.write(replace_section(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
