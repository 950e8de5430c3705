"""`backends:` the hardware a stage can need: cpu, cuda and rocm built in, more declared.

- In: the optional `backends` mapping, backend name -> null or `{accelerator: bool}`.
- Out: a frozen `Backends`: every backend in order (the built-ins first, then the declared
  ones in file order) with whether it is an accelerator.
- An accelerator backend's stages need `runs_on` (unless external), are diff-pruned by
  default, get an image entry in the plan, and its registrations need a label when
  `gpu_requires_labels` is true. A declared backend is an accelerator unless it says
  `accelerator: false`: a repository declares a backend for hardware it must schedule.
- Refused: a name outside `[a-z][a-z0-9_]*` (it becomes part of `register_<name>_ci`
  and of the `<name>_image` output), and a built-in redeclared differently.
- `DEFAULT_CONTAINER_OPTIONS`: the `docker run` options a backend's container needs to
  see its devices (cuda: `--gpus all`; rocm: the KFD and DRI devices and the video and
  render groups); "" for cpu and any other backend.
- `backend_parser` reads a backend name elsewhere (`stages[].backend`, implicit roots),
  checked against the backends parsed before it.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

import yaml

from ci_policy.config import codes, fields
from ci_policy.config.fields import Context, FrozenMap, Key, Parser, Table
from ci_policy.read.yamlnodes import INVALID, Schema

BACKEND_NAME = r"[a-z][a-z0-9_]*"
BACKEND_NAME_RE = re.compile(BACKEND_NAME)
# Name -> accelerator, for the backends every configuration has.
BUILTIN_BACKENDS: FrozenMap[str, bool] = FrozenMap({"cpu": False, "cuda": True, "rocm": True})
# The container options that give a job's container its backend's devices.
DEFAULT_CONTAINER_OPTIONS: FrozenMap[str, str] = FrozenMap({
    "cpu": "",
    "cuda": "--gpus all",
    "rocm": "--device /dev/kfd --device /dev/dri --group-add video --group-add render",
})

BACKEND = Table("backends.<name>", "A declared backend (null keeps the defaults): an accelerator unless it says "
                "`accelerator: false`.", (
    Key("accelerator", fields.boolean(), True,
        "Tests of this backend need an accelerator runner (image, `runs_on`, diff pruning, labels)."),
))


@dataclass(frozen=True)
class Backends:
    """Every backend of the configuration: name -> whether it is an accelerator."""

    accelerator: FrozenMap[str, bool] = BUILTIN_BACKENDS
    line: int | None = None

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


DEFAULT_BACKENDS = Backends()


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null")


def parse_backends(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    table = s.mapping(node, where, open_keys=True)
    if table is None:
        return INVALID
    declared = dict(BUILTIN_BACKENDS)
    before = len(s.errors)
    for name, (key_node, value_node) in table.items():
        at = f"{where}.{name}"
        if not BACKEND_NAME_RE.fullmatch(name):
            s.error(key_node, at, f"{name!r} is not a valid backend name (expected {BACKEND_NAME})",
                    hint="use lower-case letters, digits and '_', e.g. npu", code=codes.INVALID_VALUE)
            continue
        accelerator = BACKEND.default("accelerator")
        if not _is_null(value_node):
            values = BACKEND.read(s, value_node, at)
            if values is None or values.any_invalid():
                continue
            accelerator = values.get("accelerator")
        if name in BUILTIN_BACKENDS and accelerator != BUILTIN_BACKENDS[name]:
            s.error(key_node, at, f"{name} is built in with accelerator: "
                    f"{str(BUILTIN_BACKENDS[name]).lower()} and cannot be redeclared differently",
                    hint=f"remove {name} from backends", code=codes.INCONSISTENT)
            continue
        declared[name] = accelerator
    if len(s.errors) != before:
        return INVALID
    return Backends(accelerator=FrozenMap(declared), line=node.start_mark.line + 1)


BACKENDS_SECTION = Parser("mapping of backend name to null or a backend", parse_backends, BACKEND)


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
    close = difflib.get_close_matches(value, backends.names, n=1)
    if BACKEND_NAME_RE.fullmatch(value):
        hint = (f"did you mean {close[0]!r}? Otherwise, " if close else "") + declare_hint(value)
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


def backend_parser() -> Parser:
    return Parser("cpu | cuda | rocm | a declared backend", _parse_backend)
