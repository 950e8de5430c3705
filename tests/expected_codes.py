"""The code each kind of diagnostic message carries, stated independently of ci_policy.

Tests that spell out expected diagnostics by their message (markers, registrations, gate
declarations, lint output) get the expected `code` from this table rather than repeating
it at every call site; `tests/model/test_diagnostics.py` pins each code with its own
triggering input, location and message.
"""

from __future__ import annotations

import re
from typing import Any

from ci_policy.errors import CODES, Diagnostic

# First match wins: the more specific patterns come first.
_BY_MESSAGE: list[tuple[str, str]] = [
    (r"^labels file \S+ is not valid Python: ", "CP301"),
    (r"\(\.\.\.\) here is not a registration: ", "CP201"),
    (r" is referenced without being called as a module-level statement", "CP202"),
    (r" is not a registration: ci-policy reads only calls to the bare name ", "CP203"),
    (r" is imported as '", "CP204"),
    (r" is imported but this file has no module-level ", "CP205"),
    (r" is bound here but this file has no module-level ", "CP205"),
    (r"\(\.\.\.\) looks like a registration marker but the configuration does not declare it", "CP207"),
    (r" too deeply nested ", "CP408"),
    (r" is not valid Python: | cannot be parsed: ", "CP206"),
    (r": \*args is not allowed|: \*\*kwargs is not allowed", "CP210"),
    (r" takes at most \d+ positional arguments | takes keyword arguments only, ", "CP211"),
    (r": unknown argument '", "CP212"),
    (r" is given twice \(positionally and by keyword\)", "CP213"),
    (r": missing required argument '", "CP214"),
    (r" must be a literal, not `", "CP215"),
    (r" holds a lone surrogate escape ", "CP219"),
    (r"^register_\w+_ci: no suite, and the suite template ", "CP217"),
    (r"^register_\w+_ci: suite '.*' differs from '.*', the suite the template ", "CP218"),
    (r" is registered twice for suite ", "CP220"),
    (r", a cpu_only implicit root; ", "CP221"),
    (r" as `python FILE`, but the file has no ", "CP222"),
    (r"^register_\w+_ci: est_time must be ", "CP223"),
    (r"^register_\w+_ci: suite must be a string", "CP224"),
    (r"^register_\w+_ci: suite '.*' is (not a configured|a \w+ stage|a stage with a command)", "CP225"),
    (r"^register_\w+_ci: (labels must be a list|labels entries must be strings|label '.*' is listed twice)",
     "CP226"),
    (r"^register_\w+_ci: unknown label '", "CP227"),
    (r" registration needs at least one label ", "CP228"),
    (r"^register_\w+_ci: nightly must be ", "CP229"),
    (r"^register_\w+_ci: disabled must ", "CP230"),
    (r"^register_\w+_ci: \w+ must be (a string|an integer|a finite number|True or False|a list of strings), got ",
     "CP216"),
    (r" matches the discovery pattern .* but has no registration", "CP231"),
    (r" does not define KNOWN_LABELS$", "CP302"),
    (r"^KNOWN_LABELS is assigned \d+ times", "CP303"),
    (r"^KNOWN_LABELS must be a plain module-level assignment", "CP304"),
    (r"^KNOWN_LABELS must be a dict literal", "CP305"),
    (r"^KNOWN_LABELS must not use \*\* unpacking$|^KNOWN_LABELS key is not a string literal$"
     r"|^KNOWN_LABELS\[.*\]: description is not a string literal$", "CP306"),
    (r"^KNOWN_LABELS: duplicate label ", "CP307"),
    (r"^KNOWN_LABELS: .* is not a valid label name", "CP308"),
    (r" is both a broad scope and the PR label of ", "CP311"),
    (r"^[\w.\[\]-]+: unknown label '", "CP310"),
    (r"symlinks? in a checkout$", "CP401"),
    (r" does not exist yet; the est_time literals apply$", "CP903"),
    (r" does not exist$", "CP402"),
    (r" is not a regular file$| is not a directory$", "CP403"),
    (r" cannot be read: |^cannot read", "CP404"),
    (r" is larger than \d+ bytes$", "CP405"),
    (r" is not valid UTF-8$", "CP406"),
    (r" has control characters in its path; ", "CP407"),
    (r" is not valid strict JSON: ", "CP420"),
    (r'^estimates file \S+ must be \{"schema"|^estimates file \S+: estimates must be a list$', "CP421"),
    (r"^estimates\[\d+\]: .* is listed twice$", "CP423"),
    (r"^estimates\[\d+\]", "CP422"),
    (r"^register_ci_gate: metric_key must be ", "CP501"),
    (r"^register_ci_gate: .* not given and gates.defaults has none for ", "CP511"),
    (r"^register_ci_gate: steps ", "CP502"),
    (r"^register_ci_gate: constraint", "CP503"),
    (r"^register_ci_gate: enforce must be ", "CP504"),
    (r"^register_ci_gate: allowlist_reason must be ", "CP505"),
    (r"^register_ci_gate: metric_key '.*' is not captured, ", "CP510"),
    (r" lacks the gate required( for session server \w+)? by gates.require\[\d+\]: ", "CP520"),
    (r"^stage \S+ has no registered test files$", "CP901"),
    (r"^label '.*' is not used by any test$", "CP902"),
    (r"^the estimates file lists .* which no registration matches$", "CP904"),
    (r"^register_\w+_ci for suite \S+ is disabled: ", "CP905"),
    (r": gate label '.*' is one edit from '.*'$", "CP907"),
    (r"^runs_on of \d+ stages? is still the placeholder ", "CP908"),
    (r"^quarantine\[\d+\]\.file: .* (is not a registered test file|does not run in stage )", "CP232"),
    (r"^quarantine\[\d+\]\.until: the quarantine of .* has expired: ", "CP233"),
    (r"^quarantine\[\d+\]\.until: the quarantine of .* ends on ", "CP909"),
]


def code_of(message: str) -> str:
    for pattern, code in _BY_MESSAGE:
        if re.search(pattern, message):
            return code
    raise AssertionError(f"no expected code for the message {message!r}")


def coded(message: str) -> dict[str, Any]:
    """The `code` and `name` a diagnostic with this message carries in JSON."""
    code = code_of(message)
    return {"code": code, "name": CODES[code][0]}


def as_json(path: str | None, line: int | None, col: int | None, message: str,
            hint: str | None = None) -> dict[str, Any]:
    """A diagnostic's `as_dict()`, with the code its message calls for."""
    return {**coded(message), "path": path, "line": line, "col": col, "message": message, "hint": hint}


def diagnostic(message: str, *, path: str | None = None, line: int | None = None, col: int | None = None,
               hint: str | None = None, severity: str = "error") -> Diagnostic:
    return Diagnostic(message, path=path, line=line, col=col, hint=hint, code=code_of(message),
                      severity=severity)  # type: ignore[arg-type]


def text_code(message: str) -> str:
    """`CP201 marker-not-module-level`, as text output shows it before the message."""
    entry = coded(message)
    return f"{entry['code']} {entry['name']}"
