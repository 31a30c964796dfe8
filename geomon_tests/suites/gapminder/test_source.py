"""Gapminder's question bank and published results: the real release read whole, bad files named."""

from __future__ import annotations

import shutil

import pytest

from geomon.suites.gapminder.source import GapminderError, read_results, read_snapshot
from geomon_tests.conftest import SHARED

ROOT = SHARED / "snapshots" / "gapminder"
RESULTS = SHARED / "reference" / "gapminder" / "results"


def test_real_question_bank_is_read_whole():
    data = read_snapshot(ROOT)
    assert data.report["questions"] == 365
    assert data.report["variations_by_language"] == {"zh-CN": 113, "en-US": 109}
    # Chinese prompt templates exist, Chinese questions do not: a gap the report names.
    assert data.report["languages_without_questions"] == ["zh-CN"]
    assert data.judge_choices == {"A": "indecisive", "B": "very_wrong", "C": "wrong", "D": "correct"}
    assert "{raw_output}" in data.judge_prompt
    asked = data.options[data.options["question_id"].isin(set(data.questions["question_id"]))]
    assert len(asked) == 3 * 365 and sorted(asked["correctness"].value_counts().to_list()) == [365, 365, 365]
    assert data.questions["topic"].str.startswith("sdg-world-").mean() > 0.8


def test_published_results_keep_their_labels_counted():
    results = read_results(RESULTS)
    assert len(results) == 473_680 and results["run"].nunique() == 18
    assert results.attrs["original_labels"] == {
        "correct": 381_190,
        "wrong": 70_846,
        "very_wrong": 15_799,
        "fail": 5_500,
        "empty": 345,
    }
    assert set(results["grade"]) == {"correct", "wrong", "very_wrong", "indecisive"}


def test_bad_files_are_errors_that_name_them(tmp_path):
    copy = tmp_path / "gm"
    shutil.copytree(ROOT / "ai_eval_sheets", copy / "ai_eval_sheets")
    options = copy / "ai_eval_sheets" / "question_options.csv"
    options.write_text(options.read_text().replace(",1\n", ",7\n", 1))
    with pytest.raises(GapminderError, match=r"question_options\.csv: correctness must be 1, 2 or 3; row \d+ has '7'"):
        read_snapshot(copy)
    (copy / "ai_eval_sheets" / "metrics.csv").write_text("name,prompt\n")
    with pytest.raises(GapminderError, match=r"metrics\.csv: no column\(s\) \['choices', 'choice_scores'\]"):
        read_snapshot(copy)
    with pytest.raises(GapminderError, match="no ai_eval_sheets"):
        read_snapshot(tmp_path)
