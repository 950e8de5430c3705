"""Strict YAML reading that keeps every value's location.

- In: YAML text and the display path of its file.
- Out: a composed node tree (`yaml.Node`, each with `start_mark`) and a `Schema`
  helper that validates mappings/scalars into plain values while recording errors
  as `InputError`s located at `file:line:col` with a dotted field path
  (`stages[2].backend`).
- Refused: YAML syntax errors, aliases and anchors (a config has no use for them and
  they enable billion-laughs expansion), duplicate mapping keys, non-string keys,
  tags outside YAML's safe core schema, more than one document.
- Parsed by libyaml where PyYAML has it (`compose_any`), the refusals checked on its event
  stream; text it refuses is read again by the pure-Python loader, whose error is reported:
  both give the same nodes and errors (tests/read/test_yamlnodes.py compares them).
- Codes: every error the `Schema` records is of one `ProblemKind`; the caller maps each
  kind to its stable diagnostic code (`Schema(path, codes={...})`), so the codes of a
  file format are stated by that format, not here.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

import yaml

from ci_policy.errors import CiPolicyError, InputError
from ci_policy.read.names import did_you_mean
from ci_policy.read.numbers import MAX_NUMBER, MAX_NUMBER_TEXT, is_finite_number, number_range, shown_bound

# A configuration is a few levels deep; PyYAML composes recursively, so unbounded
# nesting ("[[[[...") would otherwise end in RecursionError.
MAX_DEPTH = 64


class _Refused(yaml.MarkedYAMLError, CiPolicyError):
    """Valid YAML that ci-policy does not accept."""

    def __init__(self, problem: str, mark: Any, hint: str) -> None:
        super().__init__(problem=problem, problem_mark=mark)
        self.hint = hint


class _Strict:
    """The refusals, on the event stream: the same for the pure-Python parser and for libyaml's."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        loader: Any = self
        if loader.check_event(yaml.AliasEvent):
            event = loader.peek_event()
            raise _Refused("aliases are not allowed in ci-policy configuration",
                           event.start_mark, "write each value out in full")
        event = loader.peek_event()
        if getattr(event, "anchor", None):
            raise _Refused("anchors are not allowed in ci-policy configuration",
                           event.start_mark, "write each value out in full")
        tag = getattr(event, "tag", None)
        if (isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)) and tag not in (None, "!")
                and tag not in yaml.SafeLoader.yaml_constructors):
            # Scalars with such a tag are reported where they are used ("unsupported YAML value").
            raise _Refused(f"tag {tag} is not allowed in ci-policy configuration",
                           event.start_mark, "remove the tag")
        if self._depth >= MAX_DEPTH:
            raise _Refused(f"nesting deeper than {MAX_DEPTH} levels is not allowed",
                           event.start_mark, "flatten the structure")
        self._depth += 1
        try:
            node: yaml.Node | None = super().compose_node(parent, index)  # type: ignore[misc]
            return node
        finally:
            self._depth -= 1


class _StrictLoader(_Strict, yaml.SafeLoader):
    pass


# libyaml's parser (`yaml.cyaml.CParser`), where PyYAML was built with it: its scanner and parser are
# C, and only the composing (the strictness checks above included) stays Python: about 5x faster.
# Any text it refuses is read again by the pure-Python loader, whose error is the one reported, so
# both give the same errors; `NON_PRINTABLE` (the pure-Python reader's own check) is applied
# first, and text with a byte order mark or a tab is left to the pure-Python loader, so both
# accept the same text. The two parsers place some empty values at different
# columns (`{a: }`: after the `:` or at the `}`); an empty value libyaml does not place just after
# its indicator is read again by the pure-Python loader too, so every node has the same location.
class _Unsure(CiPolicyError):
    """libyaml's location of a node may differ from the pure-Python parser's."""


class _Libyaml:
    def compose_scalar_node(self, anchor: Any) -> yaml.ScalarNode:
        node: yaml.ScalarNode = super().compose_scalar_node(anchor)  # type: ignore[misc]
        if node.style == "":  # libyaml's plain style; the pure-Python parser's is None
            node.style = None
            if node.value == "" and not _after_indicator(getattr(self, "_text", ""), node.start_mark):
                raise _Unsure
        return node


def _after_indicator(text: str, mark: Any) -> bool:
    """Whether `mark` is just after a `:`, `-` or `?` of its line: where both parsers place an empty value."""
    return mark.column > 0 and 0 < mark.index <= len(text) and text[mark.index - 1] in ":-?"


if getattr(yaml, "__with_libyaml__", False):
    _CParser: Any = vars(yaml.cyaml)["CParser"]  # not in PyYAML's type stubs

    class _CSafeLoader(_Libyaml, yaml.composer.Composer, yaml.constructor.SafeConstructor,
                       yaml.resolver.Resolver, _CParser):  # type: ignore[misc]
        def __init__(self, stream: str) -> None:
            self._text = stream
            _CParser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

    class _CStrictLoader(_Strict, _CSafeLoader):
        pass

    class _CComposer:
        """Not strict (workflows): libyaml composes too, in C; the tree is then checked as
        `_Libyaml` checks each node (every node once, however often aliases share it)."""

        def __init__(self, text: str) -> None:
            self._text = text

        def get_single_node(self) -> yaml.Node | None:
            root: yaml.Node | None = yaml.compose(self._text, Loader=yaml.CSafeLoader)
            seen: set[int] = set()
            stack = [root] if root is not None else []
            while stack:
                node = stack.pop()
                if id(node) in seen:
                    continue
                seen.add(id(node))
                if isinstance(node, yaml.ScalarNode):
                    if node.style == "":
                        node.style = None
                        if node.value == "" and not _after_indicator(self._text, node.start_mark):
                            raise _Unsure
                elif isinstance(node, yaml.SequenceNode):
                    stack.extend(node.value)
                else:
                    stack.extend(item for pair in node.value for item in pair)
            return root

        def dispose(self) -> None:
            pass

    FAST_LOADER: type | None = _CStrictLoader
    FAST_SAFE_LOADER: type | None = _CComposer
else:  # pragma: no cover - PyYAML without libyaml
    FAST_LOADER = FAST_SAFE_LOADER = None

NON_PRINTABLE = yaml.reader.Reader.NON_PRINTABLE
# What the two parsers read differently, found by comparing them on generated text
# (tests/read/test_yamlnodes.py): a byte order mark (libyaml skips one anywhere, the pure-Python
# reader only the first), a tab (libyaml accepts some the pure-Python scanner refuses), the
# Unicode line breaks NEL, LS and PS, a comment right after a block scalar's header (`|#`), and a
# document marker after the first line (libyaml accepts one inside a flow collection), and a `?`
# inside a flow collection (the pure-Python scanner reads it as a key indicator even in `[a ?]`).
# Every branch starts with one literal character, so `re` skips ahead to the next of them (a
# character class first defeats that: about 1 ms a 12 KB workflow, a third of composing it).
LIBYAML_DIFFERS = re.compile("\ufeff|\t|\x85|\u2028|\u2029|\\|[-+0-9]*#|>[-+0-9]*#|\n(?:---|\\.\\.\\.)"
                             "|\\[[^\\]}]*\\?|\\{[^\\]}]*\\?")


def _single_node(loader_class: type, text: str) -> yaml.Node | None:
    loader = loader_class(text)
    try:
        node: yaml.Node | None = loader.get_single_node()
        return node
    finally:
        loader.dispose()


def compose_any(text: str, *, strict: bool = True, fast: bool = True) -> yaml.Node | None:
    """The node tree of `text`, through libyaml when PyYAML has it (`fast`), else pure Python.

    `strict`: ci-policy's refusals (`_Strict`); otherwise PyYAML's safe composer as it is
    (aliases kept, as GitHub reads workflows). Raises what the pure-Python loader raises."""
    slow = _StrictLoader if strict else yaml.SafeLoader
    quick = (FAST_LOADER if strict else FAST_SAFE_LOADER) if fast else None
    if quick is not None and not NON_PRINTABLE.search(text) and not LIBYAML_DIFFERS.search(text):
        try:
            return _single_node(quick, text)
        except (yaml.YAMLError, _Unsure):
            pass  # read again below: the pure-Python loader's error (or location) is the one reported
    try:
        return _single_node(slow, text)
    except RecursionError:
        # The pure-Python parser recurses per flow level (`{{{{...`): past Python's limit, the text
        # is refused as nested too deeply, never a traceback (atheris found it in a workflow).
        raise _Refused("nesting deeper than the YAML parser can follow", None,
                       "flatten the structure") from None


def compose(text: str, path: str, *, code: str | None = None, fast: bool = True) -> yaml.Node | None:
    """Parse YAML text into a node tree; `None` for an empty document.

    `code` is the diagnostic code of the `InputError` raised for text that is not accepted YAML.
    """
    try:
        return compose_any(text, fast=fast)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        raise InputError(
            f"invalid YAML: {problem}",
            path=path,
            line=mark.line + 1 if mark else None,
            col=mark.column + 1 if mark else None,
            hint=exc.hint if isinstance(exc, _Refused) else "fix the YAML syntax",
            code=code,
        ) from None
    except yaml.YAMLError as exc:  # pragma: no cover - every PyYAML error we can trigger is marked
        raise InputError(f"invalid YAML: {exc}", path=path, code=code) from None


_TYPE_NAMES = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "a list",
    dict: "a mapping",
    type(None): "null",
    bytes: "binary data",
    datetime.date: "a date",
    datetime.datetime: "a timestamp",
}


# The kinds of problem `Schema` itself finds; `Schema.error` callers may use them too.
ProblemKind = Literal["wrong-type", "unknown-key", "missing-key", "duplicate", "invalid-value"]


class Schema:
    """Validation context for one YAML file: collects errors instead of stopping at the first.

    `codes` maps each `ProblemKind` to the diagnostic code its errors carry (none if absent).
    """

    def __init__(self, path: str, codes: Mapping[ProblemKind, str] | None = None) -> None:
        self.path = path
        self.codes: Mapping[ProblemKind, str] = codes or {}
        self.errors: list[InputError] = []

    # -- errors -------------------------------------------------------------------------
    def error(self, node: yaml.Node | None, where: str, message: str, hint: str | None = None,
              *, code: str | None = None, kind: ProblemKind = "invalid-value") -> None:
        """Record a problem at `node`; `code` wins over the code of `kind`."""
        mark = node.start_mark if node is not None else None
        text = f"{where}: {message}" if where else message
        self.errors.append(InputError(
            text,
            path=self.path,
            line=mark.line + 1 if mark else None,
            col=mark.column + 1 if mark else None,
            hint=hint,
            code=code if code is not None else self.codes.get(kind),
        ))

    # -- structure ----------------------------------------------------------------------
    def mapping(
        self,
        node: yaml.Node,
        where: str,
        *,
        required: Iterable[str] = (),
        optional: Iterable[str] = (),
        open_keys: bool = False,
    ) -> dict[str, tuple[yaml.Node, yaml.Node]] | None:
        """Return {key: (key_node, value_node)} of a mapping, checking its keys.

        `open_keys` mappings (e.g. name -> value tables) skip the known-key check.
        """
        if not isinstance(node, yaml.MappingNode):
            self.error(node, where, f"expected a mapping, got {self.describe(node)}", kind="wrong-type")
            return None
        required = list(required)
        known = set(required) | set(optional)
        out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            key = self._scalar_value(key_node)
            key_where = f"{where}.{key}" if where else str(key)
            if not isinstance(key, str):
                self.error(key_node, where or "(top level)",
                           f"keys must be strings, got {self.describe(key_node)}", kind="wrong-type")
                continue
            if key in out:
                first = out[key][0].start_mark.line + 1
                self.error(key_node, key_where, f"duplicate key (first defined on line {first})",
                           hint="keep one definition", kind="duplicate")
                continue
            if not open_keys and key not in known:
                self.error(key_node, key_where, "unknown key" + did_you_mean(key, known),
                           hint="allowed keys here: " + ", ".join(sorted(known)), kind="unknown-key")
                continue
            out[key] = (key_node, value_node)
        for key in required:
            if key not in out:
                self.error(node, f"{where}.{key}" if where else key, "required key is missing",
                           kind="missing-key")
        return out

    def sequence(self, node: yaml.Node, where: str, *, non_empty: bool = False) -> list[yaml.Node] | None:
        if not isinstance(node, yaml.SequenceNode):
            self.error(node, where, f"expected a list, got {self.describe(node)}", kind="wrong-type")
            return None
        if non_empty and not node.value:
            self.error(node, where, "must not be empty")
            return None
        return list(node.value)

    # -- scalars ------------------------------------------------------------------------
    def _scalar_value(self, node: yaml.Node) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            return node  # signals "not a scalar" to callers
        try:
            # A fresh constructor: a failed construction leaves state behind in the old one.
            return yaml.constructor.SafeConstructor().construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as exc:
            return exc  # reported by the caller
        except Exception:  # noqa: BLE001 - SafeConstructor raises ValueError, KeyError, ... on bad scalars
            kind = node.tag.rsplit(":", 1)[-1]  # "2020-13-45" is a timestamp, "!!int x" an int
            return yaml.constructor.ConstructorError(None, None, f"{node.value!r} is not a valid {kind}",
                                                     node.start_mark)

    def describe(self, node: yaml.Node) -> str:
        if isinstance(node, yaml.MappingNode):
            return "a mapping"
        if isinstance(node, yaml.SequenceNode):
            return "a list"
        value = self._scalar_value(node)
        if isinstance(value, yaml.constructor.ConstructorError):
            if node.tag in yaml.SafeLoader.yaml_constructors:  # e.g. the date 2020-13-45
                return f"an invalid {node.tag.rsplit(':', 1)[-1]} ({node.value!r})"
            return f"a value tagged {node.tag} ({node.value!r})"
        return f"{_TYPE_NAMES.get(type(value), type(value).__name__)} ({node.value!r})" if value is not None else "null"

    def scalar(self, node: yaml.Node, where: str, *types: type) -> Any:
        """A scalar of one of `types` (bool is never accepted as a number); `_INVALID` otherwise."""
        value = self._scalar_value(node)
        if isinstance(value, yaml.constructor.ConstructorError):
            self.error(node, where, f"unsupported YAML value: {value.problem}", kind="wrong-type")
            return INVALID
        if not isinstance(node, yaml.ScalarNode) or not _is_instance(value, types):
            shown = [t for t in types if not (t is int and float in types)]  # numbers include ints
            expected = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in shown)
            self.error(node, where, f"expected {expected}, got {self.describe(node)}", kind="wrong-type")
            return INVALID
        return value

    def plain(self, node: yaml.Node, where: str) -> Any:
        """A whole subtree as plain values (scalars, lists, string-keyed dicts)."""
        if isinstance(node, yaml.SequenceNode):
            items = [self.plain(n, f"{where}[{i}]") for i, n in enumerate(node.value)]
            return INVALID if any(i is INVALID for i in items) else items
        if isinstance(node, yaml.MappingNode):
            fields = self.mapping(node, where, open_keys=True)
            if fields is None:
                return INVALID
            out = {k: self.plain(v, f"{where}.{k}") for k, (_kn, v) in fields.items()}
            return INVALID if any(v is INVALID for v in out.values()) else out
        value = self._scalar_value(node)
        if isinstance(value, yaml.constructor.ConstructorError):
            self.error(node, where, f"unsupported YAML value: {value.problem}", kind="wrong-type")
            return INVALID
        return value

    def string(self, node: yaml.Node, where: str, *, check: Callable[[str], str | None] | None = None) -> Any:
        value = self.scalar(node, where, str)
        if value is INVALID:
            return INVALID
        if check is not None:
            problem = check(value)
            if problem:
                self.error(node, where, problem)
                return INVALID
        return value

    def choice(self, node: yaml.Node, where: str, choices: Iterable[str]) -> Any:
        choices = list(choices)
        value = self._scalar_value(node)
        if not isinstance(node, yaml.ScalarNode) or not isinstance(value, str) or value not in choices:
            shown = repr(value) if isinstance(value, str) else self.describe(node)
            self.error(node, where, f"expected one of {', '.join(choices)}, got {shown}")
            return INVALID
        return value

    def number(self, node: yaml.Node, where: str, *, minimum: float = 0.0, strict: bool = False,
               integer: bool = False, maximum: float = MAX_NUMBER) -> Any:
        shown_range = number_range(minimum, maximum, strict=strict)
        hint = f"the range is {shown_range}"
        if isinstance(node, yaml.ScalarNode) and len(node.value) > MAX_NUMBER_TEXT:
            # Checked before converting: int() of a 400-digit literal is slow and overflows later.
            self.error(node, where, f"expected a number in {shown_range}, got a scalar of {len(node.value)} "
                       f"characters", hint=hint)
            return INVALID
        value = self.scalar(node, where, int) if integer else self.scalar(node, where, int, float)
        if value is INVALID:
            return INVALID
        if not is_finite_number(value):
            self.error(node, where, f"expected a finite number, got {node.value!r}")
            return INVALID
        if value < minimum or (strict and value == minimum):
            bound = f"greater than {minimum:g}" if strict else f"at least {minimum:g}"
            self.error(node, where, f"must be {bound}, got {node.value}")
            return INVALID
        if value > maximum:
            self.error(node, where, f"must be at most {shown_bound(maximum)}, "
                       f"got {node.value}", hint=hint)
            return INVALID
        return value

    def string_list(self, node: yaml.Node, where: str, *, non_empty: bool = False,
                    check: Callable[[str], str | None] | None = None) -> Any:
        items = self.sequence(node, where, non_empty=non_empty)
        if items is None:
            return INVALID
        out: list[str] = []
        ok = True
        for i, item in enumerate(items):
            value = self.string(item, f"{where}[{i}]", check=check)
            if value is INVALID:
                ok = False
            elif value in out:
                self.error(item, f"{where}[{i}]", f"duplicate entry {value!r}", kind="duplicate")
                ok = False
            else:
                out.append(value)
        return tuple(out) if ok else INVALID


class _Invalid:
    def __repr__(self) -> str:
        return "INVALID"

    def __bool__(self) -> bool:
        return False


INVALID: Any = _Invalid()


def _is_instance(value: Any, types: tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return bool in types
    if float in types and isinstance(value, int):
        return True
    return isinstance(value, types)
