"""Monitoring end to end on a real Dagster instance: a worse model version alerts once (when its late
predecessor arrives), a new model runs
alone, a new World Bank release re-runs only what depends on it, a swapped model is caught drifting."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest
import yaml

from geomon.definitions import defs
from geomon.defs.factory import declared
from geomon.defs.monitoring import model_key
from geomon.defs.resources import GeomonResource, api_models_partitions, models_partitions
from geomon.defs.sensors import model_registry_sensor
from geomon.engine.local import free_port, running_server
from geomon.engine.registry import bundled_model_path
from geomon.monitor.history import MetricHistory
from geomon.suites import worldbench
from geomon_tests.conftest import automation_tick, step_output
from geomon_tests.loopback import ScriptedModel, Webhook, serve

PER_MODEL = declared("worldbench").plan.per_model
materialize_worldbench = declared("worldbench").materialize

SAMPLE = 35  # five countries per region: at least 30 clusters, enough for a verdict (stats.sufficiency)


def _settings(tmp_path: Path, snapshot_dir: Path, models: list[dict], **extra) -> GeomonResource:
    path = tmp_path / "geomon.yaml"
    doc = {
        "store_url": f"sqlite:///{tmp_path / 'store.sqlite'}",
        "results_dir": str(tmp_path / "results"),
        "worldbank": {"snapshot": str(snapshot_dir)},
        "engine": {"slots": 2, "concurrency": 4},
        "include_bundled": False,
        "models": models,
        "alerts": {"webhook_url_env": "TEST_ALERT_WEBHOOK", "webhook_style": "json", "ui_url": "http://ui.test"},
        **extra,
    }
    path.write_text(yaml.safe_dump(doc))
    return GeomonResource(config_path=str(path))


def _answers(snapshot, worse_outside: str | None = None):
    """Ground truth for each question; ``worse_outside``: 5× off for countries outside that region."""
    prompts = worldbench.build_prompts(snapshot, countries=worldbench.sample_countries(snapshot, SAMPLE))
    truth = {}
    for row in prompts.itertuples():
        factor = 5.0 if worse_outside and row.region != worse_outside else 1.0
        truth[row.messages[-1]["content"]] = f"{row.ground_truth * factor:.6g}"
    return lambda messages: truth.get(messages[-1]["content"], "I do not know")


@pytest.mark.slow
def test_a_worse_model_version_alerts_once_when_its_late_predecessor_arrives(
    tmp_path, wdi_snapshot_dir, snapshot, monkeypatch
):
    hook = {"posts": []}
    good = {"models": ["oracle"], "answer": _answers(snapshot)}
    bad = {"models": ["oracle"], "answer": _answers(snapshot, worse_outside="Europe & Central Asia")}
    with serve(Webhook, hook) as hook_url, serve(ScriptedModel, good) as v1, serve(ScriptedModel, bad) as v2:
        monkeypatch.setenv("TEST_ALERT_WEBHOOK", f"{hook_url}/hook")
        models = [
            {"name": "oracle-v1", "kind": "chat", "base_url": f"{v1}/v1", "model_id": "oracle"},
            {
                "name": "oracle-v2",
                "kind": "chat",
                "base_url": f"{v2}/v1",
                "model_id": "oracle",
                "predecessor": "oracle-v1",
            },
        ]
        resources = {"geomon": _settings(tmp_path, wdi_snapshot_dir, models)}
        config = {"sample_countries": SAMPLE}
        with dg.instance_for_test() as instance:
            # The successor is evaluated first: nothing to compare with, nobody paged.
            first = materialize_worldbench(instance, ["oracle-v2"], config, resources=resources)
            early = next(c for r in first for c in r.get_asset_check_evaluations() if c.check_name == "no_regression")
            assert early.passed and hook["posts"] == []
            # Its predecessor arrives late: the successor is decided again, and its regression delivered then,
            # from the predecessor's run, linking to the successor's partition.
            late = materialize_worldbench(instance, ["oracle-v1"], config, resources=resources)
            # (the predecessor's run logs both results: its own and the successor's, decided again)
            v1_check = next(
                c
                for r in late
                for c in r.get_asset_check_evaluations()
                if c.check_name == "no_regression" and c.partition == "oracle-v1"
            )
            assert v1_check.passed and v1_check.metadata["redecided"].value == "oracle-v2"
            assert len(hook["posts"]) == 1
            # oracle-v2's own check fails now, in the UI, not at its next materialization.
            check_key = dg.AssetCheckKey(dg.AssetKey(["worldbench", "disparity"]), "no_regression")
            records = instance.event_log_storage.get_asset_check_execution_history(check_key, limit=10)
            latest = {}
            for record in sorted(records, key=lambda r: r.id):
                evaluation = record.event.dagster_event.event_specific_data
                latest[evaluation.partition] = evaluation
            assert latest["oracle-v2"].passed is False and latest["oracle-v1"].passed is True
            # and its own catalog entry (models/oracle-v2) is red, reported by the same run
            assert _model_check(instance, "oracle-v2").description.startswith("oracle-v2: 1 open regression")
            assert _model_check(instance, "oracle-v1").passed
            assert "oracle-v1's evaluation arrived" in latest["oracle-v2"].metadata["decided_again_because"].value
            alert = hook["posts"][0]["body"]
            assert alert["kind"] == "regression" and alert["model"] == "oracle-v2"
            assert alert["url"] == "http://ui.test/assets/worldbench/disparity?view=partitions&partition=oracle-v2"
            numbers = alert["numbers"]
            assert (
                numbers["before"] == pytest.approx(0.0, abs=1e-4)
                and numbers["after"] > 0.5
                and numbers["p_value"] < 0.01
                and numbers["alpha"] == pytest.approx(0.05 / 8 * 0.8)  # worldbench's first look: 80 % of its share
            )
            # The successor's re-run (the same answers: the same evaluation) now fails its check, and reads
            # "already alerted" from the record of what was sent: nobody is paged twice.
            results = materialize_worldbench(instance, ["oracle-v2"], config, resources=resources)
            # The exact leaderboard scripted answers give: v1 is right everywhere (error 0 but for the 6
            # significant digits it answers with); v2 is 5× off outside Europe: |5x − x| / 5x = 0.8 there.
            board = step_output(instance, results[-1], "worldbench__leaderboard").set_index("model")
            prompts = worldbench.build_prompts(snapshot, countries=worldbench.sample_countries(snapshot, SAMPLE))
            # (a true value of 0 is answered 0 by both: no error there)
            outside = ((prompts["region"] != "Europe & Central Asia") & (prompts["ground_truth"] != 0)).mean()
            assert board.loc["oracle-v1", "mean_error"] == pytest.approx(0, abs=1e-5)
            assert board.loc["oracle-v2", "mean_error"] == pytest.approx(0.8 * outside, abs=1e-5)
            assert board.loc["oracle-v2", "region_disparity_mean"] == pytest.approx(0.8, abs=1e-5)
            assert board.loc["oracle-v2", "parse_rate"] == 1.0
            check = next(c for r in results for c in r.get_asset_check_evaluations() if c.check_name == "no_regression")
            assert not check.passed and check.metadata["compared_with"].value == "predecessor oracle-v1"
            assert check.metadata["evaluation_id"] == early.metadata["evaluation_id"]
            assert check.metadata["alert"].value.startswith("already alerted: webhook at ")
            assert len(hook["posts"]) == 1
            assert "| mean\\_error " in check.metadata["comparisons"].value  # readable; the numbers from the history
            stored = MetricHistory(f"sqlite:///{tmp_path / 'store.sqlite'}").comparisons(
                [check.metadata["evaluation_id"].value]
            )
            verdicts = {(r["metric"], r["breakdown"]): r for r in stored.to_dict("records")}
            mean = verdicts[("mean_error", "")]
            assert mean["verdict"] == "regression" and mean["clusters"] == SAMPLE and mean["mde"] > 0
            # The regional gap rests on its smallest region's few countries: shown, never a finding, never paged.
            region = verdicts[("region_disparity_mean", "")]
            assert region["verdict"] == "insufficient sample" and region["change"] == pytest.approx(0.8, abs=1e-4)
            assert region["clusters"] < 30 and ("mean_error", "region=Europe & Central Asia") in verdicts
            store = MetricHistory(f"sqlite:///{tmp_path / 'store.sqlite'}")
            store.acknowledge(check.metadata["evaluation_id"].value, "on-call")
            acked = materialize_worldbench(instance, ["oracle-v2"], config, resources=resources)
            final = next(c for r in acked for c in r.get_asset_check_evaluations() if c.check_name == "no_regression")
            assert final.passed and final.metadata["acknowledged"].value >= 1 and len(hook["posts"]) == 1
            assert _model_check(instance, "oracle-v2").passed  # acknowledged: its entry is green at the next run
        history = MetricHistory(f"sqlite:///{tmp_path / 'store.sqlite'}").series(
            suite="worldbench", metric="region_disparity_mean"
        )
        assert sorted(history["model"]) == ["oracle-v1", "oracle-v2"]


def _model_check(instance: dg.DagsterInstance, model: str) -> dg.AssetCheckEvaluation:
    """The latest ``none_open`` result of a model's own entry, ``models/<model>``."""
    key = dg.AssetCheckKey(model_key(model), "none_open")
    (latest,) = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
    return latest.event.dagster_event.event_specific_data


def _requested(result, key: list[str]) -> set:
    return result.get_requested_partitions(dg.AssetKey(key))


def _requested_keys(result) -> set[str]:
    keys = defs.resolve_asset_graph().get_all_asset_keys()
    return {k.to_user_string() for k in keys if result.get_requested_partitions(k)}


@pytest.mark.slow
def test_a_new_model_runs_alone_and_a_new_release_reruns_only_world_bank_assets(
    tmp_path, wdi_snapshot_dir, snapshot, monkeypatch
):
    releases = tmp_path / "worldbank"
    shutil.copytree(wdi_snapshot_dir, releases / "wdi-2023-12")
    first = {"models": ["first"], "answer": _answers(snapshot)}
    second = {"models": ["second"], "answer": _answers(snapshot)}
    with serve(ScriptedModel, first) as one, serve(ScriptedModel, second) as two:
        models = [{"name": "first", "kind": "chat", "base_url": f"{one}/v1", "model_id": "first"}]
        resource = _settings(tmp_path, releases, models, endpoints=[{"name": "lab", "base_url": f"{two}/v1"}])
        resources = {"geomon": resource}
        with dg.instance_for_test() as instance:
            defs.resolve_job_def("observe_sources").execute_in_process(instance=instance, resources=resources)
            materialize_worldbench(instance, ["first"], {"sample_countries": SAMPLE}, resources=resources)
            calls_first = first["calls"]
            tick = automation_tick(defs, instance)
            assert tick.total_requested == 0  # nothing to do: no first-tick flood

            # The endpoint serves a model nobody registered: the sensor makes it a partition ...
            sensor = model_registry_sensor(dg.build_sensor_context(instance=instance, resources=resources))
            assert sensor.dynamic_partitions_requests[0].partition_keys == ["lab-second"]
            instance.add_dynamic_partitions(models_partitions.name, ["lab-second"])
            # ... and automation requests that model's runs only.
            tick = automation_tick(defs, instance, cursor=tick.cursor)
            for key in (["worldbench", "responses"], ["worldbench", "scores"], ["worldbench", "disparity"]):
                assert _requested(tick, key) <= {"lab-second"}
            assert _requested(tick, ["worldbench", "responses"]) == {"lab-second"}
            dg.materialize(
                [*defs.assets, *defs.asset_checks],
                instance=instance,
                resources=resources,
                selection=PER_MODEL,
                partition_key="lab-second",
            )
            assert first["calls"] == calls_first  # zero calls to the first model
            assert second["calls"] == len(
                worldbench.build_prompts(snapshot, countries=worldbench.sample_countries(snapshot, SAMPLE))
            )

            # A newer World Bank release appears beside the old one.
            newer = releases / "wdi-2024-07"
            shutil.copytree(releases / "wdi-2023-12", newer)
            population = newer / "population.csv"
            population.write_text(
                population.read_text().replace("2023-12-18", "2024-07-01").replace("2023-10-26", "2024-07-01")
            )
            defs.resolve_job_def("observe_sources").execute_in_process(instance=instance, resources=resources)
            tick = automation_tick(defs, instance, cursor=tick.cursor)
            # The World Bank assets first, in a run of their own: each layer below runs once its input's data
            # version has changed, never on the chance that it will. BorderLines does not depend on the World Bank,
            # so it is neither stale nor requested. (The leaderboard: lab-second's results arrived since the last tick.)
            assert _requested_keys(tick) - {"worldbench/leaderboard"} == {"worldbank/economies", "worldbank/indicators"}
            dg.materialize(
                [*defs.assets, *defs.asset_checks],
                instance=instance,
                resources=resources,
                selection=dg.AssetSelection.assets(["worldbank", "economies"], ["worldbank", "indicators"]),
            )
            tick = automation_tick(defs, instance, cursor=tick.cursor)
            requested = _requested_keys(tick)
            assert "worldbench/prompts" in requested and not any(k.startswith("borderlines/") for k in requested)
            # The disparity tables read the indicators: every model's, again.
            assert _requested(tick, ["worldbench", "disparity"]) == {"first", "lab-second"}
            dg.materialize(
                [*defs.assets, *defs.asset_checks],
                instance=instance,
                resources=resources,
                selection=dg.AssetSelection.assets(["worldbench", "prompts"]),
                run_config={"ops": {"worldbench__prompts": {"config": {"sample_countries": SAMPLE}}}},
            )
            tick = automation_tick(defs, instance, cursor=tick.cursor)
            # This release changed only its date: the prompts rebuilt are the same sample (same data version), so no
            # model is asked again.
            latest, before = instance.fetch_materializations(dg.AssetKey(["worldbench", "prompts"]), limit=2).records
            assert latest.asset_materialization.metadata["sample"] == before.asset_materialization.metadata["sample"]
            assert not _requested(tick, ["worldbench", "responses"])
            assert not any(k.startswith("borderlines/") for k in _requested_keys(tick))


@pytest.mark.slow
def test_a_new_table_revision_reruns_only_that_revisions_borderlines_partitions(tmp_path, wdi_snapshot_dir):
    """A new version of Wikipedia's disputes table (the revision sensor adds it as a partition): automation
    requests that revision's table and prompts, then each model on that revision, and nothing else."""
    from geomon_tests.conftest import SHARED, write_settings

    old, new = "2021-08-31-r1041639056", "2023-05-15-r1154894956"
    with serve(ScriptedModel, {"answer": lambda messages: "A", "models": ["table"]}) as url:
        entry = {"name": "table", "kind": "chat", "base_url": f"{url}/v1", "model_id": "table"}
        borderlines = {"snapshot": str(SHARED / "snapshots" / "borderlines"), "revisions": ["2023-05-15"]}
        settings = write_settings(tmp_path, wdi_snapshot_dir, [entry], include_bundled=False, borderlines=borderlines)
        resources = {"geomon": GeomonResource(config_path=str(settings))}
        with dg.instance_for_test() as instance:
            sample = {"personas": ["vanilla"], "sample_territories": 2}
            declared("borderlines").materialize(instance, ["table"], revisions={new: sample}, resources=resources)
            tick = automation_tick(defs, instance)
            assert tick.total_requested == 0  # nothing to do: no first-tick flood

            instance.add_dynamic_partitions("dispute_revisions", [old])
            tick = automation_tick(defs, instance, cursor=tick.cursor)
            assert _requested(tick, ["wikipedia", "dispute_revisions"]) == {old}
            assert _requested(tick, ["borderlines", "prompts"]) <= {old}
            for stage in ("responses", "scores", "concurrence"):
                assert {str(k) for k in _requested(tick, ["borderlines", stage])} <= {f"table|{old}"}
            assert {k.split("/")[0] for k in _requested_keys(tick)} <= {"wikipedia", "borderlines"}
            assert "borderlines/leaderboard" not in _requested_keys(tick)  # not before the revision's scores

            dg.materialize(
                [*defs.assets, *defs.asset_checks],
                instance=instance,
                resources=resources,
                selection=dg.AssetSelection.assets(["wikipedia", "dispute_revisions"], ["borderlines", "prompts"]),
                partition_key=old,
                run_config={"ops": {"borderlines__prompts": {"config": sample}}},
            )
            tick = automation_tick(defs, instance, cursor=tick.cursor)
            # Then the model's answers on that revision, and no other partition of any asset.
            assert {str(k) for k in _requested(tick, ["borderlines", "responses"])} == {f"table|{old}"}
            assert _requested_keys(tick) <= {"borderlines/responses", "borderlines/scores", "borderlines/concurrence"}


@pytest.mark.slow
def test_swapping_the_model_behind_an_endpoint_is_caught_as_drift(
    tmp_path, wdi_snapshot_dir, smollm2, gemma, monkeypatch
):
    """Same name, same URL, different weights: the next probe flags it; the unchanged model does not."""
    hook = {"posts": []}
    port = free_port()
    api = {"name": "provider-model", "kind": "chat", "base_url": f"http://127.0.0.1:{port}/v1", "model_id": "provider"}
    with serve(Webhook, hook) as hook_url:
        monkeypatch.setenv("TEST_ALERT_WEBHOOK", f"{hook_url}/hook")
        resources = {
            "geomon": _settings(
                tmp_path,
                wdi_snapshot_dir,
                [api],
                drift={"probe_questions": 12, "calibration_probes": 3, "tolerance": 0.1},
            )
        }
        with dg.instance_for_test() as instance:
            instance.add_dynamic_partitions(api_models_partitions.name, ["provider-model"])
            dg.materialize(
                [*defs.assets, *defs.asset_checks],
                instance=instance,
                resources=resources,
                selection=dg.AssetSelection.assets(
                    ["worldbank", "economies"], ["worldbank", "indicators"], ["worldbench", "prompts"]
                ),
                run_config={"ops": {"worldbench__prompts": {"config": {"sample_countries": 4}}}},
            )

            def probe() -> dg.AssetCheckEvaluation:
                result = dg.materialize(
                    [*defs.assets, *defs.asset_checks],
                    instance=instance,
                    resources=resources,
                    selection=dg.AssetSelection.assets(["monitor", "drift_probe"]),
                    partition_key="provider-model",
                )
                return result.get_asset_check_evaluations()[0]

            # One thread per server: with a thread per core each token waits at a barrier for both, and that wait
            # spins while anything else runs on the two cores. The 4 × 12 probes took 90-160 s on two threads in a
            # loaded `pytest geomon_tests/defs` and 38 s on one (12 asks, 2 slots: 7-33 s against 5 s).
            with running_server(bundled_model_path(smollm2.bundled), alias="provider", slots=2, port=port, threads=1):
                unchanged = [probe() for _ in range(2)]
            assert all(c.passed for c in unchanged) and hook["posts"] == []
            with running_server(bundled_model_path(gemma.bundled), alias="provider", slots=2, port=port, threads=1):
                swapped = probe()
            assert not swapped.passed
            assert swapped.metadata["change_rate"].value > swapped.metadata["threshold"].value
            assert len(hook["posts"]) == 1 and hook["posts"][0]["body"]["kind"] == "drift"

    # Bundled models run fixed weights: the schedule never probes them.
    from datetime import UTC, datetime

    from geomon.defs.drift import drift_probe_schedule

    with_bundled = {"geomon": _settings(tmp_path, wdi_snapshot_dir, [api], include_bundled=True)}
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(api_models_partitions.name, ["provider-model"])
        context = dg.build_schedule_context(
            instance=instance, resources=with_bundled, scheduled_execution_time=datetime(2026, 11, 22, 6, tzinfo=UTC)
        )
        requests = drift_probe_schedule(context)
        assert [r.partition_key for r in requests] == ["provider-model"]


def test_an_unchanged_rerun_names_the_stored_evaluation_not_itself(tmp_path):
    """An unchanged re-run gets the stored evaluation back (``reused``): its check's ``compared_with`` says when and
    by which run that one was recorded, never "the same values as" its own evaluation_id."""
    import pandas as pd

    from geomon.defs.monitoring import compared_with
    from geomon.monitor.history import EvaluationRun

    history = MetricHistory(f"sqlite:///{tmp_path / 'history.sqlite'}")
    items = pd.DataFrame({"iso3": ["CHE", "MLI"], "error": [0.1, 0.4]})
    first = history.record(EvaluationRun("worldbench", "m", dagster_run_id="run-1"), [], items=items)
    again = history.record(EvaluationRun("worldbench", "m", dagster_run_id="run-2"), [], items=items)
    assert again.reused and again.evaluation_id == first.evaluation_id
    said = compared_with("", again)
    assert said.startswith("unchanged: identical to the stored evaluation recorded ") and "by run run-1" in said
    assert again.evaluation_id not in said
    assert compared_with("", first).startswith("nothing: no earlier evaluation")
    assert compared_with("m-old (predecessor)", again) == "m-old (predecessor)"


def test_a_verdicts_look_is_its_own_column_and_its_reason_reads_first():
    """The look a comparison was decided at and why its α was 0 are stored in their own columns (``look``,
    ``alpha_zero``), never in its note: the UI's table shows the reason first and the look apart, and the check's
    ``alpha`` says why α is 0 (test_history pins the whole table). Mutation caught: the table reading the look
    from the note (every look then reads "first look")."""
    from geomon.defs.monitoring import comparisons_table, decided_at
    from geomon.stats import verdicts
    from geomon.stats.verdicts import Comparison, LookKind

    reason = "paged by an underpowered comparison (6 % power at the minimum effect)"
    why = "α 0: its weight in verdicts.shares is 0"
    rows = [
        Comparison("a", "", verdicts.REGRESSION, note=reason, look=LookKind.RESERVE, alpha=0.002),
        Comparison("b", "", verdicts.NO_CHANGE, look=LookKind.FIRST, alpha=0.008),
        Comparison("c", "", verdicts.WATCH, look=LookKind.SPENT, alpha=0.0, alpha_zero=why),
    ]
    table = comparisons_table(rows, ()).value.splitlines()[2:]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in table]
    assert cells[0][-2:] == ["reason", "look"]
    assert [row[-2:] for row in cells[2:]] == [
        [reason, "reserve: provisional baseline (decided again when the release's own arrives)"],
        ["—", "none, never paged: α 0: its weight in verdicts.shares is 0"],
        ["—", "first look"],
    ]
    assert decided_at(rows[2:]) == f"0: {why} (shown, never paged)"
    assert decided_at(rows) == "0.008"


def test_the_sentence_above_a_comparisons_table_explains_its_terse_verdicts():
    """`watch` and `undefined` (the verdicts whose name does not say what they are) are explained in the sentence
    above every comparisons table, with change, MDE, power and adjusted p."""
    from geomon.defs.verdict_tables import READING
    from geomon.stats import verdicts

    terms = ("**change**", "**MDE**", "**power**", "**adjusted p**", f"`{verdicts.WATCH}`", f"`{verdicts.UNDEFINED}`")
    assert [term for term in terms if term not in READING] == []


def test_a_passing_no_regression_check_says_how_many_comparisons_could_decide():
    """A release whose comparisons could see nothing must not read as a clean pass: the check's line says how many
    of its comparisons were decidable, and that none could see a regression of its minimum effect. Mutation
    caught: the count left out of the line (the audit's green "no open regression" on 0 of 67 decidable)."""
    from geomon.defs.monitoring import check_line
    from geomon.stats import verdicts
    from geomon.stats.verdicts import Comparison

    blind = [
        Comparison("acc", "", verdicts.NO_CHANGE, decidability=verdicts.Decidability.UNDERPOWERED_PROFILE),
        Comparison("acc", "country=PE", verdicts.INSUFFICIENT, decidability=verdicts.Decidability.UNDECIDABLE_SAMPLE),
    ]
    line = check_line([], blind, ())
    assert line.startswith("no open regression; 0 of 2 comparisons decidable (none could see a regression")
    seen = [Comparison("acc", "", verdicts.NO_CHANGE, decidability=verdicts.Decidability.DECIDABLE), blind[1]]
    assert check_line([], seen, ()).startswith("no open regression; 1 of 2 comparisons decidable (")
