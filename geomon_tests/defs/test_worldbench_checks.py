"""The World Bank's blocking checks on a real instance: a snapshot that loses countries against the previous
materialization stops before WorldBench's prompts."""

from __future__ import annotations

import csv
import io
import shutil

import dagster as dg

from geomon.definitions import defs
from geomon.defs.resources import GeomonResource
from geomon_tests.conftest import write_settings

INDICATORS = dg.AssetKey(["worldbank", "indicators"])


def _materialize(instance, settings) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [*defs.assets, *defs.asset_checks],
        instance=instance,
        selection=dg.AssetSelection.assets(["worldbank", "economies"], INDICATORS),
        resources={"geomon": GeomonResource(config_path=str(settings))},
        raise_on_error=False,
    )


def _check(result: dg.ExecuteInProcessResult, name: str) -> dg.AssetCheckEvaluation:
    (evaluation,) = [e for e in result.get_asset_check_evaluations() if e.check_name == name]
    return evaluation


def test_coverage_drop_against_the_previous_snapshot_fails_the_blocking_check(tmp_path, wdi_snapshot_dir):
    copy = shutil.copytree(wdi_snapshot_dir, tmp_path / "wdi")
    settings = write_settings(tmp_path, copy)
    with dg.instance_for_test() as instance:
        first = _materialize(instance, settings)
        assert first.success
        evaluation = _check(first, "coverage_kept")
        assert evaluation.passed and evaluation.metadata["compared_with_previous"].value is False
        # The next export keeps every row but blanks the values of the last 30 economies: every file still
        # reads, every value is plausible, and 30 countries' questions would silently disappear.
        path = copy / "population.csv"
        lines = path.read_text(encoding="utf-8-sig").splitlines(keepends=True)
        out = io.StringIO()
        writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
        for cells in csv.reader(lines[-30:]):
            writer.writerow(cells[:4] + [""] * (len(cells) - 4))
        path.write_text("".join(lines[:-30]) + out.getvalue(), encoding="utf-8")
        second = _materialize(instance, settings)
        evaluation = _check(second, "coverage_kept")
        assert not evaluation.passed
        dropped = evaluation.metadata["dropped"].value
        assert list(dropped) == ["SP.POP.TOTL"] and dropped["SP.POP.TOTL"].startswith("217 → ")
        assert _check(second, "indicator_values_plausible").passed  # nothing else is wrong with it


def test_the_chosen_sample_survives_an_upstream_rematerialization(tmp_path, wdi_snapshot_dir):
    """A user ran a 2-countries-per-region sample; the World Bank assets are then re-materialized with the
    prompts downstream and no run config (a click in the UI, or automation): the prompts keep the sample."""
    from geomon_tests.conftest import materialize_worldbench_sources

    prompts_key = dg.AssetKey(["worldbench", "prompts"])
    settings = write_settings(tmp_path, wdi_snapshot_dir)
    with dg.instance_for_test() as instance:
        assert materialize_worldbench_sources(instance, settings, countries=2).success

        def latest() -> dict:
            metadata = instance.get_latest_materialization_event(prompts_key).asset_materialization.metadata
            return {"questions": metadata["questions"].value, **metadata["options"].value}

        chosen = latest()
        assert chosen["sample_countries"] == 2 and chosen["questions"] < 400
        rerun = dg.materialize(
            [*defs.assets, *defs.asset_checks],
            instance=instance,
            selection=dg.AssetSelection.assets(["worldbank", "economies"], INDICATORS, prompts_key),
            resources={"geomon": GeomonResource(config_path=str(settings))},
        )
        assert rerun.success and latest() == chosen
        # A run that sets an option changes it, and keeps the others.
        assert materialize_worldbench_sources(instance, settings, countries=3).success
        assert latest()["sample_countries"] == 3 and latest()["example_country"] == "CHE"


def test_automation_says_which_blocking_check_holds_it_back(tmp_path, wdi_snapshot_dir):
    """World Bank assets materialized without their checks (as a UI click can): automation would wait on the
    prompts forever; the sensor names each check and why, and is quiet once the checks ran."""
    from geomon.defs.sensors import blocked_automation_sensor

    settings = write_settings(tmp_path, wdi_snapshot_dir)
    resources = {"geomon": GeomonResource(config_path=str(settings))}
    with dg.instance_for_test() as instance:
        sources = dg.AssetSelection.assets(["worldbank", "economies"], INDICATORS)
        assert dg.materialize(defs.assets, instance=instance, selection=sources, resources=resources).success

        def tick() -> str:
            context = dg.build_sensor_context(instance=instance, definitions=defs)
            return blocked_automation_sensor(context).skip_message

        message = tick()
        for check in ("economies_are_countries", "indicator_values_plausible", "coverage_kept"):
            assert f"{check} not run on the latest materialization" in message
        assert _materialize(instance, settings).success  # the assets again, with their checks
        assert tick() == "no blocking check holds automation back"
