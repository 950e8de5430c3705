"""Producer side of metric gates: versioned TITO session metrics and their capture.

Imported by the code under test (a training loop), never by `lint`/`plan`.

- In: what a training loop computes: session-server versions, per-sample mismatch lists, metric
  values to log; `$CI_POLICY_RECORD_DIR`.
- Out: metric dicts, and the recorder's per-process record files.
- Refused: an unknown session-server version or mismatch type, or a version given twice
  (`ValueError`), and a strict mismatch with `ci_test=True` (`TitoMismatchError`);
  `MetricRecorder.log()` refuses nothing into the loop: it records the problem, as below.

- `session_server_version(value)`: `True` -> "v1" (backward compatible), "v1"/"v2" pass
  through; anything else raises `ValueError` (never an `assert`: asserts vanish under
  `python -O`).
- `tito_mismatch_metrics(mismatches, version, *, ci_test=False)`: per-sample mismatch
  lists -> `tito_session_mismatch_rate/{v}` and `tito_session_mismatch_rate/{v}/{type}`.
  With `ci_test=True` the strict types must be exactly 0 (`TitoMismatchError`).
- `rollout_metrics(...)`: both versions' keys under `rollout/`, never merged.
- `MetricRecorder`: active only when `$CI_POLICY_RECORD_DIR` is set; captures only
  whitelisted keys; each process writes its own file, atomically rewritten on every
  `log()`; non-finite values stored as "NaN"/"Infinity"/"-Infinity" (strict JSON,
  `encode_value`). `log()` never raises into the training loop: a whitelisted value that
  is not a number (`None`, `"1.0"`, `True`) or a bad step is kept as an error marker
  `[step or null, reason]` under the key's `"errors"`, which the gate reports as an ERROR
  naming the key and the step; a file it cannot write is one warning on stderr.
- Standard library only. Reading and merging what the recorders wrote is the runner's
  side: `ci_policy.read.records`.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ci_policy.errors import CiPolicyError

VERSIONS = ("v1", "v2")
MISMATCH_TYPES = ("special_token_count", "special_token_type", "non_assistant_text", "assistant_text")
STRICT_TYPES = ("special_token_count", "special_token_type", "non_assistant_text")
RECORD_DIR_ENV = "CI_POLICY_RECORD_DIR"
CAPTURE_ENV = "CI_POLICY_CAPTURE"
RECORD_SCHEMA = 1

DEFAULT_CAPTURE = (
    "train/grad_norm",
    "train/ppo_kl",
    "train/train_rollout_logprob_abs_diff",
    "train/train_rollout_kl",
    "rollout/raw_reward",
    "rollout/tito_session_mismatch_rate/v1/assistant_text",
    "rollout/tito_session_mismatch_rate/v2/assistant_text",
)


class TitoMismatchError(CiPolicyError, ValueError):
    """A strict TITO mismatch rate is not zero in a CI test."""


def session_server_version(value: object) -> str:
    if value is True:
        return "v1"
    if isinstance(value, str) and value in VERSIONS:
        return value
    raise ValueError(f"TITO metrics require session server v1 or v2, got {value!r} "
                     "(configure the session server version: True or 'v1' for v1, 'v2' for v2)")


def rate_key(version: str, mismatch_type: str | None = None) -> str:
    base = f"tito_session_mismatch_rate/{session_server_version(version)}"
    return base if mismatch_type is None else f"{base}/{mismatch_type}"


def tito_mismatch_metrics(mismatches: Sequence[Sequence[Mapping[str, Any]] | None], version: object, *,
                          ci_test: bool = False) -> dict[str, float]:
    v = session_server_version(version)
    samples = [m for m in mismatches if m is not None]
    if not samples:
        return {}
    counts = dict.fromkeys(MISMATCH_TYPES, 0)
    any_count = 0
    for i, sample in enumerate(mismatches):
        if sample is None:
            continue
        types = set()
        for item in sample:
            kind = item.get("type") if isinstance(item, Mapping) else None
            if kind not in MISMATCH_TYPES:
                raise ValueError(f"sample {i}: unknown TITO mismatch {item!r}; "
                                 f"expected a dict with type in {', '.join(MISMATCH_TYPES)}")
            types.add(kind)
        any_count += bool(types)
        for kind in types:
            counts[kind] += 1
    n = len(samples)
    out = {rate_key(v): any_count / n}
    for kind in MISMATCH_TYPES:
        out[rate_key(v, kind)] = counts[kind] / n
    if ci_test:
        for kind in STRICT_TYPES:
            rate = out[rate_key(v, kind)]
            if rate != 0:
                raise TitoMismatchError(
                    f"{rate_key(v, kind)} = {rate:g} in a CI test; it must be 0: a nonzero rate "
                    "indicates a bug in the TITO algorithm or the chat template")
    return out


def rollout_metrics(mismatches_by_version: Mapping[object, Sequence[Sequence[Mapping[str, Any]] | None]], *,
                    ci_test: bool = False) -> dict[str, float]:
    """`log_rollout`-style fan-out: every version's metrics under `rollout/`, kept apart."""
    out: dict[str, float] = {}
    given: dict[str, object] = {}
    for version, mismatches in mismatches_by_version.items():
        v = session_server_version(version)
        if v in given:
            raise ValueError(f"session server {v} is given twice ({given[v]!r} and {version!r}); "
                             "its metrics would overwrite each other")
        given[v] = version
        metrics = tito_mismatch_metrics(mismatches, version, ci_test=ci_test)
        out.update({f"rollout/{key}": value for key, value in metrics.items()})
    return out


def encode_value(value: float) -> float | str:
    """A value as strict JSON holds it: non-finite values as the strings JSON lacks."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _as_number(key: str, value: object) -> float:
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    item = getattr(value, "item", None)  # numpy / torch scalars
    if callable(item):
        inner = item()
        if isinstance(inner, numbers.Real) and not isinstance(inner, bool):
            return float(inner)
    raise TypeError(f"metric {key!r} must be a number, got {type(value).__name__} {_safe_repr(value)}")


def _safe_repr(value: object) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a foreign object's __repr__
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


class MetricRecorder:
    """Captures whitelisted metrics of one process into `$CI_POLICY_RECORD_DIR`."""

    def __init__(self, directory: Path | None, capture: Iterable[str] = DEFAULT_CAPTURE) -> None:
        self.directory = Path(directory) if directory else None
        self.capture = frozenset(capture)
        self.series: dict[str, list[tuple[int, float]]] = {}
        self.errors: dict[str, list[tuple[int | None, str]]] = {}
        self._pid = os.getpid()
        self._warned = False
        self.path = self._new_path() if self.directory else None

    def _new_path(self) -> Path:
        assert self.directory is not None
        return self.directory / f"metrics-{os.getpid()}-{os.urandom(6).hex()}.jsonl"

    @classmethod
    def from_env(cls, capture: Iterable[str] | None = None) -> MetricRecorder:
        directory = os.environ.get(RECORD_DIR_ENV) or None
        if capture is None:
            raw = os.environ.get(CAPTURE_ENV)
            capture = json.loads(raw) if raw else DEFAULT_CAPTURE
        return cls(Path(directory) if directory else None, capture)

    @property
    def active(self) -> bool:
        return self.directory is not None

    def log(self, metrics: Mapping[str, object], step: int) -> None:
        """Record the whitelisted keys of `metrics` at `step`; never raises (see the module)."""
        if not self.active:
            return
        if os.getpid() != self._pid:
            # A forked child: its own file, without the points the parent already wrote.
            self._pid = os.getpid()
            self.series = {}
            self.errors = {}
            self.path = self._new_path()
        try:
            items = [(k, v) for k, v in metrics.items() if isinstance(k, str) and k in self.capture]
        except Exception as exc:  # noqa: BLE001 - a training loop must never die of its metrics
            self._warn(f"log() got metrics that are not a mapping of str keys: {type(exc).__name__}: {exc}")
            return
        if not items:
            return
        good_step = not isinstance(step, bool) and isinstance(step, int) and step >= 0
        for key, value in items:
            if not good_step:
                self.errors.setdefault(key, []).append((None, f"step must be an int >= 0, got {_safe_repr(step)}"))
                continue
            try:
                number = _as_number(key, value)
            except Exception as exc:  # noqa: BLE001 - `.item()` of a foreign object may raise anything
                self.errors.setdefault(key, []).append((step, str(exc)[:200]))
            else:
                self.series.setdefault(key, []).append((step, number))
        self._write_or_warn()

    def _write_or_warn(self) -> None:
        try:
            self._write()
        except (OSError, ValueError) as exc:
            self._warn(f"cannot write {self.path}: {exc}")

    def _warn(self, message: str) -> None:
        if not self._warned:  # once per process: a loop logging every step must not flood the log
            self._warned = True
            print(f"ci_policy MetricRecorder: {message}", file=sys.stderr)

    def _write(self) -> None:
        assert self.directory is not None and self.path is not None
        self.directory.mkdir(parents=True, exist_ok=True)
        lines = [json.dumps({"schema": RECORD_SCHEMA, "pid": os.getpid()})]
        for key in sorted({*self.series, *self.errors}):
            line: dict[str, object] = {"key": key,
                                       "points": [[step, encode_value(v)] for step, v in self.series.get(key, [])]}
            if key in self.errors:
                line["errors"] = [list(e) for e in self.errors[key]]
            lines.append(json.dumps(line, allow_nan=False))
        # Imported here: the configuration reads DEFAULT_CAPTURE, and `plan` writes no record
        # (tests/cli/test_startup.py::test_plan_imports_only_what_its_format_uses).
        import tempfile

        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".jsonl")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
