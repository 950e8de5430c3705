"""Trigger policy: from event, schedule, PR labels and cadence override to what is included.

- In: the event name (`pull_request`, `schedule`, `workflow_dispatch`, `workflow_call`),
  the schedule's cron, the PR labels (the JSON array GitHub gives, or a list), an
  optional cadence override (a `workflow_call` input; it wins over the trigger), the
  `Config` and the `LabelRegistry`.
- Out: a frozen `Policy`: `cadence`, canonical `raw_labels`, `include_labels` with the
  source of each, the broad inclusions in effect with the labels each excludes,
  `admit_nightly`, `bypass_fastfail`, `write_baseline`, warnings.
- Rules: PR labels keep only `run-ci-<name>` (`read.names`: name `[A-Za-z0-9][A-Za-z0-9_.-]*`) and
  the workflow-only labels `nightly` and `bypass-fastfail`; a `nightly` label means the
  nightly cadence. Precedence of broad inclusion: `run-ci-all` > weekly/release >
  nightly > other broad scopes; explicit `run-ci-<known label>` labels are unioned in
  last, so an explicit request always wins over a scope's exclusion.
- Exclusion means exclusion: a broad inclusion (the nightly cadence, a scope) never selects
  a registration that carries a label it excludes, even when it includes another of its
  labels; an explicit `run-ci-<label>` (or a path rule's label) for one of its labels
  still selects it.
- Refused: an unknown event, an unknown cron (never silently another cadence's), an
  unknown cadence, a labels JSON that is not an array of strings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ci_policy.config import CADENCES, Config
from ci_policy.errors import InputError, UsageError
from ci_policy.gates.baseline import writes_baseline
from ci_policy.model.registry import Registration
from ci_policy.read.labels import LabelRegistry
from ci_policy.read.names import CI_LABEL_RE, is_ci_label
from ci_policy.read.strictjson import no_constants

EVENTS = ("pull_request", "schedule", "workflow_dispatch", "workflow_call")


@dataclass(frozen=True)
class Trigger:
    event: str
    labels: tuple[str, ...] = ()
    schedule: str | None = None
    cadence: str | None = None


@dataclass(frozen=True)
class Policy:
    event: str
    cadence: str
    raw_labels: tuple[str, ...]
    include_labels: tuple[str, ...]
    # (label, what included it): "run-ci-megatron", "run-ci-all", "the nightly cadence", ...
    sources: tuple[tuple[str, str], ...]
    admit_nightly: bool
    bypass_fastfail: bool
    write_baseline: bool
    warnings: tuple[str, ...] = ()
    # (broad source, the labels it excludes) for each broad inclusion in effect, in `sources`' words:
    # (("the nightly cadence", ("long",)),), or one entry per requested scope.
    broad: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def source_of(self, label: str) -> str | None:
        return dict(self.sources).get(label)

    def with_labels(self, added: Iterable[tuple[str, str]]) -> Policy:
        """A copy with more included labels (auto-selection by path rules)."""
        sources = dict(self.sources)
        for label, source in added:
            sources.setdefault(label, source)
        return replace(self, include_labels=tuple(sorted(sources)), sources=tuple(sorted(sources.items())))


def parse_labels_json(text: str, source: str = "--labels-json") -> tuple[str, ...]:
    """The PR labels as GitHub gives them: a JSON array of strings (`null` means none)."""
    try:
        value = json.loads(text, parse_constant=no_constants)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"not valid JSON: {exc}", source=source,
                          hint="pass toJSON(github.event.pull_request.labels.*.name)") from None
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"expected a JSON array of label names (strings), got {text[:80]!r}",
                         source=source, hint="pass toJSON(github.event.pull_request.labels.*.name)")
    return tuple(value)


def canonical_labels(labels: Iterable[str]) -> tuple[str, ...]:
    """Keep `run-ci-<name>` and the workflow-only labels; sorted, without duplicates."""
    kept = {label for label in labels if is_ci_label(label)}
    return tuple(sorted(kept))


def resolve_cadence(trigger: Trigger, config: Config, raw_labels: Sequence[str]) -> str:
    if trigger.event not in EVENTS:
        raise UsageError(f"unknown event {trigger.event!r}; expected one of {', '.join(EVENTS)}",
                         source="--event")
    if trigger.cadence is not None:
        if trigger.cadence not in CADENCES:
            raise UsageError(f"unknown cadence {trigger.cadence!r}; expected one of "
                             f"{', '.join(CADENCES)}", source="--cadence")
        return trigger.cadence
    if trigger.event == "schedule":
        if not trigger.schedule:
            raise UsageError("a schedule event needs its cron string",
                             source="--schedule",
                             hint="pass --schedule \"$SCHEDULE\", with SCHEDULE set from github.event.schedule "
                                  "in the step's env:")
        cadence = config.cadences.for_cron(trigger.schedule)
        if cadence is None:
            known = ", ".join(repr(c) for c in config.cadences.schedules) or "none"
            raise InputError(f"--schedule: cron {trigger.schedule!r} is not listed in cadences.schedules "
                              f"(listed: {known})", path=config.path, line=config.cadences.line,
                              hint="add it to cadences.schedules in the configuration with its cadence")
        return cadence
    if trigger.event == "pull_request" and "nightly" in raw_labels:
        return "nightly"
    return "regular"


def resolve(trigger: Trigger, config: Config, labels: LabelRegistry) -> Policy:
    raw = canonical_labels(trigger.labels)
    cadence = resolve_cadence(trigger, config, raw)
    known = labels.names
    warnings: list[str] = []

    def every_label_but(exclude: Iterable[str]) -> set[str]:
        return set(known) - set(exclude)

    sources: dict[str, str] = {}
    requested_scopes = [s for s in config.scopes if s.name in raw]
    all_scope = config.scope("run-ci-all")
    excluded: tuple[str, ...] = ()
    if all_scope is not None and all_scope.name in raw:
        base, why, excluded = every_label_but(all_scope.exclude), "run-ci-all", all_scope.exclude
    elif cadence in ("weekly", "release"):
        base, why = set(known), f"the {cadence} cadence"
    elif cadence == "nightly":
        base, why = every_label_but(config.cadences.nightly_exclude), "the nightly cadence"
        excluded = config.cadences.nightly_exclude
    else:
        base, why = None, ""
    for label in sorted(base or ()):
        sources[label] = why
    broad = [(why, excluded)] if base is not None else []
    if base is None:
        for scope in requested_scopes:
            broad.append((scope.name, scope.exclude))
            for label in sorted(every_label_but(scope.exclude)):
                sources.setdefault(label, scope.name)

    for label in raw:
        m = CI_LABEL_RE.fullmatch(label)
        if not m:
            continue
        name = m.group(1)
        if name in known:
            sources[name] = label  # an explicit request wins over any scope's exclusion
        elif config.scope(label) is None:
            warnings.append(f"PR label {label} names no known label or scope; it selects nothing")

    admit_nightly = cadence in ("nightly", "weekly", "release")
    return Policy(
        event=trigger.event,
        cadence=cadence,
        raw_labels=raw,
        include_labels=tuple(sorted(sources)),
        sources=tuple(sorted(sources.items())),
        admit_nightly=admit_nightly,
        bypass_fastfail=admit_nightly or "bypass-fastfail" in raw,
        write_baseline=writes_baseline(cadence, trigger.event)[0],
        warnings=tuple(warnings),
        broad=tuple(broad),
    )


def is_selected(reg: Registration, policy: Policy) -> bool:
    """Not disabled, cadence-eligible, and unlabelled (always on) or included (see `_included`)."""
    if reg.disabled is not None:
        return False
    if reg.nightly and not policy.admit_nightly:
        return False
    return not reg.labels or _included(reg, policy)


def _included(reg: Registration, policy: Policy) -> bool:
    """A label of `reg` asked for by name (explicitly, or by a path rule), or a broad inclusion
    that includes one of its labels and excludes none."""
    labels = set(reg.labels)
    if not labels & set(policy.include_labels):
        return False
    broad = dict(policy.broad)
    if any((source := policy.source_of(label)) is not None and source not in broad for label in labels):
        return True
    return any(not labels & set(excluded) for _source, excluded in policy.broad)


def exclusions(reg: Registration, policy: Policy) -> tuple[tuple[str, str], ...]:
    """(label, broad source) for each label of `reg` a broad inclusion in effect excludes."""
    return tuple((label, source) for source, excluded in policy.broad for label in reg.labels if label in excluded)


def exclusion_text(pairs: Iterable[tuple[str, str]]) -> str:
    """`carries long, which the nightly cadence excludes` (one clause per source)."""
    by_source: dict[str, list[str]] = {}
    for label, source in pairs:
        if label not in by_source.setdefault(source, []):
            by_source[source].append(label)
    return "; ".join(f"carries {', '.join(sorted(labels))}, which {source} excludes"
                     for source, labels in by_source.items())


def why_not_selected(reg: Registration, policy: Policy) -> str:
    if reg.disabled is not None:
        return f"disabled: {reg.disabled}"
    if reg.nightly and not policy.admit_nightly:
        return f"nightly-only; the {policy.cadence} cadence does not admit nightly tests"
    if set(reg.labels) & set(policy.include_labels) and (pairs := exclusions(reg, policy)):
        return exclusion_text(pairs)
    return f"needs one of: {', '.join(reg.labels)}"
