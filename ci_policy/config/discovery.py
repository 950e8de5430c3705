"""`discovery:` where test files are found, and the registration of unregistered ones.

- In: the `discovery` mapping, and the stages parsed before it (implicit roots name one).
- Out: a frozen `Discovery`: normalised repo-relative roots, the basename pattern, and
  `ImplicitRoot`s.
- Refused: roots that are absolute, leave the repository or repeat; a pattern with a `/`;
  an implicit root outside every discovery root, listed twice, `cpu_only` with a GPU
  backend, or whose suite is not a configured stage of its backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from ci_policy.config import codes, fields
from ci_policy.config.fields import REQUIRED, Context, Key, Parser, Table, Values
from ci_policy.config.stages import BACKENDS, Backend
from ci_policy.read.yamlnodes import INVALID, Schema


def under(path: str, root: str) -> bool:
    """Whether repo-relative `path` is `root` or below it (`.` contains everything)."""
    return root == "." or path == root or path.startswith(root.rstrip("/") + "/")


def _check_pattern(value: str) -> str | None:
    if not value or "/" in value or "\\" in value:
        return f"{value!r} must be a basename glob such as 'test_*.py' (no '/')"
    return None


IMPLICIT = Table("discovery.implicit[]", "The registration of every unregistered test file below `root`.", (
    Key("root", fields.relative_path(), REQUIRED, "Directory inside a discovery root; the most specific root wins."),
    Key("backend", fields.choice(BACKENDS), REQUIRED, "Backend of the files below it."),
    Key("suite", fields.string("stage name"), REQUIRED, "A configured stage of that backend."),
    Key("est_time", fields.number(0), REQUIRED, "Estimated seconds per file."),
    Key("cpu_only", fields.boolean(), False, "The files need no accelerator (backend must be cpu)."),
))


@dataclass(frozen=True)
class ImplicitRoot:
    """Registration given to every unregistered test file under `root`."""

    root: str
    backend: Backend
    suite: str
    est_time: float
    cpu_only: bool = IMPLICIT.default("cpu_only")
    line: int | None = None


def _implicit(s: Schema, v: Values, roots: Any, stages: Any) -> ImplicitRoot | None:
    before = len(s.errors)
    root, backend, suite = v.get("root"), v.get("backend"), v.get("suite")
    if root is not INVALID and roots is not INVALID and not any(under(root, r) for r in roots):
        s.error(v.value_node("root"), v.path("root"), f"{root!r} is not inside any discovery root",
                hint="list it (or a parent) under discovery.roots", code=codes.INCONSISTENT)
    if v.get("cpu_only") is True and backend not in (INVALID, "cpu"):
        s.error(v.value_node("backend"), v.path("backend"), "a cpu_only root must have backend cpu",
                code=codes.INCONSISTENT)
    if suite is not INVALID and backend is not INVALID and stages is not INVALID:
        stage = next((st for st in stages if st.name == suite), None)
        if stage is None or stage.backend != backend:
            names = ", ".join(st.name for st in stages if st.backend == backend) or "none"
            s.error(v.value_node("suite"), v.path("suite"),
                    f"{suite!r} is not a configured {backend} stage (configured {backend} stages: {names})",
                    code=codes.INCONSISTENT)
    if v.any_invalid() or len(s.errors) != before:
        return None
    return ImplicitRoot(root=root, backend=backend, suite=suite, est_time=v.get("est_time"),
                        cpu_only=v.get("cpu_only"), line=v.line)


def _parse_implicit(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    implicit: list[ImplicitRoot] = []
    for i, item in enumerate(s.sequence(node, where) or []):
        values = IMPLICIT.read(s, item, f"{where}[{i}]")
        # Missing required keys were reported by `read`; the rule is then incomplete.
        if values is None or any(k.required and k.name not in values for k in IMPLICIT.keys):
            continue
        rule = _implicit(s, values, ctx.get("roots", INVALID), ctx.get("stages", INVALID))
        if rule is not None:
            if any(r.root == rule.root for r in implicit):
                s.error(item, f"{where}[{i}].root", f"duplicate implicit root {rule.root!r}", code=codes.DUPLICATE)
            implicit.append(rule)
    return tuple(implicit)


def _parse_roots(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    items = s.sequence(node, where, non_empty=True)
    if items is None:
        return INVALID
    roots: list[str] = []
    for i, item in enumerate(items):
        value = fields.relative(s, item, f"{where}[{i}]")
        if value is not INVALID:
            if value in roots:
                s.error(item, f"{where}[{i}]", f"duplicate root {value!r}", code=codes.DUPLICATE)
            else:
                roots.append(value)
    # With an invalid root the list is partial: checking implicit roots against it
    # would report roots that are not wrong.
    return tuple(roots) if len(roots) == len(items) else INVALID


DISCOVERY_TABLE = Table("discovery", "Where test files are found.", (
    Key("roots", Parser("non-empty list of repo-relative directories", _parse_roots), REQUIRED,
        "Directories searched for test files."),
    Key("pattern", fields.string("basename glob", _check_pattern), "test_*.py", "File names that are test files."),
    Key("implicit", Parser("list of implicit roots", _parse_implicit, IMPLICIT), (),
        "Registrations for test files without a `register_*_ci` call.", shown_default="none"),
))


@dataclass(frozen=True)
class Discovery:
    roots: tuple[str, ...]
    pattern: str = DISCOVERY_TABLE.default("pattern")
    implicit: tuple[ImplicitRoot, ...] = DISCOVERY_TABLE.default("implicit")

    def implicit_for(self, file: str) -> ImplicitRoot | None:
        """The most specific implicit root containing `file`."""
        best = None
        for rule in self.implicit:
            if under(file, rule.root) and (best is None or len(rule.root) > len(best.root)):
                best = rule
        return best


def _build(s: Schema, v: Values) -> Discovery:
    return Discovery(roots=v.get("roots"), pattern=v.get("pattern"), implicit=v.get("implicit"))


DISCOVERY = fields.mapping_of(DISCOVERY_TABLE, _build)
