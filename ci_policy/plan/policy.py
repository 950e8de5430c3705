"""Trigger policy: from event, schedule, PR labels and cadence override to what is included.

- In: the event name (`EVENTS`), the schedule's cron, the PR labels (the JSON array GitHub
  gives, or a list), an optional cadence override (a `workflow_call` input; it wins over
  the trigger), the `Config` and the `LabelRegistry`.
- Out: a frozen `Policy`: `cadence`, canonical `raw_labels`, `include_labels` with the
  source of each, the broad inclusions in effect with the labels each excludes,
  `admit_nightly`, `bypass_fastfail`, `write_baseline`, warnings; for the stage-level
  rules also every PR label as given (`pr_labels`), `nightly_only` and the cron's
  `Schedule` when it chooses stages.
- Rules: PR labels keep only `run-ci-<name>` (`read.names`: name `[A-Za-z0-9][A-Za-z0-9_.-]*`) and
  the workflow-only labels `nightly` and `bypass-fastfail`; a `nightly` label means the
  nightly cadence. Precedence of broad inclusion: `run-ci-all` > weekly/release >
  nightly > other broad scopes; explicit `run-ci-<known label>` labels are unioned in
  last, so an explicit request always wins over a scope's exclusion. A `merge_group`
  event has the cadence `cadences.merge_group`; `push` and `merge_group` carry no labels.
  Labels match exactly; a label that selects nothing but was plainly meant for a readable one
  (case, spaces, no `run-ci-` prefix, a misspelt `run-ci-` name) is a warning with a did-you-mean.
- Trust (`TRUSTS`, default `trusted`): whether the head commit may run on accelerator
  or self-hosted runners. `untrusted` (an outside contributor's head no maintainer approved)
  holds back every accelerator stage and every stage whose `runs_on` is not a GitHub-hosted
  runner (`hosted_runner`: a cpu stage without `runs_on`, or one standard GitHub-hosted
  label; anything else may be a self-hosted runner); `approved` and `untrusted` also stop path rules from
  auto-selecting labels (stage selection), so only labels a maintainer set select tests.
- Stage-level rules (`held_back`, called by stage selection before any test is looked at):
  a schedule that chooses stages, the stage's own cadences, an untrusted head (accelerator
  and self-hosted stages only, before the label gates so that no label can override it), then on pull
  requests the label gates (`pull_request.require_labels` for accelerator stages,
  `stages[].requires_labels`), which compare the raw PR labels, never their canonical form.
- Exclusion means exclusion: a broad inclusion (the nightly cadence, a scope) never selects
  a registration that carries a label it excludes, even when it includes another of its
  labels; an explicit `run-ci-<label>` (or a path rule's label) for one of its labels
  still selects it.
- Refused: an unknown trust, an unknown event, an unknown cron (never silently another cadence's), an
  unknown cadence, a labels JSON that is not an array of strings, labels on an event that
  has none.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ci_policy.config.cadences import CADENCES, SPLIT_CADENCES, Schedule
from ci_policy.config.stages import Stage
from ci_policy.config.top import Config
from ci_policy.errors import InputError, UsageError
from ci_policy.gates.baseline import writes_baseline
from ci_policy.model.registry import Registration
from ci_policy.plan.trust_values import TRUST_VALUES
from ci_policy.read.labels import LabelRegistry
from ci_policy.read.lazyregex import LazyRegex
from ci_policy.read.names import CI_LABEL_PREFIX, CI_LABEL_RE, WORKFLOW_ONLY_LABELS, closest, is_ci_label
from ci_policy.read.strictjson import no_constants

EVENTS = ("pull_request", "schedule", "workflow_dispatch", "workflow_call", "push", "merge_group")
# Events whose diff prunes `diff_pruned` stages: a pull request, a branch push, a merge queue entry.
DIFF_EVENTS = ("pull_request", "push", "merge_group")
# Events that carry no PR labels at all.
UNLABELLED_EVENTS = ("push", "merge_group")
# `github.event.before` of a push that created a branch (SHA-1 and SHA-256 repositories).
ZERO_SHA_RE = LazyRegex(r"0{40}|0{64}")
# How far the head commit is trusted: `trusted` (a branch of the base repository, or an author
# with write access), `approved` (a maintainer approved exactly this commit), `untrusted`.
TRUSTS = TRUST_VALUES
# The skip reason of every accelerator stage of an untrusted head.
UNTRUSTED_REASON = "untrusted head not approved"
# The skip reason of a stage whose tests an outside contributor's diff calls for (a path
# rule's labels) but no maintainer's label selects: the diff may not choose what runs on
# accelerator runners, and the required check may not pass without those tests.
UNLABELLED_REASON = "the diff calls for labels no maintainer set"
# One runner label of GitHub's hosted images (ubuntu-24.04, ubuntu-24.04-arm, windows-2025,
# macos-15-xlarge, ...). Any other `runs_on` may be a self-hosted runner: a self-hosted
# runner needs no `self-hosted` label in `runs-on`, and larger hosted runners have names of
# their owner's choosing, so the safe side is to treat them as self-hosted.
HOSTED_LABEL_RE = LazyRegex(
    r"ubuntu-(?:latest|\d{2}\.\d{2})(?:-arm)?|windows-(?:latest|\d{4}|11-arm)|macos-(?:latest|\d{2})(?:-intel|-large|-xlarge)?")


@dataclass(frozen=True)
class Trigger:
    event: str
    labels: tuple[str, ...] = ()
    schedule: str | None = None
    cadence: str | None = None
    trust: str = "trusted"


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
    # Every PR label as given, for the label gates (`raw_labels` keeps only the canonical ones).
    pr_labels: tuple[str, ...] = ()
    # `cadences.nightly_selects: nightly_only` on a nightly or weekly run: only nightly tests.
    nightly_only: bool = False
    # The cron's entry when it chooses the stages it plans.
    schedule: Schedule | None = None
    # (broad source, the labels it excludes) for each broad inclusion in effect, in `sources`' words:
    # (("the nightly cadence", ("long",)),), or one entry per requested scope.
    broad: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # `TRUSTS`: what the head commit may run (see `held_back` and stage selection).
    trust: str = "trusted"

    @property
    def auto_selects(self) -> bool:
        """Whether path rules may select labels: only for a trusted head, never one a maintainer
        merely approved (its labels say what the maintainer agreed to run)."""
        return self.trust == "trusted"

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
    if trigger.event == "merge_group":
        return config.cadences.merge_group
    return "regular"


def gate_labels(config: Config) -> tuple[str, ...]:
    """Every raw PR label a label gate names (`pull_request.require_labels`, `stages[].requires_labels`,
    `stages[].variants[].requires_labels`)."""
    named = set(config.pull_request.require_labels)
    for stage in config.stages:
        named.update(stage.requires_labels)
        for variant in stage.variants:
            named.update(variant.requires_labels)
    return tuple(sorted(named))


def _did_you_mean(label: str, readable: Iterable[str]) -> str:
    """`; did you mean 'run-ci-x'?` for the readable label `label` was meant as: equal but for
    case, surrounding spaces or the `run-ci-` prefix, or a `run-ci-` label whose name is a
    close misspelling of a known one (difflib's); else nothing."""
    by_key = {r.casefold(): r for r in readable}
    key = label.strip().casefold()
    for candidate in (key, CI_LABEL_PREFIX + key):
        if candidate in by_key and by_key[candidate] != label:
            return f"; did you mean {by_key[candidate]!r}?"
    if key == CI_LABEL_PREFIX.rstrip("-"):  # `run-ci` where no gate names it: a scope, if one is close
        close = closest(key, by_key)
        return f"; did you mean {by_key[close]!r}?" if close is not None else ""
    if not key.startswith(CI_LABEL_PREFIX):
        return ""  # an ordinary label: only an exact match above is a sign it was meant for CI
    # The prefix is compared off: every run-ci- label shares it, which would make any two close.
    names = {r[len(CI_LABEL_PREFIX):].casefold(): r for r in by_key.values() if r.startswith(CI_LABEL_PREFIX)}
    close = closest(key[len(CI_LABEL_PREFIX):], names)
    return f"; did you mean {names[close]!r}?" if close is not None else ""


def resolve(trigger: Trigger, config: Config, labels: LabelRegistry) -> Policy:
    if trigger.trust not in TRUSTS:
        raise UsageError(f"unknown trust {trigger.trust!r}; expected one of {', '.join(TRUSTS)}", source="--trust",
                         hint="pass the trust output of ci-policy pull-request")
    if trigger.event in UNLABELLED_EVENTS and trigger.labels:
        raise UsageError(f"a {trigger.event} event carries no PR labels, got {', '.join(trigger.labels)[:200]}",
                         source="--labels-json/--label",
                         hint="pass PR labels only for pull_request events (an empty array or null is fine)")
    raw = canonical_labels(trigger.labels)
    cadence = resolve_cadence(trigger, config, raw)
    known = labels.names
    warnings: list[str] = []

    def every_label_but(exclude: Iterable[str]) -> set[str]:
        return set(known) - set(exclude)

    gates = gate_labels(config)
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

    readable = (*(CI_LABEL_PREFIX + name for name in known), *(s.name for s in config.scopes), *gates,
                *WORKFLOW_ONLY_LABELS)
    for label in raw:
        m = CI_LABEL_RE.fullmatch(label)
        if not m:
            continue
        name = m.group(1)
        if name in known:
            sources[name] = label  # an explicit request wins over any scope's exclusion
        elif config.scope(label) is None and label not in gates:
            warnings.append(f"PR label {label} names no known label or scope; it selects nothing"
                            + _did_you_mean(label, readable))
    for label in sorted(set(trigger.labels) - set(raw) - set(gates)):
        # A label the policy does not read selects nothing. Most are a PR's ordinary labels
        # (bug, documentation) and say nothing; one a readable label differs from only in case,
        # spaces or the run-ci- prefix was meant for it, so it is named rather than dropped.
        hint = _did_you_mean(label, readable)
        if hint:
            warnings.append(f"PR label {label!r} is not one ci-policy reads; it selects nothing{hint}")

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
        pr_labels=tuple(sorted(set(trigger.labels))),
        nightly_only=config.cadences.nightly_selects == "nightly_only" and cadence in SPLIT_CADENCES,
        schedule=(config.cadences.schedule_for(trigger.schedule)
                  if trigger.event == "schedule" and trigger.schedule else None),
        broad=tuple(broad),
        trust=trigger.trust,
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


# -- stage-level rules: which stages this trigger may plan at all ------------------------------

def hosted_runner(stage: Stage) -> bool:
    """Whether the stage's jobs run on a GitHub-hosted runner: no `runs_on` (the hosted Linux
    runner cpu stages default to) or exactly one label of GitHub's hosted images."""
    return not stage.runs_on or (len(stage.runs_on) == 1 and HOSTED_LABEL_RE.fullmatch(stage.runs_on[0]) is not None)


def held_back(stage: Stage, policy: Policy, config: Config) -> tuple[str, ...]:
    """Why the trigger does not plan `stage` (skip reasons, without `skip: `), or () when it may.

    In order, the first that applies: the cron's schedule does not choose the stage; the
    cadence is not one of the stage's cadences; an untrusted head and an accelerator stage,
    or a stage that may run on a self-hosted runner (whatever the event and labels: a label
    on a fork PR is no maintainer's approval); on a
    pull request, the label gates (both reasons when both gates are missing labels).
    """
    schedule = policy.schedule
    if schedule is not None and not any(schedule.plans(stage.name, stage.backend, key)
                                        for key in (stage.base_key, stage.key)):
        return (f"not in this schedule (cadences.schedules[{schedule.cron!r}] plans only {schedule.describe()})",)
    if policy.cadence not in stage.cadences:
        return (f"the {policy.cadence} cadence is not one of the stage's cadences ({', '.join(stage.cadences)})",)
    variant = stage.variant
    if variant is not None and variant.cadences is not None and policy.cadence not in variant.cadences:
        return (f"the {policy.cadence} cadence is not one of variant {variant.name}'s cadences "
                f"({', '.join(variant.cadences)})",)
    if policy.trust == "untrusted" and config.is_accelerator(stage.backend):
        return (UNTRUSTED_REASON,)
    if policy.trust == "untrusted" and not hosted_runner(stage):
        return (f"{UNTRUSTED_REASON} (runs_on [{', '.join(stage.runs_on)}] is not a GitHub-hosted runner)",)
    if policy.event != "pull_request":
        return ()
    reasons = []
    required = config.pull_request.require_labels
    if required and config.is_accelerator(stage.backend) and not set(required) & set(policy.pr_labels):
        if len(required) == 1:
            reasons.append(f"the PR lacks the label {required[0]}, which accelerator stages need "
                           "(pull_request.require_labels)")
        else:
            reasons.append(f"the PR lacks the labels {', '.join(required)}, one of which accelerator stages need "
                           "(pull_request.require_labels)")
    missing = [label for label in stage.requires_labels if label not in policy.pr_labels]
    if missing:
        noun = "label" if len(missing) == 1 else "labels"
        reasons.append(f"the PR lacks the {noun} {', '.join(missing)}, which the stage requires (requires_labels)")
    missing = [label for label in variant.requires_labels if label not in policy.pr_labels] if variant else []
    if variant is not None and missing:
        noun = "label" if len(missing) == 1 else "labels"
        reasons.append(f"the PR lacks the {noun} {', '.join(missing)}, which variant {variant.name} requires "
                       "(variants[].requires_labels)")
    return tuple(reasons)


def variant_reason(stage: Stage, policy: Policy) -> str | None:
    """Why a running variant runs where it does (`run: variant ...`), or None for a stage that is no variant."""
    variant = stage.variant
    if variant is None:
        return None
    where = f"runs_on [{', '.join(stage.runs_on)}]" + (f", image {variant.image}" if variant.image else "")
    why = []
    if variant.cadences is not None:
        why.append(f"the {policy.cadence} cadence is one of its cadences ({', '.join(variant.cadences)})")
    if variant.requires_labels and policy.event == "pull_request":
        why.append(f"the PR carries {', '.join(variant.requires_labels)} (variants[].requires_labels)")
    elif variant.requires_labels:
        why.append(f"its requires_labels ({', '.join(variant.requires_labels)}) gate pull requests only")
    return f"run: variant {variant.name} of {stage.base_key} on {where}" + (f": {'; '.join(why)}" if why else "")


def nightly_split(reg: Registration, policy: Policy) -> str | None:
    """Why `cadences.nightly_selects: nightly_only` leaves out an enabled per-commit test, or None."""
    if policy.nightly_only and not reg.nightly and reg.disabled is None:
        return (f"not nightly; the {policy.cadence} cadence selects only nightly tests "
                "(cadences.nightly_selects: nightly_only)")
    return None


def selects(reg: Registration, policy: Policy) -> bool:
    """`is_selected`, and not left out by the nightly split."""
    return is_selected(reg, policy) and nightly_split(reg, policy) is None


def why_not(reg: Registration, policy: Policy) -> str:
    """Why `selects` is false: the nightly split, else `why_not_selected`."""
    return nightly_split(reg, policy) or why_not_selected(reg, policy)


def push_diff_unavailable(before: str | None, after: str | None, forced: bool) -> str | None:
    """Why a push's `before..after` diff cannot be trusted (a new branch, a deleted one, a force push), or None."""
    if before is not None and ZERO_SHA_RE.fullmatch(before):
        return "the push created the branch (its before commit is the zero SHA), so there is no base to diff against"
    if after is not None and ZERO_SHA_RE.fullmatch(after):
        return "the push deleted the branch (its after commit is the zero SHA)"
    if forced:
        return "a force push: the before commit need not be an ancestor of the pushed one"
    return None
