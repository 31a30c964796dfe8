"""QUENCH's scores: exact match, hand-computed scores and the paper's layout, and the aggregation that reproduces
the paper's "All" rows."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from geomon.suites.quench.paper import read_paper_table
from geomon.suites.quench.scoring import PAPER_SCORES, SCORES, aggregate, exact_match, paper_layout
from geomon_tests.conftest import SHARED
from geomon_tests.suites.quench.toy import toy


@pytest.mark.parametrize(
    ("predicted", "gold", "match"),
    [
        ("belle of the ball", "Belle of the Ball", 1.0),
        ("The Beatles", "Beatles", 1.0),
        ("Stealth Wealth", "Quiet Luxury/Stealth Wealth", 1.0),
        ("Apollo 11 Astronauts", "Apollo 11 Astronauts (Neil Armstrong, Buzz Aldrin, Michael Collins)", 1.0),
        ("Pelé", "Pele", 1.0),
        ("Obama", "Barack Obama", 0.0),  # a lower bound: the jury accepts it, exact match does not
    ],
)
def test_exact_match(predicted, gold, match):
    assert exact_match(predicted, gold) == match
    assert math.isnan(exact_match(None, gold))


def test_hand_computed_scores_and_layout():
    _, answers, rationales, scores = toy()
    assert answers.set_index("prompt_id").at["q2|X|cot", "status"] == "unanswered"
    # No rationale-from-prediction request without a prediction; the gold one is always asked.
    assert "q2|X|cot|predicted" not in set(rationales["rationale_id"]) and "q2|X|cot|gold" in set(
        rationales["rationale_id"]
    )
    table = aggregate(scores).set_index(["mode", "subset"])
    # No CoT: Indic entities score 1, 0, 0.5 → 0.5; non-Indic 0; all four → 1.5 / 4.
    assert table.at[("normal", "Indic"), "correct_answer_score"] == pytest.approx(0.5)
    assert table.at[("normal", "Non-Indic"), "correct_answer_score"] == 0.0
    assert table.at[("normal", "All"), "correct_answer_score"] == pytest.approx(0.375)
    # CoT: q2 unanswered → left out and counted, not a zero: Indic (1 + 1) / 2.
    assert table.at[("cot", "Indic"), "correct_answer_score"] == 1.0 and table.at[("cot", "Indic"), "unanswered"] == 1
    assert table.at[("normal", "All"), "exact_match"] == pytest.approx(0.5)  # Ravi, Delhi match; Ram, Lyon do not
    assert (
        table.at[("cot", "All"), "pred_rationale_score"] == 3.0
        and table.at[("cot", "All"), "gold_rationale_score"] == 5.0
    )
    assert table.at[("cot", "All"), "gold_rationale_score_n"] == 4  # gold rationale scored for every entity
    layout = paper_layout(aggregate(scores))
    assert layout["key_name"].iloc[0] == "toy_normal_Aggregated_Indic"
    assert list(layout.columns) == ["key_name", "correct_answer_score", "pred_rationale_score", "gold_rationale_score"]


def test_aggregation_reproduces_the_papers_all_rows():
    """Fed per-entity judge means that give the paper's Indic and Non-Indic figures (3 judges, 80 and 379
    entities: each value × entities × 3 is a whole number of votes), geomon's aggregation gives the
    paper's "All" row for every model, mode and score: entity-weighted, not the mean of the two subsets."""
    paper = read_paper_table(SHARED / "reference" / "quench" / "Results" / "Aggregated Scores  - aggregated_scores.csv")
    indexed = paper.set_index(["model", "mode", "subset"])
    for (model, mode), _ in paper.groupby(["model", "mode"]):
        rows = []
        for subset, n, indic in (("Indic", 80, True), ("Non-Indic", 379, False)):
            votes = {c: round(indexed.at[(model, mode, subset), c] * n * 3) for c in PAPER_SCORES}
            for e in range(n):
                # Spread the subset's votes over its entities (3 judges each); only the totals matter.
                row = {c: (votes[c] // n + (1 if e < votes[c] % n else 0)) / 3 for c in PAPER_SCORES}
                rows.append({**row, "indic": indic, "question_id": f"{subset}{e}", "status": "answered"})
        scores = pd.DataFrame(rows).assign(model=model, mode=mode)
        for column in set(SCORES) - set(PAPER_SCORES):
            scores[column] = np.nan
        ours = aggregate(scores).set_index("subset")
        for column in PAPER_SCORES:
            assert ours.at["All", column] == pytest.approx(indexed.at[(model, mode, "All"), column], abs=1e-9)
            assert ours.at["Indic", column] == pytest.approx(indexed.at[(model, mode, "Indic"), column], abs=1e-9)
