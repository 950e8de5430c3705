"""The one error type of ci_policy.

- In: a problem found in some input (a file of the checkout, a CLI argument, a diff).
- Out: `PolicyError` carrying `path`, `line`, `col` (1-based, `None` when unknown),
  `message` and `hint` (how to fix it); `PolicyErrors` carries several at once,
  because `lint` reports every problem, not only the first.
- Rendering to text or `::error` annotations happens in `ci_policy.render`, once.
"""

from __future__ import annotations

from typing import Iterable, Optional


class PolicyError(Exception):
    """A problem in an input, located as precisely as the input allows."""

    def __init__(
        self,
        message: str,
        *,
        path: Optional[str] = None,
        line: Optional[int] = None,
        col: Optional[int] = None,
        hint: Optional[str] = None,
        severity: str = "error",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.col = col
        self.hint = hint
        self.severity = severity

    def location(self) -> str:
        parts = [self.path or "<input>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.col is not None:
                parts.append(str(self.col))
        return ":".join(parts)

    def sort_key(self) -> tuple:
        return (self.path or "", self.line or 0, self.col or 0, self.message)

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "message": self.message,
            "hint": self.hint,
        }

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PolicyError) and self.as_dict() == other.as_dict() and (
            self.severity == other.severity
        )

    def __hash__(self) -> int:
        return hash((self.severity, *self.as_dict().values()))

    def __repr__(self) -> str:
        return f"PolicyError({self.location()}: {self.message!r})"

    def __str__(self) -> str:
        text = f"{self.location()}: {self.message}"
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


def warning(message: str, **where) -> PolicyError:
    return PolicyError(message, severity="warning", **where)


class PolicyErrors(Exception):
    """Several `PolicyError`s found in one pass; raised when a caller needs a valid input."""

    def __init__(self, errors: Iterable[PolicyError]) -> None:
        self.errors = tuple(sorted(errors, key=PolicyError.sort_key))
        super().__init__("\n".join(str(e) for e in self.errors))
