"""Fixtures the monitor's tests share."""

from __future__ import annotations

import pytest

from geomon.monitor import alerts
from geomon_tests.loopback import Webhook, serve


@pytest.fixture
def webhook(monkeypatch):
    """A loopback webhook (json style) and the alert settings that post to it; yields (its state, the settings)."""
    state: dict = {"posts": []}
    with serve(Webhook, state) as url:
        monkeypatch.setenv("GEOMON_TEST_HOOK", f"{url}/hook")
        yield state, alerts.AlertSettings(webhook_url_env="GEOMON_TEST_HOOK", webhook_style="json")
