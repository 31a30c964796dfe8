"""WorldBench's scoring: the number read from each answer, its error, and what is left out and counted."""

from __future__ import annotations

import pandas as pd
import pytest

from geomon.suites.worldbench.diagnostics import diagnose
from geomon_tests.suites.worldbench.tiny import scored, tiny_snapshot


def test_score_hand_computed():
    scores = scored(["121", "about 100 (World Bank, 2019)", None])
    assert scores["parsed"].tolist()[:2] == [121.0, 100.0]
    assert scores["error"].tolist()[0] == pytest.approx(11 / 121)  # |121-110| / 121
    assert scores["error"].tolist()[1] == pytest.approx(100 / 200)  # |100-200| / 200
    assert pd.isna(scores["error"].tolist()[2]) and scores["response_error"].tolist()[2] == "boom"
    assert scores["cited_year"].tolist()[1] == 2019


def test_failed_unanswered_and_negative_answers():
    scores = scored(["-121", "I don't know", None])
    # A negative number for a non-negative indicator is wrong by the full amount, not 2× wrong.
    assert scores["error"].tolist()[0] == 1.0 and "negative" in scores["parse_note"].tolist()[0]
    assert scores["status"].tolist() == ["answered", "unanswered", "failed"]
    summary = diagnose(scores, tiny_snapshot(), resamples=100)["summary"]
    assert (summary["parsed"], summary["unanswered"], summary["failed_requests"], summary["negative_answers"]) == (
        1,
        1,
        1,
        1,
    )
