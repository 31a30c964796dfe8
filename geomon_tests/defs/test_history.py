"""The published Gapminder history as Dagster assets: the published folder observed, the import downstream of
it, a changed folder re-imported by automation with only the new runs recorded; and every imported model in
the catalog, its regression a failed ``no_regression`` check, from ``geomon import`` on a real instance."""

from __future__ import annotations

import dagster as dg

from geomon.config import load_settings
from geomon.definitions import defs
from geomon.defs.drift import TRENDS_KEY, record_trends
from geomon.defs.monitoring import IN_DIALOG, OPEN_REGRESSIONS_KEY, model_key, published_history
from geomon.defs.resources import GeomonResource
from geomon.monitor.history import MetricHistory
from geomon_tests.conftest import automation_tick, published_gapminder, write_settings

# Gapminder's published history, as the Dagster layer builds it from the suite's importer
PUBLISHED = published_history("gapminder-results")
IMPORT_KEY, EVALUATIONS_KEY = PUBLISHED.import_key, PUBLISHED.evaluations_key
assert (IMPORT_KEY, EVALUATIONS_KEY) == (["history", "gapminder_import"], ["history", "gapminder_evaluations"])
O3_MINI = "o3-mini-2025-01-31"


def test_a_new_release_is_observed_and_imported_once(tmp_path, wdi_snapshot_dir):
    """The published folder observed, the import automated when it changes, and the trends redrawn after it."""
    folder = published_gapminder(tmp_path / "gapminder", ["mc039"])
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
                selection=dg.AssetSelection.assets(IMPORT_KEY),
            )
            return result.asset_materializations_for_node("history__gapminder_import")[0].metadata

        observe()
        assert imported()["new_evaluations"].value == 1
        tick = automation_tick(defs, instance)
        assert not tick.get_requested_partitions(dg.AssetKey(IMPORT_KEY))  # nothing new
        published_gapminder(folder, ["mc039", "mc046"])  # Alibaba's next release is published
        observe()
        tick = automation_tick(defs, instance, cursor=tick.cursor)
        assert tick.get_requested_partitions(dg.AssetKey(IMPORT_KEY)) == {None}
        metadata = imported()
        assert metadata["runs"].value == 2 and metadata["new_evaluations"].value == 1
        assert metadata["reported"].value == 1  # only the new release is reported in the catalog
        assert instance.get_dynamic_partitions("gapminder_models") == ["qwen-max-2024-09-19", "qwen-max-2025-01-25"]
        # The import feeds the trends: automation redraws them although no suite's leaderboard was ever
        # materialized, and once recorded (as `geomon run` records them) not again for the same evaluations
        tick = automation_tick(defs, instance, cursor=tick.cursor)
        assert tick.get_requested_partitions(dg.AssetKey(TRENDS_KEY)) == {None}
        assert record_trends(instance, load_settings(settings)).is_file()
        (drawn,) = instance.fetch_materializations(dg.AssetKey(TRENDS_KEY), limit=5).records
        assert drawn.asset_materialization.metadata["evaluations"].value == 2
        tick = automation_tick(defs, instance, cursor=tick.cursor)
        assert not tick.get_requested_partitions(dg.AssetKey(TRENDS_KEY))
    assert len(history.evaluations(suite="gapminder")) == 2


def _check(instance: dg.DagsterInstance, partition: str) -> dg.AssetCheckEvaluation:
    key = dg.AssetCheckKey(dg.AssetKey(EVALUATIONS_KEY), "no_regression")
    records = instance.event_log_storage.get_asset_check_execution_history(key, limit=100)
    latest = next(r for r in records if r.partition == partition)
    return latest.event.dagster_event.event_specific_data


def _none_open(instance: dg.DagsterInstance, asset: list[str]) -> tuple[str, str]:
    """The asset-level ``none_open`` check as Dagster resolves it for the asset's page and lineage node (its latest
    execution, if it judges the asset's latest materialization) and its description."""
    import asyncio

    from dagster._core.loader import LoadingContextForTest
    from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecord

    key = dg.AssetCheckKey(dg.AssetKey(asset), "none_open")
    context = LoadingContextForTest(instance)

    async def resolve() -> str:
        record = await AssetCheckExecutionRecord.gen(context, key)
        assert record is not None and await record.targets_latest_materialization(context)
        return (await record.resolve_status(context)).value

    status = asyncio.run(resolve())
    (latest,) = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
    return status, latest.event.dagster_event.event_specific_data.description


def _partition_statuses(instance: dg.DagsterInstance) -> dict[str, list[str]]:
    """What the check's Partitions tab counts (Dagster's own state of the check, as the UI's GraphQL reads it):
    each status with its partitions; a partition in none of them is "missing"."""
    key = dg.AssetCheckKey(dg.AssetKey(EVALUATIONS_KEY), "no_regression")
    with dg.partition_loading_context(dynamic_partitions_store=instance):
        state = instance.event_log_storage.get_asset_check_state([(key, PUBLISHED.partitions)])[key]
    return {
        status.value: sorted(subset.value.get_partition_keys())
        for status, subset in state.subsets.items()
        if not subset.is_empty
    }


def test_an_import_shows_each_model_and_its_regression_in_the_catalog(tmp_path, wdi_snapshot_dir, monkeypatch, capsys):
    """``geomon import`` (what ``make run`` starts with) on a real Dagster instance: o3-mini's evaluation is its
    partition's latest materialization, and its ``no_regression`` check failed against o1 with a readable table,
    without anything materialized in Dagster; importing again reports nothing. o1 was evaluated after o3-mini: the
    published history's pair takes the first look (mutation caught: the exception removed from
    ``release.provisional``, the look reads "reserve: provisional baseline")."""
    from geomon.cli import main
    from geomon.cli.run import imported_regressions
    from geomon.config import load_settings

    # o1 and o3-mini; Qwen Max (the first of its line, nothing to compare) sorts after them and passes
    folder = published_gapminder(tmp_path / "gapminder", ["mc059", "mc049", "mc039"])
    settings = write_settings(tmp_path, wdi_snapshot_dir)
    home = tmp_path / "dagster"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    assert main(["--config", str(settings), "import", "gapminder-results", str(folder), "--fail-on", "never"]) == 0
    assert "Dagster (" in capsys.readouterr().out
    with dg.DagsterInstance.get() as instance:
        key = dg.AssetKey(EVALUATIONS_KEY)
        (record,) = instance.fetch_materializations(
            dg.AssetRecordsFilter(key, asset_partitions=["o3-mini-2025-01-31"]), limit=5
        ).records
        metadata = record.asset_materialization.metadata
        assert metadata["baseline"].value == "o1-2024-12-17 (predecessor)"
        # the partition's page (where open_regressions links land) opens with its check's verdict
        first, verdict = next(iter(metadata.items()))
        assert first == "no_regression" and verdict.value.startswith("failed: ") and "regression" in verdict.value
        assert metadata["evaluated_at"].value == "2025-03-06" and metadata["correct_rate (%)"].value == 73.688
        check = _check(instance, "o3-mini-2025-01-31")
        assert not check.passed and check.metadata["regressions"].value >= 1
        table = check.metadata["comparisons"].value
        # One screen: the baseline and how to read the columns above the table, fewer columns, the reason first
        sentence, blank, header, _, first = table.splitlines()[:5]
        assert blank == ""
        assert sentence.startswith("Against o1-2024-12-17 (predecessor). **change**: ") and "**MDE**" in sentence
        assert [c.strip() for c in header.strip("|").split("|")] == [
            "metric",
            "verdict",
            "change (95 % interval)",
            "MDE",
            "power",
            "adjusted p",
            "reason",
            "look",
        ]
        cells = [c.strip() for c in first.strip("|").split("|")]
        assert cells[:2] == ["correct\\_rate", "regression"] and cells[2].startswith("−17.2 pts \\[−")
        # (Markdown's link brackets are escaped: a table cell never becomes a link)
        assert cells[2].endswith("\\] pts") and cells[5] == "&lt; 0.001"
        # o1's evaluation is dated after o3-mini's, but a published history's release order is final: the pair takes
        # the first look, said in its own column, never provisional
        assert cells[6].startswith("paged by an underpowered comparison") and "provisional" not in cells[6]
        assert cells[7] == "first look"
        assert cells[3].endswith(" pts")  # the MDE in the metric's units
        assert _check(instance, "o1-2024-12-17").passed
        # Each check result judges its partition's materialization, so Dagster counts it: 1 failed, 2 passed
        assert _partition_statuses(instance) == {
            "FAILED": ["o3-mini-2025-01-31"],
            "SUCCEEDED": ["o1-2024-12-17", "qwen-max-2024-09-19"],
        }
        assert check.target_materialization_data.storage_id == record.storage_id
        assert check.description.startswith(f"o3-mini-2025-01-31: {check.metadata['regressions'].value} regression")
        assert "vs o1-2024-12-17 (predecessor): correct_rate −17.2 pts" in check.description
        # The check's latest result, what the asset and the lineage show, is the worst open state, not the
        # partition reported last in name order
        key = dg.AssetCheckKey(dg.AssetKey(EVALUATIONS_KEY), "no_regression")
        (latest,) = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
        assert latest.partition == "o3-mini-2025-01-31"
        # monitor/open_regressions says how many are open, in which model, each row linked to its comparisons
        (board,) = instance.fetch_materializations(dg.AssetKey(OPEN_REGRESSIONS_KEY), limit=5).records
        regressions = check.metadata["regressions"].value
        summary = board.asset_materialization.description
        assert (
            summary
            == f"{regressions} open regression{'s' * (regressions > 1)} in 1 model: o3-mini-2025-01-31 ({regressions})"
        )
        rows = board.asset_materialization.metadata["open_regressions"].value.splitlines()
        assert [c.strip() for c in rows[0].strip("|").split("|")] == [*IN_DIALOG, "comparisons"]
        assert {"adjusted p", "MDE", "min effect"} <= set(IN_DIALOG)
        assert len(rows) == 2 + regressions
        assert rows[2].endswith(
            "[table](/assets/history/gapminder_evaluations?view=partitions&partition=o3-mini-2025-01-31) |"
        )
        # The whole asset is red from the first look, not only o3-mini's partition: both assets' none_open fail
        open_line = f"{regressions} open regression{'s' * (regressions > 1)} in 1 model: o3-mini-2025-01-31"
        assert _none_open(instance, EVALUATIONS_KEY) == ("FAILED", f"{open_line} ({regressions})")
        assert _none_open(instance, OPEN_REGRESSIONS_KEY) == ("FAILED", f"{open_line} ({regressions})")
        # Each model's own entry (models/<name>, what the left bar's search finds) carries its state: o3-mini's
        # materialization says how many are open and when it was evaluated, and its none_open check is red
        (state,) = instance.fetch_materializations(model_key(O3_MINI), limit=5).records
        shown = state.asset_materialization.metadata
        assert shown["open_regressions"].value == regressions
        assert shown["last_evaluated"].value == "2025-03-06 (gapminder, imported (gapminder-results))"
        header, _, row = (line.strip("|").split("|") for line in shown["evaluations"].value.splitlines())
        assert [c.strip() for c in row] == [
            "gapminder",
            "2025-03-06",
            "imported (gapminder-results)",
            str(regressions),
            f"[table](/assets/history/gapminder_evaluations?view=partitions&partition={O3_MINI})",
        ]
        assert [c.strip() for c in header] == [
            "suite",
            "evaluated",
            "source",
            "open regressions",
            "comparisons",
        ]
        assert _none_open(instance, ["models", O3_MINI]) == (
            "FAILED",
            f"{O3_MINI}: {regressions} open regression{'s' * (regressions > 1)}: gapminder ({regressions})",
        )
        assert _none_open(instance, ["models", "o1-2024-12-17"]) == ("SUCCEEDED", "o1-2024-12-17: no open regression")
        (imported,) = instance.fetch_materializations(dg.AssetKey(IMPORT_KEY), limit=5).records
        assert "o3-mini-2025-01-31 vs o1-2024-12-17: correct_rate −17.2 pts" in (
            imported.asset_materialization.metadata["regressions"].value
        )
    assert main(["--config", str(settings), "import", "gapminder-results", str(folder), "--fail-on", "never"]) == 0
    assert "0 model(s) new or decided again" in capsys.readouterr().out
    # `geomon run`'s closing screen names the regression of the history it imported
    closing = imported_regressions(load_settings(settings)).splitlines()
    assert closing[0].endswith(
        "open regression(s) among the imported evaluations (`geomon alerts ack` acknowledges one):"
    )
    assert closing[1].startswith("  gapminder o3-mini-2025-01-31 vs o1-2024-12-17: correct_rate −17.2 pts (p < 0.001")
    with dg.DagsterInstance.get() as instance:
        assert len(instance.fetch_materializations(dg.AssetKey(EVALUATIONS_KEY), limit=10).records) == 3
        assert len(instance.fetch_materializations(dg.AssetKey(OPEN_REGRESSIONS_KEY), limit=10).records) == 1
        assert len(instance.fetch_materializations(dg.AssetKey(IMPORT_KEY), limit=10).records) == 1
        assert len(instance.fetch_materializations(model_key(O3_MINI), limit=10).records) == 1  # unchanged
        # Materialize in the UI: the partition reads its evaluation again from the history, with the same verdict.
        result = dg.materialize(
            [a for a in defs.assets if not isinstance(a, dg.SourceAsset)],
            instance=instance,
            resources={"geomon": GeomonResource(config_path=str(settings))},
            selection=dg.AssetSelection.assets(EVALUATIONS_KEY),
            partition_key="o3-mini-2025-01-31",
            raise_on_error=False,
        )
        evaluation, none_open = result.get_asset_check_evaluations()
        assert not evaluation.passed and evaluation.metadata["baseline"].value == "o1-2024-12-17 (predecessor)"
        assert (none_open.check_name, none_open.passed) == ("none_open", False)
        # Executed from the model's page, its none_open reads the history now: the same verdict
        result = dg.materialize(
            [*(a for a in defs.assets if not isinstance(a, dg.SourceAsset)), *defs.asset_checks],
            instance=instance,
            resources={"geomon": GeomonResource(config_path=str(settings))},
            selection=dg.AssetSelection.checks(dg.AssetCheckKey(model_key(O3_MINI), "none_open")),
        )
        (executed,) = result.get_asset_check_evaluations()
        assert not executed.passed and executed.description == _none_open(instance, ["models", O3_MINI])[1]
    # Acknowledged, o3-mini is decided again: its second check result (Dagster keeps one runless result per
    # partition: these are logged by the import's run) passes, and nothing is open any more
    evaluation_id = check.metadata["evaluation_id"].value
    assert main(["--config", str(settings), "alerts", "ack", evaluation_id, "--by", "test"]) == 0
    assert main(["--config", str(settings), "import", "gapminder-results", str(folder), "--fail-on", "never"]) == 0
    assert "1 model(s) new or decided again" in capsys.readouterr().out
    with dg.DagsterInstance.get() as instance:
        assert _partition_statuses(instance) == {
            "SUCCEEDED": ["o1-2024-12-17", "o3-mini-2025-01-31", "qwen-max-2024-09-19"]
        }
        latest = instance.fetch_materializations(dg.AssetKey(OPEN_REGRESSIONS_KEY), limit=1).records[0]
        assert latest.asset_materialization.description == "no open regression"
        assert _none_open(instance, EVALUATIONS_KEY) == ("SUCCEEDED", "no open regression")
        assert _none_open(instance, OPEN_REGRESSIONS_KEY) == ("SUCCEEDED", "no open regression")
        assert _none_open(instance, ["models", O3_MINI]) == ("SUCCEEDED", f"{O3_MINI}: no open regression")
        latest = instance.fetch_materializations(model_key(O3_MINI), limit=1).records[0]
        assert latest.asset_materialization.metadata["open_regressions"].value == 0
