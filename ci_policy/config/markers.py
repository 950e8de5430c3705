"""`markers:` the marker dialect of the repository: names, extra arguments, the suite template.

- In: the optional `markers` mapping, read after `backends` (each name maps to one):
  `names` (marker name -> backend, added to `register_cpu_ci`, `register_cuda_ci`,
  `register_rocm_ci`), `extra_arguments` (argument name -> type) and `suite` (a template
  such as `{stage}-test-{runner_config}`).
- Out: a frozen `Markers`; `names` holds the built-ins and the declared names.
- Extra arguments are keyword-only on every registration marker and type-checked there
  (`ci_policy.model.registry`); the template's fields are extra arguments, and a call
  without `suite` gets its suite from the template and its literal arguments.
- Refused: a name not shaped `register_<word>_ci`, `register_ci_gate`, a built-in name
  mapped to another backend, a backend not declared; an extra argument that is not an
  identifier or is a built-in parameter; an unknown type; a template with bad braces,
  a conversion or format spec, no field, or a field that is not a declared extra argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from ci_policy.config import codes, fields
from ci_policy.config.backends import BACKEND_NAME_RE, BACKEND_SCHEMA, backends_of, declare_hint
from ci_policy.config.fields import Context, FrozenMap, Key, Parser, Table, Values
from ci_policy.read.lazyregex import LazyRegex
from ci_policy.read.markers import BUILTIN_PARAMETERS, GATE_MARKER, MARKER_NAME_RE, REGISTRATION_MARKERS
from ci_policy.read.yamlnodes import INVALID, Schema

# Extra argument types: name -> what a literal of that type is.
ARGUMENT_TYPES = ("string", "integer", "number", "boolean", "strings")
_IDENTIFIER = LazyRegex(r"[A-Za-z_][A-Za-z0-9_]*")


def _parse_names(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    table = s.mapping(node, where, open_keys=True)
    if table is None:
        return INVALID
    backends = backends_of(ctx)
    names = dict(REGISTRATION_MARKERS)
    before = len(s.errors)
    for name, (key_node, value_node) in table.items():
        at = f"{where}.{name}"
        if name == GATE_MARKER:
            s.error(key_node, at, f"{GATE_MARKER} is the gate marker, not a registration marker",
                    hint="remove it from markers.names", code=codes.INVALID_VALUE)
            continue
        if not MARKER_NAME_RE.fullmatch(name):
            s.error(key_node, at, f"{name!r} is not a marker name (expected register_<word>_ci)",
                    hint="write e.g. register_npu_ci: npu", code=codes.INVALID_VALUE)
            continue
        backend = s.string(value_node, at)
        if backend is INVALID or backends is INVALID:
            continue
        if backend not in backends:
            hint = (declare_hint(backend) if BACKEND_NAME_RE.fullmatch(backend)
                    else f"use one of {', '.join(backends.names)}")
            s.error(value_node, at, f"backend {backend!r} is not declared (backends: {', '.join(backends.names)})",
                    hint=hint, code=codes.INVALID_VALUE)
            continue
        builtin = REGISTRATION_MARKERS.get(name)
        if builtin is not None and builtin != backend:
            s.error(value_node, at, f"{name} is built in for {builtin} and cannot be mapped to {backend}",
                    hint=f"remove {name} from markers.names, or map another name to {backend}",
                    code=codes.INCONSISTENT)
            continue
        names[name] = backend
    return INVALID if len(s.errors) != before else FrozenMap(names)


def _parse_extra(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    table = s.mapping(node, where, open_keys=True)
    if table is None:
        return INVALID
    extra: dict[str, str] = {}
    before = len(s.errors)
    for name, (key_node, value_node) in table.items():
        at = f"{where}.{name}"
        if not _IDENTIFIER.fullmatch(name):
            s.error(key_node, at, f"{name!r} is not a Python argument name", code=codes.INVALID_VALUE)
            continue
        if name in BUILTIN_PARAMETERS:
            s.error(key_node, at, f"{name} is a built-in argument of every registration marker "
                    f"({', '.join(BUILTIN_PARAMETERS)})", hint=f"remove {name} from markers.extra_arguments",
                    code=codes.INVALID_VALUE)
            continue
        kind = s.choice(value_node, at, ARGUMENT_TYPES)
        if kind is not INVALID:
            extra[name] = kind
    return INVALID if len(s.errors) != before else FrozenMap(extra)


def template_fields(template: str) -> tuple[str, ...] | str:
    """The field names of a suite template, in order, or why it is malformed."""
    # Imported here: only a configuration with a suite template reads one, and `string` compiles
    # its Template pattern when imported (tests/cli/test_startup.py::test_a_command_imports_no_string_module).
    import string

    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        return f"{template!r} is not a valid template: {exc}"
    out: list[str] = []
    for _literal, name, spec, conversion in parts:
        if name is None:
            continue
        if not _IDENTIFIER.fullmatch(name):
            return f"{template!r}: {{{name}}} must name an extra argument, e.g. {{stage}}"
        if spec or conversion:
            return f"{template!r}: {{{name}}} must be a bare field, without a conversion or format spec"
        if name not in out:
            out.append(name)
    if not out:
        return f"{template!r} has no {{field}}, so every call would get the same suite"
    return tuple(out)


def _parse_suite(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    template = s.string(node, where)
    if template is INVALID:
        return INVALID
    found = template_fields(template)
    if isinstance(found, str):
        s.error(node, where, found, hint='write e.g. "{stage}-test-{runner_config}"', code=codes.INVALID_VALUE)
        return INVALID
    extra = ctx.get("extra_arguments", FrozenMap())
    if extra is INVALID:
        return INVALID
    missing = [name for name in found if name not in extra]
    if missing:
        s.error(node, where, f"{{{missing[0]}}} is not a declared extra argument "
                f"(markers.extra_arguments: {', '.join(extra) or 'none'})",
                hint=f"declare it: markers: {{extra_arguments: {{{missing[0]}: string}}}}", code=codes.INCONSISTENT)
        return INVALID
    return template


MARKERS_TABLE = Table("markers", "The repository's marker dialect.", (
    Key("names", Parser("mapping of `register_<word>_ci` to a backend", _parse_names,
                        schema={"type": "object", "propertyNames": {"pattern": f"^(?:{MARKER_NAME_RE.pattern})$"},
                                "additionalProperties": BACKEND_SCHEMA}), FrozenMap(REGISTRATION_MARKERS),
        "Registration markers added to `register_cpu_ci`, `register_cuda_ci`, `register_rocm_ci`.",
        shown_default="the three built-ins"),
    Key("extra_arguments", Parser("mapping of argument name to " + " | ".join(ARGUMENT_TYPES), _parse_extra,
                                  schema={"type": "object",
                                          "propertyNames": {"pattern": f"^(?:{_IDENTIFIER.pattern})$",
                                                            "not": {"enum": list(BUILTIN_PARAMETERS)}},
                                          "additionalProperties": {"type": "string", "enum": list(ARGUMENT_TYPES)}}),
        FrozenMap(), "Keyword arguments every registration marker accepts, with their type "
        "(`strings`: a list of strings).", shown_default="none"),
    Key("suite", Parser("template with `{argument}` fields", _parse_suite,
                        schema={"type": "string", "pattern": "\\{[A-Za-z_][A-Za-z0-9_]*\\}"}), None,
        "The suite of a call without `suite`, built from its extra arguments.", shown_default="none"),
))


@dataclass(frozen=True)
class Markers:
    """The marker dialect: name -> backend, extra argument -> type, and the suite template."""

    names: FrozenMap[str, str] = MARKERS_TABLE.default("names")
    extra_arguments: FrozenMap[str, str] = MARKERS_TABLE.default("extra_arguments")
    suite: str | None = MARKERS_TABLE.default("suite")
    line: int | None = None

    @property
    def suite_fields(self) -> tuple[str, ...]:
        found = template_fields(self.suite) if self.suite is not None else ()
        return found if isinstance(found, tuple) else ()

    def names_of(self, backend: str) -> tuple[str, ...]:
        return tuple(name for name, b in self.names.items() if b == backend)


def _build(s: Schema, v: Values) -> Any:
    if v.any_invalid():
        return INVALID
    return Markers(names=FrozenMap(v.get("names")), extra_arguments=v.get("extra_arguments"),
                   suite=v.get("suite"), line=v.line)


MARKERS = fields.mapping_of(MARKERS_TABLE, _build)
