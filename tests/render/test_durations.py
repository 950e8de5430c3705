"""render.durations: one way to write a duration in text and Markdown (`4h31m40s`)."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ci_policy.render.durations import duration

PART = re.compile(r"(\d+)([dhms])")
UNIT = {"d": 86400, "h": 3600, "m": 60, "s": 1}
SEVEN_DAYS = 7 * 86400  # the largest est_time a checkout may declare


def seconds_of(text: str) -> int:
    """The whole seconds a duration reads as (`<1s` excluded)."""
    parts = PART.findall(text)
    assert "".join(n + u for n, u in parts) == text, text
    return sum(int(n) * UNIT[u] for n, u in parts)


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0s"), (0.0, "0s"), (0.25, "<1s"), (0.49, "<1s"), (0.5, "1s"), (1, "1s"), (45, "45s"), (59.5, "1m0s"),
    (60, "1m0s"), (125, "2m5s"), (3600, "1h0m0s"), (3605, "1h0m5s"), (16300, "4h31m40s"), (86399, "23h59m59s"),
    (86400, "1d0h0m0s"), (93784, "1d2h3m4s"), (SEVEN_DAYS, "7d0h0m0s"), (7134.25, "1h58m54s"), (2.5, "3s"),
])
def test_duration(seconds, text):
    assert duration(seconds) == text


@given(st.integers(min_value=0, max_value=10 * SEVEN_DAYS))
def test_a_whole_number_of_seconds_reads_back_as_itself(n):
    text = duration(n)
    assert seconds_of(text) == n
    # The largest unit first, never a leading zero unit; units below it always shown.
    assert text == "0s" or not text.startswith("0")
    assert [u for _, u in PART.findall(text)] == list("dhms")[-len(PART.findall(text)):]


@given(st.floats(min_value=0, max_value=SEVEN_DAYS, allow_nan=False))
def test_a_fraction_rounds_half_up_and_never_hides_a_nonzero_time(x):
    text = duration(x)
    if 0 < x < 0.5:
        assert text == "<1s"
    else:
        assert seconds_of(text) == math.floor(x + 0.5)


@given(st.floats(min_value=0, max_value=SEVEN_DAYS, allow_nan=False),
       st.floats(min_value=0, max_value=SEVEN_DAYS, allow_nan=False))
def test_duration_is_monotone(a, b):
    lo, hi = sorted((a, b))

    def rank(text: str) -> float:
        return 0.5 if text == "<1s" else seconds_of(text)

    assert rank(duration(lo)) <= rank(duration(hi))
