"""Running a fuzz target for a while and reporting what escaped it.

- `fuzz(target, seconds)` runs rounds of hypothesis examples until the time is up and
  returns a `Report`: inputs tried, and per distinct exception (its type and the
  deepest ci_policy frame it came from) the minimal input hypothesis shrank it to.
- An exception already reported does not stop later rounds: they go on looking for
  other ones.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field

from hostile.fuzz.targets import Target
from hypothesis import HealthCheck, Phase, given, settings


@dataclass
class Found:
    kind: str
    where: str
    message: str
    data: bytes


@dataclass
class Report:
    target: str
    tried: int = 0
    found: list[Found] = field(default_factory=list)


def signature(exc: BaseException) -> tuple[str, str]:
    """The exception's type and the deepest frame of ci_policy that raised it."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/ci_policy/" in f.filename]
    where = f"{frames[-1].filename.rsplit('/ci_policy/', 1)[1]}:{frames[-1].lineno}" if frames else "?"
    return type(exc).__name__, where


def fuzz(target: Target, seconds: float, *, round_size: int = 300) -> Report:
    report = Report(target.name)
    known: set[tuple[str, str]] = set()
    last: dict[tuple[str, str], bytes] = {}
    deadline = time.monotonic() + seconds

    def body(data: bytes) -> None:
        report.tried += 1
        try:
            target.run(data)
        except Exception as exc:
            sig = signature(exc)
            if sig in known:
                return  # reported already: keep looking for other exceptions
            last[sig] = data  # the final call of a failing round replays the shrunk input
            raise

    strategy = target.strategy()
    while time.monotonic() < deadline:
        test = settings(max_examples=round_size, deadline=None, database=None, report_multiple_bugs=False,
                        suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.shrink])(
            given(strategy)(body))
        try:
            test()
        except Exception as exc:
            sig = signature(exc)
            known.add(sig)
            report.found.append(Found(sig[0], sig[1], str(exc)[:300], last.get(sig, b"")))
    return report
