"""A test file's registration: the value the registry reads, the plan splits and `run` runs.

- In: the fields `ci_policy.model.registry` reads from a marker call (or a plan file read
  back, `plan.planfile`).
- Out: a frozen `Registration`; one written without a `marker` gets its backend's built-in
  marker name (`register_cuda_ci`), an implicit one none.
- Refused: nothing: its fields were checked where they were read (`model.registry`, or the
  plan file's reader).
- Apart from the registry's reading (markers, labels, the configuration), so that a stage
  job running from its plan imports none of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

# Where a registration's est_time came from: the marker's literal, the implicit root of the
# configuration, or the estimates file.
EstSource = Literal["literal", "implicit", "estimates"]


# Slots: one a test file, held to the command's end (20,000 at 20,000 files; peak RSS, issue 33).
@dataclass(frozen=True, slots=True)
class Registration:
    file: str
    line: int | None
    backend: str
    suite: str
    est_time: float
    labels: tuple[str, ...] = ()
    nightly: bool = False
    disabled: str | None = None
    implicit: bool = False
    col: int | None = None
    est_source: EstSource = "literal"
    # The marker name the call was written with; None for an implicit registration. Left
    # out, a written registration gets its backend's built-in marker name.
    marker: str | None = None

    def __post_init__(self) -> None:
        if self.marker is None and not self.implicit:
            # Not for a stage job: test_a_stage_job_given_its_per_stage_plan_parses_no_configuration
            from ci_policy.read.markers import MARKER_OF_BACKEND

            object.__setattr__(self, "marker", MARKER_OF_BACKEND.get(self.backend, f"register_{self.backend}_ci"))

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "backend": self.backend,
            "suite": self.suite,
            "est_time": self.est_time,
            "labels": list(self.labels),
            "nightly": self.nightly,
            "disabled": self.disabled,
            "implicit": self.implicit,
            "marker": self.marker,
        }

    def sort_key(self) -> tuple[str, int, str, str]:
        return (self.file, self.line or 0, self.backend, self.suite)
