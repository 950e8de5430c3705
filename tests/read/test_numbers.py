"""read.numbers: a number in untrusted input is a finite real that is not a bool."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from ci_policy.read.numbers import is_finite_number


@pytest.mark.parametrize("value", [0, 1, -7, 0.5, -1e308, 1e308, 2**1000, Fraction(1, 3)])
def test_finite_numbers(value):
    assert is_finite_number(value) is True


@pytest.mark.parametrize("value", [
    True, False,                                   # a bool is an int to Python, not a number here
    float("inf"), float("-inf"), float("nan"),
    Decimal("2.5"), Decimal("NaN"),               # a Decimal is not a numbers.Real
    2**1024, -(2**1024), 10**400,                  # too large for a float
    "1", b"1", None, [1], {"n": 1}, 1j,
])
def test_not_finite_numbers(value):
    assert is_finite_number(value) is False
