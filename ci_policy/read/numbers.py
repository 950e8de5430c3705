"""What counts as a number in untrusted input (YAML, JSON, literals in a test file, records).

- In: any value.
- Out: `is_finite_number(value)`: True for a real number that is not a bool and is
  finite; an integer too large for a float is not finite (it would overflow later).
"""

from __future__ import annotations

import math
import numbers
from typing import TypeGuard


def is_finite_number(value: object) -> TypeGuard[int | float]:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False
