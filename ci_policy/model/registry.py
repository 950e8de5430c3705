"""The test registry: every registration of every discovered test file.

- In: the validated `Config`, the `LabelRegistry`, and the text of each discovered file
  (read by `ci_policy.model.snapshot` through `ci_policy.read.checkout`).
- Out: frozen `Registration`s sorted by (file, line), plus located errors.
- Grammar (a public contract, shared with sglang-family repositories):
  `register_{cpu,cuda,rocm}_ci(est_time, suite, *, labels=None, nightly=False, disabled=None)`
  as a module-level expression statement with literal arguments only, plus the dialect of
  the configuration (`markers`): more marker names (each mapped to a backend), extra
  keyword arguments with a type, and a suite template that makes `suite` optional.
- A `Registration` remembers the marker name it was written with (`register_amd_ci`);
  an implicit one has none.
- Refused: each as a located diagnostic with its own message and code: see
  `ci_policy.read.markers` for where a marker may stand, and `_registration()` for argument
  types, labels and suites. A file under an `implicit` root with no registration gets that
  root's registration (`implicit=True`); a GPU registration under a `cpu_only` root is an error.
  A file whose stage runs it as `python FILE` must have an `if __name__ == "__main__":` block
  that calls something.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from typing import Any

from ci_policy.config.top import Config
from ci_policy.errors import Diagnostic
from ci_policy.model.registration import Registration
from ci_policy.read.labels import LabelRegistry
from ci_policy.read.markers import KEYWORD_ONLY, POSITIONAL, MarkerCall, Scan, bind
from ci_policy.read.names import closest, did_you_mean
from ci_policy.read.numbers import MAX_EST_TIME, is_finite_number, number_range

__all__ = ["KEYWORD_ONLY", "POSITIONAL", "Registration", "registrations_of"]

def _is_string(v: Any) -> bool:
    return isinstance(v, str)


def _is_integer(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_boolean(v: Any) -> bool:
    return isinstance(v, bool)


def _is_strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


# An extra argument's type (`markers.extra_arguments`): its check, and how a message names it.
_TYPES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "string": (_is_string, "a string"),
    "integer": (_is_integer, "an integer"),
    "number": (is_finite_number, "a finite number"),
    "boolean": (_is_boolean, "True or False"),
    "strings": (_is_strings, "a list of strings"),
}
# The narrowest first: `True` is also an integer and `1` also a number.
_NARROWEST_FIRST = ("boolean", "integer", "number", "string", "strings")


def argument_type(value: Any) -> str | None:
    """The narrowest `markers.extra_arguments` type that accepts a literal, or None (`ci-policy init`)."""
    return next((t for t in _NARROWEST_FIRST if _TYPES[t][0](value)), None)

def registrations_of(scan: Scan, config: Config, labels: LabelRegistry) -> list[Registration]:
    """Parse and validate the registration calls of one scanned file (errors go to `scan.errors`)."""
    out: list[Registration] = []
    names = config.markers.names
    for mc in scan.calls:
        if mc.marker not in names:
            continue
        reg = _registration(scan, mc, config, labels)
        if reg is not None:
            out.append(reg)

    seen: dict[tuple[str, str], Registration] = {}
    for reg in out:
        previous = seen.get((reg.backend, reg.suite))
        if previous is not None:
            scan.errors.append(Diagnostic(
                f"{reg.marker}: {reg.file} is registered twice for suite {reg.suite!r} "
                f"(lines {previous.line} and {reg.line}), so it would run twice",
                path=reg.file, line=reg.line, col=reg.col, hint="keep one registration per suite",
                code="CP220"))
        seen.setdefault((reg.backend, reg.suite), reg)

    # A call of an undeclared dialect is a marker call too: it is reported, never made implicit.
    if not out and not scan.undeclared and not any(mc.marker in names for mc in scan.calls):
        rule = config.discovery.implicit_for(scan.path)
        if rule is not None:
            out.append(Registration(file=scan.path, line=None, backend=rule.backend, suite=rule.suite,
                                    est_time=rule.est_time, implicit=True, est_source="implicit"))
    else:
        rule = config.discovery.implicit_for(scan.path)
        if rule is not None and rule.cpu_only:
            for reg in out:
                if config.backends.is_accelerator(reg.backend):
                    scan.errors.append(Diagnostic(
                        f"{reg.marker}: {reg.file} is under {rule.root}, a cpu_only implicit root; "
                        f"{reg.backend} tests cannot live there",
                        path=reg.file, line=reg.line, col=reg.col, code="CP221",
                        hint=f"move the file out of {rule.root} or register it for CPU"))

    for reg in out:
        stage = config.stage_of(reg.backend, reg.suite)
        # A disabled registration runs nothing, so only an enabled one needs a `__main__` block.
        if stage is not None and stage.runner == "python" and reg.disabled is None and not scan.has_main_block:
            scan.errors.append(Diagnostic(
                f"stage {stage.key} runs {reg.file} as `python FILE`, but the file has no "
                "`if __name__ == \"__main__\":` block that calls something, so it would exit 0 "
                "without running a test",
                path=reg.file, line=reg.line or 1, col=reg.col or 1, code="CP222",
                hint='add `if __name__ == "__main__": unittest.main()` (or pytest.main([__file__]))'))
    return out


EST_TIME_RANGE = number_range(0, MAX_EST_TIME)


def _shown_number(value: object) -> str:
    """A literal as a message shows it: a 400-digit integer is shortened, not printed whole."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"


def _registration(scan: Scan, mc: MarkerCall, config: Config, labels: LabelRegistry) -> Registration | None:
    name = mc.marker
    backend = config.markers.names[name]
    extra = config.markers.extra_arguments
    template = config.markers.suite
    required = ("est_time",) if template is not None else POSITIONAL
    args = bind(scan, mc, POSITIONAL, KEYWORD_ONLY + tuple(extra), required=required)
    if args is None:
        return None
    values, nodes = args.values, args.nodes
    before = len(scan.errors)

    est_time = values["est_time"]
    if not is_finite_number(est_time) or est_time < 0:
        scan.error(nodes["est_time"], "CP223", f"{name}: est_time must be a finite non-negative number of "
                   f"seconds, got {_shown_number(est_time)}", hint="write e.g. est_time=300")
    elif est_time > MAX_EST_TIME:
        scan.error(nodes["est_time"], "CP223", f"{name}: est_time must be at most {MAX_EST_TIME} seconds "
                   f"(7 days), got {_shown_number(est_time)}", hint=f"the range is {EST_TIME_RANGE}")

    bad = set()
    for arg, kind in extra.items():
        check, what = _TYPES[kind]
        if arg in values and not check(values[arg]):
            bad.add(arg)
            scan.error(nodes[arg], "CP216", f"{name}: {arg} must be {what}, got {values[arg]!r}",
                       hint=f"markers.extra_arguments in {config.path} declares {arg} as {kind}")

    suite = values.get("suite")
    suite_node: ast.AST = nodes.get("suite", mc.call)
    if template is not None:
        fields = config.markers.suite_fields
        missing = [f for f in fields if f not in values]
        built = template.format(**{f: values[f] for f in fields}) if not missing else None
        if bad & set(fields):
            return None  # reported above; a suite built from a wrong value would only add noise
        if "suite" not in values and built is None:
            scan.error(mc.call, "CP217", f"{name}: no suite, and the suite template {template!r} also needs "
                       f"{', '.join(missing)}", hint=f"pass suite=... or {'=..., '.join(missing)}=...")
            return None
        if "suite" not in values:
            suite = built
        elif built is not None and isinstance(suite, str) and built != suite:
            scan.error(nodes["suite"], "CP218", f"{name}: suite {suite!r} differs from {built!r}, the suite "
                       f"the template {template!r} builds from {' and '.join(fields)}",
                       hint="give suite or the template's arguments, or make them agree")
            return None

    if not isinstance(suite, str):
        scan.error(suite_node, "CP224", f"{name}: suite must be a string, got {suite!r}",
                   hint='write e.g. suite="stage-b-1-gpu-h200"')
    else:
        stage = config.stage_of(backend, suite)
        if stage is None:
            # Stage identity is (backend, name): a name other backends configure is not this one's.
            valid = [s.name for s in config.stages_of(backend)]
            others = [s.backend for s in config.stages if s.name == suite]
            what = (f"is a {' and '.join(others)} stage, not a {backend} stage" if others
                    else f"is not a configured {backend} stage")
            hint = (f"configured {backend} stages: {', '.join(valid) or 'none'} "
                    f"(stages are listed in {config.path})")
            if others:
                runs_on = ", runs_on: [...]" if config.is_accelerator(backend) else ""
                hint = (f"to run it on {backend} too, add {{name: {suite}, backend: {backend}{runs_on}}} to the "
                        f"stages in {config.path}; {hint}")
            scan.error(suite_node, "CP225", f"{name}: suite {suite!r} {what}"
                       + did_you_mean(suite, valid), hint=hint)
        elif stage.command:
            valid = [s.name for s in config.stages_of(backend) if not s.command]
            scan.error(suite_node, "CP225", f"{name}: suite {suite!r} is a stage with a command "
                       f"({' '.join(stage.command)}), which runs its suite itself; no marker registers to it",
                       hint=f"name a {backend} stage that runs test files ({', '.join(valid) or 'none configured'}), "
                       f"or remove command from stage {suite!r} in {config.path} to run the files registered to it")
        else:
            # The configuration's own string, and each label once (`sys.intern`): every file's
            # registration held copies of its own (3 MiB at 20,000 test files, peak RSS, issue 33).
            suite = stage.name

    raw_labels = values.get("labels")
    label_tuple: tuple[str, ...] = ()
    labels_given = raw_labels is not None and raw_labels != []
    if raw_labels is not None:
        if not isinstance(raw_labels, list):
            scan.error(nodes["labels"], "CP226", f"{name}: labels must be a list of string literals or None, "
                       f"got {raw_labels!r}", hint='write e.g. labels=["megatron"]')
        else:
            labels_node = nodes["labels"]  # an ast.List: literal() gives a list for nothing else
            elts = labels_node.elts if isinstance(labels_node, ast.List) else []
            good = []
            for item, node in zip(raw_labels, elts, strict=True):
                if not isinstance(item, str):
                    scan.error(node, "CP226", f"{name}: labels entries must be strings, got {item!r}")
                elif item in good:
                    scan.error(node, "CP226", f"{name}: label {item!r} is listed twice")
                elif item not in labels:
                    close = closest(item, labels.names)
                    scan.error(node, "CP227", f"{name}: unknown label {item!r}"
                               + (f" (did you mean {close!r}?)" if close is not None else "")
                               + f"; valid labels: {', '.join(labels.names) or 'none'}",
                               hint=f"use a valid label, or add {item!r} with a description to "
                               f"KNOWN_LABELS in {labels.path}")
                else:
                    good.append(item)
            label_tuple = tuple(raw_labels)
    # A malformed labels value is reported above; "needs a label" is only for none given.
    if config.backends.is_accelerator(backend) and config.gpu_requires_labels and not labels_given:
        scan.error(mc.call, "CP228", f"{name}: a {backend} registration needs at least one label "
                   "(gpu_requires_labels is true), so that a PR can select it",
                   hint=f"add labels=[...] with one of: {', '.join(labels.names) or '(none defined)'}")

    nightly = values.get("nightly", False)
    if not isinstance(nightly, bool):
        scan.error(nodes["nightly"], "CP229", f"{name}: nightly must be True or False, got {nightly!r}")

    disabled = values.get("disabled")
    if disabled is not None and not isinstance(disabled, str):
        scan.error(nodes["disabled"], "CP230", f"{name}: disabled must be a reason string or None, got {disabled!r}",
                   hint='write e.g. disabled="flaky on driver 580, see #1234"')
    elif isinstance(disabled, str) and not disabled.strip():
        scan.error(nodes["disabled"], "CP230", f"{name}: disabled must give a reason, got {disabled!r}",
                   hint='write e.g. disabled="flaky on driver 580, see #1234"')

    if len(scan.errors) != before or not isinstance(suite, str):
        return None
    return Registration(file=scan.path, line=mc.line, col=mc.col, backend=backend, suite=suite,
                        est_time=est_time, labels=tuple(map(sys.intern, label_tuple)), nightly=nightly,
                        disabled=disabled, marker=name)
