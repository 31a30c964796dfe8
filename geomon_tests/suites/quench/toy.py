"""Three hand-made QUENCH questions, answered, judged (hand-chosen scores) and scored: the scoring and the
diagnostics tests share them."""

from __future__ import annotations

import numpy as np
import pandas as pd

from geomon.suites.quench.prompts import build_prompts, rationale_prompts
from geomon.suites.quench.replies import parse_answers, parse_rationales
from geomon.suites.quench.scoring import score


def toy() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Three questions: q1 (Indic, entities X and Y), q2 (Indic, X), q3 (non-Indic, X); both modes.
    The model answers everything but q2's CoT; judges are stubbed with hand-chosen scores."""
    items = pd.DataFrame(
        {
            "question_id": ["q1", "q1", "q2", "q3"],
            "variable": ["X", "Y", "X", "X"],
            "question": ["X and Y met.", "X and Y met.", "Who is X?", "Where is X?"],
            "answer": ["Ravi", "Sita", "Delhi", "Paris"],
            "rationale": ["r1x", "r1y", "r2", "r3"],
            "indic": [True, True, True, False],
            "themes": [["History"], ["History"], ["Geography"], []],
        }
    )
    prompts = build_prompts(items)
    replies = {
        "q1|X|normal": "The answer is Ravi.",
        "q1|Y|normal": "The answer is Ram.",
        "q2|X|normal": "The answer is Delhi.",
        "q3|X|normal": "The answer is Lyon.",
        "q1|X|cot": "The answer is Ravi.",
        "q1|Y|cot": "The answer is Sita.",
        "q2|X|cot": "I do not know.",
        "q3|X|cot": "The answer is Paris.",
    }
    responses = pd.DataFrame({"text": prompts["prompt_id"].map(replies), "error": None})
    answers = parse_answers(prompts, responses, "chat")
    asked = rationale_prompts(prompts, answers)
    rationale_replies = pd.DataFrame({"text": "The rationale is because.", "error": [None] * len(asked)})
    rationales = parse_rationales(asked, rationale_replies, "chat")
    correct = {
        "q1|X|normal": 1.0,
        "q1|Y|normal": 0.0,
        "q2|X|normal": 0.5,
        "q3|X|normal": 0.0,
        "q1|X|cot": 1.0,
        "q1|Y|cot": 1.0,
        "q3|X|cot": 1.0,
    }
    entities = pd.DataFrame({"prompt_id": list(correct), "score": list(correct.values()), "votes": 2})
    rationale_scores = pd.DataFrame(
        {"rationale_id": asked["rationale_id"], "score": np.where(asked["given"] == "gold", 5.0, 3.0), "votes": 2}
    )
    similarity = pd.DataFrame({"id": answers["prompt_id"], "similarity": 0.5})
    judged = {"entities": entities, "rationales": rationale_scores}
    return prompts, answers, rationales, score(prompts, answers, rationales, judged, similarity, "toy")
