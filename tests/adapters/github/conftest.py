"""The clients the CLI builds talk to a local fake GitHub here: no pauses between requests."""

from __future__ import annotations

import pytest

from ci_policy.adapters.github import client


@pytest.fixture(autouse=True)
def unthrottled(monkeypatch):
    monkeypatch.setattr(client, "DEFAULT_THROTTLE", client.NO_THROTTLE)
