"""Opening the UI recomputes nothing unchanged: after a ``make run``-like setup (``geomon import`` of the published
Gapminder history, ``geomon run --profile quick``) on a real Dagster instance, the sensors' first ticks and the
hourly observations that follow request no run; an input re-run on the same data re-runs nothing downstream."""

from __future__ import annotations

import dagster as dg

from geomon.cli import main
from geomon.definitions import defs
from geomon.defs.resources import GeomonResource
from geomon.defs.sensors import model_registry_sensor
from geomon.suites import registry
from geomon_tests.conftest import automation_tick, published_gapminder, write_settings
from geomon_tests.loopback import ScriptedModel, serve

RUN = "worldbench"  # the suite this setup runs (make run runs every suite; one is enough to show the mechanism)


def _requested(tick: dg.EvaluateAutomationConditionsResult) -> dict[str, set]:
    return {
        key.to_user_string(): tick.get_requested_partitions(key)
        for key in defs.resolve_asset_graph().get_all_asset_keys()
        if tick.get_requested_partitions(key)
    }


def test_the_sensors_first_ticks_after_make_run_request_nothing(tmp_path, wdi_snapshot_dir, monkeypatch):
    folder = published_gapminder(tmp_path / "gapminder", ["mc059", "mc049"])  # o1 and o3-mini
    home = tmp_path / "dagster"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with serve(ScriptedModel, {"answer": lambda messages: "42", "models": ["m"]}) as url:
        models = [{"name": "m", "kind": "chat", "base_url": f"{url}/v1", "model_id": "m"}]
        settings = write_settings(
            tmp_path,
            wdi_snapshot_dir,
            models=models,
            include_bundled=False,
            gapminder_results=str(folder),
            automation_profile="quick",
        )
        config = ["--config", str(settings)]
        assert main([*config, "import", "gapminder-results", str(folder), "--fail-on", "never"]) == 0
        assert main([*config, "run", "--suite", RUN, "--profile", "quick", "--fail-on", "never"]) == 0
        resources = {"geomon": GeomonResource(config_path=str(settings))}
        not_run = [name for name in registry.suites() if name != RUN]  # never materialized here
        automated = dg.AssetSelection.all() - dg.AssetSelection.groups(*not_run)
        with dg.DagsterInstance.get() as instance:
            registered = model_registry_sensor(dg.build_sensor_context(instance=instance, resources=resources))
            # The run registered its model (a served model also becomes a drift-probe partition: new work, not a
            # recomputation; make run's bundled models are not served, so they never do).
            assert [r.partitions_def_name for r in registered.dynamic_partitions_requests] == ["api_models"]

            # `make ui`: the automation sensors' first tick, then the hourly observations of the World Bank's
            # release and Gapminder's folder (the same files `make run` read), then the next ticks.
            tick = automation_tick(defs, instance, asset_selection=automated)
            assert _requested(tick) == {}
            for job in ("observe_sources", "observe_history"):
                assert defs.resolve_job_def(job).execute_in_process(instance=instance, resources=resources).success
            tick = automation_tick(defs, instance, asset_selection=automated, cursor=tick.cursor)
            assert _requested(tick) == {}  # neither the WDI chain nor a Gapminder re-import

            # A click on Materialize re-reads the same World Bank release: same data version, nothing downstream.
            indicators = dg.AssetSelection.assets(["worldbank", "indicators"]).required_multi_asset_neighbors()
            again = dg.materialize(
                [*defs.assets, *defs.asset_checks], instance=instance, resources=resources, selection=indicators
            )
            assert again.success
            tick = automation_tick(defs, instance, asset_selection=automated, cursor=tick.cursor)
            assert _requested(tick) == {}


def test_a_model_left_on_the_old_sample_is_re_run_and_the_leaderboard_says_so_first(tmp_path, wdi_snapshot_dir):
    """BLEnD grows from 2 to 3 questions per country: b answers the new sample, a's run is terminated before it
    answers. The leaderboard's first entry says the two are on different samples, and the sample sensor re-runs
    a's partition on the current sample, once; b is left alone."""
    from geomon.defs.runs import register_models
    from geomon_tests.conftest import SHARED

    per_model = [["blend", stage] for stage in ("responses", "scores", "disparity")]
    with serve(ScriptedModel, {"answer": lambda messages: "Tea", "models": ["b"]}) as url_b:
        stopped = serve(ScriptedModel, {"answer": lambda messages: "Tea", "models": ["a"]})
        url_a = stopped.__enter__()
        models = [
            {"name": m, "kind": "chat", "base_url": f"{url}/v1", "model_id": m}
            for m, url in (("a", url_a), ("b", url_b))
        ]
        section = {"snapshot": str(SHARED / "snapshots" / "blend"), "countries": ["UK", "Spain"]}
        path = write_settings(tmp_path, wdi_snapshot_dir, models=models, include_bundled=False, blend=section)
        resources = {"geomon": GeomonResource(config_path=str(path))}
        with dg.instance_for_test() as instance:
            register_models(instance, ["a", "b"])

            def run(*keys: list[str], partition: str | None = None, questions: int | None = None):
                config = {"blend__prompts": {"config": {"sample_questions": questions, "confirm": True}}}
                return dg.materialize(
                    [*defs.assets, *defs.asset_checks],
                    instance=instance,
                    selection=dg.AssetSelection.assets(*keys),
                    partition_key=partition,
                    resources=resources,
                    run_config={"ops": config if questions else {}},
                    raise_on_error=False,
                )

            sensor = defs.get_sensor_def("blend_sample_sensor")

            def requested() -> list[tuple[str, str | None, str | None]]:
                result = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
                return [(r.job_name, r.partition_key, r.run_key) for r in result.run_requests or []]

            assert run(["blend", "question_bank"], ["blend", "prompts"], questions=2).success
            assert all(run(*per_model, partition=m).success for m in ("a", "b"))
            grown = run(["blend", "prompts"], questions=3)
            sample = grown.asset_materializations_for_node("blend__prompts")[0].metadata["sample"].value
            assert requested() == []  # nothing has tried the new sample yet: automation's turn
            assert run(*per_model, partition="b").success
            # a's run is terminated before its answers are stored (the UI's Terminate): a stays on the old sample.
            job = defs.resolve_job_def("blend_per_model")
            keys = {dg.AssetKey(k) for k in per_model}
            terminated = instance.create_run_for_job(job, tags={"dagster/partition": "a"}, asset_selection=keys)
            instance.report_run_canceled(terminated)
            assert requested() == [("blend_per_model", "a", f"a:{sample.split(' ')[0]}")]

            board = run(["blend", "leaderboard"])
            metadata = board.asset_materializations_for_node("blend__leaderboard")[0].metadata
            first, line = next(iter(metadata.items()))
            assert first == "mixed_samples" and f"b on {sample}" in line.value and "a on " in line.value
