"""The cyclic garbage collector while a command runs.

- In: nothing but the collector's own state.
- Out: `paused()` and `resume()`, below.
- Refused: nothing: it takes no input.
- `paused()`: the collector is off while a command runs, and as it was after. A command
  keeps tens of thousands of small objects alive at once (the stored scans of every test
  file, their registrations, each file's syntax tree while it is read), which make no
  reference cycles; the collector would only walk them again and again: measured here,
  a fifth of a warm `registry` or `plan`. The short commands free what they made by
  reference counting.
- `resume()`: a command that goes on for long after its reading (`run`, while its tests
  run) turns the collector back on, when `paused()` turned it off.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

_paused = False


@contextlib.contextmanager
def paused() -> Iterator[None]:
    global _paused
    was = gc.isenabled()
    gc.disable()
    _paused = was
    try:
        yield
    finally:
        _paused = False
        if was:
            gc.enable()


def resume() -> None:
    """Turn the collector back on if `paused()` turned it off (else leave it as it is)."""
    if _paused:
        gc.enable()
