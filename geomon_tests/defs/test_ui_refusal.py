"""A sample above the limits, launched from the Dagster UI as a person would (headless Chromium at 1440 × 900, the
``blend_prompts`` job's launchpad, ``sample_questions: 400``, Launch): the run refuses it with one ``geomon:`` line,
nothing is asked of the model, and afterwards ``blend/prompts`` is not red, its blocking check reads as before, and
the sensor that says why automation waits finds nothing to wait on. Dagster validates a launch's config by its types
only (docs/operations.md), so the refusal is the run's: this test pins what that run leaves behind."""

from __future__ import annotations

import re

import dagster as dg
import pytest
import requests

from geomon.report.browser import chromium_path, dagster_ui, headless_page
from geomon_tests.conftest import SHARED, write_settings

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(chromium_path() is None, reason="no Chromium: apt-get install chromium"),
]

PROMPTS = ["blend", "prompts"]
RUN = """
query($id: ID!) { runOrError(runId: $id) { ... on Run { status tags { key value }
  eventConnection { events { __typename ... on MessageEvent { message level } } } } } }
"""
ASSET = """
query($path: [String!]!) { assetNodeOrError(assetKey: {path: $path}) { ... on AssetNode {
  assetMaterializations(limit: 1) { runId }
  assetCheckOrError(checkName: "prompts_filled") { ... on AssetCheck {
    executionForLatestMaterialization { runId status } } } } }
  assetsLatestInfo(assetKeys: [{path: $path}]) { latestRun { status } } }
"""
SENSOR_DRY_RUN = """
mutation { sensorDryRun(selectorData: {repositoryLocationName: "geomon", repositoryName: "__repository__",
  sensorName: "blocked_automation_sensor"}, cursor: "") { ... on DryRunInstigationTick {
    evaluationResult { skipReason runRequests { runKey } error { message } } } ... on PythonError { message } } }
"""


def test_a_sample_above_the_limits_launched_from_the_launchpad_is_refused_and_blocks_nothing(
    tmp_path, wdi_snapshot_dir, monkeypatch
):
    from geomon.config import load_settings
    from geomon.defs.resources import GeomonResource
    from geomon.defs.runs import register_models
    from geomon.defs.samples import REFUSED_TAG
    from geomon.engine.client import GenerationRequest, GenerationResult
    from geomon.engine.runner import model_identity
    from geomon_tests.loopback import ScriptedModel, serve

    asked = {"answer": lambda messages: "tea", "models": ["a"]}
    with serve(ScriptedModel, asked) as model_url:
        model = {"name": "a", "kind": "chat", "base_url": f"{model_url}/v1", "model_id": "a"}
        section = {"snapshot": str(SHARED / "snapshots" / "blend"), "countries": ["UK", "Spain"]}
        path = write_settings(
            tmp_path, wdi_snapshot_dir, models=[model], include_bundled=False, blend=section, confirm_above_minutes=0.5
        )
        home = tmp_path / "home"
        home.mkdir()
        # The webserver alone, launching runs at once (Dagster's default coordinator): no daemon, so no automation
        # run asks the model behind the test's back.
        (home / "dagster.yaml").write_text(
            "telemetry:\n  enabled: false\nnux:\n  enabled: false\nrun_coordinator:\n"
            "  module: dagster._core.run_coordinator\n  class: DefaultRunCoordinator\n"
        )
        monkeypatch.setenv("DAGSTER_HOME", str(home))
        monkeypatch.setenv("GEOMON_CONFIG", str(path))  # the code location the UI loads reads the same settings
        settings = load_settings(path)
        # The model's pace is known (an answer stored, 2 s, under another key): the plan can estimate.
        pace = GenerationRequest("chat", messages=({"role": "user", "content": "Tea?"},))
        result = GenerationResult("tea", prompt_tokens=20, completion_tokens=2, latency_s=2.0)
        settings.store().put("pace", "a", model_identity(settings.model("a")), "other-epoch", pace, result, "openai")
        from geomon.definitions import defs

        with dg.DagsterInstance.get() as instance:  # the store holds BLEnD at 2 questions (quick), checked
            register_models(instance, ["a"])
            held = dg.materialize(
                [*defs.assets, *defs.asset_checks],
                instance=instance,
                selection=dg.AssetSelection.assets(["blend", "question_bank"], PROMPTS),
                resources={"geomon": GeomonResource(config_path=str(path))},
                run_config={"ops": {"blend__prompts": {"config": {"sample_questions": 2, "confirm": True}}}},
            )
            assert held.success

        with dagster_ui(home, ["-w", "workspace.yaml"]) as url:

            def graphql(query: str, **variables: object) -> dict:
                answer = requests.post(f"{url}/graphql", json={"query": query, "variables": variables}, timeout=120)
                return answer.json()["data"]

            with headless_page({"width": 1440, "height": 900}) as page:
                page.goto(f"{url}/locations/geomon/jobs/blend_prompts/playground", timeout=120_000)
                page.locator(".CodeMirror").first.wait_for(timeout=120_000)
                page.get_by_text("sample_questions").first.wait_for(timeout=120_000)
                config = page.evaluate("() => document.querySelector('.CodeMirror').CodeMirror.getValue()")
                assert re.search(r"sample_questions: 2\b", config), config  # the launchpad proposes the sample held
                typed = re.sub(r"sample_questions: 2\b", "sample_questions: 400", config)
                page.evaluate("v => document.querySelector('.CodeMirror').CodeMirror.setValue(v)", typed)
                page.get_by_role("button", name=re.compile("Launch run|Materialize", re.I)).last.click()
                page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}"), timeout=120_000)
                run_id = re.search(r"/runs/([0-9a-f-]{36})", page.url).group(1)
                for _ in range(600):  # a guard for a loaded machine, not a timing assertion
                    run = graphql(RUN, id=run_id)["runOrError"]
                    if run["status"] in {"SUCCESS", "FAILURE", "CANCELED"}:
                        break
                    page.wait_for_timeout(1000)
                errors = [e["message"] for e in run["eventConnection"]["events"] if e.get("level") == "ERROR"]
                # Refused by the run, with one geomon: line and no stack trace; the run's tag says which sample
                assert run["status"] == "SUCCESS", errors
                (line,) = errors
                assert line.startswith("geomon: blend prompts at sample_questions 400"), line
                assert "nothing was asked" in line and "confirm: true" in line and "Traceback" not in line
                tag = {t["key"]: t["value"] for t in run["tags"]}[REFUSED_TAG]
                assert tag.startswith("sample_questions 400") and "confirm_above_minutes 0.5" in tag
                assert asked.get("calls", 0) == 0  # nothing was asked of the model

                # blend/prompts is not red: its latest materialization is the sample held, its blocking check passed
                node = graphql(ASSET, path=PROMPTS)
                assert node["assetNodeOrError"]["assetMaterializations"][0]["runId"] == held.run_id
                check = node["assetNodeOrError"]["assetCheckOrError"]["executionForLatestMaterialization"]
                assert (check["runId"], check["status"]) == (run_id, "SUCCEEDED"), check  # restated on the sample held
                assert node["assetsLatestInfo"][0]["latestRun"]["status"] == "SUCCESS"
                page.goto(f"{url}/assets/blend/prompts", timeout=120_000)
                page.get_by_text("Latest check results").first.wait_for(timeout=120_000)
                page.wait_for_load_state("networkidle", timeout=120_000)
                shown = page.inner_text("body")
                assert "Failed" not in shown and "Execution failed" not in shown, shown[:2000]
                page.screenshot(path=str(tmp_path / "blend-prompts.png"))
                assert page.errors == []

            # The sensor that says why automation waits (Automation → blocked_automation_sensor → Test sensor)
            tick = graphql(SENSOR_DRY_RUN)["sensorDryRun"]["evaluationResult"]
            assert tick["error"] is None and tick["runRequests"] == []
            assert tick["skipReason"] == "no blocking check holds automation back", tick
