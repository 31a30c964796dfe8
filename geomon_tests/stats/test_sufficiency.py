"""Figures that their sample cannot support are marked, with the reason; the numbers stay."""

from __future__ import annotations

import math

from geomon.stats import sufficiency


def test_the_reasons_a_figure_cannot_carry_a_claim():
    assert sufficiency.reasons(72.0, 68.0, 76.0, 365, (0, 100)) == ""
    # Gapminder, two graded answers: 50 % [0, 100].
    mark = sufficiency.reasons(50.0, 0.0, 100.0, 2, (0, 100), expects_interval=True)
    assert mark.startswith("insufficient sample: n = 2 < 30") and "spans the whole range [0, 100]" in mark
    # QUENCH's Indic gap with a NaN interval from two entities.
    assert sufficiency.reasons(1.0, math.nan, math.nan, 2, None, expects_interval=True) == (
        "insufficient sample: n = 2 < 30; no interval"
    )
    # SAGED's min/max ratio of -4.2: outside the metric's range.
    assert "outside the range [0, 1]" in sufficiency.reasons(-4.2, None, None, 400, (0, 1))
    assert sufficiency.reasons(math.nan, None, None, 1) == ""  # nothing to claim about a missing number


def test_a_leaderboard_marks_each_models_weak_figures():
    import pandas as pd

    from geomon.defs.leaderboard import SAMPLE_NOTE, mark_insufficient

    board = pd.DataFrame(
        [
            {
                "model": "big",
                "questions": 365,
                "correct_rate": 72.0,
                "correct_rate_ci_low": 68.0,
                "correct_rate_ci_high": 76.0,
            },
            {
                "model": "tiny",
                "questions": 2,
                "correct_rate": 50.0,
                "correct_rate_ci_low": 0.0,
                "correct_rate_ci_high": 100.0,
            },
        ]
    )
    marked = mark_insufficient(board, "gapminder").set_index("model")[SAMPLE_NOTE]
    assert marked["big"] == "" and marked["tiny"].startswith("insufficient sample: correct_rate: n = 2 < 30")
