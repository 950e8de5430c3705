"""`backends:` the hardware a stage can need: cpu, cuda and rocm built in, more declared.

- In: the optional `backends` mapping, backend name -> null or
  `{accelerator: bool, container_options: string}`.
- Out: a frozen `Backends`: every backend in order (the built-ins first, then the declared
  ones in file order) with whether it is an accelerator, and the `docker run` options its
  stage jobs' containers get (`container_options_for`: the configured string, else
  `DEFAULT_CONTAINER_OPTIONS`, the one table of the built-in device options).
- An accelerator backend's stages need `runs_on` (unless external), are diff-pruned by
  default, get an image entry in the plan, and its registrations need a label when
  `gpu_requires_labels` is true. A declared backend is an accelerator unless it says
  `accelerator: false`: a repository declares a backend for hardware it must schedule.
- A built-in may be listed to set its `container_options`; it keeps its `accelerator`.
- Refused: a name outside `[a-z][a-z0-9_]*` (it becomes part of `register_<name>_ci`
  and of the `<name>_image` output), a built-in redeclared differently, container options
  with a control character (they become one line of a workflow's `container.options`).
- `backend_parser` reads a backend name elsewhere (`stages[].backend`, implicit roots),
  checked against the backends parsed before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from ci_policy.config import codes, fields
from ci_policy.config.fields import Context, FrozenMap, Key, Parser, Table
from ci_policy.read.lazyregex import LazyRegex
from ci_policy.read.names import closest
from ci_policy.read.yamlnodes import INVALID, Schema

BACKEND_NAME = r"[a-z][a-z0-9_]*"
BACKEND_NAME_RE = LazyRegex(BACKEND_NAME)
# Name -> accelerator, for the backends every configuration has.
BUILTIN_BACKENDS: FrozenMap[str, bool] = FrozenMap({"cpu": False, "cuda": True, "rocm": True})
# The `docker run` options that give a stage job's container its backend's devices; every other
# backend gets none unless it sets `container_options`.
DEFAULT_CONTAINER_OPTIONS: FrozenMap[str, str] = FrozenMap({
    "cuda": "--gpus all",
    "rocm": "--device /dev/kfd --device /dev/dri --group-add video --group-add render",
})
MAX_CONTAINER_OPTIONS = 1024


def _check_container_options(value: str) -> str | None:
    if len(value) > MAX_CONTAINER_OPTIONS:
        return f"container options are longer than {MAX_CONTAINER_OPTIONS} characters"
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        return f"{value[:80]!r} has a control character; container options are one line"
    return None


BACKEND = Table("backends.<name>", "A declared backend (null keeps the defaults): an accelerator unless it says "
                "`accelerator: false`. A built-in may be listed to set its `container_options`.", (
    Key("accelerator", fields.boolean(), True,
        "Tests of this backend need an accelerator runner (image, `runs_on`, diff pruning, labels)."),
    Key("container_options", fields.string("string (docker run options)", _check_container_options,
                                           item={"maxLength": MAX_CONTAINER_OPTIONS,
                                                 "pattern": "^[^\\x00-\\x1f\\x7f]*$"}), None,
        "The `docker run` options of its stage jobs' containers (the plan's `stage_matrix_<wave>`).",
        shown_default="cuda: `--gpus all`; rocm: `--device /dev/kfd --device /dev/dri --group-add video "
                      "--group-add render`; others: none"),
))


@dataclass(frozen=True)
class Backends:
    """Every backend of the configuration: name -> whether it is an accelerator."""

    accelerator: FrozenMap[str, bool] = BUILTIN_BACKENDS
    line: int | None = None
    # Backend -> its configured `container_options` (only the backends that set them).
    container_options: FrozenMap[str, str] = FrozenMap()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.accelerator)

    @property
    def accelerators(self) -> tuple[str, ...]:
        return tuple(name for name, acc in self.accelerator.items() if acc)

    def __contains__(self, name: object) -> bool:
        return name in self.accelerator

    def is_accelerator(self, name: str) -> bool:
        return self.accelerator.get(name, False)

    def container_options_for(self, name: str) -> str:
        """The configured options, else the built-in default (`DEFAULT_CONTAINER_OPTIONS`), else ""."""
        configured = self.container_options.get(name)
        return configured if configured is not None else DEFAULT_CONTAINER_OPTIONS.get(name, "")


DEFAULT_BACKENDS = Backends()


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null")


def parse_backends(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    table = s.mapping(node, where, open_keys=True)
    if table is None:
        return INVALID
    declared = dict(BUILTIN_BACKENDS)
    options: dict[str, str] = {}
    before = len(s.errors)
    for name, (key_node, value_node) in table.items():
        at = f"{where}.{name}"
        if not BACKEND_NAME_RE.fullmatch(name):
            s.error(key_node, at, f"{name!r} is not a valid backend name (expected {BACKEND_NAME})",
                    hint="use lower-case letters, digits and '_', e.g. npu", code=codes.INVALID_VALUE)
            continue
        # A built-in listed only for its container options keeps what it is.
        accelerator = BUILTIN_BACKENDS.get(name, BACKEND.default("accelerator"))
        if not _is_null(value_node):
            values = BACKEND.read(s, value_node, at)
            if values is None or values.any_invalid():
                continue
            accelerator = values.get("accelerator", accelerator)
            if values.get("container_options") is not None:
                options[name] = values.get("container_options")
        if name in BUILTIN_BACKENDS and accelerator != BUILTIN_BACKENDS[name]:
            s.error(key_node, at, f"{name} is built in with accelerator: "
                    f"{str(BUILTIN_BACKENDS[name]).lower()} and cannot be redeclared differently",
                    hint=f"remove {name} from backends", code=codes.INCONSISTENT)
            continue
        declared[name] = accelerator
    if len(s.errors) != before:
        return INVALID
    return Backends(accelerator=FrozenMap(declared), line=node.start_mark.line + 1,
                    container_options=FrozenMap(options))


BACKENDS_SECTION = Parser("mapping of backend name to null or a backend", parse_backends, BACKEND, schema={
    "type": "object", "propertyNames": {"pattern": f"^(?:{BACKEND_NAME})$"},
    "additionalProperties": {"anyOf": [{"type": "null"}, fields.TABLE]}})


def backends_of(ctx: Context) -> Any:
    """The backends parsed before this key (the built-ins when the file declares none; INVALID if wrong)."""
    return ctx.get("backends", DEFAULT_BACKENDS)


def declare_hint(name: str) -> str:
    return f"declare it in the configuration: backends: {{{name}: {{accelerator: true}}}}"


def check_backend(s: Schema, node: yaml.Node, where: str, backends: Backends) -> Any:
    """A backend name that must be one of `backends`; the error says how to declare another."""
    if not (isinstance(node, yaml.ScalarNode) and node.tag.endswith(":str")) or node.value in backends:
        # A known name, or no string at all: the usual "expected one of ..., got an integer".
        return s.choice(node, where, backends.names)
    value = node.value
    close = closest(value, backends.names)
    if BACKEND_NAME_RE.fullmatch(value):
        hint = (f"did you mean {close!r}? Otherwise, " if close is not None else "") + declare_hint(value)
    else:
        hint = f"use one of {', '.join(backends.names)} (a declared backend is named {BACKEND_NAME})"
    s.error(node, where, f"expected one of {', '.join(backends.names)}, got {value!r}", hint=hint,
            code=codes.INVALID_VALUE)
    return INVALID


def _parse_backend(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    backends = backends_of(ctx)
    if backends is INVALID:  # reported where it was declared; nothing to check against
        s.string(node, where)
        return INVALID
    return check_backend(s, node, where, backends)


# A backend name: a built-in one, or one declared under `backends` (the schema cannot check which).
BACKEND_SCHEMA: fields.JsonSchema = {"anyOf": [{"type": "string", "enum": list(BUILTIN_BACKENDS)},
                                               {"type": "string", "pattern": f"^(?:{BACKEND_NAME})$"}]}


def backend_parser() -> Parser:
    return Parser("cpu | cuda | rocm | a declared backend", _parse_backend, schema=BACKEND_SCHEMA)
