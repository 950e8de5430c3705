"""Field tables: each configuration key stated once, with its parser, default and description.

- In: a `Table` per section (`Key(name, parser, default, doc)`), written next to the
  section's frozen dataclass, whose defaults come from `Table.default`.
- Out: `Table.read` checks a YAML mapping's keys (required, unknown with a did-you-mean,
  duplicate) and parses every present key with its parser, in table order, into `Values`;
  the section's build function then applies the cross-field checks and makes the dataclass.
  `ci_policy.config.reference` renders the same tables as the docs site's reference, and
  `ci_policy.config.schema` as the JSON Schema of the file: each parser carries the JSON
  Schema of the values it accepts (`Parser.schema`, as far as its checks can be written
  in JSON Schema), with `TABLE` standing for the object its nested table reads.
- Refused: through the `Schema` the keys are read with, each a located error (the YAML node's
  line, the key's path, a hint): an unknown key (CP102, with a did-you-mean), a missing
  required one (CP103), a duplicate (CP106), and whatever a key's parser refuses; a wrong
  value is parsed as `INVALID`, so the cross-field checks skip it rather than report it
  twice. A table that declares a key twice is a `ValueError` at import: the tables' own bug.
- Every number key has a range (`integer`, `number`: `ci_policy.read.numbers`), shown in the
  reference and in the hint of an out-of-range value.
- Also here: `FrozenMap`, the read-only (and hashable) mapping the sections store, and the
  parsers shared by several sections.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import yaml

from ci_policy.config.codes import SCHEMA_CODES
from ci_policy.errors import InputError
from ci_policy.read.checkout import check_relative
from ci_policy.read.globs import GlobError, compile_glob
from ci_policy.read.numbers import MAX_COUNT, MAX_NUMBER, number_range
from ci_policy.read.yamlnodes import INVALID, Schema

K = TypeVar("K")
V = TypeVar("V")

# Values parsed so far: the keys of the mapping being read, then those of the enclosing ones.
Context = Mapping[str, Any]
ParseFn = Callable[[Schema, yaml.Node, str, Context], Any]
Check = Callable[[str], str | None]


class FrozenMap(Mapping[K, V]):
    """A read-only mapping that keeps insertion order, compares like a dict and hashes by content."""

    __slots__ = ("_data",)

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        self._data: dict[K, V] = dict(items)

    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self._data == dict(other.items())
        return NotImplemented

    def __hash__(self) -> int:
        # Order-free, like __eq__: equal maps hash alike whatever their key order.
        return hash(frozenset(self._data.items()))

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"


def freeze(value: Any) -> Any:
    """A plain YAML value made read-only: mappings become `FrozenMap`s, lists tuples."""
    if isinstance(value, Mapping):
        return FrozenMap((k, freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()

# A JSON Schema fragment: JSON values, where `TABLE` (or `table_object(...)`) may stand for
# the object schema of the parser's table.
JsonSchema = Mapping[str, Any]


@dataclass(frozen=True)
class TableObject:
    """In a parser's schema: the object its table reads, with `extra` keywords added."""

    extra: JsonSchema = field(default_factory=dict, compare=False)


TABLE = TableObject()


def table_object(**extra: Any) -> TableObject:
    return TableObject(extra)


@dataclass(frozen=True)
class Parser:
    """How one key's value is read: `kind` names the accepted values in the reference."""

    kind: str
    parse: ParseFn
    # The table of the mapping (or of each list item) this key holds, for the reference.
    table: Table | None = None
    # The JSON Schema of the accepted values (`TABLE`: the object `table` reads), for
    # `ci_policy.config.schema`; every parser of a key has one.
    schema: JsonSchema | TableObject | None = field(default=None, compare=False)

    def __call__(self, s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
        return self.parse(s, node, where, ctx)


@dataclass(frozen=True)
class Key:
    """One configuration key: name, parser, default (`REQUIRED` if none) and a one-line description."""

    name: str
    parser: Parser
    default: Any
    doc: str
    # The reference shows this instead of the default's repr (a computed or a long default).
    shown_default: str | None = None
    # The default depends on other keys (`shown_default` says how): the JSON Schema gives none.
    computed_default: bool = False

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class Table:
    """The keys of one configuration mapping, in parse order (a key may use earlier ones)."""

    title: str  # the mapping's path in the reference, e.g. `gates` or `stages[]`
    doc: str
    keys: tuple[Key, ...]
    by_name: Mapping[str, Key] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [key.name for key in self.keys]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.title}: a key is declared twice: {names}")
        object.__setattr__(self, "by_name", FrozenMap((key.name, key) for key in self.keys))

    def __getitem__(self, name: str) -> Key:
        return self.by_name[name]

    def default(self, name: str) -> Any:
        """The default of an optional key: the value its dataclass field starts with."""
        key = self.by_name[name]
        if key.required:
            raise KeyError(f"{self.title}.{name} is required and has no default")
        return key.default

    def read(self, s: Schema, node: yaml.Node, where: str, ctx: Context | None = None) -> Values | None:
        """Check the mapping's keys and parse each present one; `None` if `node` is no mapping."""
        fields = s.mapping(node, where, required=tuple(k.name for k in self.keys if k.required),
                           optional=tuple(k.name for k in self.keys if not k.required))
        if fields is None:
            return None
        values = Values(self, node, where, fields)
        chain = ChainMap(values.parsed, dict(ctx or {}))
        for key in self.keys:
            if key.name in fields:
                values.parsed[key.name] = key.parser(s, fields[key.name][1], values.path(key.name), chain)
        return values


@dataclass
class Values:
    """The keys one mapping holds: parsed values, their nodes, and the table's defaults."""

    table: Table
    node: yaml.Node
    where: str
    fields: dict[str, tuple[yaml.Node, yaml.Node]]
    parsed: dict[str, Any] = field(default_factory=dict)

    def __contains__(self, name: str) -> bool:
        return name in self.fields

    def get(self, name: str, default: Any = REQUIRED) -> Any:
        """The parsed value (`INVALID` if it was wrong), else `default`, else the table's default."""
        if name in self.parsed:
            return self.parsed[name]
        if default is not REQUIRED:
            return default
        fallback = self.table[name].default
        return INVALID if fallback is REQUIRED else fallback

    def value_node(self, name: str) -> yaml.Node:
        return self.fields[name][1]

    def path(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    @property
    def line(self) -> int:
        return int(self.node.start_mark.line) + 1

    def any_invalid(self) -> bool:
        return any(value is INVALID for value in self.parsed.values())


# -- parsers shared by several sections ----------------------------------------------------------

def boolean() -> Parser:
    return Parser("boolean", lambda s, n, w, c: s.scalar(n, w, bool), schema={"type": "boolean"})


def _bound(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def integer_schema(minimum: int, maximum: int = MAX_COUNT) -> JsonSchema:
    return {"type": "integer", "minimum": minimum, "maximum": maximum}


def integer(minimum: int, maximum: int = MAX_COUNT) -> Parser:
    return Parser(f"integer in {number_range(minimum, maximum)}",
                  lambda s, n, w, c: s.number(n, w, minimum=minimum, maximum=maximum, integer=True),
                  schema=integer_schema(minimum, maximum))


def number(minimum: float = 0.0, maximum: float = MAX_NUMBER, *, strict: bool = False) -> Parser:
    kind = f"number in {number_range(minimum, maximum, strict=strict)}"
    lower = "exclusiveMinimum" if strict else "minimum"
    return Parser(kind, lambda s, n, w, c: s.number(n, w, minimum=minimum, maximum=maximum, strict=strict),
                  schema={"type": "number", lower: _bound(minimum), "maximum": _bound(maximum)})


def string_schema(item: JsonSchema | None = None) -> JsonSchema:
    """A string, with `item`'s keywords (a pattern, lengths) where its check can be written so."""
    return {"type": "string", **(item or {})}


def string(kind: str = "string", check: Check | None = None, *, item: JsonSchema | None = None) -> Parser:
    return Parser(kind, lambda s, n, w, c: s.string(n, w, check=check), schema=string_schema(item))


def choice(options: Iterable[str]) -> Parser:
    shown = tuple(options)
    return Parser(" | ".join(shown), lambda s, n, w, c: s.choice(n, w, shown),
                  schema={"type": "string", "enum": list(shown)})


def strings_schema(*, non_empty: bool = False, item: JsonSchema | None = None) -> JsonSchema:
    """A list of distinct strings (`Schema.string_list` refuses a repeated one)."""
    return {"type": "array", "items": string_schema(item), **({"minItems": 1} if non_empty else {}),
            "uniqueItems": True}


def strings(kind: str = "list of strings", *, non_empty: bool = False, check: Check | None = None,
            item: JsonSchema | None = None) -> Parser:
    return Parser(kind, lambda s, n, w, c: s.string_list(n, w, non_empty=non_empty, check=check),
                  schema=strings_schema(non_empty=non_empty, item=item))


def relative(s: Schema, node: yaml.Node, where: str) -> Any:
    """A repo-relative POSIX path, normalised (`./a//b` is `a/b`)."""
    value = s.string(node, where)
    if value is INVALID:
        return INVALID
    try:
        return check_relative(value, field=where)
    except InputError as exc:
        s.error(node, "", exc.message, exc.hint)
        return INVALID


# What `check_relative` accepts: no surrounding whitespace, no backslash or NUL, not
# absolute, no `..` segment.
RELATIVE_PATH: JsonSchema = {
    "type": "string",
    "pattern": r"^(?!/)(?!(?:.*/)?\.\.(?:/|$))[^\s\\\x00](?:[^\\\x00]*[^\s\\\x00])?$",
}


def relative_path() -> Parser:
    return Parser("repo-relative path", lambda s, n, w, c: relative(s, n, w), schema=RELATIVE_PATH)


def mapping_of(table: Table, build: Callable[[Schema, Values], Any]) -> Parser:
    """A nested mapping read with `table` and made into its dataclass by `build`."""

    def parse(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
        values = table.read(s, node, where, ctx)
        return INVALID if values is None else build(s, values)

    return Parser("mapping (below)", parse, table, schema=TABLE)


def list_of(table: Table, build: Callable[[Values], Any], kind: str) -> Parser:
    """A list of mappings read with `table`; an item with a missing or invalid key is left out
    (its errors are already reported), every other one made by `build`."""

    def parse(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
        items = []
        for i, item in enumerate(s.sequence(node, where) or []):
            values = table.read(s, item, f"{where}[{i}]", ctx)
            if values is None or values.any_invalid() or any(k.required and k.name not in values
                                                             for k in table.keys):
                continue
            items.append(build(values))
        return tuple(items)

    return Parser(kind, parse, table, schema={"type": "array", "items": TABLE})


def check_glob(value: str) -> str | None:
    try:
        compile_glob(value)
    except GlobError as exc:
        return str(exc)
    return None


def new_schema(path: str) -> Schema:
    """A `Schema` whose errors carry the configuration's diagnostic codes."""
    return Schema(path, codes=SCHEMA_CODES)
