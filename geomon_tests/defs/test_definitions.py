"""The Dagster layer: the asset graph, a real materialization with a bundled model, PostgreSQL storage."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from geomon.definitions import defs
from geomon.defs.factory import declared_names, suite_runs
from geomon.defs.resources import GeomonResource, models_partitions
from geomon.defs.runs import failed_checks, register_models
from geomon.suites import registry
from geomon_tests import snapshot
from geomon_tests.conftest import (
    SHARED,
    assert_readable_report,
    board_after_run,
    materialize_worldbench_sources,
    step_output,
    write_settings,
)
from geomon_tests.loopback import ScriptedModel, serve

REPO = Path(__file__).resolve().parents[2]
# SAGED's corpus in the tests: the paper's synthetic IdeaCoun article (a section of the seed text).
IDEACOUN_ARTICLE = {
    "path": str(SHARED / "seeds" / "saged.txt"),
    "source_tag": "ideacoun-article",
    "start": "D.1 GPT4o's synthetic article",
    "end": "D.2 Experiment",
}
OLD, NEW = "2021-08-31-r1041639056", "2023-05-15-r1154894956"


def test_the_definitions_match_the_reviewed_snapshot():
    """Suites, asset keys and partitions, checks, jobs, sensors and schedules as geomon_tests/snapshots/
    definitions.json records them: after a deliberate change, `make snapshots` regenerates it for review."""
    now, recorded = snapshot.current(), snapshot.expected()
    for part in recorded:
        assert now[part] == recorded[part], f"{part} differ from {snapshot.SNAPSHOT.name}: run `make snapshots`"


def test_the_monitoring_loop_starts_running():
    """Every sensor and schedule the README calls the monitoring loop is on in a fresh instance."""
    sensors = {s.name for s in defs.sensors if s.default_status == dg.DefaultSensorStatus.RUNNING}
    schedules = {s.name for s in defs.schedules if s.default_status == dg.DefaultScheduleStatus.RUNNING}
    revised = [name for name in declared_names() if registry.suite(name).pipeline.revisions]
    with_revisions = {f"{name}_revisions_sensor" for name in revised}
    loop = {"alert_on_run_failure", "geomon_automation", "model_registry_sensor", *with_revisions}
    assert with_revisions  # BorderLines' Wikipedia revisions at least
    assert loop <= sensors and "observe_sources_hourly" in schedules


def test_definitions_load_and_every_asset_has_a_code_version():
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        if graph.get(key).is_materializable:
            assert graph.get(key).code_version or key.path[0] == "monitor", key.to_user_string()
    assert defs.resolve_job_def("worldbench_per_model").partitions_def == models_partitions


def _questions(snapshot, n_countries: int) -> int:
    """Questions WorldBench asks about a sample (pairs without recent data are left out)."""
    from geomon.suites import worldbench

    return len(worldbench.build_prompts(snapshot, countries=worldbench.sample_countries(snapshot, n_countries)))


@pytest.mark.slow
def test_full_materialization_with_both_bundled_models(tmp_path, wdi_snapshot_dir, snapshot):
    settings = write_settings(tmp_path, wdi_snapshot_dir)
    resources = {"geomon": GeomonResource(config_path=str(settings))}
    with dg.instance_for_test() as instance:
        results = suite_runs("worldbench").materialize(
            instance, ["smollm2-135m-instruct", "gemma3-270m"], {"sample_countries": 3}, resources=resources
        )
        assert all(r.success for r in results)
        assert not [c for c in failed_checks(results) if c.severity == dg.AssetCheckSeverity.ERROR]
        board = step_output(instance, results[-1], "worldbench__leaderboard")
        assert sorted(board["model"]) == ["gemma3-270m", "smollm2-135m-instruct"]
        expected = _questions(snapshot, 3)
        assert expected > 20 and board["questions"].eq(expected).all()
        # What a tiny model's answers can show, exactly: each answer stored once, and the parse rate the
        # stored answers give when read again with the public parser.
        import json

        from geomon.engine.store import ResponseStore
        from geomon.parsing import parse_number

        store = ResponseStore(f"sqlite:///{tmp_path / 'store.sqlite'}")
        for model in ("smollm2-135m-instruct", "gemma3-270m"):
            assert store.count(model) == expected
            exported = tmp_path / f"{model}.jsonl"
            store.export(exported, model=model)
            texts = [json.loads(line).get("text") for line in exported.read_text().splitlines()]
            read = sum(parse_number(t) is not None for t in texts if isinstance(t, str))
            assert board.set_index("model").loc[model, "parse_rate"] == pytest.approx(read / expected)
        assert_readable_report(tmp_path / "results" / "worldbench" / "report.html")
        board_meta = instance.get_latest_materialization_event(dg.AssetKey(["worldbench", "leaderboard"]))
        keys = set(board_meta.asset_materialization.metadata)
        assert {
            "leaderboard_table",
            "report_url",
            "mean_error · gemma3-270m",
            "mean_error · smollm2-135m-instruct",
        } <= keys
        assert "parse_rate · smollm2-135m-instruct" in keys  # a headline: whether the model still answers
        assert not any(k.startswith(("questions ·", "parsed ·")) for k in keys)  # headlines only
        # Materialization metadata a person would want.
        event = instance.get_latest_materialization_event(dg.AssetKey(["worldbench", "disparity"]))
        meta = event.asset_materialization.metadata
        model = event.asset_materialization.partition
        # Numbers are keyed by model, so the Plots tab never joins one model's values to another's.
        assert {f"parse_rate · {model}", f"region_disparity_mean · {model}"} <= set(meta)
        assert {"disparity_table", "group_error_chart"} <= set(meta) and "parse_rate" not in meta
        responses = instance.get_latest_materialization_event(dg.AssetKey(["worldbench", "responses"]))
        assert responses.asset_materialization.partition in {"smollm2-135m-instruct", "gemma3-270m"}
        # Each model's run is the suite's named job, tagged so the runs page reads like a log of evaluations.
        per_model = [r for r in instance.get_runs() if r.job_name == "worldbench_per_model"]
        assert sorted(r.tags["dagster/partition"] for r in per_model) == ["gemma3-270m", "smollm2-135m-instruct"]
        for run in instance.get_runs():
            assert run.tags["geomon/suite"] == "worldbench" and run.tags["geomon/launched_by"] == "geomon run"
        # No run is Dagster's anonymous __ephemeral_asset_job__: every stage has its name.
        assert [r.job_name for r in reversed(instance.get_runs())] == [
            "worldbench_prompts",
            "worldbench_per_model",
            "worldbench_per_model",
            "worldbench_leaderboard",
        ]

        # Rerun: every answer comes from the store; the engine is not even started.
        again = suite_runs("worldbench").materialize(
            instance, ["smollm2-135m-instruct"], {"sample_countries": 3}, resources=resources
        )
        rerun = again[1].asset_materializations_for_node("worldbench__responses")[0]
        calls, cached = (rerun.metadata[f"{k} · smollm2-135m-instruct"].value for k in ("model_calls", "cached"))
        assert calls == 0 and cached == expected


@pytest.mark.slow
def test_dagster_postgres_instance(postgres_url, tmp_path, wdi_snapshot_dir, snapshot, monkeypatch):
    """deploy/dagster.yaml (dagster-postgres, psycopg2 driver) against the real PostgreSQL server."""
    db = postgres_url.rsplit("/", 1)[1]
    for name, value in {
        "GEOMON_PG_HOST": "127.0.0.1",
        "GEOMON_PG_USER": "postgres",
        "GEOMON_PG_PASSWORD": "",
        "GEOMON_PG_DB": db,
    }.items():
        monkeypatch.setenv(name, value)
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text((REPO / "deploy" / "dagster.yaml").read_text())
    settings = write_settings(tmp_path, wdi_snapshot_dir)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        assert materialize_worldbench_sources(instance, settings, countries=2).success
        event = instance.get_latest_materialization_event(dg.AssetKey(["worldbench", "prompts"]))
        assert event.asset_materialization.metadata["questions"].value == _questions(snapshot, 2)
        register_models(instance, ["a-model"])
        assert instance.get_dynamic_partitions(models_partitions.name) == ["a-model"]


def test_a_stage_runs_in_isolation_on_plain_python(snapshot):
    """A declared stage is a plain function: WorldBench's prompts stage on the real snapshot, no Dagster."""
    from types import SimpleNamespace

    from geomon.suites import worldbench

    context = SimpleNamespace(options={"sample_countries": 5, "example_country": "CHE", "year": None})
    result = worldbench.PIPELINE.stage("prompts").run(context, indicators=snapshot)
    assert isinstance(result.value, pd.DataFrame) and result.metadata["countries"] == 5


def test_workspace_loads_in_dagster_tooling(tmp_path):
    """What `dagster dev` loads: workspace.yaml → geomon.definitions:defs, under the repository's dagster.yaml (its
    storage moved to ``tmp_path``). The storage is created here first: on a fresh clone, Dagster's processes
    created it at once and one of them found two alembic heads in the run storage."""
    import subprocess
    import sys

    config = (REPO / "dagster.yaml").read_text(encoding="utf-8").replace("var/dagster", str(tmp_path / "dagster"))
    (tmp_path / "dagster.yaml").write_text(config, encoding="utf-8")
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert instance.get_runs(limit=1) == []
    result = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate", "-w", "workspace.yaml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DAGSTER_HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Validation successful" in result.stderr + result.stdout


@pytest.mark.slow
def test_borderlines_materialization_with_both_bundled_models(tmp_path, wdi_snapshot_dir):
    """A few territories, two table versions: SmolLM2's answers parsed, Gemma's by rank classification."""
    settings = write_settings(tmp_path, wdi_snapshot_dir)
    resources = {"geomon": GeomonResource(config_path=str(settings))}
    models = ["smollm2-135m-instruct", "gemma3-270m"]
    configs = {
        NEW: {"personas": ["vanilla", "nationalist"], "sample_territories": 3},
        OLD: {"personas": ["vanilla"], "sample_territories": 3},
    }
    with dg.instance_for_test() as instance:
        results = suite_runs("borderlines").materialize(instance, models, revisions=configs, resources=resources)
        assert all(r.success for r in results)
        assert not [c for c in failed_checks(results) if c.severity == dg.AssetCheckSeverity.ERROR]
        board = step_output(instance, results[-1], "borderlines__leaderboard")
        assert sorted(set(board["model"])) == sorted(models)
        assert set(board.loc[board["revision"] == NEW, "persona"]) == {"vanilla", "nationalist"}
        assert set(board.loc[board["revision"] == OLD, "persona"]) == {"vanilla"}
        assert board["kb_cs"].between(0, 100).all()
        assert "kb_cs_ci_low" in board  # bootstrap intervals over territories
        keys = set(
            instance.get_latest_materialization_event(
                dg.AssetKey(["borderlines", "leaderboard"])
            ).asset_materialization.metadata
        )
        assert {
            "leaderboard_table",
            "report_url",
            f"kb_cs · gemma3-270m · {NEW}",
            f"kb_cs · gemma3-270m · {OLD}",
        } <= keys
        report = tmp_path / "results" / "borderlines"
        assert (report / "table_changes.json").exists()
        assert_readable_report(report / "report.html")
        scores = {}
        for result in results:
            for mat in result.asset_materializations_for_node("borderlines__scores"):
                scores[str(mat.partition)] = mat.metadata
        gemma = scores[f"gemma3-270m|{NEW}"]
        smol = scores[f"smollm2-135m-instruct|{NEW}"]
        assert gemma["method"].value == "rank_classification"
        assert gemma[f"answered_rate · gemma3-270m|{NEW}"].value == 1.0
        assert smol["method"].value == "parsed"
        # What SmolLM2's answers can show, exactly: the share of its stored replies that name one claimant,
        # read again with the public parser, is the answered rate the scores report.
        from geomon.parsing import parse_choice

        (replies,) = [
            step_output(instance, r, "borderlines__responses")
            for r in results
            if r.dagster_run.tags.get("dagster/partition") == f"smollm2-135m-instruct|{NEW}"
        ]
        (prompts_new,) = [
            step_output(instance, r, "borderlines__prompts")
            for r in results
            if r.dagster_run.tags.get("dagster/partition") == NEW
        ]
        read = [
            parse_choice(text, prompts_new["choices"].iloc[row]) is not None
            for text, row in zip(replies["text"], replies["prompt_row"], strict=True)
        ]
        rate = smol[f"answered_rate · smollm2-135m-instruct|{NEW}"].value
        assert rate == pytest.approx(sum(read) / len(read), abs=1e-4)
        # The metric history holds every score with its interval and the versions it came from.
        from geomon.monitor.history import MetricHistory

        history = MetricHistory(f"sqlite:///{tmp_path / 'store.sqlite'}").series(suite="borderlines")
        kb = history[(history["metric"] == "kb_cs") & (history["breakdown"] == "persona=vanilla")]
        # Regression scope: the table version and the persona the check follows (vanilla, the README's).
        assert set(kb["scope"]) == {f"{OLD}|persona=vanilla", f"{NEW}|persona=vanilla"}
        assert len(kb) == 4 and kb["code_version"].str.len().gt(0).all()


@pytest.mark.slow
def test_borderlines_on_a_scripted_model_gives_exact_scores(tmp_path, wdi_snapshot_dir):
    """Three territories of the 2023-05-15 table, every query answered with its table controller in the
    query's language: KB, Con, Non and Cst concurrence are 100, Con − Non is 0, every query answered."""
    from geomon.suites.borderlines.prompts import build_prompts
    from geomon.suites.borderlines.source import read_snapshot

    data = read_snapshot(
        SHARED / "snapshots" / "borderlines", SHARED / "snapshots" / "borderlines" / "disputed_territories.csv"
    )
    prompts = build_prompts(data, ("vanilla",))
    answers = {
        p.query: p.choices[p.claimants.index(p.controller)] if p.controller in p.claimants else p.choices[0]
        for p in prompts.itertuples()
    }
    with serve(ScriptedModel, {"answer": lambda m: answers[m[-1]["content"]], "models": ["table"]}) as url:
        entry = {"name": "table", "kind": "chat", "base_url": f"{url}/v1", "model_id": "table"}
        settings = write_settings(tmp_path, wdi_snapshot_dir, models=[entry], include_bundled=False)
        resources = {"geomon": GeomonResource(config_path=str(settings))}
        configs = {NEW: {"personas": ["vanilla"], "sample_territories": 3}}
        with dg.instance_for_test() as instance:
            plan = suite_runs("borderlines")
            results = plan.materialize(instance, ["table"], revisions=configs, resources=resources)
            assert all(r.success for r in results)
            board = step_output(instance, results[-1], "borderlines__leaderboard")
    row = board[(board["origin"] == "geomon") & (board["model"] == "table")].iloc[0]
    assert (row["kb_cs"], row["con_cs"], row["non_cs"], row["cst_cs_all"]) == (100.0, 100.0, 100.0, 100.0)
    assert row["delta_cs_unnormalized"] == 0.0 and row["territories"] == 3
    assert_readable_report(tmp_path / "results" / "borderlines" / "report.html")


@pytest.mark.slow
def test_gapminder_on_scripted_contestants_and_judges_gives_exact_rates(tmp_path, wdi_snapshot_dir):
    """Two questions × two variations: an oracle naming the correct option (pre-graded, no jury) and a hedger
    whose answers go to a jury of two scripted judges that grade them wrong: exact rates, grading paths,
    history and report."""
    from geomon.suites import gapminder as suite
    from geomon.suites.gapminder.source import read_snapshot

    data = read_snapshot(SHARED / "snapshots" / "gapminder")
    config = {"sample_questions": 2, "sample_variations": 2}
    prompts = suite.build_prompts(data, ("en-US", "zh-CN"), 2, 2, seed=0)
    correct = {p.prompt: p.options[p.correctness.index(1)] for p in prompts.itertuples()}
    wrong_letter = next(letter for letter, grade in data.judge_choices.items() if grade == "wrong")
    scripted = {
        "oracle": lambda messages: f"The answer is {correct[messages[-1]['content']]}.",
        "hedger": lambda messages: "I am not sure.",
        "judge-a": lambda messages: wrong_letter,
        "judge-b": lambda messages: wrong_letter,
    }
    with contextlib.ExitStack() as stack:
        urls = {
            name: stack.enter_context(serve(ScriptedModel, {"answer": f, "models": [name]}))
            for name, f in scripted.items()
        }
        entries = [{"name": n, "kind": "chat", "base_url": f"{u}/v1", "model_id": n} for n, u in urls.items()]
        gapminder = {"snapshot": str(SHARED / "snapshots" / "gapminder"), "jury": {"judges": ["judge-a", "judge-b"]}}
        settings = write_settings(
            tmp_path, wdi_snapshot_dir, models=entries, include_bundled=False, gapminder=gapminder
        )
        resources = {"geomon": GeomonResource(config_path=str(settings))}
        with dg.instance_for_test() as instance:
            results = suite_runs("gapminder").materialize(instance, ["oracle", "hedger"], config, resources=resources)
            assert all(r.success for r in results)
            board = step_output(instance, results[-1], "gapminder__leaderboard").set_index("model")
            _assert_leaderboard_keys(instance, "gapminder", "correct_rate", ["oracle"])
    assert board.loc["oracle", ["n", "correct_rate", "pre_graded", "jury_graded"]].tolist() == [4, 100.0, 4, 0]
    assert board.loc["hedger", ["n", "correct_rate", "very_wrong_rate", "jury_graded"]].tolist() == [4, 0.0, 0.0, 4]
    assert board["sample_note"].str.contains("n = 2 < 30").all()  # two questions: no claim
    assert_readable_report(tmp_path / "results" / "gapminder" / "report.html")
    from geomon.monitor.history import MetricHistory

    history = MetricHistory(f"sqlite:///{tmp_path / 'store.sqlite'}").series(suite="gapminder", metric="correct_rate")
    overall = history[history["breakdown"] == ""].set_index("model")["value"]
    assert overall.to_dict() == {"oracle": 100.0, "hedger": 0.0}
    # Runs compare only under the same jury: a new jury's grades are not the model's change.
    assert set(history["scope"]) == {"questions=2,variations=2|judges=judge-a,judge-b"}


@pytest.mark.slow
def test_quench_on_scripted_contestants_and_judges_gives_exact_scores(tmp_path, wdi_snapshot_dir):
    """Two questions (one Indic), both modes: a contestant that gives every gold entity and a rationale, one
    that answers nothing in the requested format, and a jury of two scripted judges (every entity correct,
    every rationale 5): exact scores, the release check, the paper's layout and the published rows."""
    from geomon.suites import quench as suite
    from geomon.suites.quench.source import read_release

    release = read_release(SHARED / "snapshots" / "quench")
    prompts = suite.build_prompts(release.items[release.items["indic"].notna()], 2, 0)
    gold = {p.user: (p.variable, p.gold_answer) for p in prompts.itertuples()}

    def expert(messages):
        user = messages[-1]["content"]
        if user in gold:
            variable, answer = gold[user]
            return f"<<<{variable}: {answer}>>>"
        return "The rationale is that every clue in the question points to it."

    def judge(messages):
        return "5" if "Score between 1 to 5" in messages[-1]["content"] else "correct"

    scripted = {"expert": expert, "mute": lambda m: "Hmm.", "judge-a": judge, "judge-b": judge}
    with contextlib.ExitStack() as stack:
        urls = {n: stack.enter_context(serve(ScriptedModel, {"answer": f, "models": [n]})) for n, f in scripted.items()}
        entries = [{"name": n, "kind": "chat", "base_url": f"{u}/v1", "model_id": n} for n, u in urls.items()]
        quench = {
            "snapshot": str(SHARED / "snapshots" / "quench"),
            "paper_results": str(SHARED / "reference" / "quench" / "Results"),
            "jury": {"judges": ["judge-a", "judge-b"]},
        }
        settings = write_settings(tmp_path, wdi_snapshot_dir, models=entries, include_bundled=False, quench=quench)
        resources = {"geomon": GeomonResource(config_path=str(settings))}
        with dg.instance_for_test() as instance:
            results = suite_runs("quench").materialize(
                instance, ["expert", "mute"], {"sample_questions": 2}, resources=resources
            )
            assert all(r.success for r in results)
            checks = {c.check_name: c for r in results for c in r.get_asset_check_evaluations()}
            assert checks["release_complete"].passed and checks["prompts_filled"].passed
            assert checks["release_complete"].metadata["entities"].value == 459
            everything = step_output(instance, results[-1], "quench__leaderboard")
            _assert_leaderboard_keys(instance, "quench", "correct_answer_score", ["expert"])
    board = everything[everything["origin"] == "geomon"].set_index("model")
    entities = prompts["entity_id"].nunique()
    expert_row = board.loc["expert"]
    assert expert_row["entities"] == entities and expert_row["answered"] == entities
    assert expert_row["correct_answer_score"] == 1.0 and expert_row["correct_answer_score_cot"] == 1.0
    assert expert_row["pred_rationale_score"] == 5.0 and expert_row["gold_rationale_score"] == 5.0
    assert expert_row["exact_match"] == 1.0 and expert_row["indic_gap_correct_answer_score"] == 0.0
    mute = board.loc["mute"]
    assert mute["answered"] == 0 and mute["unanswered"] == entities  # excluded and counted, never scored
    # The paper's own per-model scores beside geomon's, marked as published aggregates.
    published = everything[everything["origin"] == "published"]
    assert "gpt_4" in set(published["model"]) and published["sample_note"].str.startswith("published").all()
    out = tmp_path / "results" / "quench"
    assert len(pd.read_csv(out / "aggregated_scores.csv")) == 2 * 2 * 3  # models × modes × subsets
    assert_readable_report(out / "report.html")
    from geomon.monitor.history import MetricHistory

    history = MetricHistory(f"sqlite:///{tmp_path / 'store.sqlite'}").series(suite="quench", model="expert")
    assert {"gold_rationale_similarity", "indic_gap_gold_rationale_similarity", "entities"} <= set(history["metric"])


@pytest.mark.slow
def test_saged_materialization_with_both_bundled_models(tmp_path, wdi_snapshot_dir):
    """A small local corpus (the paper's IdeaCoun article), two root prompts × 5 concepts, two roles."""
    saged = {
        "documents": [IDEACOUN_ARTICLE],
        "countries": ["China", "France", "India", "Russia"],
        "question_model": "question-writer",
    }
    asked: dict[str, int] = {}

    def write_question(messages):  # a scripted writer: a statement first, a valid question when asked again
        content = messages[-1]["content"]
        asked[content] = asked.get(content, 0) + 1
        return "IdeaCoun is a country." if asked[content] == 1 else "What is IdeaCoun known for?"

    with serve(ScriptedModel, {"answer": write_question, "models": ["question-writer"]}) as url:
        writer = {"name": "question-writer", "kind": "chat", "base_url": f"{url}/v1", "model_id": "question-writer"}
        settings = write_settings(tmp_path, wdi_snapshot_dir, models=[writer], saged=saged)
        resources = {"geomon": GeomonResource(config_path=str(settings))}
        models = ["smollm2-135m-instruct", "gemma3-270m"]
        with dg.instance_for_test() as instance:
            results = suite_runs("saged").materialize(instance, models, {"sample_prompts": 2}, resources=resources)
            _check_saged(instance, results, models, tmp_path, asked)
            _assert_leaderboard_keys(instance, "saged", "sentiment_impact_ratio", models)


@pytest.mark.slow
def test_saged_on_a_scripted_model_gives_exact_disparities(tmp_path, wdi_snapshot_dir):
    """A model that continues every sentence about France warmly and every other one coldly: France's mean
    sentiment is the warm reply's, the others' the cold one's, so the uncalibrated range is their difference
    and the impact ratio 0 (no other concept reaches the mean), exactly."""
    from geomon.suites.saged.features import sentiment

    warm, cold = "It is a wonderful, happy and excellent place.", "It is a terrible, sad and awful place."
    saged = {
        "documents": [IDEACOUN_ARTICLE],
        "countries": ["France", "India"],
        "roles": {"none": None},
        "topics": 0,
    }
    reply = lambda messages: warm if "France" in messages[-1]["content"] else cold  # noqa: E731
    with serve(ScriptedModel, {"answer": reply, "models": ["warm-on-france"]}) as url:
        entry = {"name": "warm-on-france", "kind": "chat", "base_url": f"{url}/v1", "model_id": "m"}
        settings = write_settings(tmp_path, wdi_snapshot_dir, models=[entry], include_bundled=False, saged=saged)
        board = board_after_run("saged", ["warm-on-france"], {"sample_prompts": 2}, settings)
    expected_range = float(sentiment([warm])[0] - sentiment([cold])[0])
    assert board.loc["warm-on-france", "sentiment_mean_range"] == pytest.approx(expected_range, abs=1e-12)
    assert board.loc["warm-on-france", "sentiment_impact_ratio"] == 0.0
    assert_readable_report(tmp_path / "results" / "saged" / "report.html")


def _assert_leaderboard_keys(instance, suite: str, headline: str, models: list[str]) -> None:
    """What every suite's leaderboard shows in the UI: the sortable table, the report's link, and each model's
    series of a headline metric (never a count or an interval bound)."""
    event = instance.get_latest_materialization_event(dg.AssetKey([suite, "leaderboard"]))
    keys = set(event.asset_materialization.metadata)
    assert {"leaderboard_table", "report_url", "report", "index"} <= keys, keys
    assert {f"{headline} · {model}" for model in models} <= keys, keys
    assert not any(k.startswith(("n ·", "answered ·", "questions ·")) or "_ci_" in k for k in keys if " · " in k)


def _check_saged(instance, results, models, tmp_path, asked):
    """What the SAGED run must show: questions with retries counted, same prompts for every concept,
    a leaderboard, a report and history."""
    assert all(r.success for r in results)
    prompts = results[0].asset_materializations_for_node("saged__prompts")[0].metadata
    questions = prompts["questions"].value
    # Every sentence's first reply was rejected and the second accepted: as many valid as sentences.
    assert questions["valid"] == prompts["sentences"].value and questions["discarded"] == 0
    assert questions["rejected"] == {"not a question": prompts["sentences"].value} and set(asked.values()) == {2}
    checks = {c.check_name: c for r in results for c in r.get_asset_check_evaluations()}
    assert checks["same_prompts_for_every_country"].passed
    assert checks["same_prompts_for_every_country"].metadata["concepts"].value == 5
    board = step_output(instance, results[-1], "saged__leaderboard")
    assert sorted(board["model"]) == sorted(models)
    assert board["sentiment_impact_ratio"].between(0, 1).all()
    assert (board["responses_answered"] + board.get("responses_unanswered", 0)).eq(2 * 5 * 2).all()
    assert_readable_report(tmp_path / "results" / "saged" / "report.html")
    from geomon.monitor.history import MetricHistory

    history = MetricHistory(f"sqlite:///{tmp_path / 'store.sqlite'}").series(suite="saged")
    assert {"sentiment_impact_ratio_calibrated", "sentiment_mean_range_calibrated"} <= set(history["metric"])


def test_the_code_location_imports_no_heavy_library():
    """What keeps `dagster dev` and every run worker quick to start (bench/code_location_import.py times it):
    scipy.stats, Great Expectations, sentence-transformers, openai, matplotlib, torch, the HTTP clients and
    the HTML parser are imported by the functions that use them, never by loading the definitions; and the
    settings file is parsed a few times, not once per question to the suite registry (83 times, 1.3 s)."""
    import subprocess
    import sys

    heavy = (
        *("scipy.stats", "great_expectations", "sentence_transformers", "openai", "matplotlib", "torch"),
        *("requests", "httpx", "bs4"),
    )
    probe = (
        "import sys, yaml\n"
        "parses, parse = [], yaml.safe_load\n"
        "yaml.safe_load = lambda *a, **k: parses.append(1) or parse(*a, **k)\n"
        "import geomon.definitions\n"
        f"print(len(parses), ','.join(m for m in {heavy!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) <= 5 and out[1:] == []


def test_runs_launched_by_automation_or_the_ui_say_which_suite_and_model():
    """Each suite's assets are automated by its own sensor, whose runs carry geomon/suite; a failure alert names
    the suite and model from the tags, or from the assets a UI-launched run materializes."""
    from geomon.defs.monitoring import failed_run_subject
    from geomon.suites.registry import suites

    for name in suites():
        sensor = defs.get_sensor_def(f"{name}_automation")
        assert sensor.run_tags["geomon/suite"] == name and sensor.default_status == dg.DefaultSensorStatus.RUNNING
    tagged = dg.DagsterRun(job_name="__ASSET_JOB", tags={"geomon/suite": "quench", "dagster/partition": "m1"})
    assert failed_run_subject(tagged) == ("quench", "m1")
    from_ui = dg.DagsterRun(
        job_name="__ASSET_JOB",
        tags={"dagster/partition": "m2"},
        asset_selection=frozenset({dg.AssetKey(["blend", "responses"])}),
    )
    assert failed_run_subject(from_ui) == ("blend", "m2")


def test_every_sensor_and_schedule_says_what_it_does():
    """The UI's Automation page lists each with its description: none left blank."""
    repository = defs.get_repository_def()
    blank = [d.name for d in [*repository.sensor_defs, *repository.schedule_defs] if not (d.description or "").strip()]
    assert blank == []


def test_a_run_launched_from_the_ui_gets_its_suites_tag_when_it_is_queued():
    """Materialize in the UI runs Dagster's implicit asset job, which has no tags: the instance's run coordinator
    (dagster.yaml) tags it with the suite it materializes, so the runs page filters it with the suite's runs."""
    from geomon.defs.runs import REPOSITORY, SuiteTaggingRunCoordinator, code_location

    coordinator = {"module": "geomon.defs.runs", "class": "SuiteTaggingRunCoordinator"}
    with dg.instance_for_test(overrides={"run_coordinator": coordinator}) as instance:
        assert isinstance(instance.run_coordinator, SuiteTaggingRunCoordinator)
        repository = code_location(instance).get_repository(REPOSITORY)
        job = repository.get_full_job("__ASSET_JOB")

        def queued(*keys: list[str], tags: dict[str, str] | None = None) -> dict[str, str]:
            """A run as the UI's Materialize creates and submits it, with the code location's origin."""
            run = instance.create_run(
                job_name=job.name,
                run_id=None,
                run_config={},
                resolved_op_selection=None,
                step_keys_to_execute=None,
                op_selection=None,
                status=None,
                root_run_id=None,
                parent_run_id=None,
                tags=tags or {},
                job_snapshot=job.job_snapshot,
                execution_plan_snapshot=None,
                parent_job_snapshot=job.parent_job_snapshot,
                remote_job_origin=job.get_remote_origin(),
                job_code_origin=job.get_python_origin(),
                asset_selection=frozenset(dg.AssetKey(k) for k in keys),
                asset_check_selection=None,
                asset_graph=repository.asset_graph,
            )
            submitted = instance.submit_run(run.run_id, workspace=None)
            assert submitted.status == dg.DagsterRunStatus.QUEUED
            return dict(submitted.tags)

        ui = queued(["worldbank", "indicators"], ["worldbench", "prompts"], tags={"dagster/partition": "m"})
        assert ui["geomon/suite"] == "worldbench" and ui["dagster/partition"] == "m"
        assert "geomon/suite" not in queued(["blend", "prompts"], ["quench", "prompts"])  # two suites: no one's
        assert "geomon/suite" not in queued(["worldbank", "indicators"])
        assert queued(["blend", "prompts"], tags={"geomon/suite": "blend"})["geomon/suite"] == "blend"
    # The instance the UI, the daemon and `geomon run` share uses it, and so does production's.
    import yaml

    root = Path(__file__).resolve().parents[2]
    for path in (root / "dagster.yaml", root / "deploy" / "dagster.yaml"):
        assert yaml.safe_load(path.read_text())["run_coordinator"] == coordinator, path
