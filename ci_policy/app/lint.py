"""`lint`: a checkout's configuration, labels, registrations, gates and workflows, checked.

- In: a `CheckoutRequest` (`app.requests`): the checkout, the configuration path, how to scan
  (`ScanRequest`), and the day a quarantine's `until` is judged on (default: today in UTC).
- Out: `lint(request)` the `LintReport` (every diagnostic; `ok` without errors; with the
  sizes GitHub would refuse of the plan job's outputs, `plan.limits`).
- Refused: nothing: a configuration, labels, discovery or estimates-file error is a diagnostic
  of the report (`registry`, in `app.registry`, refuses them).
"""

from __future__ import annotations

from dataclasses import replace

from ci_policy.app.requests import CheckoutRequest
from ci_policy.app.scanning import start_scan
from ci_policy.errors import Diagnostic
from ci_policy.model.lint import LintReport
from ci_policy.model.lint import lint as lint_checkout
from ci_policy.plan.limits import size_problems


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
