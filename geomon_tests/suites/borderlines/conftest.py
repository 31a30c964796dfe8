"""BorderLines' release read once from the real snapshot, for every test of the folder; the loopback wiki."""

from __future__ import annotations

import pytest

from geomon.suites.borderlines.source import BorderLinesData, read_snapshot
from geomon_tests.conftest import SHARED
from geomon_tests.sources.test_mediawiki import loopback_wiki  # noqa: F401 (the loopback wiki, a fixture)


@pytest.fixture(scope="module")
def data() -> BorderLinesData:
    return read_snapshot(SHARED / "snapshots" / "borderlines")
