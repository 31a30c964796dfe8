"""The published Gapminder history as Dagster assets: the results folder observed, the import downstream of
it, a changed folder re-imported by automation with only the new runs recorded."""

from __future__ import annotations

import shutil

import dagster as dg

from geomon.definitions import defs
from geomon.defs.resources import GeomonResource
from geomon.monitor.history import MetricHistory
from geomon_tests.conftest import SHARED, write_settings

RESULTS = SHARED / "reference" / "gapminder" / "results"


def test_a_new_results_file_is_observed_and_imported_once(tmp_path, wdi_snapshot_dir):
    folder = tmp_path / "gapminder-results"
    folder.mkdir()
    shutil.copy(RESULTS / "master_output_20250120.csv", folder)
    settings = write_settings(tmp_path, wdi_snapshot_dir, gapminder_results=str(folder))
    resources = {"geomon": GeomonResource(config_path=str(settings))}
    history = MetricHistory(f"sqlite:///{tmp_path / 'store.sqlite'}")
    with dg.instance_for_test() as instance:

        def observe():
            defs.resolve_job_def("observe_history").execute_in_process(instance=instance, resources=resources)

        def imported():
            result = dg.materialize(
                [a for a in defs.assets if not isinstance(a, dg.SourceAsset)],
                instance=instance,
                resources=resources,
                selection=dg.AssetSelection.assets(["history", "gapminder_import"]),
            )
            return result.asset_materializations_for_node("history__gapminder_import")[0].metadata

        observe()
        assert imported()["new_evaluations"].value == 1
        tick = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert not tick.get_requested_partitions(dg.AssetKey(["history", "gapminder_import"]))  # nothing new
        shutil.copy(RESULTS / "master_output_20250205.csv", folder)  # Alibaba's next release is published
        observe()
        tick = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=tick.cursor)
        assert tick.get_requested_partitions(dg.AssetKey(["history", "gapminder_import"])) == {None}
        metadata = imported()
        assert metadata["runs"].value == 2 and metadata["new_evaluations"].value == 1
        assert metadata["verdicts"].value[0]["against"] == "predecessor qwen-max-2024-09-19"
    assert len(history.evaluations(suite="gapminder")) == 2
