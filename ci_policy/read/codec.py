"""One codec for the JSON documents ci-policy writes and reads back, derived from frozen dataclasses.

- In: a document as `read.declare` declares it: a frozen dataclass whose fields are annotated
  with str, int, float, bool, None unions, `Literal`, `tuple[X, ...]`, fixed arrays
  (`tuple[int, float]`), nested dataclasses and `Mapping[str, X]`, with each field's
  `spec(...)` metadata.
- Out: `encode(value)`: JSON data, each object's keys in declared field order (a field
  `omit_none` left out when None); `decode(kind, data)`: the value, strictly;
  `decode_fields(cls, data, skip)`: one object's fields but `skip` (left as read, for a reader
  that decodes them later or not at all); `decode_each(cls, data, skip)`: the same, collecting
  every problem instead of stopping at the first (one per key missing or unknown, a `KeyFault`,
  and one per field), for a reader that reports them all at once; `schema(kind)`: its JSON
  Schema (draft 2020-12).
- Refused: `DecodeError` with `where` (`stages[1].shards[0].files[2]`, a mapping's key as
  `files["tests/a.py"]`) and `message`: an unknown key, a missing one (a field without a
  default), a wrong type, a number out of range, a string not matching its pattern, what a
  field's own check refuses.
- Standard library only: the core depends on PyYAML, packaging and pathspec alone, so
  msgspec (compiled), cattrs and pydantic are out; the configuration's field tables
  (`config.fields`) read YAML nodes with their own locations, not JSON data.
- Lists of plain or patterned strings, and mappings of them, are checked in one pass (a
  plan holds thousands of paths and content ids); the walk per element runs only to locate a fault.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union, get_args, get_origin

from ci_policy.read.declare import MAX_WHOLE, MISSING, DecodeError, KeyFault, Schema, Spec, T, kind_of, shown
from ci_policy.read.numbers import is_finite_number


def _fail(message: str) -> DecodeError:
    return DecodeError(message)


class _Node:
    """One type's decoder, encoder and schema."""

    nullable = False

    def decode(self, value: Any) -> Any:
        raise NotImplementedError

    def encode(self, value: Any, replace: _Replace) -> Any:
        return value

    def schema(self) -> Schema:
        raise NotImplementedError


_Replace = Mapping[tuple[type, str], Callable[[Any], Any]]


def _nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


class _Str(_Node):
    def __init__(self, s: Spec, nullable: bool) -> None:
        self.nullable = nullable
        self.regex = re.compile(s.pattern) if s.pattern is not None else None
        self.expected = s.expected
        self.spec = s

    def decode(self, value: Any) -> Any:
        if type(value) is str:
            if self.regex is None or self.regex.fullmatch(value):
                return value
            raise _fail(f"{self.expected or 'expected a string matching ' + repr(self.spec.pattern)}, "
                        f"got {shown(value)}")
        if value is None and self.nullable:
            return None
        if self.expected is not None:
            raise _fail(f"{self.expected}, got {shown(value)}")
        raise _fail(f"expected a string, got {kind_of(value)}")

    def schema(self) -> Schema:
        out: Schema = {"type": "string"}
        if self.spec.pattern is not None:
            out["pattern"] = f"^(?:{self.spec.pattern})$"
        return _nullable(out) if self.nullable else out


class _Bool(_Node):
    def __init__(self, nullable: bool) -> None:
        self.nullable = nullable

    def decode(self, value: Any) -> Any:
        if type(value) is bool or (value is None and self.nullable):
            return value
        raise _fail(f"expected true or false, got {kind_of(value)}")

    def schema(self) -> Schema:
        return _nullable({"type": "boolean"}) if self.nullable else {"type": "boolean"}


class _Int(_Node):
    def __init__(self, s: Spec, nullable: bool) -> None:
        self.nullable = nullable
        self.minimum = s.minimum
        self.maximum = MAX_WHOLE if s.maximum is None else s.maximum
        self.expected = s.expected or ("expected a whole number" if s.minimum is None
                                       else f"expected a whole number >= {s.minimum}")

    def decode(self, value: Any) -> Any:
        if type(value) is int and (self.minimum is None or self.minimum <= value) and value <= self.maximum:
            return value
        if value is None and self.nullable:
            return None
        raise _fail(f"{self.expected}, got {shown(value)}")

    def schema(self) -> Schema:
        out: Schema = {"type": "integer"}
        if self.minimum is not None:
            out["minimum"] = self.minimum
        out["maximum"] = self.maximum
        return _nullable(out) if self.nullable else out


class _Float(_Node):
    def __init__(self, s: Spec, nullable: bool) -> None:
        self.nullable = nullable
        self.minimum, self.maximum, self.exclusive = s.minimum, s.maximum, s.exclusive_minimum
        null = "null or " if nullable else ""
        if s.expected is not None:
            self.expected = s.expected
        elif s.minimum is not None and s.maximum is not None:
            self.expected = (f"expected {null}a number in {'(' if s.exclusive_minimum else '['}"
                             f"{s.minimum}, {s.maximum}]")
        elif s.minimum is not None:
            self.expected = f"expected {null}a number {'>' if s.exclusive_minimum else '>='} {s.minimum}"
        else:
            self.expected = f"expected {null}a finite number"

    def decode(self, value: Any) -> Any:
        if is_finite_number(value):
            low, high = self.minimum, self.maximum
            if ((low is None or (low < value if self.exclusive else low <= value))
                    and (high is None or value <= high)):
                return value
        elif value is None and self.nullable:
            return None
        raise _fail(f"{self.expected}, got {shown(value)}")

    def schema(self) -> Schema:
        out: Schema = {"type": "number"}
        if self.minimum is not None:
            out["exclusiveMinimum" if self.exclusive else "minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        return _nullable(out) if self.nullable else out


class _Literal(_Node):
    def __init__(self, values: tuple[Any, ...], s: Spec, nullable: bool) -> None:
        self.nullable = nullable
        self.values = values
        self.kinds = {(type(v), v) for v in values}
        self.types = {type(v) for v in values}
        self.expected = s.expected or f"expected one of {', '.join(map(str, values))}"

    def decode(self, value: Any) -> Any:
        if (type(value) in self.types and (type(value), value) in self.kinds) or (value is None and self.nullable):
            return value
        raise _fail(f"{self.expected}, got {shown(value)}")

    def schema(self) -> Schema:
        out: Schema = {"const": self.values[0]} if len(self.values) == 1 else {"enum": list(self.values)}
        return _nullable(out) if self.nullable else out


_SCALARS = (_Str, _Int, _Float, _Bool, _Literal)


def _joined(node: _Node) -> re.Pattern[str] | None:
    """For strings of one pattern (`_Str` with no check): a regex matching them joined by newlines."""
    if type(node) is _Str and not node.nullable and node.regex is not None and "\n" not in node.spec.pattern:  # type: ignore[operator]
        return re.compile(f"(?:(?:{node.spec.pattern})\n)*")
    return None


def _all_match(joined: re.Pattern[str], values: list[Any]) -> bool:
    if not set(map(type, values)) <= {str}:
        return False
    text = "\n".join([*values, ""])
    return text.count("\n") == len(values) and joined.fullmatch(text) is not None


def _plain_str(node: _Node) -> bool:
    return type(node) is _Str and node.regex is None and not node.nullable and node.expected is None


class _Tuple(_Node):
    def __init__(self, item: _Node, s: Spec, nullable: bool) -> None:
        self.nullable = nullable
        self.item = item
        self.unique, self.min_items, self.each = s.unique, s.min_items, s.each
        self.plain = _plain_str(item)
        self.joined = _joined(item)

    def decode(self, value: Any) -> Any:
        if type(value) is not list:
            if value is None and self.nullable:
                return None
            raise _fail(f"expected an array, got {kind_of(value)}")
        if self.min_items is not None and len(value) < self.min_items:
            raise _fail("must not be empty" if self.min_items == 1 else f"expected at least {self.min_items} items")
        fast = ((self.plain and set(map(type, value)) <= {str})
                or (self.joined is not None and _all_match(self.joined, value)))
        if (fast and (not self.unique or len(set(value)) == len(value))
                and (self.each is None or not any(map(self.each, value)))):
            return tuple(value)
        decode, each, out, seen = self.item.decode, self.each, [], set()
        for i, item in enumerate(value):
            try:
                got = decode(item)
                problem = None if each is None else each(got)
                if problem is not None:
                    raise _fail(problem)
                if self.unique:
                    if got in seen:
                        raise _fail(f"duplicate entry {got!r}")
                    seen.add(got)
            except DecodeError as exc:
                raise exc.inside(f"[{i}]") from None
            out.append(got)
        return tuple(out)

    def encode(self, value: Any, replace: _Replace) -> Any:
        if value is None:
            return None
        if type(self.item) in _SCALARS:
            return list(value)
        return [self.item.encode(item, replace) for item in value]

    def schema(self) -> Schema:
        out: Schema = {"type": "array", "items": self.item.schema()}
        if self.unique:
            out["uniqueItems"] = True
        if self.min_items is not None:
            out["minItems"] = self.min_items
        return _nullable(out) if self.nullable else out


class _Fixed(_Node):
    """An array of a fixed number of typed items (`tuple[int, float]`)."""

    def __init__(self, items: list[_Node], nullable: bool) -> None:
        self.nullable = nullable
        self.items = items

    def decode(self, value: Any) -> Any:
        if type(value) is not list:
            if value is None and self.nullable:
                return None
            raise _fail(f"expected an array, got {kind_of(value)}")
        if len(value) != len(self.items):
            raise _fail(f"expected an array of {len(self.items)} items, got {len(value)}")
        out = []
        for i, (node, item) in enumerate(zip(self.items, value, strict=True)):
            try:
                out.append(node.decode(item))
            except DecodeError as exc:
                raise exc.inside(f"[{i}]") from None
        return tuple(out)

    def encode(self, value: Any, replace: _Replace) -> Any:
        if value is None:
            return None
        return [node.encode(item, replace) for node, item in zip(self.items, value, strict=True)]

    def schema(self) -> Schema:
        n = len(self.items)
        out: Schema = {"type": "array", "prefixItems": [node.schema() for node in self.items], "items": False,
                       "minItems": n, "maxItems": n}
        return _nullable(out) if self.nullable else out


class _Map(_Node):
    def __init__(self, item: _Node, s: Spec, nullable: bool) -> None:
        self.nullable = nullable
        self.item = item
        self.key_check = s.key_check
        self.joined = _joined(item)
        self.plain = _plain_str(item)

    def decode(self, value: Any) -> Any:
        if type(value) is not dict:
            if value is None and self.nullable:
                return None
            raise _fail(f"expected an object, got {kind_of(value)}")
        check = self.key_check
        keys_ok = check is None or not any(map(check, value))
        values = list(value.values())
        if keys_ok and ((self.joined is not None and _all_match(self.joined, values))
                        or (self.plain and set(map(type, values)) <= {str})):
            return dict(value)
        out = {}
        for key, item in value.items():
            problem = None if check is None else check(key)
            if problem is not None:
                raise _fail(problem)
            try:
                out[key] = self.item.decode(item)
            except DecodeError as exc:
                raise exc.inside(f"[{json.dumps(key)}]") from None
        return out

    def encode(self, value: Any, replace: _Replace) -> Any:
        if value is None:
            return None
        if type(self.item) in _SCALARS:
            return dict(value)
        return {key: self.item.encode(item, replace) for key, item in value.items()}

    def schema(self) -> Schema:
        out: Schema = {"type": "object", "additionalProperties": self.item.schema()}
        return _nullable(out) if self.nullable else out


class _Union(_Node):
    """Members of distinct JSON kinds (`Literal["last", "all"] | tuple[int, ...]`): the first that reads the value."""

    def __init__(self, members: list[_Node], nullable: bool) -> None:
        self.nullable = nullable
        self.members = members

    def decode(self, value: Any) -> Any:
        if value is None and self.nullable:
            return None
        # The member for the value's JSON kind says what is wrong with it; else the first member does.
        kind = list if type(value) is list else dict if type(value) is dict else type(value)
        for member in self.members:
            if kind in _KINDS.get(type(member), ()) and (type(member) is not _Literal
                                                          or kind in member.types):
                return member.decode(value)
        return self.members[0].decode(value)

    def encode(self, value: Any, replace: _Replace) -> Any:
        if isinstance(value, tuple):
            return list(value)
        return value

    def schema(self) -> Schema:
        members = [m.schema() for m in self.members] + ([{"type": "null"}] if self.nullable else [])
        return {"anyOf": members}


_KINDS: dict[type, tuple[type, ...]] = {_Str: (str,), _Bool: (bool,), _Int: (int,), _Float: (int, float),
                                        _Literal: (str, int, bool), _Tuple: (list,), _Map: (dict,),
                                        _Fixed: (list,)}


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    key: str
    node: _Node
    required: bool
    spec: Spec


class _Object(_Node):
    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.fields: list[_Field] = []
        self._built = False
        self.fast: Callable[[Any], Any] | None = None

    def build(self) -> None:
        if self._built:
            return
        self._built = True
        hints = typing.get_type_hints(self.cls, vars(sys.modules[self.cls.__module__]))
        for f in dataclasses.fields(self.cls):
            s = f.metadata.get("codec", Spec())
            required = f.default is MISSING and f.default_factory is MISSING
            self.fields.append(_Field(f.name, s.key or f.name, _node(hints[f.name], s), required, s))
        self.keys = frozenset(f.key for f in self.fields)
        self.required = [f.key for f in self.fields if f.required]
        self.fast = _fast_decoder(self.cls, self.fields)

    def decode(self, value: Any) -> Any:
        fast = self.fast
        if fast is None:
            self.build()
            fast = self.fast
        if fast is not _slow and fast is not None:
            found = fast(value)
            if found is not _FAULT:
                return found
        if type(value) is not dict:
            raise _fail(f"expected an object, got {kind_of(value)}")
        return self.cls(**self.decode_fields(value, ()))

    def decode_fields(self, value: dict[str, Any], skip: tuple[str, ...]) -> dict[str, Any]:
        self.build()
        for key in self.required:
            if key not in value:
                raise _fail(f"missing key {key!r}")
        if not self.keys.issuperset(value):
            raise _fail(f"unknown key {shown(next(key for key in value if key not in self.keys))}")
        out = {}
        for f in self.fields:
            if f.key not in value:
                continue
            raw = value[f.key]
            if f.name in skip:
                out[f.name] = raw
                continue
            try:
                check = f.spec.check
                problem = None if check is None else check(raw)
                if problem is not None:
                    raise _fail(problem)
                out[f.name] = f.node.decode(raw)
            except DecodeError as exc:
                raise exc.inside(f".{f.key}") from None
        return out

    def encode(self, value: Any, replace: _Replace) -> Any:
        self.build()
        out = {}
        cls = type(value)
        for f in self.fields:
            item = getattr(value, f.name)
            special = replace.get((cls, f.name)) if replace else None
            if special is not None:
                out[f.key] = special(item)
            elif item is not None or not f.spec.omit_none:
                out[f.key] = f.node.encode(item, replace)
        return out

    def schema(self) -> Schema:
        self.build()
        out: Schema = {"type": "object", "properties": {}}
        for f in self.fields:
            prop = dict(f.spec.schema) if f.spec.schema is not None else f.node.schema()
            if f.spec.description is not None:
                prop["description"] = f.spec.description
            out["properties"][f.key] = prop
        out["required"] = list(self.required)
        out["additionalProperties"] = False
        return out


_FAULT = object()  # what a fast decoder returns for a value it leaves to the located walk


def _slow(value: Any) -> Any:
    return _FAULT


def _fast_decoder(cls: type, fields: list[_Field]) -> Callable[[Any], Any]:
    """For an object of required scalar fields (a plan's test row: thousands of them), one
    generated function checking every field in one expression: the value, or `_FAULT` for
    anything the field-by-field walk (`decode_fields`) is to locate and name."""
    if not fields or not all(f.required and type(f.node) in _SCALARS for f in fields):
        return _slow
    scope: dict[str, Any] = {"cls": cls, "_FAULT": _FAULT}
    conditions, names = [], []
    for i, f in enumerate(fields):
        a, node = f"a{i}", f.node
        names.append(a)
        if isinstance(node, _Str):
            test = f"type({a}) is str"
            if node.regex is not None:
                scope[f"rx{i}"] = node.regex
                test += f" and rx{i}.fullmatch({a}) is not None"
        elif isinstance(node, _Bool):
            test = f"type({a}) is bool"
        elif isinstance(node, _Int):
            low = "" if node.minimum is None else f"{node.minimum!r} <= "
            test = f"type({a}) is int and {low}{a} <= {node.maximum!r}"
        elif isinstance(node, _Float):
            # a finite float: `x - x` is nan for nan and the infinities
            test = f"(type({a}) is int or (type({a}) is float and {a} - {a} == 0))"
            if node.minimum is not None:
                test += f" and {node.minimum!r} {'<' if node.exclusive else '<='} {a}"
            if node.maximum is not None:
                test += f" and {a} <= {node.maximum!r}"
        else:
            assert isinstance(node, _Literal)
            scope[f"kinds{i}"], scope[f"types{i}"] = node.kinds, node.types
            test = f"type({a}) in types{i} and (type({a}), {a}) in kinds{i}"
        if node.nullable:
            test = f"{a} is None or ({test})"
        if f.spec.check is not None:
            scope[f"check{i}"] = f.spec.check
            test = f"({test}) and check{i}({a}) is None"
        conditions.append(f"({test})")
    keys = ", ".join(names)
    reads = ", ".join(f"value[{f.key!r}]" for f in fields)
    kw_only = any(f.kw_only for f in dataclasses.fields(cls))
    # Positional where the class allows it: a frozen dataclass's `__init__` takes them sooner.
    arguments = ", ".join(f"{f.name}={a}" if kw_only else a for f, a in zip(fields, names, strict=True))
    source = (f"def fast(value):\n"
              f"    if type(value) is not dict or len(value) != {len(fields)}:\n"
              f"        return _FAULT\n"
              f"    try:\n"
              f"        {keys}{',' if len(fields) == 1 else ''} = {reads}\n"
              f"    except KeyError:\n"
              f"        return _FAULT\n"
              f"    if {' and '.join(conditions)}:\n"
              f"        return cls({arguments})\n"
              f"    return _FAULT\n")
    exec(compile(source, f"<codec of {cls.__qualname__}>", "exec"), scope)  # noqa: S102
    fast: Callable[[Any], Any] = scope["fast"]
    return fast


class _Maybe(_Node):
    """A dataclass or null."""

    nullable = True

    def __init__(self, inner: _Object) -> None:
        self.inner = inner

    def decode(self, value: Any) -> Any:
        return None if value is None else self.inner.decode(value)

    def encode(self, value: Any, replace: _Replace) -> Any:
        return None if value is None else self.inner.encode(value, replace)

    def schema(self) -> Schema:
        return _nullable(self.inner.schema())


_OBJECTS: dict[type, _Object] = {}
_NONE = type(None)


def _node(kind: Any, s: Spec) -> _Node:
    """The node of an annotation; `s` (the field's metadata) applies to its scalar leaves."""
    origin, args = get_origin(kind), get_args(kind)
    nullable = False
    if origin is Union or origin is types.UnionType:
        members = [a for a in args if a is not _NONE]
        nullable = len(members) < len(args)
        if len(members) > 1:
            return _Union([_node(m, s) for m in members], nullable)
        kind = members[0]
        origin, args = get_origin(kind), get_args(kind)
    if kind is str:
        return _Str(s, nullable)
    if kind is bool:
        return _Bool(nullable)
    if kind is int:
        return _Int(s, nullable)
    if kind is float:
        return _Float(s, nullable)
    if origin is Literal:
        return _Literal(args, s, nullable)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _Tuple(_node(args[0], s), s, nullable)
    if origin is tuple and args and Ellipsis not in args:
        return _Fixed([_node(a, s) for a in args], nullable)
    if origin in (dict, Mapping) and args and args[0] is str:
        return _Map(_node(args[1], s), s, nullable)
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        return _Maybe(_object(kind)) if nullable else _object(kind)
    raise TypeError(f"the codec has no JSON form for {kind!r}")


def _object(cls: type) -> _Object:
    found = _OBJECTS.get(cls)
    if found is None:
        found = _OBJECTS[cls] = _Object(cls)
    return found


def _root(kind: Any) -> _Node:
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        return _object(kind)
    return _node(kind, Spec())


def encode(value: Any, replace: _Replace | None = None) -> Any:
    """`value` (a dataclass of the codec's types) as JSON data. `replace`: (class, field name) ->
    what to write for that field instead (a writer's own fast form of a long list)."""
    return _object(type(value)).encode(value, replace or {})


def decode(kind: type[T], data: Any) -> T:
    """`data` read as `kind` (a dataclass, or any annotation the codec knows); `DecodeError` otherwise."""
    result: T = _root(kind).decode(data)
    return result


def decode_fields(cls: type, data: Any, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The fields of one object of `cls` by name (a field absent from the data is absent here),
    all but `skip` decoded; its keys checked as `decode` checks them."""
    if type(data) is not dict:
        raise _fail(f"expected an object, got {kind_of(data)}")
    return _object(cls).decode_fields(data, skip)


def schema(kind: Any) -> Schema:
    """The JSON Schema of `kind`'s JSON data (without `$schema`, `$id` or title)."""
    return _root(kind).schema()


def decode_each(cls: type, data: Any, skip: tuple[str, ...] = ()) -> tuple[dict[str, Any], list[DecodeError]]:
    """`decode_fields`, collecting instead of stopping at the first problem: the fields that read
    (by name; a skipped field as read, once its own check holds) and one error per key missing
    or unknown (`KeyFault`: "required field is missing", "unknown field; allowed: ...") and per
    field that does not read, each located at its key. Data that is not an object: one error."""
    if type(data) is not dict:
        return {}, [_fail(f"expected an object, got {kind_of(data)}")]
    node = _object(cls)
    node.build()
    allowed = tuple(f.key for f in node.fields)
    errors: list[DecodeError] = [
        KeyFault("required field is missing", key, allowed, missing=True).inside(f".{key}")
        for key in node.required if key not in data]
    errors += [KeyFault(f"unknown field; allowed: {', '.join(allowed)}", key, allowed, missing=False)
               .inside(f".{key}") for key in data if key not in node.keys]
    out: dict[str, Any] = {}
    for f in node.fields:
        if f.key not in data:
            continue
        raw = data[f.key]
        try:
            problem = None if f.spec.check is None else f.spec.check(raw)
            if problem is not None:
                raise _fail(problem)
            out[f.name] = raw if f.name in skip else f.node.decode(raw)
        except DecodeError as exc:
            errors.append(exc.inside(f".{f.key}"))
    return out, errors
