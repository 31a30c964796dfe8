"""The Dagster defect worked around in ``geomon.defs.compat``, reproduced as Dagster leaves it."""

import gc
from pathlib import Path

import dagster as dg
from dagster._core.storage.defs_state.base import DefsStateStorage, set_defs_state_storage

import geomon.defs  # noqa: F401  (applies the workaround)


@dg.asset
def one() -> int:
    return 1


def test_a_collected_instances_storage_does_not_break_the_next_run(tmp_path: Path) -> None:
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    instance = dg.DagsterInstance.from_config(str(tmp_path))
    storage = instance.defs_state_storage
    assert storage is not None
    del instance
    gc.collect()
    # What DagsterInstance.__exit__ leaves behind: the dead instance's storage still current.
    with set_defs_state_storage(storage):
        assert DefsStateStorage.get() is None
        assert dg.materialize([one]).success


def test_a_live_instances_storage_is_still_returned(tmp_path: Path) -> None:
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    instance = dg.DagsterInstance.from_config(str(tmp_path))
    with set_defs_state_storage(instance.defs_state_storage):
        assert DefsStateStorage.get() is instance.defs_state_storage
    instance.dispose()
