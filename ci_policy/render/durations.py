"""Durations as people read them: `4h31m40s` in text and Markdown (JSON keeps seconds).

- In: a number of seconds (an est_time, a makespan, an elapsed time), finite and >= 0.
- Out: `duration(seconds)`: whole seconds, rounded half up, written from the largest
  non-zero unit down to seconds with every unit in between: `0s`, `45s`, `2m5s`,
  `1h0m5s`, `4h31m40s`, `1d2h3m4s` (days for 24 hours or more; no larger unit). A value
  above 0 that rounds to 0 is `<1s`, so a test that ran is never shown as taking no time.
- Refused: nothing: every duration it is given was bounded when it was read
  (`ci_policy.read.numbers`).
- The one place text and Markdown output write a duration; JSON and `$GITHUB_OUTPUT`
  values stay numbers of seconds.
"""

from __future__ import annotations

import math

UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def duration(seconds: float) -> str:
    """`4h31m40s` for 16300; `<1s` for a value in (0, 0.5); see the module docstring."""
    if not math.isfinite(seconds) or seconds < 0:
        return f"{seconds:g}s"  # not a duration any input allows; shown as it is rather than hidden
    if 0 < seconds < 0.5:
        return "<1s"
    left = math.floor(seconds + 0.5)
    parts: list[str] = []
    for unit, size in UNITS:
        n, left = divmod(left, size)
        if n or parts or unit == "s":
            parts.append(f"{n}{unit}")
    return "".join(parts)
