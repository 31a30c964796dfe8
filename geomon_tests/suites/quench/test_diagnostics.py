"""QUENCH's diagnostics: the Indic gap resampling questions, the CoT effect paired, themes, and the declared
headlines on the same items."""

from __future__ import annotations

import math

import pytest

from geomon.stats.bootstrap import estimates
from geomon.suites.quench import TRACKED
from geomon.suites.quench.diagnostics import diagnose
from geomon.suites.quench.scoring import items
from geomon_tests.suites.quench.toy import toy


def test_gap_cot_effect_and_themes():
    *_, scores = toy()
    result = diagnose(scores, resamples=200)
    summary = result["summary"]
    assert summary["indic_gap_correct_answer_score"] == pytest.approx(0.5 - 0.0)
    assert summary["indic_gap_correct_answer_score_cot"] == pytest.approx(1.0 - 1.0)
    gap = result["gaps"].set_index(["mode", "score"]).loc[("normal", "correct_answer_score")]
    # One non-Indic question: no interval (it says so), and the planned detectable gap for 2 vs 1 questions.
    assert math.isnan(gap["ci_low"]) and "cluster" in gap["note"]
    assert gap["detectable_planned"] == pytest.approx(2.4865 * 0.5 * math.sqrt(1 / 2 + 1 / 1), rel=1e-3)  # one-sided
    cot = result["cot"].set_index("score").loc["correct_answer_score"]
    # Paired on the 3 entities answered in both modes: (1−1) + (1−0) + (1−0) over 3.
    assert cot["paired_entities"] == 3 and cot["cot_minus_normal"] == pytest.approx(2 / 3)
    themes = result["themes"].set_index(["mode", "theme"])
    assert themes.at[("normal", "History"), "entities"] == 2 and themes.at[("normal", "(none)"), "entities"] == 1
    rows = items(scores)
    declared = {e.metric: e.value for m in TRACKED for e in estimates(m, rows, resamples=0) if not e.breakdown}
    # Every entity asked is a row, the unanswered one too (no score, not answered): never dropped from a pair.
    assert len(rows) == len(scores) and rows["answered"].sum() == (scores["status"] == "answered").sum()
    assert declared["questions_gap_correct_answer_score"] == pytest.approx(0.5)  # |Indic − non-Indic|
    assert declared["correct_answer_score"] == pytest.approx(summary["correct_answer_score"])  # no CoT only
