"""Run retention on a real Dagster instance: old runs go, with their event logs, unless they hold an asset
partition's latest materialization or observation."""

from datetime import UTC, datetime, timedelta

import dagster as dg
import pytest

from geomon.defs.resources import GeomonResource
from geomon.defs.retention import purge_runs, run_retention_job
from geomon_tests.conftest import write_settings

parts = dg.StaticPartitionsDefinition(["x", "y"])


@dg.asset
def plain() -> int:
    return 1


@dg.asset(partitions_def=parts)
def split(context: dg.AssetExecutionContext) -> str:
    return context.partition_key


@dg.asset
def broken() -> int:
    raise ValueError("fails on purpose")


@dg.observable_source_asset
def source() -> dg.DataVersion:
    return dg.DataVersion("v1")


def _run(instance, selection, partition_key=None) -> str:
    result = dg.materialize(
        [plain, split, broken, source],
        instance=instance,
        selection=selection,
        partition_key=partition_key,
        raise_on_error=False,
    )
    return result.run_id


def test_old_runs_are_deleted_unless_they_hold_a_latest_event():
    with dg.instance_for_test() as instance:
        first_plain = _run(instance, [plain])
        latest_plain = _run(instance, [plain])
        failed = _run(instance, [broken])
        first_x = _run(instance, [split], "x")
        only_y = _run(instance, [split], "y")
        latest_x = _run(instance, [split], "x")
        observe = dg.Definitions(assets=[source], jobs=[dg.define_asset_job("observe", [source])])
        observed = observe.resolve_job_def("observe").execute_in_process(instance=instance).run_id
        # Nothing is old yet.
        assert purge_runs(instance, run_days=1)["deleted"] == 0
        later = datetime.now(UTC) + timedelta(days=2)
        counts = purge_runs(instance, run_days=1, now=later)
        left = {r.run_id for r in instance.get_runs()}
        assert left == {latest_plain, only_y, latest_x, observed}
        assert {first_plain, failed, first_x}.isdisjoint(left)
        assert counts == {"deleted": 3, "kept_latest": 4, "older_than_cutoff": 7}
        # What is left still answers "what is the latest materialization" exactly as before.
        assert instance.get_latest_materialization_event(plain.key).run_id == latest_plain
        assert not instance.all_logs(first_plain)  # its event log went with it


@pytest.mark.parametrize("run_days", [None, 30])
def test_the_scheduled_job_reads_run_days_from_geomon_yaml(tmp_path, wdi_snapshot_dir, run_days):
    settings = write_settings(tmp_path, wdi_snapshot_dir, retention={"run_days": run_days})
    with dg.instance_for_test() as instance:
        _run(instance, [plain])
        result = run_retention_job.execute_in_process(
            instance=instance, resources={"geomon": GeomonResource(config_path=str(settings))}
        )
        assert result.success
        output = result.output_for_node("purge_old_runs")
        # Recent runs stay either way; null keeps everything without looking.
        assert output == ({} if run_days is None else {"deleted": 0, "kept_latest": 0, "older_than_cutoff": 0})
