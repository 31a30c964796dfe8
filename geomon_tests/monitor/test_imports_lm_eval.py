"""lm-evaluation-harness's ``--log_samples`` output, into the history: files that lm-eval 0.4.13 wrote for two
small tasks against two bundled models (geomon_tests/data/lm_eval/README.md says how)."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from geomon.cli import main
from geomon.monitor import imports
from geomon.monitor.history import MetricHistory
from geomon_tests.conftest import write_settings

RUNS = Path(__file__).resolve().parents[1] / "data" / "lm_eval" / "runs"
SMOL, GEMMA = "smollm2-135m-instruct", "gemma3-270m"


def _results(model: str) -> tuple[Path, dict]:
    (path,) = (RUNS / model).glob("results_*.json")
    return path, json.loads(path.read_text())


def _samples(model: str, task: str) -> tuple[Path, list[dict]]:
    (path,) = (RUNS / model).glob(f"samples_{task}_*.jsonl")
    return path, [json.loads(line) for line in path.read_text().splitlines()]


def _copy(tmp_path: Path, model: str) -> Path:
    return Path(shutil.copytree(RUNS / model, tmp_path / model))


def _values(run: imports.ImportedRun) -> dict[tuple[str, str], imports.MetricValue]:
    return {(m.metric, m.breakdown): m for m in run.metrics}


def test_one_evaluation_per_model_and_task_as_lm_eval_scored_it():
    runs = imports.lm_eval_runs([RUNS], ["region"])
    assert sorted((r.suite, r.model) for r in runs) == sorted(
        (task, model) for task in ("geo_capitals", "geo_countries") for model in (SMOL, GEMMA)
    )
    for run in runs:
        _, results = _results(run.model)
        # Dated by the run's start, to the second (two runs of one model on one day are two evaluations).
        assert run.evaluated_at == datetime.fromtimestamp(int(results["date"]), UTC)
        # The task's first filter (geo_capitals is scored under two; lm-eval writes each document once per
        # filter): the accuracy is lm-eval's own figure for it, in percent, over the 32 documents.
        published = results["results"][run.suite]["exact_match,last-words"]
        assert _values(run)[("accuracy", "")].value == pytest.approx(100 * published)
        assert (
            run.answers == 32 and run.excluded == 0 and sorted(run.items["item"], key=int) == list(map(str, range(32)))
        )
        assert run.origin.endswith(f":{run.suite}:exact_match,last-words")
    capitals = next(r for r in runs if r.suite == "geo_capitals" and r.model == SMOL)
    assert _values(capitals)[("accuracy", "")].value == 25.0  # under its second filter ("whole") it is 0


def test_a_document_field_is_a_group_with_its_own_figures():
    """Each region's accuracy, from the documents' ``region`` field, is what the samples say of that region."""
    (run,) = [r for r in imports.lm_eval_runs([RUNS / SMOL], ["doc.region"]) if r.suite == "geo_countries"]
    _, samples = _samples(SMOL, "geo_countries")
    for region in ("Africa", "Americas", "Asia", "Europe"):
        scores = [s["exact_match"] for s in samples if s["doc"]["region"] == region]
        figure = _values(run)[("accuracy", f"region={region}")]
        assert figure.value == pytest.approx(100 * sum(scores) / len(scores)) and figure.n == 8
    assert _values(run)[("accuracy", "region=Europe")].value == 75.0
    assert _values(run)[("region_gap", "")].value == 37.5  # Europe 75 − Africa and Asia 37.5


def test_the_second_model_is_compared_with_the_first_task_by_task(tmp_path):
    history = MetricHistory(f"sqlite:///{tmp_path / 'history.sqlite'}")
    runs = imports.lm_eval_runs([RUNS], ["region"])
    recorded = imports.record_runs(history, runs, predecessors={GEMMA: SMOL})
    compared = {r.run.suite: r for r in recorded if r.run.model == GEMMA}
    assert set(compared) == {"geo_capitals", "geo_countries"}
    # Each region's accuracy is in the history, per model and task.
    stored = history.series("geo_countries", SMOL, "accuracy").set_index("breakdown")["value"]
    assert stored["region=Europe"] == 75.0 and stored["region=Asia"] == 37.5 and stored[""] == 50.0
    assert {r.run.suite for r in recorded if r.run.model == SMOL and not r.tracked.verdicts} == {
        "geo_capitals",
        "geo_countries",
    }  # nothing before it
    for task, recorded_run in compared.items():
        assert recorded_run.tracked.against == f"predecessor {SMOL}", task
        found = {v.key: v for v in recorded_run.tracked.verdicts}
        assert ("accuracy", "region=Asia") in found and ("region_gap", "") in found
    countries = {v.key: vars(v) for v in compared["geo_countries"].tracked.verdicts}
    assert countries[("accuracy", "")]["before"] == 50.0 and countries[("accuracy", "")]["after"] == 81.25
    assert countries[("accuracy", "region=Asia")]["verdict"] == "insufficient sample"  # 8 documents a region
    assert all(r.tracked.evaluation.reused for r in imports.record_runs(history, runs, predecessors={GEMMA: SMOL}))


def test_a_document_field_clusters_documents(tmp_path):
    (run,) = [r for r in imports.lm_eval_runs([RUNS / SMOL], [], cluster="region") if r.suite == "geo_countries"]
    assert _values(run)[("accuracy", "")].n == 4  # four regions, four independent units
    assert sorted(set(run.items["cluster"])) == ["Africa", "Americas", "Asia", "Europe"]


def test_a_sample_without_its_value_is_unanswered_and_a_value_that_is_no_score_an_error(tmp_path):
    folder = _copy(tmp_path, SMOL)
    path, samples = _samples(SMOL, "geo_countries")
    for sample in samples:
        if sample["doc"]["region"] == "Asia":
            sample["exact_match"] = None
    (folder / path.name).write_text("".join(json.dumps(s) + "\n" for s in samples))
    (run,) = [r for r in imports.lm_eval_runs([folder], ["region"]) if r.suite == "geo_countries"]
    assert run.excluded == 8 and run.answers == 32
    assert _values(run)[("answered_rate", "region=Asia")].value == 0.0
    assert _values(run)[("answered_rate", "")].value == 75.0
    samples[3]["exact_match"] = float("inf")  # json writes Infinity
    (folder / path.name).write_text("".join(json.dumps(s) + "\n" for s in samples))
    with pytest.raises(imports.ImportError_, match=rf"{path.name}, line 4: metric 'exact_match' is inf, not finite"):
        imports.lm_eval_runs([folder])
    samples[3]["exact_match"] = ["Paris", "Paris"]  # what a corpus-level metric (bleu) keeps per sample
    (folder / path.name).write_text("".join(json.dumps(s) + "\n" for s in samples))
    with pytest.raises(imports.ImportError_, match=r"line 4: metric 'exact_match' is .*, not a number per sample"):
        imports.lm_eval_runs([folder])
    samples[3]["exact_match"] = 0.5
    (folder / path.name).write_text("".join(json.dumps(s) + "\n" for s in samples))
    with pytest.raises(imports.ImportError_, match=r"line 4: metric 'exact_match' is 0.5; it is 0 or 1 per sample"):
        imports.lm_eval_runs([folder])


def test_bad_output_is_an_error_naming_the_file(tmp_path, wdi_snapshot_dir, capsys):
    folder = _copy(tmp_path, SMOL)
    samples, _ = _samples(SMOL, "geo_capitals")
    (folder / samples.name).unlink()
    with pytest.raises(imports.ImportError_, match=rf"{samples.name}: missing \(.*--log_samples\)"):
        imports.lm_eval_runs([folder])
    settings = write_settings(tmp_path, wdi_snapshot_dir)
    assert main(["--config", str(settings), "import", "lm-eval", str(folder)]) == 1
    assert f"geomon: {folder / samples.name}: missing" in capsys.readouterr().err

    folder = _copy(tmp_path / "broken", SMOL)
    lines = (folder / samples.name).read_text().splitlines()
    (folder / samples.name).write_text("\n".join([lines[0], "{not json", *lines[2:]]))
    with pytest.raises(imports.ImportError_, match=rf"{samples.name}, line 2: not JSON"):
        imports.lm_eval_runs([folder])
    with pytest.raises(imports.ImportError_, match=r"line 1: doc has no field 'language' \(it has \['capital'"):
        imports.lm_eval_runs([RUNS / SMOL], ["language"])

    results, data = _results(SMOL)
    folder = _copy(tmp_path / "bleu", SMOL)
    data["configs"]["geo_capitals"]["metric_list"][0]["aggregation"] = "bleu"
    (folder / results.name).write_text(json.dumps(data))
    with pytest.raises(imports.ImportError_, match=r"geo_capitals: metric 'exact_match' is aggregated by 'bleu'"):
        imports.lm_eval_runs([folder])
    data["configs"]["geo_capitals"]["metric_list"][0].update(aggregation="mean", higher_is_better=False)
    (folder / results.name).write_text(json.dumps(data))
    with pytest.raises(imports.ImportError_, match=r"geo_capitals: metric 'exact_match' is lower-is-better"):
        imports.lm_eval_runs([folder])
    other = tmp_path / "results_2025-01-01T00-00-00.json"
    other.write_text(json.dumps({"results": {}}))
    with pytest.raises(imports.ImportError_, match="not lm-evaluation-harness results"):
        imports.lm_eval_runs([other])
    (tmp_path / "empty").mkdir()
    with pytest.raises(imports.ImportError_, match=r"empty: no results_\*\.json under it"):
        imports.lm_eval_runs([tmp_path / "empty"])


def test_import_lm_eval_from_the_command_line(tmp_path, wdi_snapshot_dir, capsys):
    settings = write_settings(tmp_path, wdi_snapshot_dir, predecessors={GEMMA: SMOL})
    argv = ["--config", str(settings), "import", "lm-eval", str(RUNS / SMOL), str(RUNS / GEMMA), "--group", "region"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    # One line per model and task, named by both.
    assert f"geo_countries {GEMMA}: recorded vs {SMOL}" in out and "4 new evaluation(s) of 4" in out
    assert main([*argv, "--suite", "x"]) == 2
    assert "each task is its own suite" in capsys.readouterr().err
