"""Reading QUENCH's replies: tolerant answer reading (fuzzed), the reasons an answer cannot be read, rationales."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geomon.suites.quench.replies import MAX_ENTITY_CHARS, parse_answer, parse_rationale


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
    assert parse_answer(reply, variable)[0] == answer


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
    answer, why = parse_answer(reply, "X")
    assert answer is None and why.startswith(reason)


def test_without_cot_the_first_answer_counts():
    # A base model that goes on listing guesses after its answer (Gemma-3-270m's real reply, shortened).
    reply = "The answer is X.com.\n\nThe answer is Jeevansathi.com.\n\nThe answer is 99acres.com.\n\nThe ans"
    assert parse_answer(reply, "X", final=False)[0] == "X.com"
    assert parse_answer(reply, "X", final=True)[0] == "99acres.com"


def test_hostile_replies_are_cleaned_and_capped():
    answer, how = parse_answer("The answer is Par\x00is.\n" + "x" * 30_000, "X")
    assert answer == "Paris" and how.endswith("(reply cut at 20,000 characters)")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400), st.sampled_from(["X", "Y", "TV Show", "Song 1"]))
def test_parse_answer_never_raises(reply, variable):
    answer, how = parse_answer(reply, variable)
    assert (answer is None or 0 < len(answer) <= MAX_ENTITY_CHARS) and isinstance(how, str)
    assert parse_rationale(reply) is None or isinstance(parse_rationale(reply), str)


def test_parse_rationale():
    assert parse_rationale("The rationale is <Belle means beautiful.>") == "Belle means beautiful."
    assert parse_rationale("Because belle means beautiful.") == "Because belle means beautiful."
    assert parse_rationale("  ") is None
