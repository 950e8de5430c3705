"""Regular expressions compiled at their first use, not when their module is imported.

- In: a pattern's source and flags, declared once at module level as a compiled pattern would be.
- Out: a `LazyRegex`: its `pattern` and `flags` (the source, for the JSON schemas built from it),
  and `fullmatch`, `match`, `search` and `sub` as `re.Pattern`'s, compiling the pattern on the
  first call and keeping it (`compiled`).
- For the patterns a command's ordinary run never uses (an optional configuration section's
  names, a push event's SHAs, a rare option's value): every command importing their module
  paid to compile them (about 0.1 ms each, a few ms in all) at its start.
- Refused: nothing here: a bad pattern raises `re.error` at its first use, as the tests that
  use each one show.
"""

from __future__ import annotations

import re
from collections.abc import Callable


class LazyRegex:
    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self.pattern, self.flags)
        return compiled

    def fullmatch(self, string: str) -> re.Match[str] | None:
        return self.compiled.fullmatch(string)

    def match(self, string: str) -> re.Match[str] | None:
        return self.compiled.match(string)

    def search(self, string: str) -> re.Match[str] | None:
        return self.compiled.search(string)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        return self.compiled.sub(repl, string, count)

    def __repr__(self) -> str:
        return f"LazyRegex({self.pattern!r}{f', {self.flags!r}' if self.flags else ''})"
