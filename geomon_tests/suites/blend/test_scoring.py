"""BLEnD's scoring: reply cleaning, the soft exact match (SEM-B, SEM-W), the idk rule, and what a failed request, an
empty or a hedging reply counts as."""

from __future__ import annotations

import numpy as np
import pandas as pd

from geomon.stats import bootstrap
from geomon.stats.declarations import TrackedMetric
from geomon.suites.blend import TRACKED
from geomon.suites.blend.prompts import build_prompts
from geomon.suites.blend.scoring import clean_reply, items, score, soft_match, valid_question


def test_reply_cleaning_as_delete_prompt_from_answer():
    prompt = (
        "Read the following question and provide a single answer without any explanations.\n\nQuestion: Q?\nAnswer:"
    )
    assert clean_reply("Answer: Fish and chips.", prompt) == "fish and chips"
    # A leading "word:" that is not in the prompt stays.
    assert clean_reply("Note: tea", prompt) == "note: tea"
    assert clean_reply("答案： 饺子。", "问题：…答案：") == "饺子"
    assert clean_reply("答案：饺子", "问题：…答案：") == "答案:饺子"  # the reference needs a space after it
    assert clean_reply(prompt + " Tea", prompt) == "tea"


def test_soft_match_scores_sem_b_and_sem_w_as_the_paper():
    annotations = [
        {"answers": ["과자"], "en_answers": ["cookie", "snack"], "count": 3},
        {"answers": ["과일"], "en_answers": ["fruit"], "count": 2},
    ]
    assert soft_match("과자", annotations, "Korean", "Korean") == (1.0, 1.0, "과자")
    # A local reply may match an English answer (the reference's fallback); weight = votes ÷ top votes.
    assert soft_match("fruit", annotations, "Korean", "Korean") == (1.0, 2 / 3, "fruit")
    # An English reply is checked against the English answers only.
    assert soft_match("과일", annotations, "Korean", "English") == (0.0, 0.0, "")
    assert soft_match("", annotations, "Korean", "Korean") == (0.0, 0.0, "")


def test_validity_follows_the_idk_rule():
    some = [{"answers": ["a"], "en_answers": ["a"], "count": 1}]
    assert valid_question(some, {"idk": 4, "no-answer": 1, "not-applicable": 1})
    assert not valid_question(some, {"idk": 5, "no-answer": 0, "not-applicable": 0})
    assert not valid_question(some, {"idk": 0, "no-answer": 2, "not-applicable": 1})
    assert not valid_question([], {"idk": 0, "no-answer": 0, "not-applicable": 0})


def test_failed_requests_are_excluded_and_counted(release):
    prompts = build_prompts(release, ("inst-4",), sample=1, seed=0)
    responses = pd.DataFrame({"text": [None] * len(prompts), "error": ["timeout"] * len(prompts)})
    scores = score(prompts, responses, "m")
    assert set(scores["status"]) <= {"failed", "invalid"} and scores["sem_b"].isna().all()


def _valid(prompts: pd.DataFrame) -> pd.DataFrame:
    keep = [valid_question(a, i) for a, i in zip(prompts["annotations"], prompts["idks"], strict=True)]
    return prompts[keep]


def test_an_empty_or_hedging_reply_is_unanswered_and_scored_a_miss(release):
    """An empty reply or a hedge that names no annotated answer is ``unanswered`` and scored 0 (the paper's miss);
    a hedge that names one is answered and scored; a failed request is left out of the answer rate."""
    prompts = build_prompts(release, ("inst-4",), sample=30, seed=0)
    uk = _valid(prompts[prompts["country"] == "UK"]).head(5)
    top = uk["annotations"].iloc[2][0]["en_answers"][0]
    texts = ["", "I don't know.", f"Not sure, maybe {top}", "nothing", None]
    responses = pd.DataFrame({"text": texts, "error": [None, None, None, None, "timeout"]})
    scores = score(uk, responses, "m")
    assert scores["status"].tolist() == ["unanswered", "unanswered", "answered", "answered", "failed"]
    assert scores["sem_b"].tolist()[:4] == [0.0, 0.0, 100.0, 0.0] and np.isnan(scores["sem_b"].iloc[4])
    rows = items(scores)
    assert rows["value"].tolist() == [0.0, 0.0, 100.0, 0.0]  # unanswered replies stay in the pair, as misses
    assert rows["answered"].tolist() == [0.0, 0.0, 1.0, 1.0]  # the failed request is not in the rate
    (rate,) = [e for e in bootstrap.estimates(_rate(), rows, resamples=0) if not e.breakdown]
    assert rate.value == 50.0


def _rate() -> TrackedMetric:
    return next(m for m in TRACKED if m.name == "answered_rate")
