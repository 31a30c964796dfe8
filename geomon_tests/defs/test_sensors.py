"""The sensors (``defs/sensors.py``) only register partitions and say why automation waits: a model new in the
registry becomes a partition (an endpoint's also one of the drift probe), a model gone keeps its partition and
results; a suite's wanted revisions become its partitions once; a failed blocking check is named with its asset,
check and partition."""

from __future__ import annotations

import dagster as dg

from geomon.definitions import defs
from geomon.defs.resources import GeomonResource, models_partitions
from geomon.defs.runs import register_models
from geomon.defs.sensors import blocked_by_checks, model_registry_sensor
from geomon_tests.conftest import write_settings
from geomon_tests.defs.test_definitions import NEW, OLD


def test_registry_sensor_adds_only_new_models(tmp_path, wdi_snapshot_dir):
    extra = {"name": "new-api-model", "kind": "chat", "base_url": "http://127.0.0.1:9/v1", "model_id": "x"}
    settings = write_settings(tmp_path, wdi_snapshot_dir, models=[extra])
    with dg.instance_for_test() as instance:
        register_models(instance, ["smollm2-135m-instruct", "gemma3-270m", "retired-model"])
        context = dg.build_sensor_context(
            instance=instance, resources={"geomon": GeomonResource(config_path=str(settings))}
        )
        result = model_registry_sensor(context)
        # The sensor registers the partition; automation then requests that model's runs only
        # (geomon_tests/defs/test_monitoring.py follows it through).
        assert result.dynamic_partitions_requests[0].partition_keys == ["new-api-model"]
        # An API-served model can drift: it is a partition of the drift probe too; bundled models never are.
        assert result.dynamic_partitions_requests[1].partitions_def_name == "api_models"
        assert result.dynamic_partitions_requests[1].partition_keys == ["new-api-model"]
        assert result.run_requests == []
        # A model gone from the registry keeps its partition (and results).
        assert "retired-model" in instance.get_dynamic_partitions(models_partitions.name)


def test_revision_sensor_registers_the_configured_table_versions(tmp_path, wdi_snapshot_dir):
    sensor = defs.resolve_sensor_def("borderlines_revisions_sensor")
    resources = {"geomon": GeomonResource(config_path=str(write_settings(tmp_path, wdi_snapshot_dir)))}
    with dg.instance_for_test() as instance:
        first = sensor(dg.build_sensor_context(instance=instance, resources=resources))
        assert first.dynamic_partitions_requests[0].partitions_def_name == "dispute_revisions"
        assert first.dynamic_partitions_requests[0].partition_keys == [OLD, NEW]
        instance.add_dynamic_partitions("dispute_revisions", [OLD, NEW])
        again = sensor(dg.build_sensor_context(instance=instance, resources=resources, cursor=first.cursor))
        assert again.dynamic_partitions_requests == []
        assert again.skip_reason.skip_message == "no new revisions of borderlines (2 known)"


def test_blocking_checks_of_partitioned_assets_are_read_partition_by_partition():
    """A model-partitioned asset whose blocking check failed for one model: the sensor's reasons name that
    asset, check and partition (BorderLines' revision checks are such checks), and nothing for the model
    whose check passed."""
    models = dg.StaticPartitionsDefinition(["good-model", "bad-model"])

    @dg.asset(partitions_def=models, check_specs=[dg.AssetCheckSpec("answered", asset="scores", blocking=True)])
    def scores(context):
        yield dg.Output(1)
        yield dg.AssetCheckResult(check_name="answered", passed=context.partition_key == "good-model")

    toy = dg.Definitions(assets=[scores])
    with dg.instance_for_test() as instance:
        for key in ("good-model", "bad-model"):
            dg.materialize([scores], instance=instance, partition_key=key, raise_on_error=False)
        reasons = blocked_by_checks(instance, toy.resolve_asset_graph())
    assert list(reasons) == ["scores:answered [bad-model]"] and reasons["scores:answered [bad-model]"].startswith(
        "failed in run"
    )
