"""The suite kit (geomon.suites.kit) and suites outside the package: the example Python suite
(examples/suites/capital_aliases.py) registered from a folder, its scorer, the kit's readers and stages, and a
run of both example suites on one scripted model whose answers the YAML and the Python definitions score
differently."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from geomon.monitor import release
from geomon.monitor.history import MetricHistory
from geomon.stats.values import series_change
from geomon.suites import kit, registry, yaml_suite
from geomon_tests.conftest import board_after_run, write_settings
from geomon_tests.loopback import ScriptedModel, file_server, serve

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "suites"
CAPITALS = pd.read_csv(EXAMPLES / "capitals.csv")


@pytest.fixture
def examples(suite_folder):
    """The example folder in GEOMON_SUITE_DIRS; the code location built again with it and without it after."""
    suite_folder(EXAMPLES)
    return registry.module("capital_aliases")


def test_a_simple_python_suite_is_at_most_60_lines(examples):
    assert len((EXAMPLES / "capital_aliases.py").read_text().splitlines()) <= 60
    assert "capital_aliases" in registry.suites() and not registry.broken()
    assert [m.name for m in registry.suite("capital_aliases").tracked] == ["accuracy", "answered_rate", "region_gap"]
    assert registry.profile_options("capital_aliases", "quick", {})["sample"] == 20


@pytest.mark.parametrize(
    ("reply", "expected", "parsed"),
    [
        ("Kiev.", 1.0, "Kiev"),  # any accepted name, read as the name
        ("It is KYIV", 1.0, "Kyiv"),
        ("Lviv", 0.0, "lviv"),
        ("Kyiv or Lviv", float("nan"), ""),  # a hedge is no answer: unanswered, not right
        ("", float("nan"), ""),
    ],
)
def test_the_python_scorer(examples, reply, expected, parsed):
    got = examples.score(reply, {"aliases": "Kyiv|Kiev"})
    assert got.value == expected or (got.value != got.value and expected != expected)
    assert got.answer == parsed


def test_read_table_names_the_file_and_the_problem(tmp_path):
    table = tmp_path / "q.csv"
    table.write_text("id,country\na,France\n,Spain\n")
    with pytest.raises(registry.SuiteError, match=r"q\.csv, line 3: column id is empty"):
        kit.read_table(table, "id")
    with pytest.raises(registry.SuiteError, match=r"q\.csv: no column\(s\) \['region'\]"):
        kit.read_table(table, "id", ("region",))
    table.write_text("id,country\na,France\na,Spain\n")
    with pytest.raises(registry.SuiteError, match=r"q\.csv: id \['a'\] appear more than once"):
        kit.read_table(table, "id")


def _release_context(tmp_path: Path, **section) -> SimpleNamespace:
    settings = SimpleNamespace(
        suite=lambda name: kit.ReleaseSettings(**section), results_dir=tmp_path / "var" / "results"
    )
    return SimpleNamespace(settings=settings)


def test_the_release_stage_reads_the_snapshot_or_fetches_the_release(tmp_path):
    stage = kit.release_stage(
        "toy", ("capitals.csv",), lambda d: kit.read_table(d / "capitals.csv", "question_id"), EXAMPLES
    )
    local = stage.run(_release_context(tmp_path))
    assert len(local.value) == 40 and local.metadata["source"] == str(EXAMPLES)
    with file_server(EXAMPLES) as url:
        fetched = stage.run(_release_context(tmp_path, release_url=url))
    assert fetched.value.equals(local.value) and fetched.data_version == local.data_version
    assert (tmp_path / "var" / "toy-release" / "capitals.csv").is_file()
    with pytest.raises(registry.SuiteError, match=r"suite toy: release file\(s\) missing: .*capitals\.csv"):
        stage.run(_release_context(tmp_path, snapshot=tmp_path / "empty"))
    with file_server(tmp_path) as url, pytest.raises(registry.SuiteError, match=r"capitals\.csv: HTTP 404"):
        stage.run(_release_context(tmp_path / "other", release_url=url))


def test_a_broken_python_suite_breaks_only_itself(tmp_path, suite_folder):
    (tmp_path / "halfdone.py").write_text("import geomon.suites.kit\nSUITE = undefined_name\n")
    suite_folder(tmp_path)
    assert "halfdone" not in registry.suites() and "blend" in registry.suites()
    assert "halfdone.py cannot be imported: NameError" in registry.broken()["halfdone"]
    with pytest.raises(registry.SuiteError, match=r"halfdone\.py cannot be imported"):
        registry.suite("halfdone")


# The model's answers where the two example suites' definitions differ: an alias (Peking, Nur-Sultan, La Paz)
# is right only for capital_aliases; a hedge ("Lagos or Abuja") names the capital for capitals.yaml's normalised
# scorer but is no answer for capital_aliases; Toronto is wrong for both.
DIFFERENT = {"China": "Peking", "Kazakhstan": "Nur-Sultan", "Bolivia": "La Paz", "Nigeria": "Lagos or Abuja"}
WRONG = {"Canada": "Toronto"}
SCRIPTED = {**dict(zip(CAPITALS["country"], CAPITALS["capital"], strict=True)), **DIFFERENT, **WRONG}


def answer(messages):
    """The scripted model: every capital as written, but the answers above."""
    return SCRIPTED[messages[-1]["content"].split("capital city of ")[1].split("?")[0]]


def test_both_example_suites_on_one_scripted_model(examples, tmp_path, wdi_snapshot_dir):
    with serve(ScriptedModel, {"answer": answer, "models": ["scripted"]}) as url:
        models = [{"name": "scripted", "kind": "chat", "base_url": f"{url}/v1", "model_id": "scripted"}]
        settings = write_settings(tmp_path, wdi_snapshot_dir, models=models, include_bundled=False)
        boards = {s: board_after_run(s, ["scripted"], {"sample": 0}, settings) for s in ("capitals", "capital_aliases")}
    yaml_row, python_row = boards["capitals"].loc["scripted"], boards["capital_aliases"].loc["scripted"]
    # capitals.yaml: 40 answered, 36 right (the three aliases and Toronto wrong); Asia 8/10, Americas 8/10.
    assert yaml_row["accuracy"] == 90 and yaml_row["region_gap"] == 20 and yaml_row["answered"] == 40
    # capital_aliases: the hedge unanswered (39 answered), 38 right; Americas 9/10, the rest all right.
    assert python_row["accuracy"] == pytest.approx(100 * 38 / 39) and python_row["answered"] == 39
    assert python_row["region_gap"] == pytest.approx(10)


JUDGED = """name: judged_capitals
title: Capitals, judged
data: {data}
id: question_id
answer: capital
groups: [region]
prompt: "What is the capital city of {{country}}? Answer with the city's name only."
scorer: judged
judge_prompt: >-
  The capital of {{country}} is {{capital}} (also called {{aliases}}).
  Reply: {{reply}}. correct or incorrect?
"""


def test_a_yaml_suite_judged_by_the_jury(tmp_path, wdi_snapshot_dir, suite_folder):
    """Three scripted judges (two accept any accepted name, one always says incorrect): the majority grades
    the same answers as above, so aliases and the hedge naming Abuja are right: 39 of 40, a region gap of 10
    (Toronto) — where the normalised scorer gives 90 and 20."""
    folder = tmp_path / "suites"
    folder.mkdir()
    (folder / "judged_capitals.yaml").write_text(JUDGED.format(data=EXAMPLES / "capitals.csv"))
    suite_folder(folder)

    def fair_judge(messages):
        text = messages[-1]["content"]
        names, reply = text.split("(also called ")[1].split(")")[0], text.split("Reply: ")[1]
        return "correct" if any(n.lower() in reply.lower() for n in names.split("|")) else "incorrect"

    with (
        serve(ScriptedModel, {"answer": answer, "models": ["student"]}) as answers,
        serve(ScriptedModel, {"answer": fair_judge, "models": ["fair"]}) as fair,
        serve(ScriptedModel, {"answer": lambda m: "Incorrect.", "models": ["harsh"]}) as harsh,
    ):
        models = [
            {"name": name, "kind": "chat", "base_url": f"{url}/v1", "model_id": model}
            for name, url, model in [
                ("student", answers, "student"), ("judge-a", fair, "fair"), ("judge-b", fair, "fair"),
                ("judge-c", harsh, "harsh"),
            ]
        ]  # fmt: skip
        judges = {"jury": {"judges": ["judge-a", "judge-b", "judge-c"]}}
        settings = write_settings(
            tmp_path, wdi_snapshot_dir, models=models, include_bundled=False, judged_capitals=judges
        )
        board = board_after_run("judged_capitals", ["student"], {"sample": 0}, settings)
    row = board.loc["student"]
    assert row["accuracy"] == pytest.approx(97.5) and row["region_gap"] == pytest.approx(10)
    assert row["answered"] == 40
    # Each item as scored keeps the jury's grade as what was read from the reply.
    _, items = MetricHistory(f"sqlite:///{tmp_path / 'store.sqlite'}").replies("judged_capitals", "student")
    canada = items.set_index("item").loc["am-ca"]
    assert (canada["reply"], canada["parsed"], canada["score"]) == ("Toronto", "incorrect", 0)


def test_the_scope_holds_the_data_the_prompt_the_scorer_and_the_code(examples, tmp_path):
    """Each part of what a figure means is in the scope: a changed one starts a new series that says which,
    instead of old and new scoring being compared as if the model had changed; the same declaration is the same
    series, and another sample size another line."""
    suite_file = tmp_path / "toy.py"
    suite_file.write_text("# version 1\n")
    module = SimpleNamespace(__file__=str(suite_file))
    q = kit.QuestionSet(
        name="toy", title="Toy", spec="", files=(), read=lambda folder: CAPITALS, data_dir=None, id="question_id",
        answer="capital", prompt="The capital of {country}?", score=examples.score, groups=("region",),
    )  # fmt: skip
    questions = CAPITALS.astype(str)
    base = kit.scope_of(q, module, questions, 40)
    assert kit.scope_of(q, suite_file, questions, 40) == base  # a YAML suite's source is its file: the same scope
    edited = questions.assign(aliases=questions["aliases"].replace("Algiers", "Algiers|Alger"))

    def lenient(reply, row):
        return 1.0

    reworded = dataclasses.replace(q, prompt="Which city is the capital of {country}?")
    changed = {
        "data": kit.scope_of(q, module, edited, 40),
        "prompt": kit.scope_of(reworded, module, questions, 40),
        "scorer": kit.scope_of(dataclasses.replace(q, score=lenient), module, questions, 40),
    }
    suite_file.write_text("# version 2: the scorer fixed\n")
    changed["code"] = kit.scope_of(q, module, questions, 40)
    for part, scope in changed.items():
        assert series_change(base, scope) == f"new series: {part} changed", part
    assert kit.scope_of(q, module, questions.sample(frac=1, random_state=1), 40) == changed["code"]  # row order aside
    assert series_change(changed["code"], kit.scope_of(q, module, questions, 20)) == ""  # another sample: another line
    # A YAML suite's scorer declaration: its scorer fields (and the code reading them), not its prompt.
    decl = yaml_suite.read(EXAMPLES / "capitals.yaml")
    declared = yaml_suite.scorer_declaration(decl)
    assert yaml_suite.scorer_declaration(dataclasses.replace(decl, scorer="exact")) != declared
    assert yaml_suite.scorer_declaration(dataclasses.replace(decl, prompt="Capital of {country}?")) == declared


def test_geomon_items_and_the_report_show_each_item_and_the_regression(
    examples, tmp_path, wdi_snapshot_dir, monkeypatch, capsys
):
    """From the command line, as a person meets it: `geomon run --suite capital_aliases` (a suite folder) on a
    model and its successor, which names Paris as every Asian and European capital; its history; `geomon items`
    shows each item's prompt, reply, parsed answer and score, its filters keep
    what they name, and the suite's report opens with the latest verdicts, naming the successor's regression and
    linking each model's items."""
    from geomon.cli import main

    def worse(messages):
        country = messages[-1]["content"].split("capital city of ")[1].split("?")[0]
        region = CAPITALS.set_index("country").loc[country, "region"]
        return "Paris" if region in ("Asia", "Europe") and country != "France" else answer(messages)

    with (
        serve(ScriptedModel, {"answer": answer, "models": ["s"]}) as url,
        serve(ScriptedModel, {"answer": worse, "models": ["s"]}) as worse_url,
    ):
        models = [
            {"name": "scripted", "kind": "chat", "base_url": f"{url}/v1", "model_id": "s"},
            {"name": "successor", "kind": "chat", "base_url": f"{worse_url}/v1", "model_id": "s"},
        ]
        models[1]["predecessor"] = "scripted"
        settings = str(write_settings(tmp_path, wdi_snapshot_dir, models=models, include_bundled=False))
        monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
        monkeypatch.setenv("GEOMON_CONFIG", settings)
        run = ["--config", settings, "run", "--suite", "capital_aliases", "--models", "scripted,successor", "--yes"]
        assert main([*run, "--fail-on", "never"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["--config", settings, "history", "--suite", "capital_aliases"]) == 0
    shown = capsys.readouterr().out
    assert "accuracy" in shown and "97.4" in shown and "region_gap" in shown

    def items(*args: str) -> pd.DataFrame:
        assert main(["--config", settings, "items", "--suite", "capital_aliases", *args, "--format", "csv"]) == 0
        shown = pd.read_csv(io.StringIO(capsys.readouterr().out), keep_default_na=False)
        return shown.assign(score=pd.to_numeric(shown["score"], errors="coerce"))

    every = items("--model", "scripted")
    assert len(every) == 40 and {"prompt", "reply", "parsed", "gold", "score", "status"} <= set(every.columns)
    china = every.set_index("item").loc["as-cn"]
    assert "capital city of China?" in china["prompt"] and china["reply"] == "Peking"
    assert china["parsed"] == "Peking" and china["score"] == 100  # an accepted name, read as written
    hedge = items("--model", "scripted", "--score", "unanswered")
    assert list(hedge["reply"]) == ["Lagos or Abuja"] and list(hedge["status"]) == ["unanswered"]
    wrong = items("--model", "successor", "--score", "wrong")
    assert len(wrong) == 20 and set(wrong["score"]) == {0}  # 19 × Paris, and Toronto
    assert set(zip(wrong["parsed"], wrong["region"], strict=True)) == {
        ("paris", "Asia"), ("paris", "Europe"), ("toronto", "Americas")
    }  # fmt: skip
    asia = items("--model", "successor", "--score", "wrong", "--group", "region=Asia", "--limit", "3")
    assert len(asia) == 3 and set(asia["region"]) == {"Asia"}
    assert main(["--config", settings, "items", "--suite", "capital_aliases", "--model", "successor"]) == 0
    table = capsys.readouterr().out
    assert "What is the capital city of" in table and "Paris" in table
    assert len(table.splitlines()) == 41 and "name only." not in table  # one line per item, long cells cut
    assert main(["--config", settings, "items", "--suite", "capital_aliases", "--model", "x", "--group", "a"]) == 1
    assert "no evaluation of x (models evaluated: scripted, successor)" in capsys.readouterr().err
    assert main(["--config", settings, "items", "--suite", "capitals_typo", "--model", "scripted"]) == 1
    assert "no evaluation in the history (is the name right?)" in capsys.readouterr().err
    report = (tmp_path / "results" / "capital_aliases" / "report.html").read_text()
    opening = report[: report.index("Leaderboard")]
    assert opening.index("Open regressions in") < opening.index("Latest verdicts")  # the report opens with them
    assert "successor vs scripted: accuracy −" in opening and "accuracy regression" in opening
    assert (
        "items-successor.csv" in opening
        and (tmp_path / "results" / "capital_aliases" / "items-successor.csv").is_file()
    )


def test_a_tsv_with_blank_separator_lines(tmp_path):
    """A published TSV: blank lines between blocks skipped and counted, quotes kept as text, and an error still
    names the file's own line."""
    table = tmp_path / "q.tsv"
    table.write_text('id\tquestion\n\na\t"Abyei" is disputed\n\t\nb\tWhere?\n')
    frame = kit.read_table(table, "id", ("question",))
    assert frame["question"].tolist() == ['"Abyei" is disputed', "Where?"] and frame.attrs["blank_lines"] == 2
    table.write_text("id\tquestion\n\na\tx\n\n\ty\n")
    with pytest.raises(registry.SuiteError, match=r"q\.tsv, line 5: column id is empty"):
        kit.read_table(table, "id")


EVERYDAY = EXAMPLES / "everyday.tsv"


def test_a_sample_balanced_per_group():
    questions = kit.read_table(EVERYDAY, "question_id", ("country",))
    balanced, _ = kit.render_prompts(questions, "question_id", "{question}", "{question}", 25, 0, per="country")
    assert balanced["country"].value_counts().to_dict() == dict.fromkeys(questions["country"].unique(), 5)
    plain, _ = kit.render_prompts(questions, "question_id", "{question}", "{question}", 25, 0)
    assert len(plain) == 25 and plain["country"].value_counts().nunique() > 1  # what a plain sample gives
    with pytest.raises(registry.SuiteError, match="balanced per country needs at least one per group"):
        kit.render_prompts(questions, "question_id", "{question}", "{question}", 3, 0, per="country")


def test_the_cluster_column_is_the_statistical_unit():
    """everyday.yaml's cluster is concept_id (one question in five languages): 50 items are 10 clusters."""
    from geomon.suites import yaml_suite

    suite = yaml_suite.load(EXAMPLES / "everyday.yaml")
    questions = kit.read_table(EVERYDAY, "question_id", ("concept_id",))
    scores = questions[["question_id", "concept_id", "country", "language", "answers"]].assign(
        prompt="?", reply="!", parsed="", value=[100.0 * (i % 3 > 0) for i in range(len(questions))], error=None
    )
    scores["status"] = "answered"
    result = suite.pipeline.stage("disparity").run(SimpleNamespace(options={"sample": 0}), scores=scores)
    figures = release.declared_figures("everyday", suite.tracked, result.tracked.items, result.tracked.others)
    overall = {m.metric: m for m in figures if not m.breakdown}
    assert overall["accuracy"].n == 10 and overall["answered_rate"].n == 10
