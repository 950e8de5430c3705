"""`lint` and `registry`: a checkout's configuration, labels, registrations and gates, checked or listed.

- In: a `CheckoutRequest`: the checkout, the configuration path, how to scan (`ScanRequest`), and
  for `lint` the day a quarantine's `until` is judged on (default: today in UTC).
- Out: `lint(request)` the `LintReport` (every diagnostic; `ok` without errors; with the
  sizes GitHub would refuse of the plan job's outputs, `plan.limits`);
  `registry(request)` the usable snapshot (its registrations, and its invalid test files).
- Refused: for `registry`, a configuration, labels, discovery or estimates-file error (exit 1);
  `lint` reports those as diagnostics instead.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, replace
from pathlib import Path

from ci_policy.app.requests import ScanRequest
from ci_policy.app.scanning import start_scan
from ci_policy.errors import Diagnostic
from ci_policy.model.lint import LintReport
from ci_policy.model.lint import lint as lint_checkout
from ci_policy.model.snapshot import Snapshot
from ci_policy.plan.limits import size_problems


@dataclass(frozen=True)
class CheckoutRequest:
    repo: Path
    config: str | None
    scan: ScanRequest
    today: datetime.date | None = None  # the day quarantines are judged on; None: today in UTC


def lint(request: CheckoutRequest) -> LintReport:
    scan = start_scan(request.scan)
    report = lint_checkout(request.repo, request.config, cache=scan.cache, listing=scan.listing,
                           scanner=scan.scanner, today=request.today)
    if report.snapshot is None:
        return report
    # What GitHub would refuse of the plan job's outputs (plan.limits): known from the planner only.
    sizes = size_problems(report.snapshot)
    if not sizes:
        return report
    return replace(report, errors=tuple(sorted({*report.errors, *sizes}, key=Diagnostic.sort_key)))


def registry(request: CheckoutRequest) -> Snapshot:
    return start_scan(request.scan).load(request.config).usable()
