"""`discovery:` where test files are found, and the registration of unregistered ones.

- In: the `discovery` mapping, and the stages parsed before it (implicit roots name one).
- Out: a frozen `Discovery`: normalised repo-relative roots, the basename pattern(s) (a
  string, or a tuple when a list was written), each root's own pattern(s), the `exclude`
  globs, and `ImplicitRoot`s.
- Each `roots` entry is a path or `{path, pattern}`; a root's own pattern replaces the
  top-level one for files below it (the most specific root wins). `exclude` globs
  (gitignore-style with `!` negation, `ci_policy.read.globs`) drop paths from discovery
  altogether.
- Refused: roots that are absolute, leave the repository or repeat (in either form); a
  pattern with a `/`, an empty or repeated pattern list; an invalid exclude glob; an
  implicit root outside every discovery root, listed twice, `cpu_only` with a GPU
  backend, or whose suite is not a configured stage of its backend or is a stage with a command.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from ci_policy.config import codes, fields
from ci_policy.config.backends import backend_parser
from ci_policy.config.fields import REQUIRED, Context, Key, Parser, Table, Values
from ci_policy.config.stages import Backend
from ci_policy.read.globs import any_name_match, matches_any
from ci_policy.read.numbers import MAX_EST_TIME
from ci_policy.read.yamlnodes import INVALID, Schema

# One basename glob as written, or a list of them (kept as a tuple).
Pattern = str | tuple[str, ...]


def under(path: str, root: str) -> bool:
    """Whether repo-relative `path` is `root` or below it (`.` contains everything)."""
    return root == "." or path == root or path.startswith(root.rstrip("/") + "/")


def _check_pattern(value: str) -> str | None:
    if not value or "/" in value or "\\" in value:
        return f"{value!r} must be a basename glob such as 'test_*.py' (no '/')"
    return None


def _parse_pattern(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    if isinstance(node, yaml.SequenceNode):
        return s.string_list(node, where, non_empty=True, check=_check_pattern)
    return s.string(node, where, check=_check_pattern)


_BASENAME: fields.JsonSchema = {"type": "string", "pattern": "^[^/\\\\]+$"}
PATTERN = Parser("basename glob or non-empty list of them", _parse_pattern, schema={"anyOf": [
    _BASENAME, {"type": "array", "items": _BASENAME, "minItems": 1, "uniqueItems": True}]})

ROOT = Table("discovery.roots[]", "A root written as a mapping: a directory with its own pattern(s).", (
    Key("path", fields.relative_path(), REQUIRED, "Directory searched for test files."),
    Key("pattern", PATTERN, REQUIRED, "Replaces `discovery.pattern` for files below `path`."),
))


IMPLICIT = Table("discovery.implicit[]", "The registration of every unregistered test file below `root`.", (
    Key("root", fields.relative_path(), REQUIRED, "Directory inside a discovery root; the most specific root wins."),
    Key("backend", backend_parser(), REQUIRED, "Backend of the files below it."),
    Key("suite", fields.string("stage name"), REQUIRED, "A configured stage of that backend."),
    Key("est_time", fields.number(0, MAX_EST_TIME), REQUIRED, "Estimated seconds per file."),
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
    if root is not INVALID and roots is not INVALID and not any(under(root, r) for r, _own in roots):
        s.error(v.value_node("root"), v.path("root"), f"{root!r} is not inside any discovery root",
                hint="list it (or a parent) under discovery.roots", code=codes.INCONSISTENT)
    if v.get("cpu_only") is True and backend not in (INVALID, "cpu"):
        s.error(v.value_node("backend"), v.path("backend"), "a cpu_only root must have backend cpu",
                code=codes.INCONSISTENT)
    if suite is not INVALID and backend is not INVALID and stages is not INVALID:
        stage = next((st for st in stages if st.name == suite and st.backend == backend), None)
        if stage is None:
            # A stage without a valid name is reported where it is defined; only named ones are listed.
            names = ", ".join(st.name for st in stages if st.backend == backend and isinstance(st.name, str)) or "none"
            s.error(v.value_node("suite"), v.path("suite"),
                    f"{suite!r} is not a configured {backend} stage (configured {backend} stages: {names})",
                    code=codes.INCONSISTENT)
        elif stage.command:
            s.error(v.value_node("suite"), v.path("suite"), f"{suite!r} is a stage with a command, which runs "
                    "its suite itself; no test file is registered to it",
                    hint=f"name a {backend} stage that runs test files, or remove command from stage {suite!r}",
                    code=codes.INCONSISTENT)
    if v.any_invalid() or len(s.errors) != before:
        return None
    return ImplicitRoot(root=root, backend=backend, suite=suite, est_time=v.get("est_time"),
                        cpu_only=v.get("cpu_only"), line=v.line)


def _parse_implicit(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    implicit: list[ImplicitRoot] = []
    for i, item in enumerate(s.sequence(node, where) or []):
        values = IMPLICIT.read(s, item, f"{where}[{i}]", ctx)
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
    roots: list[tuple[str, Pattern | None]] = []
    for i, item in enumerate(items):
        pattern: Pattern | None = None
        if isinstance(item, yaml.MappingNode):
            values = ROOT.read(s, item, f"{where}[{i}]")
            if values is None or any(k.name not in values for k in ROOT.keys) or values.any_invalid():
                continue
            value, path_node, at = values.get("path"), values.value_node("path"), f"{where}[{i}].path"
            pattern = values.get("pattern")
        else:
            value, path_node, at = fields.relative(s, item, f"{where}[{i}]"), item, f"{where}[{i}]"
            if value is INVALID:
                continue
        if any(value == root for root, _own in roots):
            s.error(path_node, at, f"duplicate root {value!r}", code=codes.DUPLICATE)
            continue
        roots.append((value, pattern))
    # With an invalid root the list is partial: checking implicit roots against it
    # would report roots that are not wrong.
    return tuple(roots) if len(roots) == len(items) else INVALID


DISCOVERY_TABLE = Table("discovery", "Where test files are found.", (
    Key("roots", Parser("non-empty list of repo-relative directories or {path, pattern}", _parse_roots, ROOT,
                        schema={"type": "array", "items": {"anyOf": [fields.RELATIVE_PATH, fields.TABLE]},
                                "minItems": 1}),
        REQUIRED, "Directories searched for test files."),
    Key("pattern", PATTERN, "test_*.py", "File names that are test files."),
    Key("exclude", fields.strings("list of globs", check=fields.check_glob), (),
        "Paths dropped from discovery (e.g. `**/conftest.py`, a vendored directory).", shown_default="none"),
    Key("implicit", Parser("list of implicit roots", _parse_implicit, IMPLICIT,
                           schema={"type": "array", "items": fields.TABLE}), (),
        "Registrations for test files without a `register_*_ci` call.", shown_default="none"),
))


@dataclass(frozen=True)
class Discovery:
    roots: tuple[str, ...]
    pattern: Pattern = DISCOVERY_TABLE.default("pattern")
    implicit: tuple[ImplicitRoot, ...] = DISCOVERY_TABLE.default("implicit")
    # (root, its own pattern(s)) for the roots written as `{path, pattern}`.
    root_patterns: tuple[tuple[str, Pattern], ...] = ()
    exclude: tuple[str, ...] = DISCOVERY_TABLE.default("exclude")

    def pattern_for(self, file: str) -> Pattern:
        """The pattern(s) of the most specific root containing `file` (the top-level one by default)."""
        own = dict(self.root_patterns)
        best = max((r for r in self.roots if under(file, r)), key=len, default=None)
        return own.get(best, self.pattern) if best is not None else self.pattern

    def name_matches(self, file: str) -> bool:
        """Whether `file`'s basename matches the pattern(s) that apply to it."""
        pattern = self.pattern_for(file)
        name = file.rsplit("/", 1)[-1]
        return any(fnmatch.fnmatchcase(name, p) for p in ((pattern,) if isinstance(pattern, str) else pattern))

    def name_matcher(self) -> Callable[[str], bool]:
        """`name_matches`, remembering the pattern(s) of each directory: a checkout lists
        thousands of files in few directories, and every file of one directory is under
        the same roots (unless it is itself named as a root: asked in full)."""
        by_dir: dict[str, Callable[[str], bool]] = {}
        roots = frozenset(self.roots)

        def matches(file: str) -> bool:
            head, _, name = file.rpartition("/")
            match = by_dir.get(head)
            if match is None or file in roots:
                pattern = self.pattern_for(file)
                # One compiled expression per pattern list, called directly: a checkout has
                # few pattern lists and many names.
                match = any_name_match((pattern,) if isinstance(pattern, str) else tuple(pattern))
                if file not in roots:
                    by_dir[head] = match
            return match(name)
        return matches

    def excluded(self, path: str, *, directory: bool = False) -> bool:
        """Whether `exclude` (read as a .gitignore: the last matching glob wins) drops `path`.

        A dropped directory drops all below it, as in git, where a `!glob` cannot bring back a
        file of an excluded directory: so the walk need not enter one. A directory is also
        dropped by a glob that matches everything inside it (`vendor/`, `vendor/**`).
        """
        if not self.exclude:
            return False
        parts = path.split("/")
        above = ["/".join(parts[:i]) + "/" for i in range(1, len(parts))]
        # The trailing '/' says "a directory", so that `!vendor/keep/` can take one back.
        return (matches_any(self.exclude, path + "/" if directory else path)
                or any(matches_any(self.exclude, d) for d in above))

    def excluded_itself(self, path: str, *, directory: bool = False) -> bool:
        """`excluded`, for a path whose directories are known not to be dropped (a walk
        looks only into directories it did not drop): only `path` itself is matched."""
        return bool(self.exclude) and matches_any(self.exclude, path + "/" if directory else path)

    def is_test_file(self, file: str) -> bool:
        """Whether repo-relative `file` is under a root, not excluded, and matches its pattern(s)."""
        return (any(under(file, r) for r in self.roots) and not self.excluded(file)
                and self.name_matches(file))

    def implicit_for(self, file: str) -> ImplicitRoot | None:
        """The most specific implicit root containing `file`."""
        best = None
        for rule in self.implicit:
            if under(file, rule.root) and (best is None or len(rule.root) > len(best.root)):
                best = rule
        return best


def _build(s: Schema, v: Values) -> Discovery:
    roots = v.get("roots")
    if roots is INVALID:  # reported; the configuration is refused as a whole
        return Discovery(roots=INVALID, pattern=v.get("pattern"), implicit=v.get("implicit"))
    return Discovery(roots=tuple(r for r, _own in roots), pattern=v.get("pattern"), implicit=v.get("implicit"),
                     root_patterns=tuple((r, own) for r, own in roots if own is not None),
                     exclude=v.get("exclude"))


DISCOVERY = fields.mapping_of(DISCOVERY_TABLE, _build)
