"""Hypothesis strategies for marker calls shaped like real ones, shared by the marker tests.

`arbitrary_calls(markers, positional, keyword_only, constants)`: each parameter usually
present once with any literal value (numbers, strings, the given interesting constants,
nested lists/tuples/dicts), sometimes a non-literal; sometimes an extra positional, a
repeated or unknown argument, `*rest` or `**extra`.
"""

from __future__ import annotations

import functools

from hypothesis import strategies as st

NUMBERS = st.integers() | st.integers(10**308, 10**330) | st.floats(allow_nan=False, allow_infinity=False)
NOT_LITERALS = st.sampled_from(["x", "f(1)", "...", "b'x'", "f'{x}'", "nan", "{1, 2}", "[*x]", "{**x}", "-x",
                                "- -1", "-(1,)", "{[1]: 2}"])
COMMON_CONSTANTS = ["True", "False", "None", "1e999", "-0.0", "1j", "''"]


@functools.cache
def _expressions(constants: tuple[str, ...]):
    """One strategy object per set of constants: hypothesis validates a strategy and computes its
    properties once per object, so building it afresh for every drawn call cost more than the draw."""
    literals = st.one_of(
        NUMBERS.map(repr),
        NUMBERS.map(lambda n: f"+{abs(n)!r}"),
        st.text(max_size=8).map(repr),
        st.sampled_from(COMMON_CONSTANTS + list(constants)),
    )
    return st.recursive(literals, lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(inner, max_size=3).map(lambda xs: "(" + "".join(x + ", " for x in xs) + ")"),
        st.lists(st.tuples(inner, inner), max_size=3).map(
            lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"),
    ), max_leaves=8)


def rarely(draw, strategy, default):
    """Mostly `default`; one draw in ten comes from `strategy` (a way to break the call)."""
    return draw(strategy) if draw(st.integers(0, 9)) == 9 else default


@st.composite
def arbitrary_calls(draw, markers, positional: tuple[str, ...], keyword_only: tuple[str, ...],
                    constants: list[str]):
    exprs = _expressions(tuple(constants))
    value = lambda: rarely(draw, NOT_LITERALS, draw(exprs))  # noqa: E731
    n_positional = draw(st.integers(0, len(positional)))
    args = [value() for _ in range(n_positional)]
    args += rarely(draw, st.just([value()]), [])
    args += rarely(draw, st.just(["*rest"]), [])
    names = [n for n in positional[n_positional:] + keyword_only if draw(st.integers(0, 3)) < 3]
    names = list(draw(st.permutations(names)))
    names += rarely(draw, st.sampled_from([["bogus"], list(positional[:n_positional][:1])]), [])
    args += [f"{name}={value()}" for name in names]
    args += rarely(draw, st.just(["**extra"]), [])
    return f"{draw(st.sampled_from(markers))}({', '.join(args)})"
