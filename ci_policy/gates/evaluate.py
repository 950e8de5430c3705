"""Gate evaluation (pure): declarations + a run's record + baselines -> verdicts.

- In: `GateDeclaration`s of one test file, the gate defaults, the merged metric record
  of the run (key -> [(step, value)]), and for every coordinate the last K trusted
  baseline values (fetched by the caller from a `MetricHistoryStore`).
- Out: one `GateResult` per coordinate: PASS, FAIL, NO_BASELINE (fewer than
  `min_samples` values: never shown as a pass) or ERROR (selection failed, or the
  store was unreachable), with the band and the baseline it was judged against.
- Selection: `last` is one coordinate (step -1, the last point); `all` is one per
  step; a step list selects those steps. A missing step, a non-finite selected value,
  or a missing metric is an ERROR for that coordinate. A problem of the record for the
  gate's metric (or for the whole record: `problems[""]`, e.g. a file that is not a
  record, or a value the recorder could not record) is one ERROR naming it.
- Duplicate steps (parent and child processes logging the same step): identical values
  are one point; differing values are an ERROR for that step naming every value.
- Band: `[ref - max(rel_down*|ref|, abs_floor_down), ref + max(rel_up*|ref|, abs_floor_up)]`,
  `ref` the mean (or median) of the baseline values.
- Refused: nothing is raised for a run's data: every problem of the record or the store
  (`StoreUnavailable`) is an ERROR verdict naming it. `resolve` raises `ValueError` for a
  gate with neither its own steps/constraint nor `gates.defaults` ones, which `lint`
  reports located first.
- A run is trusted iff no coordinate is FAIL or ERROR; only trusted runs may become
  baselines. An enforced gate's FAIL/ERROR fails the job unless it is allowlisted.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ci_policy.errors import StoreUnavailable
from ci_policy.gates.declarations import GateDeclaration

LAST_STEP = -1

Verdict = Literal["PASS", "FAIL", "NO_BASELINE", "ERROR"]
PASS: Verdict = "PASS"
FAIL: Verdict = "FAIL"
NO_BASELINE: Verdict = "NO_BASELINE"
ERROR: Verdict = "ERROR"
# "last", "all", or the step indices to judge.
Steps = Literal["last", "all"] | list[int]


@dataclass(frozen=True)
class GateSpec:
    """A declaration with defaults filled in; `identity` names its stored series."""

    file: str
    backend: str
    suite: str
    metric_key: str
    steps: Steps
    constraint: tuple[tuple[str, float], ...]
    enforce: bool
    allowlist_reason: str | None
    written: str  # canonical JSON of the literals as written
    line: int = 0

    @property
    def identity(self) -> tuple[str, str, str, str, str]:
        return (self.file, self.backend, self.suite, self.metric_key, self.written)


def resolve(decl: GateDeclaration, backend: str, suite: str, defaults: Mapping[str, dict[str, Any]]) -> GateSpec:
    """Fill omitted `steps`/`constraint` from defaults; literals written in the file win."""
    default = defaults.get(decl.metric_key, {})
    steps = decl.steps if "steps" in decl.written and decl.steps is not None else default.get("steps")
    constraint = (dict(decl.constraint) if "constraint" in decl.written and decl.constraint is not None
                  else default.get("constraint"))
    if steps is None or constraint is None:
        missing = [name for name, v in (("steps", steps), ("constraint", constraint)) if v is None]
        raise ValueError(f"register_ci_gate(metric_key={decl.metric_key!r}) has no {' or '.join(missing)} and "
                         "gates.defaults has none for this key")
    return GateSpec(file=decl.file, backend=backend, suite=suite, metric_key=decl.metric_key,
                    steps=steps, constraint=tuple(sorted(constraint.items())), enforce=decl.enforce,
                    allowlist_reason=decl.allowlist_reason, written=decl.written_json(), line=decl.line)


@dataclass(frozen=True)
class Coordinate:
    spec: GateSpec
    step: int
    value: float | None
    error: str | None = None


def select(spec: GateSpec, series: Mapping[str, Sequence[tuple[int, float]]],
           problems: Mapping[str, Sequence[str]] | None = None) -> list[Coordinate]:
    found = [*(problems or {}).get("", ()), *(problems or {}).get(spec.metric_key, ())]
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        return [Coordinate(spec, LAST_STEP, None, f"unusable metric record: {found[0]}{more}")]
    points = series.get(spec.metric_key)
    if not points:
        return [Coordinate(spec, LAST_STEP if spec.steps == "last" else LAST_STEP, None,
                           f"metric {spec.metric_key} was not recorded")]
    by_step: dict[int, list[float]] = {}
    for step, value in points:
        by_step.setdefault(step, []).append(value)

    def coordinate(step: int, values: list[float], shown: int | None = None) -> Coordinate:
        label = step if shown is None else shown
        distinct = list(dict.fromkeys(repr(v) for v in values))  # repr: NaN equals NaN here
        if len(distinct) > 1:
            return Coordinate(spec, label, None, f"step {step} was recorded {len(values)} times with "
                                                 f"different values: {', '.join(distinct)}")
        if not math.isfinite(values[0]):
            return Coordinate(spec, label, values[0], f"value at step {step} is not finite ({values[0]})")
        return Coordinate(spec, label, values[0])

    if spec.steps == "last":
        step = max(by_step)
        return [coordinate(step, by_step[step], LAST_STEP)]
    if spec.steps == "all":
        return [coordinate(step, by_step[step]) for step in sorted(by_step)]
    out = []
    for step in spec.steps:  # a list of step indices
        if step not in by_step:
            out.append(Coordinate(spec, step, None, f"step {step} was not recorded "
                                  f"(recorded steps: {_steps_shown(sorted(by_step))})"))
        else:
            out.append(coordinate(step, by_step[step]))
    return out


def _steps_shown(steps: list[int]) -> str:
    return ", ".join(map(str, steps[:10])) + (f", ... ({len(steps)} in all)" if len(steps) > 10 else "")


@dataclass(frozen=True)
class Band:
    ref: float
    lo: float
    hi: float
    n: int


def band(values: Sequence[float], constraint: Mapping[str, float], reference: str = "mean") -> Band:
    ref = statistics.median(values) if reference == "median" else statistics.fmean(values)
    up = max(constraint.get("rel_up", 0.0) * abs(ref), constraint.get("abs_floor_up", 0.0))
    down = max(constraint.get("rel_down", 0.0) * abs(ref), constraint.get("abs_floor_down", 0.0))
    return Band(ref=ref, lo=ref - down, hi=ref + up, n=len(values))


@dataclass(frozen=True)
class GateResult:
    spec: GateSpec
    step: int
    value: float | None
    verdict: Verdict
    message: str
    band: Band | None = None

    @property
    def blocking(self) -> bool:
        """Fails the job: an enforced, non-allowlisted FAIL or ERROR."""
        return (self.verdict in (FAIL, ERROR) and self.spec.enforce
                and self.spec.allowlist_reason is None)


def evaluate(coords: Sequence[Coordinate],
             baseline: Callable[[GateSpec, int], Sequence[float]],
             *, min_samples: int, reference: str = "mean") -> list[GateResult]:
    """`baseline(spec, step)` returns the last K trusted values, or raises `StoreUnavailable`."""
    out = []
    for c in coords:
        if c.error is not None:
            out.append(GateResult(c.spec, c.step, c.value, ERROR, c.error))
            continue
        try:
            values = list(baseline(c.spec, c.step))
        except StoreUnavailable as exc:
            out.append(GateResult(c.spec, c.step, c.value, ERROR, f"metric history unavailable: {exc}"))
            continue
        if len(values) < min_samples:
            out.append(GateResult(c.spec, c.step, c.value, NO_BASELINE,
                                  f"{len(values)} baseline value(s), {min_samples} needed"))
            continue
        b = band(values, dict(c.spec.constraint), reference)
        assert c.value is not None
        if b.lo <= c.value <= b.hi:
            out.append(GateResult(c.spec, c.step, c.value, PASS, "within band", b))
        else:
            side = "above" if c.value > b.hi else "below"
            out.append(GateResult(c.spec, c.step, c.value, FAIL,
                                  f"{c.value:.6g} is {side} the band [{b.lo:.6g}, {b.hi:.6g}] "
                                  f"(baseline {reference} {b.ref:.6g} of {b.n})", b))
    return out


def trusted(results: Sequence[GateResult]) -> bool:
    return not any(r.verdict in (FAIL, ERROR) for r in results)
