"""A benchmark declared in one YAML file (examples/suites/capitals.yaml): registered like any suite, scored
as declared, run through the factory on scripted models with exact results, history and verdicts."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from geomon.defs.factory import suite_runs
from geomon.defs.resources import GeomonResource
from geomon.defs.runs import failed_checks
from geomon.monitor.history import MetricHistory
from geomon.suites import registry, yaml_suite
from geomon_tests.conftest import assert_readable_report, step_output, write_settings
from geomon_tests.loopback import ScriptedModel, serve

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "suites"
CAPITALS = pd.read_csv(EXAMPLES / "capitals.csv")


@pytest.fixture
def capitals(suite_folder):
    """The example folder named in GEOMON_SUITE_DIRS; the code location built again with it (and without it
    after the test: ``geomon.definitions`` builds the suites the registry finds when it is imported)."""
    suite_folder(EXAMPLES)
    return registry.module("capitals")


def test_the_yaml_file_is_a_suite(capitals):
    assert "capitals" in registry.suites() and capitals.SUITE.title == "Capitals"
    assert [m.name for m in capitals.TRACKED] == ["accuracy", "region_gap"]
    assert registry.profile_options("capitals", "quick", {})["sample"] == 20


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Brasilia.", 1.0),  # accents aside
        ("The capital is Washington, D.C.", 1.0),
        ("Sao Paulo", 0.0),
        ("", float("nan")),  # nothing to read: unanswered, not wrong
    ],
)
def test_the_normalised_scorer(capitals, reply, expected):
    decl = yaml_suite.read(EXAMPLES / "capitals.yaml")
    row = {"capital": "Brasília"} if "Bras" in reply or "Sao" in reply or not reply else {"capital": "Washington"}
    got = yaml_suite.correct(decl, reply, row)
    assert got == expected or (got != got and expected != expected)


def test_a_declaration_error_names_the_file_and_the_field(tmp_path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("name: broken\ntitle: B\ndata: missing.csv\nid: q\nanswer: a\nprompt: '{q}'\nscorer: fuzzy\n")
    with pytest.raises(registry.SuiteError, match=r"broken\.yaml: scorer 'fuzzy'; one of exact, normalised"):
        yaml_suite.read(bad)


def test_capitals_end_to_end_on_scripted_models(capitals, tmp_path, wdi_snapshot_dir):
    """An oracle, and a successor right only in Europe and the Americas: accuracy 100 and 50, region gap 0
    and 100, and the successor's drop is a regression against its predecessor."""
    by_country = dict(zip(CAPITALS["country"], CAPITALS["capital"], strict=True))
    region = dict(zip(CAPITALS["country"], CAPITALS["region"], strict=True))

    def country(messages) -> str:
        return messages[-1]["content"].split("capital city of ")[1].split("?")[0]

    def oracle(messages):
        return f"The capital is {by_country[country(messages)]}."

    def regional(messages):
        name = country(messages)
        return by_country[name] if region[name] in ("Europe", "Americas") else "I think it is Atlantis."

    with (
        serve(ScriptedModel, {"answer": oracle, "models": ["oracle"]}) as right,
        serve(ScriptedModel, {"answer": regional, "models": ["regional"]}) as half,
    ):
        models = [
            {"name": "oracle", "kind": "chat", "base_url": f"{right}/v1", "model_id": "oracle"},
            {
                "name": "regional",
                "kind": "chat",
                "base_url": f"{half}/v1",
                "model_id": "regional",
                "predecessor": "oracle",
            },
        ]
        settings = write_settings(tmp_path, wdi_snapshot_dir, models=models, include_bundled=False)
        resources = {"geomon": GeomonResource(config_path=str(settings))}
        with dg.instance_for_test() as instance:
            results = suite_runs("capitals").materialize(instance, ["oracle"], {"sample": 0}, resources=resources)
            results += suite_runs("capitals").materialize(instance, ["regional"], {"sample": 0}, resources=resources)
            assert all(r.success for r in results)
            board = step_output(instance, results[-1], "capitals__leaderboard").set_index("model")
    assert board.loc["oracle", "accuracy"] == 100 and board.loc["oracle", "region_gap"] == 0
    assert board.loc["regional", "accuracy"] == 50 and board.loc["regional", "region_gap"] == 100
    assert board.loc["regional", "answered"] == 40
    (check,) = [c for c in failed_checks(results) if c.check_name == "no_regression"]
    assert check.partition == "regional"
    assert "| accuracy " in check.metadata["comparisons"].value  # the readable table; the numbers from the history
    stored = MetricHistory(f"sqlite:///{tmp_path / 'store.sqlite'}").comparisons(
        [check.metadata["evaluation_id"].value]
    )
    verdicts = {(r["metric"], r["breakdown"]): r for r in stored.to_dict("records")}
    assert verdicts[("accuracy", "")]["verdict"] == "regression" and verdicts[("accuracy", "")]["change"] == -50
    # The gap between regions is a disparity resting on its smallest region's ten countries: shown, never paged.
    gap = verdicts[("region_gap", "")]
    assert gap["verdict"] == "insufficient sample" and gap["change"] == 100 and gap["clusters"] == 10
    assert verdicts[("accuracy", "region=Africa")]["verdict"] == "insufficient sample"  # ten countries
    history = MetricHistory(f"sqlite:///{tmp_path / 'store.sqlite'}").series(suite="capitals", metric="accuracy")
    overall = history[history["breakdown"] == ""].set_index("model")["value"].to_dict()
    assert overall == {"oracle": 100.0, "regional": 50.0}
    assert_readable_report(tmp_path / "results" / "capitals" / "report.html")


def test_the_scope_names_the_declaration_and_its_data(tmp_path):
    """Evaluations are compared only within a scope: a changed question set is a new scope, not a regression."""
    import shutil
    from types import SimpleNamespace

    for name in ("capitals.yaml", "capitals.csv"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    scores = pd.DataFrame(
        {"question_id": ["a", "b"], "region": ["Africa", "Europe"], "value": [100.0, 0.0], "status": "answered"}
    )

    def scope() -> str:
        stage = yaml_suite.load(tmp_path / "capitals.yaml").PIPELINE.stage("disparity")
        return stage.run(SimpleNamespace(options={"sample": 0}), scores=scores).tracked.scope

    before = scope()
    (tmp_path / "capitals.csv").write_text((tmp_path / "capitals.csv").read_text().replace("Algiers", "Alger"))
    assert scope() != before
