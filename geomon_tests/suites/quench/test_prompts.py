"""QUENCH's prompts on the real release, and the requests a chat and a base model get."""

from __future__ import annotations

import pandas as pd
import pytest

from geomon.engine.registry import ModelSpec
from geomon.suites.quench.prompts import build_prompts, requests_for, sample_questions, unfilled_placeholders
from geomon.suites.quench.replies import parse_answers
from geomon.suites.quench.source import load_items
from geomon_tests.conftest import SHARED


@pytest.fixture(scope="module")
def items() -> pd.DataFrame:
    return load_items(SHARED / "snapshots" / "quench")


def test_prompts_on_the_real_release(items):
    prompts = build_prompts(items, sample=10, seed=3)
    questions = prompts.drop_duplicates("question_id")
    assert len(questions) == 10 and int(questions["indic"].sum()) == 5  # half Indic
    assert set(prompts["mode"]) == {"normal", "cot"} and len(prompts) == 2 * prompts["entity_id"].nunique()
    assert unfilled_placeholders(prompts) == []
    row = prompts.iloc[0]
    assert row["user"].startswith("The question can have multiple variables to answer")
    assert f"answer for variable {row['variable']}." in row["user"] and row["user"].endswith(row["question"])
    cot = prompts[prompts["mode"] == "cot"].iloc[0]
    assert cot["system"].endswith("You need to provide me with the correct answer. Let's think step by step.")
    assert len(build_prompts(items)) == 2 * 459  # every entity, both modes
    assert sample_questions(items, 10, seed=3) == sample_questions(items, 10, seed=3)


def test_requests_chat_and_completion(items):
    prompts = build_prompts(items, sample=2)
    chat = requests_for(prompts, ModelSpec(name="c", kind="chat", base_url="http://x/v1", model_id="c"))
    assert chat[0].messages[0]["role"] == "system" and chat[0].messages[1]["content"] == prompts["user"].iloc[0]
    base = requests_for(prompts, ModelSpec(name="b", kind="base", base_url="http://x/v1", model_id="b"))
    normal = prompts["mode"].tolist().index("normal")
    assert base[normal].prompt.endswith("Reply: The answer is") and base[normal].params["max_tokens"] == 64
    answers = parse_answers(
        prompts.iloc[[normal]], pd.DataFrame({"text": [" Belle of the Ball."], "error": [None]}), "base"
    )
    assert answers["answer"].tolist() == ["Belle of the Ball"] and answers["status"].tolist() == ["answered"]
