"""Run profiles, one meaning everywhere: the UI's default materialization and automation (no run config)
ask exactly what ``geomon run --profile`` asks for the automation profile, and never the full benchmark
unless the profile says so."""

from __future__ import annotations

import re

import dagster as dg
import pytest

from geomon.config import ConfigError, load_settings
from geomon.definitions import defs
from geomon.defs.resources import GeomonResource
from geomon.plan import run_config
from geomon.suites import registry
from geomon_tests.conftest import SHARED, automation_tick, write_settings

PROMPTS = dg.AssetKey(["worldbench", "prompts"])


def _prompts_without_config(instance, settings) -> int:
    """What a click on Materialize in the UI (or an automation run) asks: no run config at all."""
    result = dg.materialize(
        [*defs.assets, *defs.asset_checks],
        instance=instance,
        selection=dg.AssetSelection.assets(["worldbank", "economies"], ["worldbank", "indicators"], PROMPTS.path),
        resources={"geomon": GeomonResource(config_path=str(settings))},
    )
    plan = result.asset_materializations_for_node("worldbench__prompts")[0].metadata["plan"].value
    # The prompts asset shows what they will ask each registered model, before anyone asks.
    asks = len(result.output_for_node("worldbench__prompts"))
    plain = plan.replace("\\", "")  # Markdown escapes
    assert "smollm2-135m-instruct" in plain and "gemma3-270m" in plain
    assert f"{asks} prompts" in plain  # the same for every model, above the table
    assert len(re.findall(rf"\|\s+{asks} \(\d+ stored\)\s+\|", plain)) >= 2  # asks, for each model
    assert "mean_error" in plain
    return len(result.output_for_node("worldbench__prompts"))


@pytest.mark.parametrize("profile", ["quick", "default"])
def test_the_ui_default_and_automation_ask_what_geomon_run_asks(tmp_path, wdi_snapshot_dir, profile):
    from geomon.sources.worldbank import read_snapshot
    from geomon.suites import worldbench

    path = write_settings(tmp_path, wdi_snapshot_dir, automation_profile=profile)
    settings = load_settings(path)
    info = registry.suites()["worldbench"]
    _, config = run_config(settings, info, {}, profile)  # geomon run --profile P, no flags
    assert config["sample_countries"] == info.profiles[profile]["sample_countries"]  # never 0 = every country
    snapshot = read_snapshot(wdi_snapshot_dir)
    cli = worldbench.build_prompts(
        snapshot, countries=worldbench.sample_countries(snapshot, config["sample_countries"])
    )
    with dg.instance_for_test() as instance:
        assert _prompts_without_config(instance, path) == len(cli)
        # Automation requests the same assets with no run config either: the prompts it would build are these.
        tick = automation_tick(defs, instance)
        assert not tick.get_requested_partitions(PROMPTS)  # already up to date: nothing re-asked


def test_profiles_in_geomon_yaml_override_and_are_checked(tmp_path, wdi_snapshot_dir):
    path = write_settings(
        tmp_path,
        wdi_snapshot_dir,
        profiles={"weekly": {"blend": {"sample_questions": 30}}},
        automation_profile="weekly",
    )
    settings = load_settings(path)
    assert settings.run_options("blend")["sample_questions"] == 30
    assert settings.run_options("blend", "paper")["sample_questions"] == 0  # the paper's full size
    assert settings.run_options("gapminder", "weekly") == settings.run_options("gapminder", "paper")
    with pytest.raises(ConfigError, match="unknown run profile 'nightly'"):
        settings.run_options("blend", "nightly")
    bad = write_settings(tmp_path, wdi_snapshot_dir, profiles={"weekly": {"blend": {"sample_countries": 3}}})
    with pytest.raises(ConfigError, match=r"profiles\.weekly\.blend: unknown option\(s\) \['sample_countries'\]"):
        load_settings(bad)


def test_a_sample_is_a_decision_one_models_run_never_changes_anothers_and_a_new_sample_marks_the_old_stale(
    tmp_path, wdi_snapshot_dir
):
    """Model a answered 3 questions per country. A click in the UI for model b (prompts and responses, no run
    config, a profile of 8) keeps a's sample; only a run that sets a new size changes it, and then a's
    answers are stale, automation re-runs them, and the leaderboard says its rows are on two samples."""
    from dagster._core.definitions.data_version import StaleStatus
    from dagster._utils.test.data_versions import get_stale_status_resolver

    from geomon.defs.runs import register_models
    from geomon_tests.loopback import ScriptedModel, serve

    prompts, responses = dg.AssetKey(["blend", "prompts"]), dg.AssetKey(["blend", "responses"])
    per_model = [["blend", stage] for stage in ("responses", "scores", "disparity")]
    with serve(ScriptedModel, {"answer": lambda messages: "Tea", "models": ["a", "b"]}) as url:
        models = [{"name": m, "kind": "chat", "base_url": f"{url}/v1", "model_id": m} for m in ("a", "b")]
        section = {"snapshot": str(SHARED / "snapshots" / "blend"), "countries": ["UK", "Spain"]}
        path = write_settings(tmp_path, wdi_snapshot_dir, models=models, include_bundled=False, blend=section)
        with dg.instance_for_test() as instance:
            register_models(instance, ["a", "b"])

            def run(*keys: list[str], partition: str | None = None, questions: int | None = None):
                config = {"blend__prompts": {"config": {"sample_questions": questions}}} if questions else {}
                result = dg.materialize(
                    [*defs.assets, *defs.asset_checks],
                    instance=instance,
                    selection=dg.AssetSelection.assets(*keys),
                    partition_key=partition,
                    resources={"geomon": GeomonResource(config_path=str(path))},
                    run_config={"ops": config},
                )
                assert result.success
                return result

            def sample(result) -> str:
                return result.asset_materializations_for_node("blend__prompts")[0].metadata["sample"].value

            def stale(partition: str) -> bool:
                resolver = get_stale_status_resolver(instance, list(defs.resolve_asset_graph().assets_defs))
                return resolver.get_status(responses, partition) == StaleStatus.STALE

            first = sample(run(["blend", "question_bank"], prompts.path, *per_model, partition="a", questions=3))
            ui_click = run(prompts.path, responses.path, partition="b")  # no run config: the profile says 8
            assert sample(ui_click) == first  # kept, not rebuilt at the profile's size
            assert not stale("a")

            automated = dg.AssetSelection.assets(responses)  # what automation would re-run
            tick = automation_tick(defs, instance, asset_selection=automated)
            second = sample(run(prompts.path, *per_model, partition="b", questions=5))  # a new sample, on purpose
            assert second != first and stale("a") and not stale("b")
            tick = automation_tick(defs, instance, asset_selection=automated, cursor=tick.cursor)
            assert "a" in tick.get_requested_partitions(responses)
            board = run(["blend", "leaderboard"]).output_for_node("blend__leaderboard").set_index("model")
    assert board.loc["a", "sample"] == first and board.loc["b", "sample"] == second
    assert f"other rows on {second}" in board.loc["a", "sample_note"]
    assert f"other rows on {first}" in board.loc["b", "sample_note"]


def reloaded_definitions() -> dg.Definitions:
    """The code location loaded afresh (Reload definitions), reading the instance as it is now."""
    import importlib
    import sys

    from geomon.defs.factory import declared

    declared.cache_clear()
    sys.modules.pop("geomon.definitions", None)
    return importlib.import_module("geomon.definitions").defs


def sample_label(instance: dg.DagsterInstance, node: str) -> str:
    """The ``sample`` of the latest materialization of the asset whose op is ``node``."""
    key = dg.AssetKey(node.split("__"))
    return instance.fetch_materializations(key, limit=1).records[0].asset_materialization.metadata["sample"].value


def test_the_prompts_jobs_launchpad_proposes_the_automation_profile():
    """Jobs → <suite>_prompts → Launchpad shows the sizes a launch will ask (not ``ops: {}``), and the asset's own
    launchpad the same (its options' defaults); its options say the profile's value and that one left at its
    default keeps the current sample. On an instance that held a
    sample when the code location loaded (a developer's ``make run``), the launchpad proposes that one instead:
    ``test_the_launchpad_proposes_the_sample_held…`` pins it. The code location and the declarations are built
    afresh here, from one instance: built apart (the module's at collection, a declaration after another test's
    instance), one may hold a sample the other does not know of."""
    from geomon.defs.factory import declared

    defs = reloaded_definitions()
    settings = load_settings()
    for name in registry.suites():
        pipeline = registry.suite(name).pipeline
        sizes = settings.run_options(name)
        if pipeline.revisions is not None or not sizes:
            continue
        op = "__".join([name, pipeline.prompts.name])
        proposed = defs.get_job_def(f"{name}_prompts").run_config_schema.config_type.fields["ops"].default_value
        fields = defs.get_assets_def(dg.AssetKey([name, pipeline.prompts.name])).op.config_schema.config_type.fields
        # The asset's own launchpad (Materialize ▾ → Open launchpad) shows the same sample as the job's
        shown = {o: v for o, v in proposed[op]["config"].items() if v is not None}  # None: the field left out
        assert {o: fields[o].default_value for o in shown} == {o: v for o, v in shown.items()}
        if "no sample materialized yet" not in declared(name).plan.proposed_note:
            assert proposed == {op: {"config": declared(name).plan.prompts_options}}
            continue
        assert proposed == {op: {"config": sizes}}
        assert all(f"automation profile: {sizes[o]};" in fields[o].description for o in sizes)


def test_the_launchpad_proposes_the_sample_held_and_a_new_sample_above_the_limits_stops(
    tmp_path, wdi_snapshot_dir, monkeypatch
):
    """The store holds BLEnD at quick's 2 questions per country: the launchpad proposes them and names quick. A run
    that grows the sample to an estimate above confirm_above_minutes stops before any model is asked, with a
    ``geomon:`` line saying how to confirm, and leaves nothing behind: the asset not Failed, its blocking check not
    left unevaluated (automation would wait on it), no stack trace; ``confirm: true`` goes ahead; a run keeping the
    sample never stops."""
    from geomon.defs.runs import register_models
    from geomon.defs.samples import REFUSED_TAG, sample_in_use
    from geomon.defs.sensors import blocked_by_checks
    from geomon.engine.client import GenerationRequest, GenerationResult
    from geomon.engine.runner import model_identity

    model = {"name": "a", "kind": "chat", "base_url": "http://127.0.0.1:9/v1", "model_id": "a"}  # never called
    section = {"snapshot": str(SHARED / "snapshots" / "blend"), "countries": ["UK", "Spain"]}
    path = write_settings(
        tmp_path, wdi_snapshot_dir, models=[model], include_bundled=False, blend=section, confirm_above_minutes=0.5
    )
    home = tmp_path / "dagster"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("GEOMON_CONFIG", str(path))
    settings = load_settings(path)
    spec = settings.model("a")
    # The model's pace is known (an answer stored, 2 s, under another key): the plan can estimate.
    asked = GenerationRequest("chat", messages=({"role": "user", "content": "Tea?"},))
    result = GenerationResult("tea", prompt_tokens=20, completion_tokens=2, latency_s=2.0)
    settings.store().put("pace", "a", model_identity(spec), "other-epoch", asked, result, "openai")

    loaded = {"defs": defs}  # the code location as a UI loaded it before this test's instance held a sample

    def prompts(config: dict) -> dg.ExecuteInProcessResult:
        return dg.materialize(
            [*loaded["defs"].assets, *loaded["defs"].asset_checks],
            instance=instance,
            selection=dg.AssetSelection.assets(["blend", "question_bank"], ["blend", "prompts"]),
            resources={"geomon": GeomonResource(config_path=str(path))},
            run_config={"ops": {"blend__prompts": {"config": config}}},
        )

    with dg.DagsterInstance.get() as instance:
        register_models(instance, ["a"])
        assert prompts({"sample_questions": 2, "confirm": True}).success  # `make run` at quick
        proposed, where = sample_in_use("blend", ["blend", "prompts"])
        assert proposed["sample_questions"] == 2 and "profile quick" in where
        # A code location loaded before (the UI's): its launchpads propose the default profile's sample; launched
        # unchanged, that proposal keeps the sample held now and says so (automation runs with the same defaults)
        held_label = sample_label(instance, "blend__prompts")
        default = registry.profile_options("blend", "default", {})["sample_questions"]
        stale = prompts({"sample_questions": default})
        assert sample_label(instance, "blend__prompts") == held_label  # rebuilt on the sample held
        warned = [r.user_message for r in instance.all_logs(stale.run_id) if r.level == 30]
        assert any("kept the sample the store holds (sample_questions 2)" in w for w in warned), warned
        loaded["defs"] = reloaded_definitions()  # Reload definitions: the launchpads propose the sample held, 2
        # The default profile's questions in the UK (English) and Spain (Spanish and English): 3 asks a question,
        # 2 s each, 4 at a time — minutes, above the 0.5 allowed.
        stop = rf"^geomon: blend prompts at sample_questions {default}, seed 0 \(profile default\) refused: .* "
        stop += r"about \d+ min .*nothing was asked.*confirm: true"
        refused = prompts({"sample_questions": default})
        assert refused.success  # no stack trace, and the asset is not Failed: nothing was materialized
        assert refused.asset_materializations_for_node("blend__prompts") == []
        logged = [r.user_message for r in instance.all_logs(refused.run_id) if r.level >= 40]
        assert len(logged) == 1 and re.match(stop, logged[0]) and "Traceback" not in logged[0], logged
        tag = instance.get_run_by_id(refused.run_id).tags[REFUSED_TAG]  # the runs list says which sample, and why
        assert tag.startswith(f"sample_questions {default}, seed 0: about ") and "confirm_above_minutes 0.5" in tag
        # Its blocking check restates the result held (Dagster planned it; left Skipped, automation would wait)
        check = dg.AssetCheckKey(dg.AssetKey(["blend", "prompts"]), "prompts_filled")
        latest = instance.event_log_storage.get_latest_asset_check_execution_by_key([check])[check]
        assert (latest.run_id, latest.status.value) == (refused.run_id, "SUCCEEDED")
        assert not [k for k in blocked_by_checks(instance, defs.resolve_asset_graph()) if k.startswith("blend/")]
        assert sample_in_use("blend", ["blend", "prompts"])[0]["sample_questions"] == 2  # nothing changed
        # A run that ended before its blocking check ran (a crash, a termination) holds automation: the sensor says so
        job = defs.resolve_implicit_global_asset_job_def()
        crashed = instance.create_run_for_job(job, asset_selection={dg.AssetKey(["blend", "prompts"])})
        instance.report_run_failed(crashed)
        why = blocked_by_checks(instance, defs.resolve_asset_graph())["blend/prompts:prompts_filled"]
        assert why.startswith(f"never ran: run {crashed.run_id[:8]} ended failure before it"), why
        assert prompts({}).success  # a click on Materialize keeps the sample: not stopped
        grown = prompts({"sample_questions": default, "confirm": True})
        assert len(grown.output_for_node("blend__prompts")) > 1000
