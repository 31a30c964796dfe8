"""Evaluations made elsewhere, into the history: Gapminder's published results of real models (its per-question
rates, and per-answer files where complete), per-item outcome files of any benchmark, and what ``geomon history``
shows of them."""

from __future__ import annotations

import dataclasses
import io
import json

import pandas as pd
import pytest

from geomon.monitor import imports
from geomon.monitor.history import MetricHistory
from geomon.suites.gapminder import published, source
from geomon_tests.conftest import GAPMINDER_ENTITIES as ENTITIES
from geomon_tests.conftest import GAPMINDER_PUBLISHED, SHARED, published_gapminder

PUBLISHED = GAPMINDER_PUBLISHED / "ddf--datapoints--average_correct_rate--by--model_configuration.csv"
# Alibaba's seven releases and DeepSeek's three; per-answer files of Qwen 2 Max (60 of its 371 questions), Qwen
# 2.5 Max, DeepSeek V3 and R1 (finished over two days: two files).
CONFIGS = ["mc026", "mc031", "mc035", "mc039", "mc046", "mc062", "mc071", "mc047", "mc057", "mc063"]
ANSWERS = (
    "master_output_20250120.csv",
    "master_output_20250205.csv",
    "master_output_20250208.csv",
    "master_output_20250410.csv",
    "master_output_20250414-1.csv",
)


@pytest.fixture(scope="module")
def bank():
    return source.read_snapshot(SHARED / "snapshots" / "gapminder")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, bank) -> list[imports.ImportedRun]:
    folder = published_gapminder(tmp_path_factory.mktemp("gapminder"), CONFIGS, ANSWERS)
    return imports.published_runs("gapminder-results", published.evaluations(folder, ENTITIES, bank))


@pytest.fixture(scope="module")
def imported(runs, tmp_path_factory) -> tuple[MetricHistory, dict[str, imports.Recorded]]:
    """The ten configurations imported once into a history of their own, and each one's record by model: the
    tests below read it (importing the same runs again records nothing, which one of them checks)."""
    history = MetricHistory(f"sqlite:///{tmp_path_factory.mktemp('imported') / 'history.sqlite'}")
    return history, {r.run.model: r for r in imports.record_runs(history, runs)}


def test_rates_are_the_evaluation_and_complete_answer_files_add_the_families(runs):
    by_model = {r.model: r for r in runs}
    assert len(runs) == len(CONFIGS) and all(
        r.origin == f"import:gapminder-results:{c}"
        for r, c in [(by_model["deepseek-reasoner"], "mc057"), (by_model["qwen-max-1201"], "mc026")]
    )
    r1 = by_model["deepseek-reasoner"]
    assert r1.answers == 13140 + 11680 and str(r1.evaluated_at.date()) == "2025-04-10"  # its first experiment
    assert r1.vendor == "DeepSeek" and str(r1.released) == "2025-01-20" and r1.predecessor == "deepseek-v3"
    assert any(m.breakdown.startswith("family=") for m in r1.metrics) and not r1.note
    # Qwen 2 Max's per-answer file holds 60 of the 371 questions it was published on: its rates stand alone.
    qwen2 = by_model["qwen-max-2024-09-19"]
    assert qwen2.note == "its per-answer files hold 60 of its 371 questions: rates only" and qwen2.answers == 0
    assert not any(m.breakdown.startswith("family=") for m in qwen2.metrics) and len(qwen2.items) == 371
    assert (
        by_model["qwen-max-1201"].note == published.RATES_ONLY
        and by_model["qwen-max-0403"].predecessor == "qwen-max-1201"
    )


def test_correct_rates_are_the_published_ones(runs):
    """Gapminder's own average_correct_rate per configuration (published in whole percent) from the same rates,
    with a question-clustered interval."""
    published = pd.read_csv(PUBLISHED).set_index("model_configuration")["average_correct_rate"]
    for run in runs:
        config = run.origin.split(":")[2]
        rate = next(m for m in run.metrics if m.metric == "correct_rate" and m.breakdown == "")
        assert abs(rate.value - published[config]) <= 1, run.model
        assert rate.ci_low < rate.value < rate.ci_high and rate.n >= 280  # its questions


def _verdicts(recorded: imports.Recorded) -> dict[str, dict]:
    return {v.metric: vars(v) for v in recorded.tracked.verdicts if not v.breakdown}


def test_every_published_question_is_compared(imported):
    """Qwen 2 → 2.5 Max: 4.6 points fewer correct on the 365 questions both were published on, not the 60 of
    Qwen 2's per-answer file."""
    _, recorded = imported
    qwen25 = _verdicts(recorded["qwen-max-2025-01-25"])["correct_rate"]
    assert qwen25["against"] == "predecessor qwen-max-2024-09-19" and qwen25["clusters"] == 365
    assert qwen25["change"] == pytest.approx(-4.55, abs=0.01) and qwen25["p_value"] < 0.01


def test_releases_are_compared_with_the_vendors_previous_one(runs, imported, tmp_path):
    history, recorded = imported
    assert recorded["qwen-max-2025-01-25"].predecessor == "qwen-max-2024-09-19"
    assert recorded["deepseek-reasoner"].predecessor == "deepseek-v3"
    assert recorded["deepseek-v3"].tracked.verdicts == [] and recorded["qwen-max-1201"].tracked.verdicts == []
    r1 = _verdicts(recorded["deepseek-reasoner"])
    # R1 answers about 9 points more questions correctly than V3: change is after − before, positive, and better
    # (correct_rate is worse when lower).
    correct = r1["correct_rate"]
    assert correct["verdict"] == "improvement" and correct["change"] > 5 and correct["worse_when"] == "lower"
    # Decided with the suite's other comparisons (very_wrong_rate, the topics with 30 questions or more).
    assert correct["p_adjusted"] < correct["alpha"] and correct["clusters"] == 365 and correct["family_size"] >= 2
    assert correct["mde"] > 0 and correct["release"] == "deepseek-reasoner vs deepseek-v3"
    # Importing again records nothing new.
    again = imports.record_runs(history, runs)
    assert all(r.tracked.evaluation.reused for r in again) and len(history.evaluations(suite="gapminder")) == 10
    # The settings name another predecessor: it wins.
    chosen = imports.record_runs(
        MetricHistory(f"sqlite:///{tmp_path / 'other.sqlite'}"),
        runs,
        None,
        {"deepseek-reasoner": "qwen-max-2025-01-25"},
    )
    assert {r.run.model: r.predecessor for r in chosen}["deepseek-reasoner"] == "qwen-max-2025-01-25"


def test_identical_answers_give_p_one_and_no_new_evaluation(runs, tmp_path):
    history = MetricHistory(f"sqlite:///{tmp_path / 'history.sqlite'}")
    v3 = next(r for r in runs if r.model == "deepseek-v3")
    clone = dataclasses.replace(v3, model="deepseek-v3-clone", predecessor="deepseek-v3", origin="import:test:clone")
    recorded = imports.record_runs(history, [v3, clone])
    results = recorded[1].tracked.verdicts
    # correct_probability, rank classification's, has no value in published (generated) answers: not compared
    assert {r.metric for r in results} == {
        "correct_rate",
        "very_wrong_rate",
        "indecisive_rate",
        "family_gap_correct_rate",
        "family_gap_indecisive_rate",
    }
    # (a topic with fewer than 30 questions is an insufficient sample: no finding either way)
    assert all(abs(r.change) < 1e-9 for r in results)
    assert all(r.p_value == 1.0 and r.verdict == "no detectable change" for r in results if r.clusters >= 30)
    assert {r.verdict for r in results if r.clusters < 30} <= {"insufficient sample"}
    same = imports.record_runs(history, [clone])
    assert same[0].tracked.evaluation.reused and len(history.evaluations(suite="gapminder")) == 2


def test_history_shows_every_evaluation_with_its_verdict(imported):
    from geomon.monitor.views import HISTORY_COLUMNS, history_table

    history, _ = imported
    table = history_table(history, "gapminder", [("correct_rate", ""), ("very_wrong_rate", "")])
    assert list(table.columns) == HISTORY_COLUMNS and len(table) == len(CONFIGS) * 2
    r1 = table[(table["model"] == "deepseek-reasoner") & (table["metric"] == "correct_rate")].iloc[0]
    assert r1["predecessor"] == "deepseek-v3" and r1["verdict"] == "improvement" and r1["evaluated_at"] == "2025-04-10"
    first = table[table["model"] == "qwen-max-1201"]
    assert (first["verdict"] == "").all() and first["change"].isna().all()  # nothing before it


def _items_csv(path, rows):
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_item_files_of_any_benchmark(tmp_path):
    rows = [
        {"model": m, "item": f"q{i}", "country": c, "correct": int(ok), "evaluated_at": day, "predecessor": pred}
        for m, day, pred, right in (("a-1", "2025-01-10", "", {"FR"}), ("a-2", "2025-03-01", "a-1", {"FR", "JP"}))
        for i, c in enumerate(["FR", "FR", "JP", "JP"] * 10)
        for ok in [c in right]
    ]
    path = _items_csv(tmp_path / "outcomes.csv", rows)
    runs = imports.item_runs(path, "mybench", ["country"])
    assert [r.model for r in runs] == ["a-1", "a-2"] and runs[1].predecessor == "a-1"
    a1 = {(m.metric, m.breakdown): m for m in runs[0].metrics}
    assert a1[("accuracy", "")].value == 50 and a1[("accuracy", "country=FR")].value == 100
    assert a1[("country_gap", "")].value == 100
    history = MetricHistory(f"sqlite:///{tmp_path / 'history.sqlite'}")
    recorded = imports.record_runs(history, runs)
    # One verdict per figure, under the names the values use: accuracy, each country's, the gap, and the accuracy
    # by intention to treat (an unanswered item wrong).
    found = {v.key: vars(v) for v in recorded[1].tracked.verdicts}
    by_country = {"", "country=FR", "country=JP"}
    expected = {(m, b) for m in ("accuracy", "answered_rate") for b in by_country} | {
        ("country_gap", ""),
        ("accuracy_itt", ""),
    }
    assert set(found) == expected
    overall = found[("accuracy", "")]
    assert overall["verdict"] == "improvement" and overall["before"] == 50 and overall["after"] == 100
    assert overall["change"] == 50 and found[("country_gap", "")]["change"] == -100
    assert found[("accuracy", "country=FR")]["verdict"] == "insufficient sample"  # 20 items < 30
    # The same outcomes as JSON Lines and Parquet read the same.
    jsonl = tmp_path / "outcomes.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in rows))
    parquet = tmp_path / "outcomes.parquet"
    pd.DataFrame(rows).astype(str).to_parquet(parquet)
    for other in (jsonl, parquet):
        assert [m.value for m in imports.item_runs(other, "mybench", ["country"])[0].metrics] == [
            m.value for m in runs[0].metrics
        ]


def test_a_model_that_stops_answering_a_country_pages(tmp_path):
    """b-2 leaves Japan's 40 questions without an outcome: its accuracy over what it answered is unchanged (it
    would look no worse), the rows are counted as unanswered items, and Japan's answer rate is a regression."""
    rows = [
        {"model": m, "item": f"q{i}", "country": c, "correct": "" if m == "b-2" and c == "JP" else int(i % 3 > 0)}
        | {"evaluated_at": day, "predecessor": pred}
        for m, day, pred in (("b-1", "2025-01-10", ""), ("b-2", "2025-03-01", "b-1"))
        for i, c in enumerate(["FR", "JP"] * 40)
    ]
    runs = imports.item_runs(_items_csv(tmp_path / "outcomes.csv", rows), "mybench", ["country"])
    assert runs[1].excluded == 40 and len(runs[1].items) == 80
    recorded = imports.record_runs(MetricHistory(f"sqlite:///{tmp_path / 'history.sqlite'}"), runs)
    found = {v.key: vars(v) for v in recorded[1].tracked.verdicts}
    assert found[("answered_rate", "country=JP")]["verdict"] == "regression"
    assert found[("answered_rate", "country=JP")]["change"] == -100
    assert found[("accuracy", "country=FR")]["verdict"] == "no detectable change"


def test_an_empty_group_or_cluster_is_an_error_naming_its_line(tmp_path):
    rows = [
        {"model": "a", "item": f"q{i}", "correct": 1, "evaluated_at": "2025-01-10", "country": "FR"} for i in range(3)
    ]
    rows[1]["country"] = ""
    with pytest.raises(
        imports.ImportError_, match=r"groups\.csv, line 3: field country: empty \(every row needs its group\)"
    ):
        imports.item_runs(_items_csv(tmp_path / "groups.csv", rows), "mybench", ["country"])
    nulls = tmp_path / "nulls.jsonl"
    records = [{**r, "country": "FR", "question": None if i == 2 else "q"} for i, r in enumerate(rows)]
    nulls.write_text("\n".join(json.dumps(r) for r in records))
    with pytest.raises(imports.ImportError_, match=r"nulls\.jsonl, line 3: field question: empty"):
        imports.item_runs(nulls, "mybench", [], None, "question")


def test_item_file_errors_name_the_file_line_and_field(tmp_path):
    good = {"model": "a", "item": "q1", "correct": "yes", "evaluated_at": "2025-01-10"}
    bad = _items_csv(tmp_path / "bad.csv", [good, {**good, "item": "q2", "correct": "maybe"}])
    with pytest.raises(imports.ImportError_, match=r"bad\.csv, line 3: field correct: 'maybe' is not a number"):
        imports.item_runs(bad, "b")
    when = _items_csv(tmp_path / "when.csv", [good, {**good, "evaluated_at": "last tuesday"}])
    with pytest.raises(imports.ImportError_, match=r"when\.csv, line 3: field evaluated_at: 'last tuesday'"):
        imports.item_runs(when, "b")
    missing = _items_csv(tmp_path / "missing.csv", [{"model": "a", "item": "q1", "evaluated_at": "2025-01-10"}])
    with pytest.raises(imports.ImportError_, match=r"missing\.csv: no column\(s\) \['score or correct'\]"):
        imports.item_runs(missing, "b")
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(imports.ImportError_, match=r"broken\.jsonl, line 2: not JSON"):
        imports.item_runs(broken, "b")
    # A row without an outcome is excluded and counted, never scored.
    empty = _items_csv(tmp_path / "empty.csv", [good, {**good, "item": "q2", "correct": ""}])
    (run,) = imports.item_runs(empty, "b")
    assert run.excluded == 1 and run.metrics[0].n == 1


def test_inspect_ai_logs_written_by_inspect_itself(tmp_path):
    """An eval log that inspect_ai writes here with its mockllm model (scripted replies; usage given so it
    counts no tokens, which would need a download): the scores become an evaluation, the sample metadata its
    groups."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate

    questions = [("France", "Paris"), ("Mali", "Bamako"), ("Peru", "Lima"), ("Chad", "N'Djamena")]
    samples = [
        Sample(input=f"Capital of {country}?", target=city, id=f"q{i}", metadata={"country": country})
        for i, (country, city) in enumerate(questions)
    ]
    outputs = [
        ModelOutput.from_content(model="mockllm/model", content=t) for t in ("Paris", "Bamako", "Cusco", "Abuja")
    ]
    for output in outputs:
        output.usage = ModelUsage(input_tokens=5, output_tokens=1, total_tokens=6)
    (log,) = inspect_eval(
        Task(dataset=samples, solver=generate(), scorer=includes()),
        model=get_model("mockllm/model", custom_outputs=outputs),
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success"
    (run,) = imports.inspect_runs([log.location], "capitals", ["country"])
    assert run.model == "model" and run.answers == 4
    values = {(m.metric, m.breakdown): m.value for m in run.metrics}
    assert values[("accuracy", "")] == 50.0 and values[("accuracy", "country=France")] == 100.0
    assert values[("accuracy", "country=Peru")] == 0.0 and values[("country_gap", "")] == 100.0
    assert sorted(run.items["item"]) == ["q0#1", "q1#1", "q2#1", "q3#1"]
    history = MetricHistory(f"sqlite:///{tmp_path / 'history.sqlite'}")
    imports.record_runs(history, [run])
    assert imports.record_runs(history, [run])[0].tracked.evaluation.reused
    assert list(run.items["cluster"]) == ["q0", "q1", "q2", "q3"]  # a sample's epochs are one unit
    twice = [ModelOutput.from_content(model="mockllm/model", content=t) for t in ("Paris", "Bamako") * 4]
    for output in twice:
        output.usage = ModelUsage(input_tokens=5, output_tokens=1, total_tokens=6)
    (epochs,) = inspect_eval(
        Task(dataset=samples, solver=generate(), scorer=includes(), epochs=2),
        model=get_model("mockllm/model", custom_outputs=twice),
        log_dir=str(tmp_path / "epochs"),
        display="none",
    )
    (two,) = imports.inspect_runs([epochs.location], "capitals", [])
    overall = next(m for m in two.metrics if m.metric == "accuracy" and not m.breakdown)
    assert len(two.items) == 8 and overall.n == 4  # eight rows, four samples: four clusters
    with pytest.raises(imports.ImportError_, match="no metadata 'language'"):
        imports.inspect_runs([log.location], "capitals", ["language"])
    with pytest.raises(imports.ImportError_, match="not an inspect_ai eval log"):
        imports.inspect_runs([PUBLISHED], "capitals")


def test_a_release_in_its_own_file_is_compared_and_shown_under_a_registered_suite(tmp_path, monkeypatch, capsys):
    """Each release imported from a file of its own name, under a registered suite's name (worldbench) with a
    0–1 score: the second release is compared with the first (the scope is the suite, the metric and the items,
    never the file), `geomon history --suite worldbench` shows the imported score though it is none of
    WorldBench's headlines, and a release asked other items is a new series, said so and never compared."""
    from geomon.cli import main

    store = tmp_path / "h.sqlite"
    monkeypatch.setenv("GEOMON_STORE_URL", f"sqlite:///{store}")
    monkeypatch.delenv("GEOMON_ALERT_WEBHOOK_URL", raising=False)

    def release(name: str, model: str, day: str, predecessor: str, right: float, items: range) -> str:
        rows = [
            {"model": model, "item": f"q{i}", "score": float(i % 10 < right * 10), "evaluated_at": day}
            | {"predecessor": predecessor}
            for i in items
        ]
        return str(_items_csv(tmp_path / name, rows))

    files = [
        release("vendor-2025-01.csv", "v-1", "2025-01-10", "", 0.9, range(60)),
        release("v2_final_results.csv", "v-2", "2025-03-01", "v-1", 0.3, range(60)),
        release("third.csv", "v-3", "2025-05-01", "v-2", 0.3, range(20, 80)),
    ]
    for path in files:
        assert main(["import", "items", "--suite", "worldbench", path, "--fail-on", "never"]) == 0
    history = MetricHistory(f"sqlite:///{store}")
    compared = history.comparisons()
    scores = compared[(compared["metric"] == "score") & (compared["breakdown"] == "")]
    assert list(scores["against"]) == ["predecessor v-1"] and scores["change"].iloc[0] == pytest.approx(-0.6)
    capsys.readouterr()
    assert main(["history", "--suite", "worldbench", "--format", "csv"]) == 0
    shown = pd.read_csv(io.StringIO(capsys.readouterr().out), keep_default_na=False)
    score = shown[shown["metric"] == "score"].set_index("model")
    assert list(score.index) == ["v-1", "v-2", "v-3"] and score.loc["v-2", "verdict"] == "regression"
    assert score.loc["v-3", "verdict"] == "" and "new series: items changed" in score.loc["v-3", "note"]


def test_a_model_that_stops_answering_the_items_it_got_wrong_looks_worse_by_intention_to_treat(tmp_path):
    """b-2 gives no answer wherever b-1 was wrong (a third of 240 items): its accuracy over what it answered rises
    to 100 % (an improvement), while ``accuracy_itt`` — every item, an unanswered one wrong — is unchanged, and the
    answer rate is a regression. Mutation caught: the intention-to-treat column filled from the answered items
    only (the same figure as ``accuracy``)."""
    rows = [
        {"model": m, "item": f"q{i}", "country": "FR", "correct": "" if m == "b-2" and i % 3 == 0 else int(i % 3 > 0)}
        | {"evaluated_at": day, "predecessor": pred}
        for m, day, pred in (("b-1", "2025-01-10", ""), ("b-2", "2025-03-01", "b-1"))
        for i in range(240)
    ]
    runs = imports.item_runs(_items_csv(tmp_path / "outcomes.csv", rows), "mybench", [])
    figures = {m.metric: m.value for m in runs[1].metrics if not m.breakdown}
    assert figures["accuracy"] == 100 and figures["accuracy_itt"] == pytest.approx(200 / 3)
    recorded = imports.record_runs(MetricHistory(f"sqlite:///{tmp_path / 'history.sqlite'}"), runs)
    found = {v.metric: vars(v) for v in recorded[1].tracked.verdicts if not v.breakdown}
    assert found["accuracy"]["verdict"] == "improvement"
    assert found["accuracy_itt"]["change"] == 0 and found["answered_rate"]["verdict"] == "regression"
