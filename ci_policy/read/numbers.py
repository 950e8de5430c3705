"""What counts as a number in untrusted input (YAML, JSON, literals in a test file, records), and its ranges.

- In: any value.
- Out: `is_finite_number(value)`: True for a real number that is not a bool and is
  finite; an integer too large for a float is not finite (it would overflow later).
- Refused: nothing: these are predicates and bounds; each reader refuses what fails them in
  its own located error, naming the range.
- Ranges: every number read from a checkout or a configuration has one, stated here once:
  `MAX_EST_TIME` (an est_time, 7 days), `MAX_SECONDS` (a timeout or time limit, 7 days),
  `MAX_FACTOR` (a multiplier of est_time), `MAX_COUNT` (a count such as partitions or a
  window), `MAX_NUMBER` (any other number); `number_range` writes a range the way errors
  and the configuration reference show it (`[0, 604800]`, `(0, 100]`).
- `MAX_NUMBER_TEXT`: the longest number literal read (in characters); a longer one is
  refused before it is converted (a 400-digit integer overflows a float; a 5,000-digit one
  exceeds Python's int conversion limit).
"""

from __future__ import annotations

import math
import numbers
from typing import TypeGuard

MAX_EST_TIME = 604800  # 7 days, in seconds
MAX_SECONDS = 604800
MAX_FACTOR = 100
MAX_COUNT = 10000
MAX_NUMBER = 1e9
MAX_NUMBER_TEXT = 32


def is_finite_number(value: object) -> TypeGuard[int | float]:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def number_range(minimum: float, maximum: float, *, strict: bool = False) -> str:
    """`[0, 604800]`, or `(0, 604800]` when the minimum itself is excluded."""
    return f"{'(' if strict else '['}{shown_bound(minimum)}, {shown_bound(maximum)}]"


def shown_bound(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


def in_range(value: object, minimum: float, maximum: float, *, strict: bool = False) -> bool:
    """A finite number within [minimum, maximum] (`strict`: above minimum)."""
    return (is_finite_number(value) and value <= maximum
            and (value > minimum if strict else value >= minimum))
