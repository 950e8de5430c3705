"""A stored scan: a `FileScan` as JSON-ready rows, and the strict reader that takes them back.

- In: a `FileScan` to store (`encode_scan`, `StrictDecoder.encode_checked`); stored data, the
  file it is said to be the scan of, and the configuration and label registry of its context
  (`StrictDecoder.decode`).
- Out: its five parts, each a list of rows (an item's field values in the order of its dataclass
  fields), in the format `model.scan.SCAN_FORMAT`; read back, the `FileScan` `scan_file` gave,
  equal, or None.
- Refused: by `decode` (None, never an exception, whatever the data): a value of the wrong type
  or range, an item `scan_file` could not have made for this path under this configuration,
  and text that could pass for a workflow command (`_UNSAFE_TEXT`); by `encode_checked` (None:
  the scan is not stored) a scan it would not read back equal.
"""

from __future__ import annotations

import re
from dataclasses import fields
from typing import Any

from ci_policy.config.gates import constraint_problems, steps_problems
from ci_policy.config.top import Config
from ci_policy.errors import CODES, CiPolicyError, Diagnostic
from ci_policy.gates.declarations import KEYWORDS as GATE_KEYWORDS
from ci_policy.gates.declarations import GateDeclaration
from ci_policy.model.registry import Registration
from ci_policy.model.scan import CONFIG_PATH, FileScan, LabelCall
from ci_policy.model.suppress import Suppression
from ci_policy.read.checkout import MAX_FILE_BYTES
from ci_policy.read.labels import LabelRegistry
from ci_policy.read.numbers import MAX_EST_TIME


# A stored scan is JSON: its five parts, each a list of rows; a row is an item's field values in
# the order of its dataclass fields, a tuple or list among them tagged ({"t": [...]}, {"l": [...]}).
# Read back by `StrictDecoder`, never by a generic one: a pack is a file anyone able to write the
# cache directory can change, so each value is checked for its type and range, and each text for
# what `scan_file` would have made of this path under this configuration and label registry.
def _enc(value: Any) -> Any:
    if isinstance(value, list):
        return {"l": [_enc(v) for v in value]}
    if isinstance(value, tuple):
        return {"t": [_enc(v) for v in value]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot store {type(value).__name__}")


_STORED: tuple[tuple[type, tuple[str, ...]], ...] = tuple(
    (cls, tuple(f.name for f in fields(cls))) for cls in (Registration, GateDeclaration, Diagnostic, Suppression,
                                                          LabelCall))
_SCALARS = (str, int, bool, float, type(None))


def encode_scan(result: FileScan) -> list[Any]:
    """A `FileScan` as JSON-ready data: its five parts, each a list of rows (`StrictDecoder`
    reads it back equal). The format is `SCAN_FORMAT`, which is part of every scan context."""
    scalars = _SCALARS
    return [[[v if type(v) in scalars else _enc(v) for v in (getattr(item, n) for n in names)] for item in items]
            for (_cls, names), items in zip(_STORED, (result.registrations, result.gates, result.errors,
                                                      result.suppressions, result.label_calls), strict=True)]


class Damaged(CiPolicyError, ValueError):
    """A stored value that is not what `encode_scan` writes for a scan of this file."""


# A line or column of a file read whole under the size cap; a larger one is no position of it.
_MAX_POSITION = MAX_FILE_BYTES + 1
# Stored text that could be read as a workflow command, or shown other than it is: C0 and C1
# controls (a CR or LF starts a new log line), bidi controls, lone surrogates, `##[` (parsed
# anywhere in a line) and `::` (a command at a line start). `scan_file` makes such text only
# from a file that holds it; such a scan is not stored (`encode_checked`), so the file is
# read and parsed each time and its text reaches the output as read from the checkout.
_UNSAFE_TEXT = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]|##\\[|::")
_MAX_TEXT = 64 * 1024
_CODE_RE = re.compile(r"CP[0-9]{3}")


def _text(value: Any) -> str:
    if type(value) is not str or len(value) > _MAX_TEXT or _UNSAFE_TEXT.search(value):
        raise Damaged("text")
    return value


def _optional_text(value: Any) -> str | None:
    return None if value is None else _text(value)


def _position(value: Any) -> int:
    if type(value) is not int or not 1 <= value <= _MAX_POSITION:
        raise Damaged("position")
    return value


def _optional_position(value: Any) -> int | None:
    return None if value is None else _position(value)


def _flag(value: Any) -> bool:
    if type(value) is not bool:
        raise Damaged("flag")
    return value


def _tagged(value: Any, tag: str) -> list[Any]:
    if type(value) is not dict or len(value) != 1 or type(items := value.get(tag)) is not list:
        raise Damaged("tagged")
    return items


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(_text(v) for v in _tagged(value, "t"))


def _row(value: Any, count: int) -> list[Any]:
    if type(value) is not list or len(value) != count:
        raise Damaged("row")
    return value


class StrictDecoder:
    """Reads stored scans back for one configuration and label registry (`scan_context`).

    `decode(data, file)` is the `FileScan` of `file` stored as `data`, or None when it is not
    one `scan_file` could have returned for that path: a wrong type anywhere, a number out of
    range or not finite, a registration of a marker, stage or label the configuration does not
    have, an implicit registration the configuration does not give that path, an item located
    in another file, a diagnostic code ci-policy does not have, or text `_UNSAFE_TEXT` refuses
    (a hint as `placed` makes it: `CONFIG_PATH` is allowed there, and only there).
    It never raises, whatever `data` is (JSON values of any shape, nesting or size).
    """

    def __init__(self, config: Config, labels: LabelRegistry) -> None:
        self.config = config
        self.markers = dict(config.markers.names)
        self.labels = frozenset(labels.names)
        # A registration's (marker, backend, stage) as the configuration's own strings, and one
        # tuple for each set of labels: a decoded registration held copies of its own (about
        # 4 MiB at 20,000 test files, peak RSS, issue 33).
        self._written = {(marker, backend, stage.name): (marker, backend, stage.name)
                         for marker, backend in self.markers.items() for stage in config.stages_of(backend)}
        self._label_sets: dict[tuple[str, ...], tuple[str, ...]] = {}

    def decode(self, data: Any, file: str, label_calls: bool = True) -> FileScan | None:
        # Without `label_calls`, that part is checked and left unmade: making a `LabelCall` for
        # every file is a quarter of reading a warm cache.
        if type(data) is not list or len(data) != 5:  # len(_STORED)
            return None
        registrations, gates, errors, suppressions, calls = data
        if not (type(registrations) is list and type(gates) is list and type(errors) is list
                and type(suppressions) is list and type(calls) is list):
            return None
        try:
            # An empty part costs no generator, and a single item none either: most files have
            # one registration, one label call and nothing else.
            return FileScan(
                ((self._registration(registrations[0], file),) if len(registrations) == 1
                 else tuple([self._registration(r, file) for r in registrations])) if registrations else (),
                tuple([self._gate(g, file) for g in gates]) if gates else (),
                tuple([self._diagnostic(d, file) for d in errors]) if errors else (),
                tuple([self._suppression(s, file) for s in suppressions]) if suppressions else (),
                (tuple([self._label_call(c) for c in calls]) if label_calls else self._no_label_calls(calls))
                if calls else ())
        except (ValueError, TypeError, OverflowError, RecursionError):  # Damaged is a ValueError
            return None

    def _registration(self, value: Any, file: str) -> Registration:
        # Every check inline (the same checks, in the same order): this runs once a test file on
        # every warm run, and each call or generator saved is a part of a warm run's time.
        if type(value) is not list or len(value) != 12:
            raise Damaged("row")
        (path, line, backend, suite, est_time, labels, nightly, disabled, implicit, col, est_source,
         marker) = value
        if path != file:
            raise Damaged("file")
        if implicit is True:
            rule = self.config.discovery.implicit_for(file)
            made: list[Any] | None = (None if rule is None else
                    [file, None, rule.backend, rule.suite, rule.est_time, {"t": []}, False, None, True, None,
                     "implicit", None])
            # The same types too: `1 == 1.0 == True` would let a float or a flag through.
            if made is None or [(type(v), v) for v in value] != [(type(v), v) for v in made]:
                raise Damaged("implicit")
            assert rule is not None
            return Registration(file=file, line=None, backend=rule.backend, suite=rule.suite,
                                est_time=rule.est_time, implicit=True, est_source="implicit")
        # A marker of the configuration's dialect, its backend and one of that backend's stages:
        # taken as the configuration's own strings (shared by every registration).
        written = self._written.get((marker, backend, suite))
        if implicit is not False or est_source != "literal" or written is None:
            raise Damaged("registration")
        marker, backend, suite = written
        if type(est_time) is not int and type(est_time) is not float or not 0 <= est_time <= MAX_EST_TIME:
            raise Damaged("est_time")  # NaN fails the range too
        if (type(line) is not int or type(col) is not int or not 1 <= line <= _MAX_POSITION
                or not 1 <= col <= _MAX_POSITION or type(nightly) is not bool):
            raise Damaged("registration")
        # Labels of the registry only: as safe as its own names, so not checked as text again.
        if type(labels) is not dict or len(labels) != 1 or type(label_list := labels.get("t")) is not list:
            raise Damaged("tagged")
        count = len(label_list)
        if count == 1:  # the usual case, without a set or a generator
            label = label_list[0]
            if type(label) is not str or label not in self.labels:
                raise Damaged("labels")
            label_tuple: tuple[str, ...] = (label,)
        elif count:
            if (not all(type(label) is str for label in label_list) or len(set(label_list)) != count
                    or not self.labels.issuperset(label_list)):
                raise Damaged("labels")
            label_tuple = tuple(label_list)
        else:
            label_tuple = ()
        if label_tuple:  # one tuple for each set of labels, shared by the registrations holding it
            label_tuple = self._label_sets.setdefault(label_tuple, label_tuple)
        if disabled is not None and not _text(disabled).strip():
            raise Damaged("disabled")
        # Positional, in the order of the fields: one out of place reads back unequal, which
        # `encode_checked` and the round-trip tests (every example file's scan) would refuse.
        return Registration(file, line, backend, suite, est_time, label_tuple, nightly, disabled, False, col,
                            "literal", marker)

    def _gate(self, value: Any, file: str) -> GateDeclaration:
        path, line, col, metric_key, steps, constraint, enforce, allowlist_reason, written = _row(value, 9)
        if path != file or not _text(metric_key).strip():
            raise Damaged("gate")
        if steps is not None and type(steps) is not str:
            steps = _tagged(steps, "l")
            if not all(type(s) is int and 0 <= s < 2**63 for s in steps):
                raise Damaged("steps")
        if steps is not None and steps_problems(steps):
            raise Damaged("steps")
        bounds: tuple[tuple[str, float], ...] | None = None
        if constraint is not None:
            pairs = [_tagged(pair, "t") for pair in _tagged(constraint, "t")]
            if not all(len(p) == 2 and type(p[0]) is str and type(p[1]) in (int, float) for p in pairs):
                raise Damaged("constraint")
            bounds = tuple((k, v) for k, v in pairs)
            if list(bounds) != sorted(bounds) or len(dict(bounds)) != len(bounds) or constraint_problems(dict(bounds)):
                raise Damaged("constraint")
        names = _texts(written)
        if "metric_key" not in names or list(names) != [k for k in GATE_KEYWORDS if k in names]:
            raise Damaged("written")
        return GateDeclaration(file=file, line=_position(line), col=_position(col), metric_key=metric_key,
                               steps=steps, constraint=bounds, enforce=_flag(enforce),
                               allowlist_reason=_optional_text(allowlist_reason), written=names)

    def _diagnostic(self, value: Any, file: str) -> Diagnostic:
        message, path, line, col, hint, code, severity = _row(value, 7)
        if path != file or severity not in ("error", "warning") or not (code is None or (type(code) is str
                                                                                   and code in CODES)):
            raise Damaged("diagnostic")
        return Diagnostic(_text(message), path=file, line=_optional_position(line), col=_optional_position(col),
                          hint=None if hint is None else self._hint(hint), code=code, severity=severity)

    def _hint(self, value: Any) -> str:
        # `CONFIG_PATH` only here, and checked as the text it becomes (`placed`): a stored
        # entry cannot make `::` or `##[` out of the placeholder and its neighbours either.
        if type(value) is not str:
            raise Damaged("text")
        _text(value.replace(CONFIG_PATH, self.config.path) if CONFIG_PATH in value else value)
        return value

    def _suppression(self, value: Any, file: str) -> Suppression:
        path, line, col, first, last, codes = _row(value, 6)
        names = _texts(codes)
        if path != file or not all(_CODE_RE.fullmatch(c) for c in names):
            raise Damaged("suppression")
        return Suppression(path=file, line=_position(line), col=_position(col), first=_position(first),
                           last=_position(last), codes=names)

    def _label_call(self, value: Any) -> LabelCall:
        marker, line, uses_labels = _row(value, 3)
        if type(marker) is not str or marker not in self.markers:
            raise Damaged("label call")
        return LabelCall(marker, _position(line), _flag(uses_labels))

    def _no_label_calls(self, calls: list[Any]) -> tuple[()]:
        markers = self.markers
        for value in calls:
            if (type(value) is not list or len(value) != 3 or type(value[0]) is not str or value[0] not in markers
                    or type(value[1]) is not int or not 1 <= value[1] <= _MAX_POSITION or type(value[2]) is not bool):
                raise Damaged("label call")
        return ()

    def encode_checked(self, result: FileScan, file: str) -> list[Any] | None:
        """`encode_scan(result)`, or None when this decoder would not read it back equal (text
        `_UNSAFE_TEXT` refuses, say): such a scan is not stored, so a stored scan that fails to
        decode is always a damaged or foreign one."""
        try:
            data = encode_scan(result)
        except TypeError:
            return None
        return data if self.decode(data, file) == result else None
