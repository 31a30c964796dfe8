"""The one suite factory, proved by BLEnD: a suite declared by a Pipeline gets its assets, checks, jobs,
history, regression check, leaderboard and report from its declaration alone. Scripted models on
loopback give exact expected results."""

from __future__ import annotations

import math

import dagster as dg
import pytest

from geomon.definitions import defs
from geomon.defs.factory import declared, metadata_value, suite_runs
from geomon.defs.resources import GeomonResource
from geomon.defs.runs import failed_checks, register_models
from geomon.monitor import release
from geomon.monitor.history import MetricHistory
from geomon.suites import blend, registry
from geomon.suites.blend.scoring import valid_question
from geomon.suites.blend.source import read_release
from geomon.suites.pipeline import Pipeline, PipelineError, Stage, StageResult
from geomon_tests.conftest import SHARED, assert_readable_report, automation_tick, step_output, write_settings
from geomon_tests.loopback import ScriptedModel, serve

COUNTRIES = ["UK", "South_Korea", "Spain"]


def _top_answers(sample: int) -> dict[str, str]:
    """Prompt text → the annotators' top answer in the language asked (what an oracle replies)."""
    release = read_release(SHARED / "snapshots" / "blend", tuple(COUNTRIES))
    prompts = blend.build_prompts(release, ("inst-4",), sample, 0)
    return {
        p.prompt: p.annotations[0]["answers" if p.asked_in != "English" else "en_answers"][0] if p.annotations else ""
        for p in prompts.itertuples()
    }


def test_blend_runs_through_the_factory_with_exact_results(tmp_path, wdi_snapshot_dir):
    oracle = _top_answers(5)

    def answer(messages):
        return oracle[messages[-1]["content"]]

    with (
        serve(ScriptedModel, {"answer": answer, "models": ["oracle"]}) as right,
        serve(ScriptedModel, {"answer": lambda messages: "I don't know.", "models": ["silent"]}) as wrong,
    ):
        models = [
            {"name": "oracle", "kind": "chat", "base_url": f"{right}/v1", "model_id": "oracle"},
            {"name": "silent", "kind": "chat", "base_url": f"{wrong}/v1", "model_id": "silent"},
        ]
        section = {"snapshot": str(SHARED / "snapshots" / "blend"), "countries": COUNTRIES}
        settings = write_settings(tmp_path, wdi_snapshot_dir, models=models, include_bundled=False, blend=section)
        resources = {"geomon": GeomonResource(config_path=str(settings))}
        with dg.instance_for_test() as instance:
            # A model the registry sensor added that BLEnD has not evaluated yet: left out of the board, named.
            register_models(instance, ["registered-not-run"])
            results = suite_runs("blend").materialize(
                instance, ["oracle", "silent"], {"sample_questions": 5}, resources=resources, described="q: 5"
            )
            assert all(r.success for r in results)
            assert not failed_checks(results)
            # A per-model check says which model it is for (partitioned like its asset); each run also restates the
            # open-regressions asset's unpartitioned none_open (the catalog's alarm), passed here.
            per_model = [c for r in results[1:3] for c in r.get_asset_check_evaluations()]
            assert {(c.check_name, c.partition) for c in per_model} == {
                ("no_regression", "oracle"),
                ("no_regression", "silent"),
                ("none_open", None),
            }
            assert all(c.passed for c in per_model if c.check_name == "none_open")
            board = step_output(instance, results[-1], "blend__leaderboard").set_index("model")
            assert board.loc["oracle", "sem_b_local"] == 100 and board.loc["oracle", "sem_w_local"] == 100
            assert board.loc["silent", "sem_b_local"] == 0 and board.loc["silent", "country_gap_sem_b_local"] == 0
            # "I don't know" is a miss (SEM-B 0, as the paper scores it) and not an answer: the answer rate says so.
            assert board.loc["oracle", "answered_rate"] == 100 and board.loc["silent", "answered_rate"] == 0
            valid = sum(
                valid_question(p.annotations, p.idks)
                for p in blend.build_prompts(
                    read_release(SHARED / "snapshots" / "blend", tuple(COUNTRIES)), ("inst-4",), 5, 0
                ).itertuples()
            )
            assert board.loc["oracle", "answered"] == valid
            assert sorted(board.index) == ["oracle", "silent"]
            event = instance.get_latest_materialization_event(dg.AssetKey(["blend", "leaderboard"]))
            assert event.asset_materialization.metadata["partitions_not_evaluated"].value == ["registered-not-run"]
            # The stages' jobs, named and tagged like every suite's.
            assert [r.job_name for r in reversed(instance.get_runs())] == [
                "blend_prompts",
                "blend_per_model",
                "blend_per_model",
                "blend_leaderboard",
            ]
            assert {r.tags["geomon/suite"] for r in instance.get_runs()} == {"blend"}
            # The leaderboard's metadata: sortable table, report link, per-model series.
            meta = instance.get_latest_materialization_event(dg.AssetKey(["blend", "leaderboard"]))
            keys = set(meta.asset_materialization.metadata)
            assert {"leaderboard_table", "report_url", "sem_b_local · oracle"} <= keys
            assert_readable_report(tmp_path / "results" / "blend" / "report.html")
            report = (tmp_path / "results" / "blend" / "report.html").read_text()
            assert "SEM-B per country, local language" in report
            # History: an evaluation per model, with per-country breakdowns.
            history = MetricHistory(f"sqlite:///{tmp_path / 'store.sqlite'}").series(suite="blend")
            assert set(history["model"]) == {"oracle", "silent"}
            local = (history["model"] == "oracle") & (history["metric"] == "sem_b_local")
            uk = history[local & (history["breakdown"] == "country=UK")]
            assert uk["value"].tolist() == [100.0]
            # One definition: every figure of a tracked metric in the history is its declared statistic over the
            # items the stage handed in (the factory computed them; the stage handed in no figure of its own).
            store = MetricHistory(f"sqlite:///{tmp_path / 'store.sqlite'}")
            oracle = history[history["model"] == "oracle"]
            evaluation = store.latest("blend", "oracle", oracle["scope"].iloc[0])
            figures = release.declared_figures("blend", blend.TRACKED, evaluation.items)

            def numbers(*xs: object) -> list[float]:
                return [math.nan if x is None else float(x) for x in xs]

            stored = oracle.set_index(["metric", "breakdown"])
            for f in figures:
                row = stored.loc[(f.metric, f.breakdown)]
                expected = numbers(f.value, f.ci_low, f.ci_high, f.n)
                assert numbers(row["value"], row["ci_low"], row["ci_high"], row["n"]) == pytest.approx(
                    expected, nan_ok=True
                ), f
            own = [k for k in stored.index if k not in {(f.metric, f.breakdown) for f in figures}]
            assert own and not [k for k in own if any(m.declares(*k) for m in blend.TRACKED)]
            # The sample persists: the prompts re-materialized without config keep 5 questions per country.
            again = dg.materialize(
                list(declared("blend").assets),
                instance=instance,
                resources=resources,
                selection=dg.AssetSelection.assets(["blend", "question_bank"], ["blend", "prompts"]),
            )
            prompts = again.output_for_node("blend__prompts")
            assert prompts.groupby("country")["question_id"].nunique().eq(5).all()
            # A model appears: automation asks for its partitions of every per-model stage, and nothing else.
            tick = automation_tick(defs, instance)
            instance.add_dynamic_partitions("models", ["newcomer"])
            tick = automation_tick(defs, instance, cursor=tick.cursor)
            for stage in ("responses", "scores", "disparity"):
                assert tick.get_requested_partitions(dg.AssetKey(["blend", stage])) == {"newcomer"}, stage
            requested = {
                k.to_user_string()
                for k in defs.resolve_asset_graph().get_all_asset_keys()
                if tick.get_requested_partitions(k)
            }
            assert {k for k in requested if not k.startswith("blend/")} == set()


def test_every_declared_suite_is_checked_at_registration():
    bad = Pipeline(
        stages=(Stage("scores", lambda context: StageResult(None), "x", inputs=("responses",)),),
        write_report=lambda *a: None,
        leaderboard_columns=(),
        per_model_description="",
    )
    with pytest.raises(PipelineError, match="reads 'responses', which no earlier stage makes"):
        bad.validate("toy")
    asks = {"requests": lambda prompts, spec, settings: []}
    silent = Pipeline(
        stages=(Stage("scores", lambda context: StageResult(None), "x", per_model=True, tracked=True),),
        write_report=lambda *a: None,
        leaderboard_columns=(),
        per_model_description="",
    )
    with pytest.raises(PipelineError, match="suite toy: no stage declares requests"):
        silent.validate("toy")
    untracked = Pipeline(
        stages=(Stage("responses", lambda context: StageResult(None), "x", per_model=True, **asks),),
        write_report=lambda *a: None,
        leaderboard_columns=(),
        per_model_description="",
    )
    with pytest.raises(PipelineError, match="exactly one per-model stage must be tracked"):
        untracked.validate("toy")
    no_revisions = Pipeline(
        stages=(Stage("table", lambda context: StageResult(None), "x", per_revision=True, **asks),),
        write_report=lambda *a: None,
        leaderboard_columns=(),
        per_model_description="",
    )
    with pytest.raises(PipelineError, match="stage table is per revision, which needs the suite's revisions"):
        no_revisions.validate("toy")
    assert registry.suite("blend").pipeline is blend.PIPELINE


def test_a_suite_with_revisions_is_partitioned_by_revision_and_model():
    """BorderLines' table revisions: per-revision stages by revision, per-model stages by model × revision,
    reading their revision's partition; jobs and check names as the suite had them by hand."""
    from geomon.defs.resources import model_revision_partitions, revisions_partitions

    per_revision, per_model = revisions_partitions("dispute_revisions"), model_revision_partitions("dispute_revisions")
    graph = defs.resolve_asset_graph()
    assert graph.get(dg.AssetKey(["wikipedia", "dispute_revisions"])).partitions_def == per_revision
    assert graph.get(dg.AssetKey(["borderlines", "prompts"])).partitions_def == per_revision
    for stage in ("responses", "scores", "concurrence"):
        assert graph.get(dg.AssetKey(["borderlines", stage])).partitions_def == per_model
    assert graph.get(dg.AssetKey(["wikipedia", "dispute_revisions"])).group_name == "wikipedia"
    checks = {k.name for k in graph.asset_check_keys if k.asset_key.path[0] in {"borderlines", "wikipedia"}}
    assert checks == {"disputes_table_valid", "prompts_translated", "answered_above_floor", "no_regression"}
    jobs = {name: defs.resolve_job_def(f"borderlines_{name}") for name in ("release", "prompts", "per_model")}
    assert jobs["prompts"].partitions_def == per_revision
    assert jobs["per_model"].partitions_def == per_model
    assert defs.resolve_job_def("borderlines_leaderboard")


def test_metadata_values_are_readable():
    assert metadata_value(0.123456789) == 0.1235
    assert metadata_value(None) == "none"
    assert metadata_value({"a": 1}).value == {"a": 1}


def test_the_plan_on_the_prompts_asset_reads_at_a_glance():
    """Narrow enough for a 1440 px screen (what every model shares above, the MDEs in their own table), no
    blank or "?" cell without its reason, and the MDE's units."""
    import pandas as pd

    from geomon.defs.factory import plan_markdown

    # as long as a suite's many headlines make it (BLEnD's ran past 200 characters, where a table cell is cut)
    parts = ["mean_error 0.154", "mean_error (region) not decidable", *[f"answered_rate ({i}) 0.3" for i in range(9)]]
    mde = "; ".join(parts)
    table = pd.DataFrame(
        [
            {"model": "gemma3-270m", "prompts": 80, "asks": 80, "stored": 0, "time": "?", "tokens": None},
            {"model": "gpt-4o-mini", "prompts": 80, "asks": 80, "stored": 20, "time": "2 min", "tokens": 12000},
        ]
    ).assign(cost_usd=[None, 0.01], clusters=40, decidable="3 of 4", mde=mde)
    shown = plan_markdown(table, registry.suites()["worldbench"])
    main = shown.split("\n\n")[1]
    assert shown.startswith("80 prompts, 40 clusters for every model")
    assert max(len(line) for line in main.splitlines()) <= 90 and "mde" not in main
    assert "| gemma3-270m | 80 (0 stored)  | —      | —        | —            | 3 of 4      |" in main
    assert "| 12000    |" in main and "?" not in main and "nan" not in main.lower()
    assert "— time, tokens: no answer of the model is stored yet" in shown and "— cost: known once the pace" in shown
    assert "mean\\_error 0.154" in shown and "mean_error: on a 0–1 scale" in shown
    assert "answered\\_rate (8) 0.3 " in shown and "…" not in shown  # every MDE whole, one a row
