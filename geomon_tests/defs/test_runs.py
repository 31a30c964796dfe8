"""`geomon run` does not run again what would come out the same: a model whose every answer is stored, whose
assets are fresh in Dagster and whose asking stage last read exactly those answers under the same settings
keeps its results, and its checks (a regression) still decide the exit status. Anything that would change the
result runs it again: other answers (another cache epoch), other settings, a changed suite declaration, `--rerun`."""

from __future__ import annotations

import contextlib
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from geomon.defs.factory import declared
from geomon.defs.runs import per_model_job_name, stage_job_name
from geomon_tests.conftest import write_settings
from geomon_tests.loopback import ScriptedModel, serve

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "suites"
CAPITALS = pd.read_csv(EXAMPLES / "capitals.csv")
CAPITAL = dict(zip(CAPITALS["country"], CAPITALS["capital"], strict=True))
REGION = dict(zip(CAPITALS["country"], CAPITALS["region"], strict=True))


def _country(messages) -> str:
    return messages[-1]["content"].split("capital city of ")[1].split("?")[0]


def right(messages) -> str:
    return f"The capital is {CAPITAL[_country(messages)]}."


def half_right(messages) -> str:  # wrong outside Europe and the Americas: a regression against its predecessor
    name = _country(messages)
    return CAPITAL[name] if REGION[name] in ("Europe", "Americas") else "I think it is Atlantis."


@contextlib.contextmanager
def scripted_models(
    tmp_path: Path,
    wdi_snapshot_dir: Path,
    monkeypatch,
    answers: dict[str, Callable],
    entries: dict[str, dict] | None = None,
    **sections,
) -> Iterator[tuple[list[dict], str]]:
    """A scripted endpoint per model (``answers``: its script by name; ``entries``: more of its registry entry) in a
    geomon.yaml of their own (with ``sections``), the Dagster home in ``tmp_path``: the models and the settings."""
    with contextlib.ExitStack() as stack:
        models = [
            {
                "name": name,
                "kind": "chat",
                "base_url": f"{stack.enter_context(serve(ScriptedModel, {'answer': answer, 'models': ['m']}))}/v1",
                "model_id": "m",
                **(entries or {}).get(name, {}),
            }
            for name, answer in answers.items()
        ]
        monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
        yield models, str(write_settings(tmp_path, wdi_snapshot_dir, models=models, include_bundled=False, **sections))


def oracle_and_successor(tmp_path: Path, wdi_snapshot_dir: Path, monkeypatch):
    """``oracle`` and its successor ``regional`` (``scripted_models``)."""
    answers = {"oracle": right, "regional": half_right}
    return scripted_models(tmp_path, wdi_snapshot_dir, monkeypatch, answers, {"regional": {"predecessor": "oracle"}})


@pytest.mark.dagster
def test_an_unchanged_model_is_not_run_again_and_its_regression_still_fails_the_run(
    suite_folder, tmp_path, wdi_snapshot_dir, monkeypatch, capsys
):
    from geomon.cli import main

    folder = tmp_path / "suites"
    folder.mkdir()
    for name in ("capitals.yaml", "capitals.csv"):
        shutil.copy(EXAMPLES / name, folder / name)
    suite_folder(folder)
    with oracle_and_successor(tmp_path, wdi_snapshot_dir, monkeypatch) as (models, settings):
        run = ["--config", settings, "run", "--suite", "capitals", "--models", "oracle,regional", "--yes"]
        gate = ["--fail-on", "regression"]

        def per_model_runs() -> int:  # whole runs of a model's stages (an unchanged model's decision runs alone)
            with dg.DagsterInstance.get() as instance:
                records = instance.get_run_records(dg.RunsFilter(job_name=per_model_job_name("capitals")))
                return sum(r.dagster_run.asset_selection is None for r in records)

        def ran(*extra: str, status: int | None = 3) -> tuple[int, str]:
            before = per_model_runs()
            code = main([*run, *gate, *extra])
            assert status is None or code == status, capsys.readouterr().err  # the regression fails the run
            return per_model_runs() - before, capsys.readouterr().out

        assert ran()[0] == 2  # both models asked and scored
        with dg.DagsterInstance.get() as instance:  # the trends the run wrote: monitor/trends materialized
            (trends,) = instance.fetch_materializations(dg.AssetKey(["monitor", "trends"]), limit=5).records
            assert trends.asset_materialization.metadata["models"].value == 2

        def prompts_runs() -> int:
            with dg.DagsterInstance.get() as instance:
                return len(instance.get_run_records(dg.RunsFilter(job_name=stage_job_name("capitals", "prompts"))))

        prompts_before = prompts_runs()
        again, shown = ran()
        assert again == 0, "every answer stored, nothing changed: neither model runs again"
        assert prompts_runs() == prompts_before, "the same sample, fresh: the prompts are not materialized again"
        assert "Capitals: oracle, regional unchanged since the last run" in shown
        assert ran("--rerun")[0] == 2  # asked for: both run again
        # A flag is part of the run: a smaller sample (its answers all stored) is other prompts, so both run again;
        # back at the profile's sample they run again once, then are unchanged.
        assert ran("--capitals-sample", "10", status=None)[0] == 2  # (another sample: another series)
        assert ran()[0] == 2
        assert ran()[0] == 0
        # Other answers: a new cache epoch asks again; back on the first epoch, every answer is stored but the
        # models last read the new epoch's, so they run again once, then are unchanged.
        monkeypatch.setenv("GEOMON_CACHE_EPOCH", "")  # restored after the test: `--epoch` sets it in this process
        assert ran("--epoch", "second")[0] == 2
        monkeypatch.delenv("GEOMON_CACHE_EPOCH")
        assert ran()[0] == 2
        assert ran()[0] == 0
        # Other settings (the verdicts' α: the same answers, read under another decision rule): run again once.
        write_settings(tmp_path, wdi_snapshot_dir, models=models, include_bundled=False, verdicts={"alpha": 0.01})
        assert ran()[0] == 2
        assert ran()[0] == 0
        # A changed declaration (its title: the same prompts, so the same answers): Dagster marks the assets stale.
        suite_file = folder / "capitals.yaml"
        suite_file.write_text(suite_file.read_text().replace("title: Capitals", "title: Capital cities"))
        sys.modules.pop("geomon.definitions", None)  # as a new `geomon run` process builds the code location
        declared.cache_clear()
        assert ran(status=None)[0] == 2  # (a changed suite file starts a new series: no verdict yet)


@pytest.mark.dagster
def test_an_unchanged_model_is_decided_against_the_history_as_it_is_now(
    suite_folder, tmp_path, wdi_snapshot_dir, monkeypatch, capsys
):
    """Its stages are not run again, its decision is: a predecessor evaluated after it makes its standing
    regression fail the run, and an acknowledgement of that regression lets the run pass."""
    import re

    from geomon.cli import main

    suite_folder(EXAMPLES)
    with oracle_and_successor(tmp_path, wdi_snapshot_dir, monkeypatch) as (_, settings):

        def run(names: str) -> tuple[int, str]:
            code = main(["--config", settings, "run", "--suite", "capitals", "--models", names, "--yes",
                         "--fail-on", "regression"])  # fmt: skip
            shown = capsys.readouterr()
            return code, shown.out + shown.err

        assert run("regional")[0] == 0  # no predecessor evaluated yet: nothing to compare with
        run("oracle")  # the predecessor arrives: regional is decided again, a regression
        code, shown = run("regional,oracle")
        assert "Capitals: regional, oracle unchanged since the last run" in shown
        assert code == 3, shown  # the standing regression, decided now, fails the run
        (evaluation,) = set(
            re.findall(r"no_regression on capitals/disparity \[regional\] failed: evaluation_id=([^,]+)", shown)
        )
        assert main(["--config", settings, "alerts", "ack", evaluation, "--by", "tester"]) == 0, capsys.readouterr().err
        capsys.readouterr()
        code, shown = run("regional,oracle")
        assert code == 0 and "unchanged since the last run" in shown, shown  # acknowledged: the run passes


@pytest.mark.dagster
def test_a_model_whose_judge_left_an_ask_unanswered_is_run_again(
    suite_folder, tmp_path, wdi_snapshot_dir, monkeypatch, capsys
):
    """A follow-up ask (here a judge's) that got no answer is tolerated (one of 40, under engine.max_failed_share)
    but not stored, and no fingerprint of the contestant's answers shows it: the step records it (`failed_asks`),
    and `geomon run` runs that model again until the judge has answered everything, then leaves it alone.
    Mutation caught: `failed_asks` not consulted (the model taken as unchanged with a judgement missing)."""
    from geomon.cli import main

    folder = tmp_path / "suites"
    folder.mkdir()
    shutil.copy(EXAMPLES / "capitals.csv", folder / "capitals.csv")
    declaration = (EXAMPLES / "capitals.yaml").read_text().replace("name: capitals", "name: judged")
    judged = "scorer: judged\njudge_prompt: 'Is {reply} the capital of {country}? Answer correct or incorrect.'"
    declaration = declaration.replace("scorer: normalised", judged).replace("{sample: 20}", "{sample: 40}")
    (folder / "judged.yaml").write_text(declaration)
    suite_folder(folder)
    refusing = {"on": True, "prompt": None}

    def judge(messages) -> str | None:
        prompt = messages[-1]["content"]
        if refusing["on"] and refusing["prompt"] in (None, prompt):
            refusing["prompt"] = prompt  # one judgement refused, every time it is asked while refusing is on
            return None
        return "correct"

    jury = {"jury": {"judges": ["judge"], "quorum": 1}}
    answers, entries = {"oracle": right, "judge": judge}, {"judge": {"constrain": "none"}}
    with scripted_models(tmp_path, wdi_snapshot_dir, monkeypatch, answers, entries, judged=jury) as (_, settings):
        run = ["--config", settings, "run", "--suite", "judged", "--models", "oracle", "--yes"]

        def per_model_runs() -> int:
            with dg.DagsterInstance.get() as instance:
                records = instance.get_run_records(dg.RunsFilter(job_name=per_model_job_name("judged")))
                return sum(r.dagster_run.asset_selection is None for r in records)

        def ran() -> int:
            before = per_model_runs()
            assert main(run) == 0, capsys.readouterr().err
            capsys.readouterr()
            return per_model_runs() - before

        assert ran() == 1
        assert ran() == 1, "a judgement is missing: the model runs again"
        refusing["on"] = False
        assert ran() == 1  # the judge answers it now
        assert ran() == 0, "every ask answered and stored: unchanged"


# A suite whose data comes in two editions: France is asked only in the older one, Kenya only in the newer.
EDITIONS = """
import pandas as pd
from geomon.stats.declarations import TrackedMetric
from geomon.stats.statistics import Mean
from geomon.suites import kit
from geomon.suites.info import Headline, RunOption, SuiteInfo
from geomon.suites.pipeline import Option, Pipeline, Revisions, Stage, StageResult, Tracked, responses_stage

COUNTRIES = {"v1": ["France", "Japan", "Peru"], "v2": ["Japan", "Peru", "Kenya"]}
CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Peru": "Lima", "Kenya": "Nairobi"}
SUITE = SuiteInfo(
    name="editions", title="Editions", spec="a test", headlines=(Headline("accuracy", "accuracy"),),
    options=(RunOption("--editions-sample", "the first N countries", int, None, "sample"),), order=300,
)
TRACKED = (TrackedMetric("accuracy", Mean("value")),)

def _table(context):
    return StageResult(pd.DataFrame({"item": COUNTRIES[context.revision]}))

def _prompts(context, table):
    table = table.head(context.options["sample"] or len(table))
    return StageResult(table.assign(chat=[f"What is the capital city of {c}?" for c in table["item"]]))

def _scores(context, prompts, responses):
    right = [CAPITALS[c] in (r or "") for c, r in zip(prompts["item"], responses["text"])]
    items = prompts.assign(value=[float(r) for r in right])
    return StageResult({"summary": {"accuracy": items["value"].mean()}}, tracked=Tracked(items, context.revision))

PIPELINE = Pipeline(
    stages=(
        Stage("table", _table, per_revision=True, source=True),
        Stage(
            "prompts", _prompts, inputs=("table",), per_revision=True, options=(Option("sample", int, 0, "0 = all"),)
        ),
        responses_stage(lambda prompts, spec: kit.requests_for(prompts, spec, 16), "item"),
        Stage("scores", _scores, inputs=("prompts", "responses"), per_model=True, tracked=True),
    ),
    write_report=lambda out, board, results, settings: out,
    leaderboard_columns=("accuracy",),
    per_model_description="capitals by edition",
    revisions=Revisions(
        partitions="editions",
        resolve=lambda settings: ["v1", "v2"],
        options=lambda flags, keys: {key: {"sample": flags.get("editions_sample") or 0} for key in keys},
    ),
)
"""


@pytest.mark.dagster
def test_every_revision_a_run_evaluates_is_planned_and_an_unchanged_one_is_not_run_again(
    suite_folder, tmp_path, wdi_snapshot_dir, monkeypatch, capsys
):
    """The plan counts the asks of every revision a run evaluates (the older edition's France too), at the run's
    flags, and a second run leaves every revision's unchanged partition alone. Mutations caught: the plan of the
    newest revision only (3 asks planned, and the older edition's partition runs again every time); the run's
    flags left out of its plan (the counts of the whole editions at `--editions-sample 2`)."""
    from geomon.cli import main

    folder = tmp_path / "suites"
    folder.mkdir()
    (folder / "editions.py").write_text(EDITIONS)
    suite_folder(folder)
    with scripted_models(tmp_path, wdi_snapshot_dir, monkeypatch, {"oracle": right}) as (_, settings):

        def ran(*flags: str) -> tuple[int, str]:
            with dg.DagsterInstance.get() as instance:
                before = len(instance.get_run_records(dg.RunsFilter(job_name=per_model_job_name("editions"))))
            code = main(["--config", settings, "run", "--suite", "editions", "--models", "oracle", "--yes", *flags])
            shown = capsys.readouterr()
            assert code == 0, shown.err
            with dg.DagsterInstance.get() as instance:
                after = instance.get_run_records(dg.RunsFilter(job_name=per_model_job_name("editions")))
            whole = [r for r in after[: len(after) - before] if r.dagster_run.asset_selection is None]
            return len(whole), shown.out

        runs, shown = ran()
        assert runs == 2 and "plan: profile default: 4 asks to make, 0 already stored" in shown, shown
        runs, shown = ran()
        assert runs == 0 and "plan: profile default: 0 asks to make, 4 already stored" in shown, shown
        assert "oracle at v1, oracle at v2 unchanged since the last run" in shown
        runs, shown = ran("--editions-sample", "2")  # France, Japan and Japan, Peru: three asks, all stored
        assert "plan: profile default with --editions-sample 2: 0 asks to make, 3 already stored" in shown, shown
        assert runs == 2  # other prompts in both editions
