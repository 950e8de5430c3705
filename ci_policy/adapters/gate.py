"""`ci-policy gate` (an adapter): evaluate one test file's gates against the metric history.

- In: the validated `Snapshot`, the test file, its merged metric record, the store URL,
  the cadence/event (whether baselines may be written) and the run's identity
  (`run_id`, `run_attempt`, `commit`; from `GITHUB_*` when not given).
- Out: a `GateOutcome`: one verdict per coordinate, whether the run is trusted, what
  happened to the baseline, and whether the job must fail (an enforced, non-allowlisted
  FAIL or ERROR).
- Refused: a store location that is not one of the accepted forms, before anything runs
  (`check_store_location`, a `UsageError` that never shows the value); a `--file` without a
  registration, or registered for several stages with none named (`InputError`). Without a
  location, the default store is the SQLite file outside the checkout (`store.default_store_path`).
- A store that cannot be opened or read turns every coordinate into ERROR with the
  reason: nothing is ever reported as a pass without a comparison. A run that may not
  write opens the store read-only: a store that does not exist is such an ERROR (naming
  the store, its password redacted), never a new empty database.
- Baselines are written only when `gates.baseline.writes_baseline` allows it (nightly,
  weekly; never a pull request or a release), only for trusted runs, only with a run id,
  and only for the first attempt of a run (see `MetricHistoryStore.write`); a run that may
  not write never writes to the store at all (PR jobs hold read-only credentials).
- A run that may write needs an explicit shared store (`--store` or
  `$CI_POLICY_DATABASE_URL`), and never a SQLite file while `GITHUB_ACTIONS=true` (the
  workspace is thrown away): `baseline_store_problem` says why, and the opener raises it
  as a `UsageError`; the commands check it before running anything.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ci_policy.adapters.store import (
    DATABASE_URL_ENV,
    DUPLICATE,
    NOT_ALLOWED,
    NOT_FIRST_ATTEMPT,
    NOT_TRUSTED,
    WRITTEN,
    RunKey,
    Sample,
    default_store_path,
    open_store,
    parse_location,
    redact_url,
)
from ci_policy.errors import InputError, StoreUnavailable, UsageError
from ci_policy.gates.baseline import writes_baseline
from ci_policy.gates.evaluate import ERROR, Coordinate, GateSpec, evaluate, resolve, select
from ci_policy.model.registry import Registration
from ci_policy.plan.results import GateOutcome

MAX_STEP = 2**63 - 1  # the stores keep steps as signed 64-bit integers


@dataclass(frozen=True)
class RunIdentity:
    run_id: str | None = None
    run_attempt: int = 1
    commit: str | None = None


def specs_for(snapshot, file: str, reg: Registration) -> list[GateSpec]:
    defaults = snapshot.config.gates.defaults
    return [resolve(d, reg.backend, reg.suite, defaults) for d in snapshot.gates if d.file == file]


def registration_for(snapshot, file: str, stage: str | None) -> Registration:
    # A stage is named by its name (every backend's, when several share it) or its key (`NAME@BACKEND`).
    key = snapshot.config.key_of
    regs = [r for r in snapshot.registrations_for(file)
            if stage is None or stage in (r.suite, key(r.backend, r.suite))]
    if not regs:
        raise InputError(f"--file: {file} has no registration" + (f" for stage {stage}" if stage else ""),
                          path=file, hint="pass a registered test file (see ci-policy registry)")
    if len(regs) > 1:
        raise InputError(f"--file: {file} is registered for several stages "
                          f"({', '.join(key(r.backend, r.suite) for r in regs)}); pass --stage", path=file)
    return regs[0]


def run_gate(snapshot, reg: Registration, series, store_opener, *, cadence: str, event: str | None,
             run: RunIdentity, problems=None) -> GateOutcome:
    """Evaluate `reg.file`'s gates on `series` (a gate whose metric has `problems` is ERROR);
    `store_opener(write=...)` returns a MetricHistoryStore, opened to write only when this run
    may write baselines."""
    outcome = GateOutcome(file=reg.file, registration=reg)
    specs = specs_for(snapshot, reg.file, reg)
    if not specs:
        outcome.baseline = "no gates declared"
        return outcome
    coords = [_storable(c) for spec in specs for c in select(spec, series, problems)]
    gates_cfg = snapshot.config.gates
    allowed, why_not = writes_baseline(cadence, event)
    writing = allowed and run.run_id is not None
    store = None
    try:
        store = store_opener(write=writing)
    except StoreUnavailable as exc:
        reason = str(exc)

        def baseline(spec, step):
            raise StoreUnavailable(reason)
    else:
        def baseline(spec, step):
            return store.baseline(spec.identity, step, gates_cfg.window)

    try:
        outcome.results = evaluate(coords, baseline, min_samples=gates_cfg.min_samples,
                                   reference=gates_cfg.reference)
        if store is None:
            outcome.baseline = "not written: metric history unavailable"
        elif not allowed:
            outcome.baseline = f"not written: {why_not}"
        elif run.run_id is None:
            outcome.baseline = "not written: no run id (pass --run-id, or run in GitHub Actions)"
        else:
            samples = [Sample(identity=r.spec.identity, step=r.step, value=r.value)
                       for r in outcome.results if r.value is not None and r.verdict != ERROR]
            key = RunKey(run_id=run.run_id, run_attempt=run.run_attempt, file=reg.file,
                         backend=reg.backend, suite=reg.suite)
            try:
                status = store.write(key, cadence=cadence, commit=run.commit, trusted=outcome.trusted,
                                     samples=samples, write_baseline=True)
            except StoreUnavailable as exc:
                outcome.baseline = f"not written: metric history unavailable: {exc}"
            else:
                outcome.baseline = {
                    # Identical declarations give the same sample twice; the store keeps it once.
                    WRITTEN: f"written ({len({(s.identity, s.step) for s in samples})} value(s))",
                    DUPLICATE: "not written: this run attempt was already recorded",
                    NOT_ALLOWED: f"not written: {why_not}",
                    NOT_TRUSTED: "not written: the run is not trusted (a gate FAILed or ERRORed)",
                    NOT_FIRST_ATTEMPT: "not written: only a run's first attempt may write baselines",
                }.get(status, f"not written: {status}")
    finally:
        if store is not None:
            store.close()
    return outcome


def _storable(c: Coordinate) -> Coordinate:
    """A recorded step the store cannot look up (negative, or beyond 64 bits) is an ERROR
    for its coordinate, not a crash of the whole gate (`last` is always step -1)."""
    if c.error is None and c.spec.steps != "last" and not 0 <= c.step <= MAX_STEP:
        return Coordinate(c.spec, c.step, c.value,
                          f"step {c.step} is not a step index the metric history can hold (0 to {MAX_STEP})")
    return c


def baseline_store_problem(url: str | None) -> UsageError | None:
    """Why a baseline-writing run may not write into the store `url` (else
    `$CI_POLICY_DATABASE_URL`), or None when it may."""
    source = "--store"
    if not url:
        url, source = os.environ.get(DATABASE_URL_ENV) or None, f"${DATABASE_URL_ENV}"
    if url is None:
        return UsageError("writing a baseline needs an explicit shared metric store, and none is configured "
                          "(the default SQLite file is only read)", source="--store",
                          hint=f"pass --store URL or set ${DATABASE_URL_ENV}; in GitHub Actions, a PostgreSQL "
                               "URL from a secret")
    if parse_location(url, source).kind == "sqlite" and os.environ.get("GITHUB_ACTIONS") == "true":
        return UsageError(f"writing a baseline into the local SQLite file {redact_url(url)} while "
                          "GITHUB_ACTIONS=true: the file is thrown away with the runner's workspace",
                          source=source,
                          hint="configure a PostgreSQL store: keep its URL in a repository secret and pass it "
                               f"as ${DATABASE_URL_ENV} (see docs/adopting/metric-store.md)")
    return None


def check_store_location(url: str | None) -> None:
    """Refuse (`UsageError`, the value never shown) a `--store` or `$CI_POLICY_DATABASE_URL`
    that is not a store location, before any test runs or any store is opened."""
    if url:
        parse_location(url, "--store")
    elif os.environ.get(DATABASE_URL_ENV):
        parse_location(os.environ[DATABASE_URL_ENV], f"${DATABASE_URL_ENV}")


def opener(url: str | None, repo: Path):
    """A deferred `open_store` (read-only unless `write`), so a store failure becomes ERROR verdicts, not a crash;
    only a store a baseline may not be written to raises (`UsageError`)."""
    def open_it(*, write: bool):
        if write:
            problem = baseline_store_problem(url)
            if problem is not None:
                raise problem
        try:
            return open_store(url, default_path=default_store_path(repo), read_only=not write)
        except InputError as exc:
            raise StoreUnavailable(exc.message) from None
    return open_it
