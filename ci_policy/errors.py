"""Errors and diagnostics: one exception base, and problems as values.

- `Diagnostic`: a frozen value for one problem found in an input (severity, a stable
  code, path/line/col, message, hint). `lint` collects them; warnings are only ever
  diagnostics, never exceptions.
- `CiPolicyError`: the base of every exception ci_policy raises on purpose. Each
  subclass carries the exit code the command line gives it:
  - `InputError` (1): bad input, located as precisely as the input allows; one diagnostic.
  - `InputErrors` (1): several diagnostics found in one pass (`lint` reports all of them).
  - `UsageError` (2, always): the command line or the environment it reads is wrong;
    names the option (`--event`) or variable (`$GITHUB_RUN_ATTEMPT`) at fault.
  - `StoreUnavailable` (1): the metric-history store cannot be reached or used.
- Rendering to text, JSON or `::error` annotations happens in `ci_policy.render`, and the
  mapping to exit codes in `ci_policy.cli.main`, each once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Diagnostic:
    """One problem in an input, located as precisely as the input allows."""

    message: str
    path: str | None = None
    line: int | None = None
    col: int | None = None
    hint: str | None = None
    code: str | None = None
    severity: Severity = "error"

    def location(self) -> str:
        parts = [self.path or "<input>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.col is not None:
                parts.append(str(self.col))
        return ":".join(parts)

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path or "", self.line or 0, self.col or 0, self.message)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "line": self.line, "col": self.col,
                               "message": self.message, "hint": self.hint}
        if self.code is not None:
            out["code"] = self.code
        return out

    def __str__(self) -> str:
        text = f"{self.location()}: {self.message}"
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


class CiPolicyError(Exception):
    """The base of every exception ci_policy raises on purpose."""

    exit_code = 1


class InputError(CiPolicyError):
    """A problem in an input (a file of the checkout, a diff, a payload): one diagnostic."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        col: int | None = None,
        hint: str | None = None,
        code: str | None = None,
        severity: Severity = "error",
    ) -> None:
        super().__init__(message)
        self.diagnostic = Diagnostic(message=message, path=path, line=line, col=col, hint=hint,
                                     code=code, severity=severity)

    @classmethod
    def of(cls, diagnostic: Diagnostic) -> InputError:
        return cls(diagnostic.message, path=diagnostic.path, line=diagnostic.line, col=diagnostic.col,
                   hint=diagnostic.hint, code=diagnostic.code, severity=diagnostic.severity)

    message = property(lambda self: self.diagnostic.message)
    path = property(lambda self: self.diagnostic.path)
    line = property(lambda self: self.diagnostic.line)
    col = property(lambda self: self.diagnostic.col)
    hint = property(lambda self: self.diagnostic.hint)
    code = property(lambda self: self.diagnostic.code)
    severity = property(lambda self: self.diagnostic.severity)

    def location(self) -> str:
        return self.diagnostic.location()

    def sort_key(self) -> tuple[str, int, int, str]:
        return self.diagnostic.sort_key()

    def as_dict(self) -> dict[str, Any]:
        return self.diagnostic.as_dict()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, InputError) and self.diagnostic == other.diagnostic

    def __hash__(self) -> int:
        return hash(self.diagnostic)

    def __repr__(self) -> str:
        return f"InputError({self.location()}: {self.message!r})"

    def __str__(self) -> str:
        return str(self.diagnostic)


def warning(message: str, **where: Any) -> InputError:
    return InputError(message, severity="warning", **where)


class InputErrors(CiPolicyError):
    """Several input problems found in one pass; raised when a caller needs a valid input."""

    def __init__(self, errors: Iterable[InputError]) -> None:
        self.errors = tuple(sorted(errors, key=InputError.sort_key))
        super().__init__("\n".join(str(e) for e in self.errors))


class UsageError(CiPolicyError):
    """The command line, or the environment a command reads, is wrong: exit 2.

    `source` names what is at fault: an option (`--cadence`) or a variable (`$GITHUB_TOKEN`).
    """

    exit_code = 2

    def __init__(self, message: str, *, source: str | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.hint = hint

    def __str__(self) -> str:
        text = f"{self.source}: {self.message}" if self.source else self.message
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


class StoreUnavailable(CiPolicyError):
    """The metric-history store cannot be reached or used; the message never holds a password."""
