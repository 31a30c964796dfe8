"""QUENCH's published table: read, laid out, and what it can show (its own gaps and the smallest it could detect)."""

from __future__ import annotations

import pytest

from geomon.suites.quench.paper import PAPER_TABLE, paper_gaps, read_paper_table
from geomon_tests.conftest import SHARED


def test_paper_table_agrees_with_the_release_sizes():
    """Each aggregated score is a mean over entities × 3 judges: × 240 (Indic), × 1137 (non-Indic) and
    × 1377 (all) every value is a whole number — the paper scored exactly these 80 / 379 / 459 entities."""
    table = read_paper_table(SHARED / "reference" / "quench" / "Results" / PAPER_TABLE)
    assert len(table) == 42 and set(table["mode"]) == {"normal", "cot"}
    entities = table["subset"].map({"Indic": 80, "Non-Indic": 379, "All": 459})
    for column in ("correct_answer_score", "pred_rationale_score", "gold_rationale_score"):
        counts = table[column] * entities * 3
        assert (counts - counts.round()).abs().max() < 1e-4, column
    gaps = paper_gaps(table).set_index(["model", "mode"])
    # GPT-4 (no CoT): 0.7875 − 0.8821; SE² = .7875·.2125/80 + .8821·.1179/379 → SE 0.0486, detectable 12.1 points
    # (the one MDE: one-sided at α 0.05 with 80 % power, (1.645 + 0.842) × SE).
    assert gaps.at[("gpt_4", "normal"), "gap"] == pytest.approx(0.7875 - 0.8821460, abs=1e-6)
    assert gaps.at[("gpt_4", "normal"), "detectable"] == pytest.approx(0.121, abs=0.001)
    gpt4 = table.set_index(["model", "mode", "subset"]).loc[("gpt_4", "normal", "Indic")]
    assert gpt4["geval_answer"] == pytest.approx(78.75) and gpt4["geval_gold_rationale"] == pytest.approx(
        97.08, abs=0.01
    )
