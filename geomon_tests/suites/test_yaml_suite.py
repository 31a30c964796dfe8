"""A benchmark declared in one YAML file (examples/suites/capitals.yaml): registered like any suite, scored
as declared, run through the factory on scripted models with exact results, history and verdicts."""

from __future__ import annotations

import dataclasses
import math
import re
import sys
import unicodedata
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geomon import parsing
from geomon.defs.factory import suite_runs
from geomon.defs.resources import GeomonResource
from geomon.defs.runs import failed_checks
from geomon.monitor.history import MetricHistory
from geomon.suites import kit, registry, yaml_suite
from geomon_tests.conftest import assert_readable_report, step_output, write_settings
from geomon_tests.loopback import ScriptedBaseModel, ScriptedModel, serve

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "suites"
CAPITALS = pd.read_csv(EXAMPLES / "capitals.csv")


@pytest.fixture
def capitals(suite_folder):
    """The example folder named in GEOMON_SUITE_DIRS; the code location built again with it (and without it
    after the test: ``geomon.definitions`` builds the suites the registry finds when it is imported)."""
    suite_folder(EXAMPLES)
    return registry.suite("capitals")


def test_the_yaml_file_is_a_suite(capitals):
    """A YAML suite is built straight into the registry's record: no module stands in for it."""
    assert "capitals" in registry.suites() and capitals.info.title == "Capitals"
    assert [m.name for m in capitals.tracked] == ["accuracy", "answered_rate", "region_gap"]
    assert capitals.source == EXAMPLES / "capitals.yaml" and "geomon.suites.capitals" not in sys.modules
    with pytest.raises(registry.SuiteError, match=r"suite capitals is declared in .*capitals\.yaml"):
        registry.module("capitals")
    assert registry.profile_options("capitals", "quick", {})["sample"] == 20


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Brasilia.", 1.0),  # accents on Latin letters aside
        ("The capital is Washington, D.C.", 1.0),
        ("Sao Paulo", 0.0),
        ("", float("nan")),  # nothing to read: unanswered, not wrong
    ],
)
def test_the_normalised_scorer(capitals, reply, expected):
    decl = yaml_suite.read(EXAMPLES / "capitals.yaml")
    row = {"capital": "Brasília"} if "Bras" in reply or "Sao" in reply or not reply else {"capital": "Washington"}
    got = yaml_suite.correct(decl, reply, row).value
    assert got == expected or (got != got and expected != expected)


def test_a_wrong_reply_shows_what_was_read(capitals):
    """`geomon items`' parsed column: the accepted answer named, or for a wrong reply the reply as compared."""
    decl = yaml_suite.read(EXAMPLES / "capitals.yaml")
    assert yaml_suite.correct(decl, "Brasília!", {"capital": "Brasília"}).answer == "Brasília"
    assert yaml_suite.correct(decl, "São Paulo.", {"capital": "Brasília"}) == kit.Reading(0.0, "sao paulo")


EVERYDAY = yaml_suite.read(EXAMPLES / "everyday.yaml")


def _old_normalised(reply: str, gold: str) -> float:
    """The scorer ``normalised`` was before: folded to ASCII, so a reply in a script ASCII has not named every
    gold answer in that script (右 for 左), and the gold's separator was text ("rice|noodles")."""

    def fold(text: str) -> str:
        ascii_only = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
        return " ".join(re.sub(r"[^\w\s]", " ", ascii_only).split())

    return float(f" {fold(gold)} " in f" {fold(reply)} ")


def _old_regex(reply: str, gold: str, pattern: str) -> float:
    return float(re.search(pattern.replace("{answer}", re.escape(gold)), reply, re.I) is not None)


def _old_choice(reply: str, gold: str, options: list[str]) -> float:
    chosen = parsing.parse_choice(reply, options)  # the first option named: an echo picked the first
    return float("nan") if chosen is None else float(options[chosen] == gold)


# (scorer, what the file declares beside it, the row's answers and candidates, the reply, the new value, what is
# refused, the old scorer's value): every reply scored differently by the old scorer.
CASES = [
    ("normalised", {}, "左", "左|右", "右", 0.0, "", 1.0),  # a wrong answer in the same script
    ("normalised", {}, "左", "左|右", "我不知道", 0.0, "hedge: 我不知道", 1.0),
    ("normalised", {}, "左", "左|右", "左还是右", 0.0, "several candidates: 左, 右", 1.0),  # the candidates echoed
    ("normalised", {}, "बाएं", "बाएं|दाएं", "दाएं", 0.0, "", 1.0),
    ("normalised", {}, "बाएं", "बाएं|दाएं", "मुझे नहीं पता", 0.0, "hedge: मुझे नहीं पता", 1.0),
    ("normalised", {}, "چپ", "چپ|راست", "راست", 0.0, "", 1.0),
    ("normalised", {}, "چپ", "چپ|راست", "نمی‌دانم", 0.0, "hedge: نمی‌دانم", 1.0),
    ("normalised", {}, "القاهرة", "القاهرة|الرياض", "الرياض", 0.0, "", 1.0),
    ("normalised", {}, "القاهرة", "القاهرة|الرياض", "لا أعرف", 0.0, "hedge: لا أعرف", 1.0),
    ("normalised", {}, "kulia", "kushoto|kulia", "kushoto au kulia", 0.0, "several candidates: kushoto, kulia", 1.0),
    ("normalised", {}, "kulia", "kushoto|kulia", "Sijui, labda kulia", 0.0, "hedge: sijui", 1.0),
    # several accepted answers, as a separator declares them or as a published list
    ("normalised", {"answer_separator": "|"}, "wali|tambi", "wali|tambi|mkate", "Tambi.", 1.0, "", 0.0),
    ("normalised", {}, '["米饭", "面条"]', "米饭|面条|面包", "面包", 0.0, "", 1.0),
    ("regex", {"answer_separator": "|", "pattern": "^\\W*{answer}\\W*$"}, "wali|tambi", "", "tambi", 1.0, "", 0.0),
    # partial credit: the share of the accepted answers named
    ("normalised", {"answer_separator": "|", "partial_credit": True}, "चावल|रोटी", "", "चावल", 0.5, "", 1.0),
]


@pytest.mark.parametrize(("scorer", "declared", "answers", "offered", "reply", "value", "refused", "old"), CASES)
def test_scorers_read_every_script(scorer, declared, answers, offered, reply, value, refused, old):
    decl = dataclasses.replace(EVERYDAY, scorer=scorer, **{"answer_separator": "", **declared})
    got = yaml_suite.correct(decl, reply, {"answers": answers, "candidates": offered})
    assert (got.value, got.refused) == (value, refused)
    was = _old_regex(reply, answers, decl.pattern) if scorer == "regex" else _old_normalised(reply, answers)
    assert was == old != value  # the old scorer read this reply otherwise


@pytest.mark.parametrize(
    ("reply", "value", "refused"),
    [
        ("靠右行驶", 1.0, ""),
        ("右还是左？", 0.0, "several candidates: 右, 左"),  # the old choice took the first named: right
        ("B", 1.0, ""),  # the letter of a candidate
        ("前面", math.nan, ""),  # no candidate: nothing read
    ],
)
def test_choice_over_a_candidate_column(reply, value, refused):
    decl = dataclasses.replace(EVERYDAY, scorer="choice")
    got = yaml_suite.correct(decl, reply, {"answers": "右", "candidates": "左|右"})
    assert got.refused == refused and (got.value == value or (math.isnan(got.value) and math.isnan(value)))
    assert _old_choice("右还是左？", "右", ["左", "右"]) == 1.0


def test_choice_over_option_columns_as_before_but_an_echo_is_refused():
    decl = dataclasses.replace(EVERYDAY, scorer="choice", candidates="", options=("a", "b"))
    row = {"answers": "Paris", "a": "Paris", "b": "London"}
    assert yaml_suite.correct(decl, "A) Paris", row).value == 1.0
    assert yaml_suite.correct(decl, "B", row) == kit.Reading(0.0, "London")  # what was read, shown
    echo = yaml_suite.correct(decl, "Paris or London", row)
    assert (echo.value, echo.refused) == (0.0, "several candidates: Paris, London")
    assert _old_choice("Paris or London", "Paris", ["Paris", "London"]) == 1.0


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ("scorer: logprob\n", r"scorer logprob needs candidates \(a column\) or options"),
        ("scorer: normalised\ngroups: [country]\ntable: [country]\n", r"table names two of the group columns"),
        ("scorer: normalised\ngroups: [country]\nsample_per: language\n", r"sample_per 'language' is not a group"),
        ("scorer: normalised\nhedges: sijui\n", r"hedges is a list"),
    ],
)
def test_a_multilingual_declaration_error_names_the_key(tmp_path, extra, error):
    (tmp_path / "q.csv").write_text("q,a,country,language\n1,x,A,en\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ntitle: B\ndata: q.csv\nid: q\nanswer: a\nprompt: '{q}'\n" + extra)
    with pytest.raises(registry.SuiteError, match=error):
        yaml_suite.load(bad)


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

    def scope() -> str:
        stage = yaml_suite.load(tmp_path / "capitals.yaml").pipeline.stage("disparity")
        # The questions scored, as the scores stage keeps them: the scope holds their content.
        asked = pd.read_csv(tmp_path / "capitals.csv", dtype=str)
        scores = asked.assign(prompt="?", reply="", parsed="", value=100.0, error="", status="answered")
        return stage.run(SimpleNamespace(options={"sample": 0}), scores=scores).tracked.scope

    before = scope()
    (tmp_path / "capitals.csv").write_text((tmp_path / "capitals.csv").read_text().replace("Algiers", "Alger"))
    assert scope() != before


EVERYDAY_ROWS = yaml_suite.read_questions(EVERYDAY, EVERYDAY.data).set_index("question")


def _row(question: str) -> pd.Series:
    return EVERYDAY_ROWS.loc[question.removesuffix("\nA:")]


def everyday_chat(messages) -> str:
    """A chat model right in English and Swahili, but: the wrong side of the road in Chinese for China and
    India (右 for 左 is the same script), "I don't know" in Hindi for every staple food question and in Swahili
    for Kenya's, the candidates echoed back in Persian for every road question, and China's second accepted
    staple food in English."""
    row = _row(messages[-1]["content"])
    concept, lang = row["concept_id"].split("-")[1], row["language"]
    offered, accepted = row["candidates"].split("|"), row["answers"].split("|")
    if concept == "drive" and lang == "zh" and row["country"] in ("China", "India"):
        return "靠" + next(c for c in offered if c not in accepted) + "行驶。"
    if concept == "staple" and (lang == "hi" or (lang == "sw" and row["country"] == "Kenya")):
        return {"hi": "मुझे नहीं पता।", "sw": "Sijui."}[lang]
    if concept == "drive" and lang == "fa":
        return " یا ".join(offered)
    return accepted[-1] if lang == "en" else f"{accepted[0]}."


def everyday_base(prompt: str, continuation: str) -> float:
    """A base model that finds the first accepted answer likeliest, but the wrong side of the road in Chinese."""
    row = _row(prompt)
    accepted = row["answers"].split("|")
    wrong_side = row["language"] == "zh" and row["concept_id"].endswith("drive")
    return -1.0 if (continuation.strip() == accepted[0]) != wrong_side else -3.0


def test_the_multilingual_example_end_to_end(tmp_path, wdi_snapshot_dir, suite_folder):
    """examples/suites/everyday.yaml on a scripted chat model through Dagster (its hedges and echoes refused, its
    wrong answers in the question's script wrong, every accepted answer right): accuracy, answer rate, the gaps
    and the country × language table, against the old normalised scorer's figures for the same replies."""
    suite_folder(EXAMPLES)
    with serve(ScriptedModel, {"answer": everyday_chat, "models": ["chat"]}) as chat:
        models = [{"name": "chat", "kind": "chat", "base_url": f"{chat}/v1", "model_id": "chat"}]
        settings = write_settings(tmp_path, wdi_snapshot_dir, models=models, include_bundled=False)
        resources = {"geomon": GeomonResource(config_path=str(settings))}
        with dg.instance_for_test() as instance:
            results = suite_runs("everyday").materialize(instance, ["chat"], {"sample": 0}, resources=resources)
            assert all(r.success for r in results)
            board = step_output(instance, results[-1], "everyday__leaderboard").set_index("model")
            done = {r.dagster_run.tags.get("dagster/partition"): r for r in results}
            result = step_output(instance, done["chat"], "everyday__disparity")
            scores = step_output(instance, done["chat"], "everyday__scores")
    # 50 questions: 11 refused (5 Hindi hedges, 5 Persian echoes, 1 Swahili hedge), 2 wrong in Chinese, 37 right.
    row = board.loc["chat"]
    assert row["accuracy"] == pytest.approx(74) and row["answered_rate"] == pytest.approx(78)
    assert row["answered"] == 39 and result["summary"]["refused"] == 11
    assert row["language_gap"] == pytest.approx(50) and row["country_gap"] == pytest.approx(10)
    groups = result["groups"].set_index(["metric", "group"])["value"]
    assert groups[("accuracy", "language=hi")] == pytest.approx(50)
    assert groups[("answered_rate", "language=fa")] == pytest.approx(50)
    table = result["table"].set_index(["country", "language"])["value"]
    assert len(table) == 25 and table[("China", "zh")] == pytest.approx(50) and table[("Kenya", "sw")] == 50
    # The old normalised scorer read the same replies otherwise: every reply in Chinese, Hindi and Persian right
    # (hedges, echoes and 右 for 左 among them), and an accepted answer of several ("noodles" of "rice|noodles")
    # wrong: 41 of 50.
    old = [_old_normalised(r, a) for r, a in zip(scores["reply"], scores["answers"], strict=True)]
    assert sum(old) == 41
    report = tmp_path / "results" / "everyday"
    assert {"groups-chat.csv", "answered_groups-chat.csv", "table-chat.csv"} <= {p.name for p in report.iterdir()}
    shown = (report / "report.html").read_text()
    assert "share answered per group" in shown and "accuracy by country × language" in shown
    assert_readable_report(report / "report.html")


def test_a_base_model_ranks_the_candidates_by_log_probability(tmp_path):
    """everyday.yaml's stages on a scripted llama.cpp base model through the engine and the response store: one
    scored continuation per candidate (25 road questions × 2, 25 staple food questions × 5), the likeliest the
    reply; every question answered, right but for the five Chinese road questions; a question one of whose
    candidates could not be scored is failed (excluded and counted), the others ranked as ever."""
    from geomon.engine.registry import ModelSpec
    from geomon.engine.runner import ask
    from geomon.engine.store import ResponseStore

    stage = {s.name: s for s in yaml_suite.load(EXAMPLES / "everyday.yaml").pipeline.stages}
    questions = yaml_suite.read_questions(EVERYDAY, EVERYDAY.data)
    store = ResponseStore(f"sqlite:///{tmp_path / 'store.sqlite'}")
    broken = lambda prompt, text: _row(prompt)["question_id"] == "gb-staple-en" and text == " ugali"  # noqa: E731
    state = {"logprob": everyday_base, "broken": broken, "answer": lambda prompt: "?", "models": ["base"]}
    with serve(ScriptedBaseModel, state) as url:
        spec = ModelSpec(name="base", kind="base", base_url=f"{url}/v1", model_id="base", supports_logprobs=True)
        context = SimpleNamespace(
            options={"sample": 0, "seed": 0}, spec=lambda: spec, ask=lambda s, r: (ask(s, r, store)[0], {})
        )
        prompts = stage["prompts"].run(context, questions=questions).value
        responses = stage["responses"].run(context, prompts=prompts)
    assert state["completions"] == 175 and responses.metadata["method"] == "rank classification"
    scores = stage["scores"].run(context, prompts=prompts, responses=responses.value).value
    summary = stage["disparity"].run(context, scores=scores).value["summary"]
    assert summary["failed"] == 1 and summary["answered"] == 49
    assert summary["accuracy"] == pytest.approx(100 * 44 / 49) and summary["answered_rate"] == 100


@settings(max_examples=200, deadline=None)
@given(reply=st.text(), answers=st.text(), offered=st.text(), scorer=st.sampled_from(["normalised", "choice", "regex"]))
def test_a_scorer_never_raises_and_reads_a_value_or_nothing(reply, answers, offered, scorer):
    decl = dataclasses.replace(EVERYDAY, scorer=scorer, pattern="{answer}")
    got = yaml_suite.correct(decl, reply, {"answers": answers, "candidates": offered})
    assert math.isnan(got.value) or 0.0 <= got.value <= 1.0
    assert not got.refused or got.value == 0.0


def test_a_kit_suites_stages_are_versioned_by_the_code_that_reads_its_answers(capitals):
    """An edit to the number or name reader (``geomon.parsing``), the jury or a YAML suite's scorers marks a kit
    suite's stages stale, as it does the bundled suites': otherwise `geomon run` would call the suite unchanged
    and keep scores read under the old rule (the audit's case: "3.5.2" read as 3.5 after the parser refused it).
    Mutation caught: the kit versioned by itself and the suite file alone."""
    from geomon import jury

    scores = capitals.pipeline.stage("scores")
    assert {parsing, jury, yaml_suite} <= set(scores.versioned_by)
    aliases = registry.suite("capital_aliases").pipeline.stage("scores")  # a Python suite on the kit
    assert {parsing, jury} <= set(aliases.versioned_by) and yaml_suite not in aliases.versioned_by
