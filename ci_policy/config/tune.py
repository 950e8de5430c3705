"""`tune:` how recorded timings become est_time proposals (`ci-policy tune`).

- In: the `tune` mapping; every key is optional.
- Out: a frozen `TuneConfig`.
- Refused: a safety factor below 1, a quantile outside (0, 1], a deadband outside [0, 1),
  an expansion cap (`archive_max_bytes`, `run_max_bytes`: what `tune --github-run` lets
  artifacts expand to) below 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ci_policy.config.fields import Key, Table, Values, integer, mapping_of, number
from ci_policy.read.numbers import MAX_FACTOR
from ci_policy.read.yamlnodes import INVALID, Schema

TUNE_TABLE = Table("tune", "How recorded timings become est_time proposals.", (
    Key("safety", number(1, MAX_FACTOR), 1.25,
        "Factor the observed time is multiplied by before rounding up to a bucket."),
    Key("quantile", number(0, strict=True), 0.9, "Nearest-rank quantile of the passed samples, at most 1."),
    Key("min_samples_for_quantile", integer(1), 5, "Fewest samples for the quantile; fewer use the maximum."),
    Key("deadband", number(0), 0.2, "Relative change within which the estimate is kept (a fraction below 1)."),
    Key("archive_max_bytes", integer(1, 16 * 1024**3), 256 * 1024 * 1024,
        "Most bytes one downloaded artifact (a zip archive) may expand to; a larger one is skipped with a warning."),
    Key("run_max_bytes", integer(1, 64 * 1024**3), 1024 * 1024 * 1024,
        "Most bytes the artifacts of one run may expand to together; the archive that crosses it is skipped."),
))


@dataclass(frozen=True)
class TuneConfig:
    """`tune:` how timings become est_time proposals."""

    safety: float = TUNE_TABLE.default("safety")
    quantile: float = TUNE_TABLE.default("quantile")
    min_samples_for_quantile: int = TUNE_TABLE.default("min_samples_for_quantile")
    deadband: float = TUNE_TABLE.default("deadband")
    archive_max_bytes: int = TUNE_TABLE.default("archive_max_bytes")
    run_max_bytes: int = TUNE_TABLE.default("run_max_bytes")


def _build(s: Schema, v: Values) -> Any:
    quantile, deadband = v.get("quantile"), v.get("deadband")
    if "quantile" in v and quantile is not INVALID and quantile > 1:
        s.error(v.value_node("quantile"), "tune.quantile", f"must be at most 1, got {quantile}")
        v.parsed["quantile"] = INVALID
    if "deadband" in v and deadband is not INVALID and deadband >= 1:
        s.error(v.value_node("deadband"), "tune.deadband", f"must be below 1 (a fraction), got {deadband}")
        v.parsed["deadband"] = INVALID
    if v.any_invalid():
        return INVALID
    return TuneConfig(safety=v.get("safety"), quantile=v.get("quantile"),
                      min_samples_for_quantile=v.get("min_samples_for_quantile"), deadband=v.get("deadband"),
                      archive_max_bytes=v.get("archive_max_bytes"), run_max_bytes=v.get("run_max_bytes"))


TUNE = mapping_of(TUNE_TABLE, _build)
