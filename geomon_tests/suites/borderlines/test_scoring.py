"""BorderLines' scoring (``suites/borderlines/scoring.py``): the claimant an answer commits to, parsed in the
query's language or by rank classification, and the controller's probability the tracked rows read."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from geomon.suites.borderlines.prompts import (
    build_prompts,
)
from geomon.suites.borderlines.scoring import items, score
from geomon.suites.kit import continuation_logprob
from geomon_tests.conftest import SHARED

ROOT = SHARED / "snapshots" / "borderlines"


def test_score_matches_answers_in_the_query_language(data):
    prompts = build_prompts(data)
    row = prompts[prompts["query_id"] == "Abyei|ar|vanilla"]
    assert not row.empty
    choices = row.iloc[0]["choices"]
    responses = pd.DataFrame({"text": [f"الإجابة: {choices[1]}"], "error": [None], "logprobs": [None]})
    scored = score(row, responses, [(0, -1)])
    assert scored.iloc[0]["answer"] == row.iloc[0]["claimants"][1]


def test_rank_classification_takes_the_most_likely_claimant():
    prompts = pd.DataFrame(
        [
            {
                "query_id": "T|en|vanilla",
                "territory": "T",
                "lang": "en",
                "query": "Is T a territory of A) X or B) Y?",
                "choices": ["X", "Y"],
                "claimants": ["X", "Y"],
                "controller": "Y",
                "region": "Asia",
                "persona": "vanilla",
            }
        ]
    )
    responses = pd.DataFrame(
        {
            "text": ["X", "Y"],
            "error": [None, None],
            "logprobs": [
                [{"token": "X", "logprob": -2.5}],
                [{"token": "Y", "logprob": -0.5}, {"token": "y", "logprob": -1.0}],
            ],
        }
    )
    scored = score(prompts, responses, [(0, 0), (0, 1)])
    assert scored.at[0, "answer"] == "Y" and scored.at[0, "choice_logprobs"] == [-2.5, -1.5]
    assert scored.at[0, "method"] == "rank_classification"
    assert continuation_logprob(None) is None


def test_rank_classification_states_its_probability_on_the_controller():
    """geomon's soft variant: the controller's share of the claimants' probability, per query (a softmax of their
    log-probabilities), read by ``kb_probability`` from the English query and by ``claimant_probability`` from each
    claimant language's; a chat answer has none."""
    rows = []
    for lang, choices in (("en", ["X", "Y"]), ("xx", ["Xx", "Yx"]), ("yy", ["Xy", "Yy"])):
        rows.append(
            {
                "query_id": f"T|{lang}|vanilla",
                "territory": "T",
                "lang": lang,
                "query": "?",
                "choices": choices,
                "claimants": ["X", "Y"],
                "controller": "Y",
                "region": "Asia",
                "persona": "vanilla",
            }
        )
    prompts = pd.DataFrame(rows)
    logprobs = [-2.5, -1.5, -1.0, -1.0, -3.0, -0.2]  # per query, X then Y
    responses = pd.DataFrame(
        {"text": ["_"] * 6, "error": [None] * 6, "logprobs": [[{"token": "_", "logprob": lp}] for lp in logprobs]}
    )
    scored = score(prompts, responses, [(i, j) for i in range(3) for j in range(2)])
    softmax = [1 / (1 + math.exp(x - y)) for x, y in zip(logprobs[::2], logprobs[1::2], strict=True)]
    assert scored["controller_probability"].tolist() == pytest.approx(softmax)
    countries = {"X": {"Lang_Code": "xx"}, "Y": {"Lang_Code": "yy"}}
    rows = items(scored, countries).set_index("item")
    assert rows.at["T", "kb_p"] == pytest.approx(softmax[0])
    assert rows.at["T|xx", "concurs_p"] == pytest.approx(0.5) and rows.at["T|yy", "concurs_p"] == pytest.approx(
        softmax[2]
    )
    assert math.isnan(rows.at["T|en", "concurs_p"])  # English is no claimant's language here
    chat = score(prompts, responses.iloc[:3], [(i, -1) for i in range(3)])
    assert chat["controller_probability"].isna().all()
