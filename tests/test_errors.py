"""ci_policy.errors: problems are `Diagnostic` values; exceptions all derive from `CiPolicyError`."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import ci_policy
from ci_policy.errors import (
    CiPolicyError,
    Diagnostic,
    InputError,
    InputErrors,
    StoreUnavailable,
    UsageError,
    warning,
)

# Deliberately not an Exception: a cancelled job's SIGTERM must unwind through every
# `except Exception` on its way out, as KeyboardInterrupt does.
NOT_AN_ERROR = {"ci_policy.adapters.runner.attempt.Terminated"}


def exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(ci_policy.__path__, "ci_policy."):
        if info.name == "ci_policy.__main__":  # running it is `python -m ci_policy`; it defines no class
            continue
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == info.name:
                found[f"{info.name}.{obj.__qualname__}"] = obj
    return found


def test_every_exception_class_of_the_package_derives_from_ci_policy_error():
    classes = exception_classes()
    # The ones a review once found standing apart, by name, so the walk itself is checked.
    for name in ("ci_policy.read.globs.GlobError", "ci_policy.read.strictjson.DuplicateKey",
                 "ci_policy.read.markers.NotLiteral", "ci_policy.read.yamlnodes._Refused",
                 "ci_policy.sdk.metrics.TitoMismatchError", "ci_policy.adapters.github.grammar.GrammarError",
                 "ci_policy.adapters.github.api.ApiError", "ci_policy.adapters.runner.attempt.Terminated"):
        assert name in classes
    apart = sorted(name for name, cls in classes.items() if not issubclass(cls, CiPolicyError))
    assert apart == sorted(NOT_AN_ERROR)
    assert not issubclass(classes["ci_policy.adapters.runner.attempt.Terminated"], Exception)


def test_existing_bases_are_kept_for_their_callers():
    classes = exception_classes()
    for name in ("ci_policy.read.globs.GlobError", "ci_policy.read.strictjson.DuplicateKey",
                 "ci_policy.sdk.metrics.TitoMismatchError", "ci_policy.adapters.github.grammar.GrammarError"):
        assert issubclass(classes[name], ValueError), name
    import yaml

    assert issubclass(classes["ci_policy.read.yamlnodes._Refused"], yaml.MarkedYAMLError)


def test_exit_codes():
    assert [cls.exit_code for cls in (CiPolicyError, InputError, InputErrors, UsageError, StoreUnavailable)] \
        == [1, 1, 1, 2, 1]


def test_a_warning_is_a_value_never_an_exception():
    w = warning("label 'x' is not used by any test", path="labels.py", line=3, code="CP902")
    assert w == Diagnostic("label 'x' is not used by any test", path="labels.py", line=3, code="CP902",
                           severity="warning")
    assert not isinstance(w, BaseException)
    assert w.name == "label-unused"


def test_input_error_carries_one_diagnostic():
    exc = InputError("m", path="p.py", line=2, col=3, hint="h", code="CP206")
    assert exc.diagnostic == Diagnostic("m", path="p.py", line=2, col=3, hint="h", code="CP206")
    assert (exc.message, exc.path, exc.line, exc.col, exc.hint, exc.code) == ("m", "p.py", 2, 3, "h", "CP206")
    assert str(exc) == "p.py:2:3: m (hint: h)"
    assert exc == InputError("m", path="p.py", line=2, col=3, hint="h", code="CP206")


def test_input_errors_holds_sorted_diagnostics_from_either_form():
    first = Diagnostic("a", path="a.py", line=1)
    exc = InputErrors([InputError("b", path="b.py", line=1), first])
    assert exc.errors == (first, Diagnostic("b", path="b.py", line=1))
    assert str(exc) == "a.py:1: a\nb.py:1: b"


def test_diagnostic_json_form():
    d = Diagnostic("m", path="p.py", line=2, col=3, hint="h", code="CP201", severity="warning")
    assert list(d.as_dict().items()) == [
        ("code", "CP201"), ("name", "marker-not-module-level"), ("path", "p.py"), ("line", 2), ("col", 3),
        ("message", "m"), ("hint", "h")]
    # Input errors of other commands (a diff, a payload) have no code: no code or name key.
    assert Diagnostic("m").as_dict() == {"path": None, "line": None, "col": None, "message": "m", "hint": None}
    assert InputError("m", path="p", code="CP402").as_dict() == Diagnostic("m", path="p", code="CP402").as_dict()


@pytest.mark.parametrize("where, shown", [
    ({}, "m"), ({"path": "p"}, "p: m"), ({"path": "p", "line": 3}, "p:3: m"),
    ({"path": "p", "line": 3, "col": 4}, "p:3:4: m"), ({"path": "p", "col": 4}, "p: m"),
])
def test_location(where, shown):
    assert str(Diagnostic("m", **where)) == shown
