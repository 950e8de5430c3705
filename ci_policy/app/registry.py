"""`registry`: a checkout's registrations, listed.

- In: a `CheckoutRequest` (`app.requests`): the checkout, the configuration path, how to scan.
- Out: `registry(request)` the usable snapshot (its registrations, and its invalid test files).
- Refused: a configuration, labels, discovery or estimates-file error (exit 1).

Apart from `app.lint`: listing needs neither lint's checks (the workflows, the gate
requirements) nor the planner that sizes the plan job's outputs, and a command pays at its
start for every module it imports (tests/cli/test_startup.py).
"""

from __future__ import annotations

from ci_policy.app.requests import CheckoutRequest
from ci_policy.app.scanning import start_scan
from ci_policy.model.snapshot import Snapshot


def registry(request: CheckoutRequest) -> Snapshot:
    return start_scan(request.scan).load(request.config).usable()
