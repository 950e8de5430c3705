"""The metric-history store's contract and the logic and SQL both backends share.

- In: `RunKey`s and `Sample`s to record, identities to look up.
- Out: `baseline(identity, step, window)`: the last `window` stored values of one
  coordinate, oldest first (insertion order); `write(...)`: one outcome string
  (`DUPLICATE`, `NOT_ALLOWED`, `NOT_TRUSTED`, `NOT_FIRST_ATTEMPT`, `WRITTEN`); `runs()`:
  every recorded run, for tests and maintainers; `record_attempts(outcomes)`: the test
  history's rows (`model.outcomes.Outcome`) added, how many were new; `attempts(since)`: the
  history read back; `record_plans(plans)` and `plans(since)`: the plans' accelerator hours
  (`model.outcomes.PlanHours`, one row per workflow run attempt, PR runs included through
  `history import`), likewise; `check_history()`: a store of a schema before the history (version
  `HISTORY_VERSION`) refused as CP701, since a read never migrates.
- Rules: a `write` is one transaction and always records its run in `gate_runs`
  (idempotent on the `RunKey`); samples are inserted only for a first attempt of a trusted
  run whose cadence writes baselines, and are unique on identity + step + run_id, so a
  rerun, a retried job or a race can never add a value twice or shop for a baseline.
- Refused: a malformed argument, as a `ValueError`/`TypeError` before any I/O; a schema newer
  than this code, as an `InputError`. Every database failure surfaces as `StoreUnavailable`
  with a one-line message that never contains a password.
- The schema is written once here (`migrations(dialect)`); `sqlite.py` and `postgres.py`
  supply a `Dialect`, the transactions and the connection handling. Standard library only.
"""

from __future__ import annotations

import abc
import hashlib
import json
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from ci_policy.errors import InputError, StoreUnavailable
from ci_policy.gates.evaluate import LAST_STEP
from ci_policy.model.outcomes import RETRY_CLASSES, STATUSES, Outcome, PlanHours
from ci_policy.model.skips import SKIP_GROUPS
from ci_policy.read.codec import decode
from ci_policy.read.numbers import is_finite_number

Identity = tuple[str, str, str, str, str]  # (file, backend, suite, metric_key, written_json)

DUPLICATE = "duplicate"
NOT_ALLOWED = "not_allowed"
NOT_TRUSTED = "not_trusted"
NOT_FIRST_ATTEMPT = "not_first_attempt"
WRITTEN = "written"
# A duplicate is never stored: the run was recorded before.
STORED_OUTCOMES = (NOT_ALLOWED, NOT_TRUSTED, NOT_FIRST_ATTEMPT, WRITTEN)

RUN_COLUMNS = ("run_id", "run_attempt", "file", "backend", "suite", "cadence", "commit", "trusted",
               "write_baseline", "outcome", "samples", "recorded_at")


def _text(name: str, value: object, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not value:
        raise TypeError(f"{name} must be a non-empty string, got {value!r}")
    if "\x00" in value:
        raise ValueError(f"{name} must not contain NUL characters: {value!r}")


def _integer(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


def _check_identity(identity: object) -> Identity:
    if not isinstance(identity, tuple) or len(identity) != 5:
        raise TypeError("identity must be a tuple (file, backend, suite, metric_key, written_json), "
                        f"got {identity!r}")
    for name, part in zip(("file", "backend", "suite", "metric_key", "written_json"), identity, strict=True):
        _text(f"identity {name}", part)
    return identity


@dataclass(frozen=True)
class RunKey:
    """One gated job of one workflow run attempt."""

    run_id: str
    run_attempt: int
    file: str
    backend: str
    suite: str

    def __post_init__(self) -> None:
        _text("run_id", self.run_id)
        _integer("run_attempt", self.run_attempt, 1)
        for name in ("file", "backend", "suite"):
            _text(name, getattr(self, name))


@dataclass(frozen=True)
class Sample:
    """One finite value of one coordinate; `step` -1 means the series' last point."""

    identity: Identity
    step: int
    value: float

    def __post_init__(self) -> None:
        _check_identity(self.identity)
        _integer("step", self.step, LAST_STEP)
        if isinstance(self.value, bool) or not isinstance(self.value, numbers.Real):
            raise TypeError(f"value must be a real number, got {self.value!r}")
        if not is_finite_number(self.value):
            raise ValueError(f"value must be finite, got {self.value!r} (a non-finite run is never a baseline)")
        object.__setattr__(self, "value", float(self.value))


class MetricHistoryStore(abc.ABC):
    """The contract both backends keep; see the module docstring."""

    @abc.abstractmethod
    def migrate(self) -> None:
        """Apply missing schema versions; idempotent; safe when several processes migrate at once."""

    @abc.abstractmethod
    def check_readable(self) -> None:
        """Refuse (`StoreUnavailable`) a store that holds no metric history schema, and a schema
        newer than this code (`InputError`), without creating or changing anything."""

    @abc.abstractmethod
    def baseline(self, identity: Identity, step: int, window: int) -> list[float]:
        """The last `window` stored values of the coordinate, oldest first."""

    @abc.abstractmethod
    def write(self, run: RunKey, *, cadence: str, commit: str | None, trusted: bool,
              samples: Sequence[Sample], write_baseline: bool) -> str:
        """Record `run` and, when allowed, its samples, in one transaction; returns the outcome."""

    @abc.abstractmethod
    def runs(self) -> list[dict]:
        """Every `gate_runs` row, in recording order."""

    @abc.abstractmethod
    def record_attempts(self, outcomes: Sequence[Outcome]) -> int:
        """Record test attempts in one transaction; how many were new (a row recorded before,
        by its `Outcome.key`, is left as it is)."""

    @abc.abstractmethod
    def attempts(self, since: str | None = None) -> list[Outcome]:
        """The recorded attempts started at or after `since` (an ISO 8601 UTC time), ordered by
        start, run, attempt, stage, shard, file and attempt."""

    @abc.abstractmethod
    def record_plans(self, plans: Sequence[PlanHours]) -> int:
        """Record plans' hours in one transaction; how many were new (by run id and attempt)."""

    @abc.abstractmethod
    def plans(self, since: str | None = None) -> list[PlanHours]:
        """The recorded plans made at or after `since`, ordered by creation, run and attempt."""

    @abc.abstractmethod
    def check_history(self) -> None:
        """Refuse (`InputError` CP701) a store whose schema predates the test history."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connection; idempotent."""

    def __enter__(self) -> MetricHistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Tx(abc.ABC):
    """One open transaction; SQL is written with `?` placeholders."""

    @abc.abstractmethod
    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        ...

    @abc.abstractmethod
    def run(self, sql: str, params: Sequence[Any] = ()) -> None:
        ...

    @abc.abstractmethod
    def run_many(self, sql: str, params: Sequence[Sequence[Any]]) -> None:
        ...

    @abc.abstractmethod
    def insert_id(self, sql: str, params: Sequence[Any]) -> int | None:
        """Run an `INSERT ... ON CONFLICT DO NOTHING`; the new row's id, or None if it conflicted."""


@dataclass(frozen=True)
class Dialect:
    """What the two databases spell differently in the shared schema."""

    identity: str       # an auto-numbered primary key
    reference: str      # the integer type of gate_samples.gate_run and step
    flag: str           # a boolean column; `{name}` is the column's name
    timestamp: str      # the type and default of a recording time
    finite_real: str    # a float column that refuses NaN and infinities; `{name}` as above


def _outcome_check() -> str:
    return "outcome IN (" + ", ".join(f"'{o}'" for o in STORED_OUTCOMES) + ")"


def migrations(d: Dialect) -> tuple[tuple[int, tuple[str, ...]], ...]:
    """(version, statements), in order; a version, once released, never changes."""
    v1 = (
        f"""CREATE TABLE gate_runs (
        id {d.identity},
        run_id TEXT NOT NULL,
        run_attempt INTEGER NOT NULL CHECK (run_attempt >= 1),
        file TEXT NOT NULL,
        backend TEXT NOT NULL,
        suite TEXT NOT NULL,
        cadence TEXT NOT NULL,
        commit_sha TEXT,
        trusted {d.flag.format(name="trusted")},
        write_baseline {d.flag.format(name="write_baseline")},
        outcome TEXT NOT NULL CHECK ({_outcome_check()}),
        samples INTEGER NOT NULL DEFAULT 0,
        recorded_at {d.timestamp},
        UNIQUE (run_id, run_attempt, file, backend, suite)
    )""",
        f"""CREATE TABLE gate_samples (
        id {d.identity},
        gate_run {d.reference} NOT NULL REFERENCES gate_runs (id),
        file TEXT NOT NULL,
        backend TEXT NOT NULL,
        suite TEXT NOT NULL,
        metric_key TEXT NOT NULL,
        written_json TEXT NOT NULL,
        step {d.reference} NOT NULL CHECK (step >= -1),
        run_id TEXT NOT NULL,
        value {d.finite_real.format(name="value")},
        UNIQUE (file, backend, suite, metric_key, written_json, step, run_id)
    )""",
    )
    v2 = (
        "CREATE INDEX gate_samples_series ON gate_samples (file, backend, suite, metric_key, written_json, step, id)",
        "CREATE INDEX gate_samples_run ON gate_samples (gate_run)",
    )
    skipped_columns = ",\n        ".join(f"skipped_{g} {d.finite_real.format(name=f'skipped_{g}')}"
                                        for g in SKIP_GROUPS)
    # The test history: one row per attempt of one file (`model.outcomes.Outcome`), unique on
    # the attempt's place so that recording or importing it again changes nothing.
    v3 = (
        f"""CREATE TABLE test_attempts (
        id {d.identity},
        run_id TEXT NOT NULL,
        run_attempt {d.reference} NOT NULL CHECK (run_attempt >= 1),
        commit_sha TEXT,
        event TEXT,
        cadence TEXT,
        stage TEXT NOT NULL,
        shard INTEGER NOT NULL CHECK (shard >= 0),
        runner_labels TEXT NOT NULL,
        file TEXT NOT NULL,
        attempt INTEGER NOT NULL CHECK (attempt >= 1),
        status TEXT NOT NULL CHECK ({_in("status", STATUSES)}),
        retry_class TEXT CHECK (retry_class IS NULL OR {_in("retry_class", RETRY_CLASSES)}),
        started_at TEXT NOT NULL,
        elapsed {d.finite_real.format(name="elapsed")},
        est_time {d.finite_real.format(name="est_time").replace(" NOT NULL", "")},
        recorded_at {d.timestamp},
        UNIQUE (run_id, run_attempt, stage, shard, file, attempt)
    )""",
        "CREATE INDEX test_attempts_started ON test_attempts (started_at)",
        # The hours each run attempt's plan scheduled and skipped (`model.outcomes.PlanHours`),
        # one column per skip group; pull request runs reach it through `history import`. Part of
        # version 3 because no release holds version 3 without it: a store migrated to 3 has both.
        f"""CREATE TABLE plan_hours (
        id {d.identity},
        run_id TEXT NOT NULL,
        run_attempt {d.reference} NOT NULL CHECK (run_attempt >= 1),
        event TEXT,
        commit_sha TEXT,
        created_at TEXT NOT NULL,
        scheduled {d.finite_real.format(name="scheduled")},
        {skipped_columns},
        recorded_at {d.timestamp},
        UNIQUE (run_id, run_attempt)
    )""",
        "CREATE INDEX plan_hours_created ON plan_hours (created_at)",
    )
    return ((1, v1), (2, v2), (3, v3))


#: The first schema version that holds the test history.
HISTORY_VERSION = 3


def _in(column: str, values: Sequence[str]) -> str:
    return f"{column} IN (" + ", ".join(f"'{v}'" for v in values) + ")"


def schema_migrations_ddl(d: Dialect) -> str:
    return ("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
            f"applied_at {d.timestamp})")


RUN_KEY_WHERE = "run_id = ? AND run_attempt = ? AND file = ? AND backend = ? AND suite = ?"
IDENTITY_WHERE = "file = ? AND backend = ? AND suite = ? AND metric_key = ? AND written_json = ?"


class _SQLStore(MetricHistoryStore):
    """The contract's logic, written once over `_Tx`; backends supply SQL dialect and transactions."""

    #: (version, statements), in order; a version, once released, never changes.
    MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = ()
    SCHEMA_MIGRATIONS_DDL = ""

    @abc.abstractmethod
    def _transaction(self, kind: str, lock: tuple[str, ...] | None = None) -> Any:
        """A context manager yielding a `_Tx`: kind "read", "write" (serialised per `lock` key) or
        "migrate" (serialised store-wide); database errors leave it as `StoreUnavailable`."""

    @staticmethod
    def _timestamp(value: object) -> str:
        return str(value)

    @property
    def latest_version(self) -> int:
        return max(version for version, _ in self.MIGRATIONS)

    def migrate(self, *, target: int | None = None) -> None:
        """Bring the schema to `target` (default: the latest version)."""
        latest = self.latest_version
        if target is None:
            target = latest
        _integer("target", target, 1)
        if target > latest:
            raise ValueError(f"schema version {target} does not exist (latest is {latest})")
        with self._transaction("migrate") as tx:
            tx.run(self.SCHEMA_MIGRATIONS_DDL)
            applied = {int(v) for (v,) in tx.rows("SELECT version FROM schema_migrations")}
            newer = sorted(v for v in applied if v > latest)
            if newer:
                raise InputError(
                    f"the metric history store has schema version {newer[-1]}, newer than the {latest} this "
                    "ci_policy knows", hint="upgrade ci-policy on every job that uses this store")
            for version, statements in self.MIGRATIONS:
                if version in applied or version > target:
                    continue
                for statement in statements:
                    tx.run(statement)
                tx.run("INSERT INTO schema_migrations (version) VALUES (?)", (version,))

    #: SQL returning one row when the table named by the parameter exists.
    TABLE_EXISTS_SQL = ""

    @abc.abstractmethod
    def _name(self) -> str:
        """The store as messages show it (a file path, or a URL without its password)."""

    def check_readable(self) -> None:
        latest = self.latest_version
        with self._transaction("read") as tx:
            applied = ([int(v) for (v,) in tx.rows("SELECT version FROM schema_migrations")]
                       if tx.rows(self.TABLE_EXISTS_SQL, ("schema_migrations",)) else [])
        if not applied:
            raise StoreUnavailable(f"{self._name()}: holds no metric history (no baseline was ever written to it; "
                                   "a read never creates one)")
        if max(applied) > latest:
            raise InputError(
                f"the metric history store has schema version {max(applied)}, newer than the {latest} this "
                "ci_policy knows", hint="upgrade ci-policy on every job that uses this store")

    def schema_versions(self) -> list[int]:
        """The applied schema versions, ascending (for maintainers and tests)."""
        with self._transaction("read") as tx:
            return [int(v) for (v,) in tx.rows("SELECT version FROM schema_migrations ORDER BY version")]

    def baseline(self, identity: Identity, step: int, window: int) -> list[float]:
        _check_identity(identity)
        _integer("step", step, LAST_STEP)
        _integer("window", window, 0)
        if window == 0:
            return []
        with self._transaction("read") as tx:
            rows = tx.rows(f"SELECT value FROM gate_samples WHERE {IDENTITY_WHERE} AND step = ? "
                           "ORDER BY id DESC LIMIT ?", (*identity, step, window))
        return [float(value) for (value,) in reversed(rows)]

    def write(self, run: RunKey, *, cadence: str, commit: str | None, trusted: bool,
              samples: Sequence[Sample], write_baseline: bool) -> str:
        if not isinstance(run, RunKey):
            raise TypeError(f"run must be a RunKey, got {run!r}")
        _text("cadence", cadence)
        _text("commit", commit, optional=True)
        for name, flag in (("trusted", trusted), ("write_baseline", write_baseline)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be a bool, got {flag!r}")
        unique: dict[tuple[Identity, int], Sample] = {}
        for sample in samples:
            if not isinstance(sample, Sample):
                raise TypeError(f"samples must be Sample objects, got {sample!r}")
            if sample.identity[:3] != (run.file, run.backend, run.suite):
                raise ValueError(f"sample {sample.identity} does not belong to the run's "
                                 f"({run.file}, {run.backend}, {run.suite})")
            # The same sample twice (two identical gate declarations) is stored once; two
            # different values for one coordinate are a caller's bug.
            earlier = unique.setdefault((sample.identity, sample.step), sample)
            if earlier.value != sample.value:
                raise ValueError(f"sample {sample.identity} step {sample.step} is given twice, with "
                                 f"different values ({earlier.value!r} and {sample.value!r})")
        samples = tuple(unique.values())

        key = (run.run_id, run.run_attempt, run.file, run.backend, run.suite)
        with self._transaction("write", lock=(run.run_id, run.file, run.backend, run.suite)) as tx:
            if tx.rows(f"SELECT 1 FROM gate_runs WHERE {RUN_KEY_WHERE}", key):
                return DUPLICATE
            if not write_baseline:
                outcome = NOT_ALLOWED
            elif not trusted:
                outcome = NOT_TRUSTED
            elif tx.rows("SELECT 1 FROM gate_runs WHERE run_id = ? AND file = ? AND backend = ? AND suite = ? "
                         "AND run_attempt < ? LIMIT 1",
                         (run.run_id, run.file, run.backend, run.suite, run.run_attempt)):
                outcome = NOT_FIRST_ATTEMPT
            else:
                outcome = WRITTEN
            run_pk = tx.insert_id(
                "INSERT INTO gate_runs (run_id, run_attempt, file, backend, suite, cadence, commit_sha, trusted, "
                "write_baseline, outcome, samples) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0) ON CONFLICT DO NOTHING",
                (*key, cadence, commit, trusted, write_baseline, outcome))
            if run_pk is None:  # recorded concurrently by another writer
                return DUPLICATE
            if outcome == WRITTEN and samples:
                tx.run_many(
                    "INSERT INTO gate_samples (gate_run, file, backend, suite, metric_key, written_json, step, "
                    "run_id, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    [(run_pk, *s.identity, s.step, run.run_id, s.value) for s in samples])
                tx.run("UPDATE gate_runs SET samples = (SELECT COUNT(*) FROM gate_samples WHERE gate_run = ?) "
                       "WHERE id = ?", (run_pk, run_pk))
            return outcome

    def record_attempts(self, outcomes: Sequence[Outcome]) -> int:
        rows = []
        for outcome in outcomes:
            if not isinstance(outcome, Outcome):
                raise TypeError(f"outcomes must be Outcome values, got {outcome!r}")
            rows.append(_attempt_row(outcome))
        return self._insert_new("test_attempts", ATTEMPT_COLUMNS, rows)

    def attempts(self, since: str | None = None) -> list[Outcome]:
        rows = self._rows_since("test_attempts", ATTEMPT_COLUMNS, "started_at", since,
                                "started_at, run_id, run_attempt, stage, shard, file, attempt")
        return [_outcome_of(row) for row in rows]

    def record_plans(self, plans: Sequence[PlanHours]) -> int:
        rows = []
        for plan in plans:
            if not isinstance(plan, PlanHours):
                raise TypeError(f"plans must be PlanHours values, got {plan!r}")
            rows.append(_plan_row(plan))
        return self._insert_new("plan_hours", PLAN_COLUMNS, rows)

    def plans(self, since: str | None = None) -> list[PlanHours]:
        rows = self._rows_since("plan_hours", PLAN_COLUMNS, "created_at", since, "created_at, run_id, run_attempt")
        return [_plan_of(row) for row in rows]

    def _insert_new(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
        """Inserts the rows not stored yet (a row whose unique key is there already is left as it
        is) in one transaction; how many were new. `table` and `columns` are this module's own."""
        if not rows:
            return 0
        added = 0
        with self._transaction("write") as tx:
            for values in rows:
                added += tx.insert_id(f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
                                      f"({', '.join('?' * len(columns))}) ON CONFLICT DO NOTHING",
                                      values) is not None
        return added

    def _rows_since(self, table: str, columns: Sequence[str], time_column: str, since: str | None,
                    order: str) -> list[tuple]:
        """`columns` of the table's rows at or after `since` in `time_column` (all without it), in `order`."""
        _text("since", since, optional=True)
        where, params = (f"WHERE {time_column} >= ? ", (since,)) if since is not None else ("", ())
        with self._transaction("read") as tx:
            return tx.rows(f"SELECT {', '.join(columns)} FROM {table} {where}ORDER BY {order}", params)

    def check_history(self) -> None:
        versions = self.schema_versions()
        if not versions or max(versions) < HISTORY_VERSION:
            have = f"schema version {max(versions)}" if versions else "no schema"
            raise InputError(
                f"the store holds {have}, older than the test history (version {HISTORY_VERSION}); "
                "a read never migrates a store", path=self._name(), code="CP701",
                hint="migrate it once with a writer: `ci-policy history import --store URL` (no file needed), "
                     "or the next nightly `ci-policy run` that records into it")

    def runs(self) -> list[dict]:
        with self._transaction("read") as tx:
            rows = tx.rows("SELECT run_id, run_attempt, file, backend, suite, cadence, commit_sha, trusted, "
                           "write_baseline, outcome, samples, recorded_at FROM gate_runs ORDER BY id")
        out = []
        for row in rows:
            record = dict(zip(RUN_COLUMNS, row, strict=True))
            record["run_attempt"] = int(record["run_attempt"])
            record["samples"] = int(record["samples"])
            record["trusted"] = bool(record["trusted"])
            record["write_baseline"] = bool(record["write_baseline"])
            record["recorded_at"] = self._timestamp(record["recorded_at"])
            out.append(record)
        return out


ATTEMPT_COLUMNS = ("run_id", "run_attempt", "commit_sha", "event", "cadence", "stage", "shard", "runner_labels",
                   "file", "attempt", "status", "retry_class", "started_at", "elapsed", "est_time")


def _attempt_row(o: Outcome) -> tuple:
    for name in ("run_id", "stage", "file", "started_at"):
        _text(name, getattr(o, name))
    for name in ("commit", "event", "cadence"):
        _text(name, getattr(o, name), optional=True)
    _integer("run_attempt", o.run_attempt, 1)
    _integer("shard", o.shard, 0)
    _integer("attempt", o.attempt, 1)
    if o.status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {o.status!r}")
    if o.retry_class is not None and o.retry_class not in RETRY_CLASSES:
        raise ValueError(f"retry_class must be one of {', '.join(RETRY_CLASSES)} or None, got {o.retry_class!r}")
    for name in ("elapsed", "est_time"):
        value = getattr(o, name)
        if value is None and name == "est_time":
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not is_finite_number(value) \
                or value < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    labels = json.dumps(list(o.runner_labels), ensure_ascii=False, separators=(",", ":"))
    return (o.run_id, o.run_attempt, o.commit, o.event, o.cadence, o.stage, o.shard, labels, o.file, o.attempt,
            o.status, o.retry_class, o.started_at, float(o.elapsed),
            None if o.est_time is None else float(o.est_time))


PLAN_COLUMNS = ("run_id", "run_attempt", "event", "commit_sha", "created_at", "scheduled",
                *(f"skipped_{g}" for g in SKIP_GROUPS))


def _hours(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not is_finite_number(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def _plan_row(p: PlanHours) -> tuple:
    for name in ("run_id", "created"):
        _text(name, getattr(p, name))
    for name in ("event", "commit"):
        _text(name, getattr(p, name), optional=True)
    _integer("run_attempt", p.run_attempt, 1)
    unknown = sorted(set(p.skipped) - set(SKIP_GROUPS))
    if unknown:
        raise ValueError(f"skipped groups must be among {', '.join(SKIP_GROUPS)}, got {unknown!r}")
    return (p.run_id, p.run_attempt, p.event, p.commit, p.created, _hours("scheduled", p.scheduled),
            *(_hours(f"skipped {g}", p.skipped.get(g, 0.0)) for g in SKIP_GROUPS))


def _plan_of(row: Sequence[Any]) -> PlanHours:
    """A stored plan row read back through the codec's strict reader, as `_outcome_of` reads attempts."""
    run_id, run_attempt, event, commit, created, scheduled, *skipped = row
    return decode(PlanHours, {"run_id": run_id, "run_attempt": run_attempt, "event": event, "commit": commit,
                              "created": created, "scheduled": float(scheduled),
                              "skipped": {g: float(h) for g, h in zip(SKIP_GROUPS, skipped, strict=True) if h}})


def _outcome_of(row: Sequence[Any]) -> Outcome:
    """A stored row read back through the codec's strict reader (`model.outcomes.Outcome`): a row
    another writer put there that is not an outcome is a located `DecodeError`, never a wrong report."""
    (run_id, run_attempt, commit, event, cadence, stage, shard, labels, file, attempt, status, retry_class,
     started_at, elapsed, est_time) = row
    try:
        runner_labels = json.loads(labels)
    except ValueError:
        runner_labels = labels  # refused by the reader below, naming the field
    return decode(Outcome, {"run_id": run_id, "run_attempt": run_attempt, "commit": commit, "event": event,
                            "cadence": cadence, "stage": stage, "shard": shard, "runner_labels": runner_labels,
                            "file": file, "attempt": attempt, "status": status, "retry_class": retry_class,
                            "started_at": started_at, "elapsed": float(elapsed),
                            "est_time": None if est_time is None else float(est_time)})


def one_line(text: str, secrets: Sequence[str] = ()) -> str:
    """`text` on one line, whitespace collapsed, every secret replaced by ***."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, "***")
    return " ".join(text.split()) or "unknown error"


def lock_key(parts: Sequence[str]) -> int:
    """A stable signed 32-bit key for `parts` (PostgreSQL advisory locks)."""
    digest = hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big", signed=True)




def redact_url(url: str) -> str:
    """`url` with the password of its user info and any `password=` option replaced by ***."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.split(":", 1)[0] + "://***"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hosts = netloc.rpartition("@")
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        netloc = f"{userinfo}@{hosts}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, "***" if k.lower() == "password" else v) for k, v in pairs], safe="/:*,")
    if (netloc, query) == (parts.netloc, parts.query):
        return url  # nothing to hide: shown as written (urlunsplit would drop an empty host's //)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_secrets(url: str, params: dict | None = None) -> tuple[str, ...]:
    """Every spelling of the passwords in `url`, for scrubbing error messages."""
    found: list[str] = []
    try:
        parts = urlsplit(url)
        userinfo = parts.netloc.rpartition("@")[0]
        if ":" in userinfo:
            found.append(userinfo.split(":", 1)[1])
        found += [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if k.lower() == "password"]
        found += [v for k, v in (p.split("=", 1) for p in parts.query.split("&") if "=" in p)
                  if k.lower() == "password"]
    except ValueError:
        pass
    if params and params.get("password"):
        found.append(str(params["password"]))
    found += [unquote(s) for s in found]
    return tuple(sorted({s for s in found if s}, key=len, reverse=True))
