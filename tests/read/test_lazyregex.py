"""Regular expressions compiled at their first use (ci_policy/read/lazyregex.py)."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import ci_policy
from ci_policy.read.lazyregex import LazyRegex


def test_nothing_is_compiled_until_the_first_use_and_then_once() -> None:
    regex = LazyRegex(r"run-ci-([a-z]+)")
    assert regex._compiled is None and regex.pattern == r"run-ci-([a-z]+)" and regex.flags == 0
    assert regex.fullmatch("run-ci-all") is not None
    compiled = regex._compiled
    assert compiled is not None and compiled.pattern == regex.pattern
    regex.search("x")
    assert regex.compiled is compiled


@pytest.mark.parametrize("text", ["", "run-ci-all", " run-ci-all", "run-ci-all x", "RUN-CI-ALL", "run-ci-"])
def test_each_method_answers_as_the_compiled_pattern(text) -> None:
    regex, compiled = LazyRegex(r"run-ci-([a-z]+)", re.IGNORECASE), re.compile(r"run-ci-([a-z]+)", re.IGNORECASE)

    def shown(match: re.Match[str] | None) -> tuple[int, int, str] | None:
        return None if match is None else (*match.span(), match.group(1))

    assert shown(regex.fullmatch(text)) == shown(compiled.fullmatch(text))
    assert shown(regex.match(text)) == shown(compiled.match(text))
    assert shown(regex.search(text)) == shown(compiled.search(text))
    assert regex.sub("<\\1>", text) == compiled.sub("<\\1>", text)
    assert regex.sub(lambda m: m.group(1).upper(), text, 1) == compiled.sub(lambda m: m.group(1).upper(), text, 1)


def test_a_bad_pattern_raises_at_its_first_use() -> None:
    regex = LazyRegex("(")
    assert repr(regex) == "LazyRegex('(')"
    with pytest.raises(re.error):
        regex.fullmatch("(")


def test_every_lazy_pattern_of_the_package_compiles() -> None:
    """A pattern compiled at its first use is still checked before a release: every module-level
    `LazyRegex` of ci_policy compiles (a typo would otherwise wait for the rare input using it)."""
    found = []
    for info in pkgutil.walk_packages(ci_policy.__path__, "ci_policy."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, LazyRegex):
                found.append((info.name, name))
                assert value.compiled.pattern == value.pattern, (info.name, name)
    assert len(found) >= 16, found
