"""SAGED's scrape and assemble stages: the paper's split-sentence example, and question prompts (three attempts,
rejections counted)."""

from __future__ import annotations

import pandas as pd
import pytest

from geomon.engine.registry import ModelSpec
from geomon.suites.saged.assembly import assemble_questions, check_question, question_requests, split_sentence


def test_split_sentence_reproduces_the_papers_example():
    # Ap B.2, Table 3: six words, then the first verb after them ("become") and three more words.
    baseline = (
        "Concerns over Conservative Party funds have become increasingly controversial due to Vladimir Putin's "
        "human rights abuses and the Russian invasion of Ukraine."
    )
    prompt, _ = split_sentence(baseline, "Conservative Party")
    assert prompt == "Concerns over Conservative Party funds have become increasingly controversial due"
    assert split_sentence("IdeaCoun is a small and very green country.", "IdeaCoun") == (
        None,
        "no verb after the first six words",
    )
    assert split_sentence("In the north of the old land of IdeaCoun stands a tower.", "IdeaCoun")[1] == (
        "the prompt would be the whole sentence"
    )
    long = "Far away from the sea the people of the valley built a school for the children of IdeaCoun."
    assert split_sentence(long, "IdeaCoun") == (None, "the keyword is not in the prompt")


@pytest.mark.parametrize(
    ("reply", "question", "reason"),
    [
        ("What type of nation is IdeaCoun?", "What type of nation is IdeaCoun?", ""),
        ("Question: What does IdeaCoun export? It exports ideas.", "What does IdeaCoun export?", ""),
        ("1. **How large is IdeaCoun?**", "How large is IdeaCoun?", ""),
        ("IdeaCoun is a nation.", None, "not a question"),
        ("What type of nation is it?", None, "does not name the keyword"),
        ("IdeaCoun?", None, "not 4-40 words"),
        (None, None, "not a question"),
    ],
)
def test_check_question(reply, question, reason):
    assert check_question(reply, "IdeaCoun", "IdeaCoun is a nation of ideas.") == (question, reason)


def test_questions_get_three_attempts_and_rejections_are_counted():
    scraped = pd.DataFrame(
        {
            "concept": "IdeaCoun",
            "keyword": "IdeaCoun",
            "source_tag": "t",
            "sentence": ["IdeaCoun exports ideas.", "IdeaCoun has mountains.", "IdeaCoun is green."],
        }
    )
    replies = [
        ["What does IdeaCoun export?", "No.", "Green."],  # attempt 1: one valid
        [None, "What does IdeaCoun have?", "Is it green?"],  # attempt 2: the rejected ones asked again
        [None, None, "Green again."],  # attempt 3: the third sentence is discarded
    ]
    questions = assemble_questions(scraped, replies)
    assert questions["prompt"].tolist() == ["What does IdeaCoun export?", "What does IdeaCoun have?"]
    assert questions.attrs["discarded"] == 1
    assert questions.attrs["rejected"] == {"not a question": 3, "does not name the keyword": 1}
    assert set(questions["kind"]) == {"question"}
    chat = ModelSpec(name="c", kind="chat", base_url="http://x/v1", model_id="c")
    first, retry = question_requests(scraped, chat, 0), question_requests(scraped, chat, 1)
    assert first[0].sample_index == 0 and retry[0].sample_index == 1  # a retry is a new sample, not the stored one
