"""BLEnD's release read once from the real snapshot, for every test of the folder."""

from __future__ import annotations

import pytest

from geomon.suites.blend import source
from geomon_tests.conftest import SHARED

BLEND = SHARED / "snapshots" / "blend"


@pytest.fixture(scope="module")
def release() -> source.BlendRelease:
    return source.read_release(BLEND)
