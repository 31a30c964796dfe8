"""QUENCH's suite: prompts on the real release, tolerant answer reading (fuzzed), hand-computed scores,
the Indic gap resampling questions, the CoT effect paired, and the paper's layout."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geomon.engine.registry import ModelSpec
from geomon.stats.bootstrap import estimates
from geomon.suites import quench
from geomon_tests.conftest import SHARED


@pytest.fixture(scope="module")
def items() -> pd.DataFrame:
    return quench.load_items(SHARED / "snapshots" / "quench")


def test_prompts_on_the_real_release(items):
    prompts = quench.build_prompts(items, sample=10, seed=3)
    questions = prompts.drop_duplicates("question_id")
    assert len(questions) == 10 and int(questions["indic"].sum()) == 5  # half Indic
    assert set(prompts["mode"]) == {"normal", "cot"} and len(prompts) == 2 * prompts["entity_id"].nunique()
    assert quench.unfilled_placeholders(prompts) == []
    row = prompts.iloc[0]
    assert row["user"].startswith("The question can have multiple variables to answer")
    assert f"answer for variable {row['variable']}." in row["user"] and row["user"].endswith(row["question"])
    cot = prompts[prompts["mode"] == "cot"].iloc[0]
    assert cot["system"].endswith("You need to provide me with the correct answer. Let's think step by step.")
    assert len(quench.build_prompts(items)) == 2 * 459  # every entity, both modes
    assert quench.sample_questions(items, 10, seed=3) == quench.sample_questions(items, 10, seed=3)


def test_requests_chat_and_completion(items):
    prompts = quench.build_prompts(items, sample=2)
    chat = quench.requests_for(prompts, ModelSpec(name="c", kind="chat", base_url="http://x/v1", model_id="c"))
    assert chat[0].messages[0]["role"] == "system" and chat[0].messages[1]["content"] == prompts["user"].iloc[0]
    base = quench.requests_for(prompts, ModelSpec(name="b", kind="base", base_url="http://x/v1", model_id="b"))
    normal = prompts["mode"].tolist().index("normal")
    assert base[normal].prompt.endswith("Reply: The answer is") and base[normal].params["max_tokens"] == 64
    answers = quench.parse_answers(
        prompts.iloc[[normal]], pd.DataFrame({"text": [" Belle of the Ball."], "error": [None]}), "base"
    )
    assert answers["answer"].tolist() == ["Belle of the Ball"] and answers["status"].tolist() == ["answered"]


@pytest.mark.parametrize(
    ("reply", "variable", "answer"),
    [
        ("The answer is Belle of the Ball.", "X", "Belle of the Ball"),
        ("The answer is <X: Belle of the Ball>.", "X", "Belle of the Ball"),
        ("The answer is <<<X: Lucky Ali>>>.", "X", "Lucky Ali"),
        ("<<<Y: Naveen Patnaik>>> and <<<X: Odisha>>>", "X", "Odisha"),
        ("The answer is **X: Sun Wukong**", "X", "Sun Wukong"),
        ("Let's think. The clue says Italy... So the answer is Lotto. It began in Genoa.", "X", "Lotto"),
        ("The answer is U.S.A. The question mentions it", "X", "U.S.A"),
        ('{"X": "Amrutanjan"}', "X", "Amrutanjan"),
        ('["X: Amrutanjan"]', "X", "Amrutanjan"),
        ("Sure!\nX: Journey to the West\nY: Sun Wukong", "X", "Journey to the West"),
        ("Sure!\nX: Journey to the West\nY: Sun Wukong", "Y", "Sun Wukong"),
        ("The answer is TV Show: Friends", "TV Show", "Friends"),
        ("The answer for variable X is Rolex", "X", "Rolex"),
        ("The answer is `The Beatles`", "X", "The Beatles"),
        ("The answer to the question is: The King Cobra of Agumbe.", "X", "The King Cobra of Agumbe"),  # SmolLM2
        ('The answer to this question is: "22"', "X", "22"),
        # Reasoning, then a conclusion (CoT: the last answer that names an entity counts).
        ("The answer is X.\nBut the clue says rivers.\nThe answer is Ganga.", "X", "Ganga"),
    ],
)
def test_parse_answer_reads_what_models_write(reply, variable, answer):
    assert quench.parse_answer(reply, variable)[0] == answer


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty reply"),
        (None, "empty reply"),
        ("I think it's about a famous person from history.", "no answer in the requested format"),
        ("Y: Sun Wukong", "answers other variables, not X"),
        ("The answer is <X answer>.", "echoes the format's placeholder"),
        ("The answer is <X>\n\nThe answer is <X>", "names the variable, not an entity"),  # Gemma
        ("The answer is X.", "names the variable, not an entity"),  # asked for Z, Gemma answered "X"
        ('The answer to this question is: "The answer is "The answer is "The answer i', "repeats the format"),
        ("The answer is " + "very " * 80 + "long.", "prose, not an entity"),
    ],
)
def test_unparsed_answers_say_why(reply, reason):
    answer, why = quench.parse_answer(reply, "X")
    assert answer is None and why.startswith(reason)


def test_without_cot_the_first_answer_counts():
    # A base model that goes on listing guesses after its answer (Gemma-3-270m's real reply, shortened).
    reply = "The answer is X.com.\n\nThe answer is Jeevansathi.com.\n\nThe answer is 99acres.com.\n\nThe ans"
    assert quench.parse_answer(reply, "X", final=False)[0] == "X.com"
    assert quench.parse_answer(reply, "X", final=True)[0] == "99acres.com"


def test_hostile_replies_are_cleaned_and_capped():
    answer, how = quench.parse_answer("The answer is Par\x00is.\n" + "x" * 30_000, "X")
    assert answer == "Paris" and how.endswith("(reply cut at 20,000 characters)")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400), st.sampled_from(["X", "Y", "TV Show", "Song 1"]))
def test_parse_answer_never_raises(reply, variable):
    answer, how = quench.parse_answer(reply, variable)
    assert (answer is None or 0 < len(answer) <= quench.MAX_ENTITY_CHARS) and isinstance(how, str)
    assert quench.parse_rationale(reply) is None or isinstance(quench.parse_rationale(reply), str)


def test_parse_rationale():
    assert quench.parse_rationale("The rationale is <Belle means beautiful.>") == "Belle means beautiful."
    assert quench.parse_rationale("Because belle means beautiful.") == "Because belle means beautiful."
    assert quench.parse_rationale("  ") is None


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
    assert quench.exact_match(predicted, gold) == match
    assert math.isnan(quench.exact_match(None, gold))


def _toy():
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
    prompts = quench.build_prompts(items)
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
    answers = quench.parse_answers(prompts, responses, "chat")
    asked = quench.rationale_prompts(prompts, answers)
    rationale_replies = pd.DataFrame({"text": "The rationale is because.", "error": [None] * len(asked)})
    rationales = quench.parse_rationales(asked, rationale_replies, "chat")
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
    return prompts, answers, rationales, quench.score(prompts, answers, rationales, judged, similarity, "toy")


def test_hand_computed_scores_and_layout():
    _, answers, rationales, scores = _toy()
    assert answers.set_index("prompt_id").at["q2|X|cot", "status"] == "unanswered"
    # No rationale-from-prediction request without a prediction; the gold one is always asked.
    assert "q2|X|cot|predicted" not in set(rationales["rationale_id"]) and "q2|X|cot|gold" in set(
        rationales["rationale_id"]
    )
    table = quench.aggregate(scores).set_index(["mode", "subset"])
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
    layout = quench.paper_layout(quench.aggregate(scores))
    assert layout["key_name"].iloc[0] == "toy_normal_Aggregated_Indic"
    assert list(layout.columns) == ["key_name", "correct_answer_score", "pred_rationale_score", "gold_rationale_score"]


def test_gap_cot_effect_and_themes():
    *_, scores = _toy()
    result = quench.diagnose(scores, resamples=200)
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
    items = quench.items(scores)
    declared = {e.metric: e.value for m in quench.TRACKED for e in estimates(m, items, resamples=0) if not e.breakdown}
    # Every entity asked is a row, the unanswered one too (no score, not answered): never dropped from a pair.
    assert len(items) == len(scores) and items["answered"].sum() == (scores["status"] == "answered").sum()
    assert declared["questions_gap_correct_answer_score"] == pytest.approx(0.5)  # |Indic − non-Indic|
    assert declared["correct_answer_score"] == pytest.approx(summary["correct_answer_score"])  # no CoT only


def test_aggregation_reproduces_the_papers_all_rows():
    """Fed per-entity judge means that give the paper's Indic and Non-Indic figures (3 judges, 80 and 379
    entities: each value × entities × 3 is a whole number of votes), geomon's aggregation gives the
    paper's "All" row for every model, mode and score: entity-weighted, not the mean of the two subsets."""
    paper = quench.read_paper_table(
        SHARED / "reference" / "quench" / "Results" / "Aggregated Scores  - aggregated_scores.csv"
    )
    indexed = paper.set_index(["model", "mode", "subset"])
    for (model, mode), _ in paper.groupby(["model", "mode"]):
        rows = []
        for subset, n, indic in (("Indic", 80, True), ("Non-Indic", 379, False)):
            votes = {c: round(indexed.at[(model, mode, subset), c] * n * 3) for c in quench.PAPER_SCORES}
            for e in range(n):
                # Spread the subset's votes over its entities (3 judges each); only the totals matter.
                row = {c: (votes[c] // n + (1 if e < votes[c] % n else 0)) / 3 for c in quench.PAPER_SCORES}
                rows.append({**row, "indic": indic, "question_id": f"{subset}{e}", "status": "answered"})
        scores = pd.DataFrame(rows).assign(model=model, mode=mode)
        for column in set(quench.SCORES) - set(quench.PAPER_SCORES):
            scores[column] = np.nan
        ours = quench.aggregate(scores).set_index("subset")
        for column in quench.PAPER_SCORES:
            assert ours.at["All", column] == pytest.approx(indexed.at[(model, mode, "All"), column], abs=1e-9)
            assert ours.at["Indic", column] == pytest.approx(indexed.at[(model, mode, "Indic"), column], abs=1e-9)
