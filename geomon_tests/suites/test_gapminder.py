"""Gapminder: prompts from the real question bank, Gapminder's rate formula reproduced on its own
published results, hand-computed toy rates, and the jury's aggregation on the real judges' replies."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from geomon.jury import decide, parse_verdict
from geomon.suites import gapminder as gm
from geomon.suites.gapminder.source import read_results, read_snapshot
from geomon_tests.conftest import SHARED

ROOT = SHARED / "snapshots" / "gapminder"
REFERENCE = SHARED / "reference" / "gapminder"


@pytest.fixture(scope="module")
def data():
    return read_snapshot(ROOT)


def test_prompts_from_the_real_bank(data):
    prompts = gm.build_prompts(data)
    assert len(prompts) == 365 * 109  # every English question × every English variation
    assert prompts.attrs["gaps"] == {"zh-CN": "113 prompt variations, 0 questions in zh-CN"}
    assert gm.unfilled_placeholders(prompts) == []
    row = prompts[prompts["prompt_id"] == "1541|no_option_letter"].iloc[0]
    assert row["question_text"] in row["prompt"] and all(option in row["prompt"] for option in row["options"])
    assert sorted(row["correctness"]) == [1, 2, 3]
    small = gm.build_prompts(data, sample_questions=5, sample_variations=3, seed=1)
    assert len(small) == 15 and small.equals(gm.build_prompts(data, sample_questions=5, sample_variations=3, seed=1))


def test_placeholders_outside_the_data_fields_are_errors(data):
    broken = data.variations.copy()
    broken.loc[broken.index[0], "question_prompt_template"] = "{question} for {audience}"
    data_broken = type(data)(
        data.questions, data.options, broken, data.judge_prompt, data.judge_choices, data.model_configs
    )
    with pytest.raises(gm.PromptError, match=r"prompt variation .*: unknown placeholder\(s\) \['audience'\]"):
        gm.build_prompts(data_broken, languages=["en-US"])


def _graded(rows: str) -> pd.DataFrame:
    """ "model question grade grade ..." lines → a graded frame (one answer per grade)."""
    out = []
    for line in rows.strip().splitlines():
        model, question, *grades = line.split()
        out += [
            {"model": model, "question_id": question, "prompt_variation_id": f"v{i}", "language": "en-US", "grade": g}
            for i, g in enumerate(grades)
        ]
    return pd.DataFrame(out)


def test_correct_rates_hand_computed():
    graded = _graded("""
        m1 q1 correct correct wrong indecisive
        m1 q2 correct very_wrong very_wrong very_wrong
        m2 q1 indecisive indecisive
        m2 q2 correct wrong
    """)
    rates = gm.correct_rates(graded)
    # m1: q1 2 of 3 decisive, q2 1 of 4 → (66.67 + 25) / 2; pooled 3 of 7.
    assert rates.at["m1", "correct_rate"] == pytest.approx((200 / 3 + 25) / 2)
    assert rates.at["m1", "correct_rate_pooled"] == pytest.approx(300 / 7)
    assert rates.at["m1", "very_wrong_rate"] == pytest.approx((0 + 75) / 2)
    assert (rates.at["m1", "n"], rates.at["m1", "indecisive"], rates.at["m1", "correct"]) == (8, 1, 3)
    # m2: q1 has no decisive answer and drops out of the mean; q2 1 of 2.
    assert rates.at["m2", "correct_rate"] == pytest.approx(50.0) and rates.at["m2", "questions"] == 2


def test_reproduces_gapminders_published_rates():
    """Gapminder's own graded outputs → its published average_correct_rate (integers) per configuration."""
    results = read_results(REFERENCE / "results")
    published = pd.read_csv(REFERENCE / "ddf--datapoints--average_correct_rate--by--model_configuration.csv")
    published = published.set_index("model_configuration")["average_correct_rate"]
    per_run = gm.correct_rates(results, ["model", "run"]).reset_index()
    per_run["published"] = per_run["model"].map(published)
    per_run["difference"] = per_run["correct_rate"] - per_run["published"]
    assert len(per_run) == 22
    close = per_run[per_run["difference"].abs() <= 1]
    assert len(close) == 21
    # The one that is not: mc057's supplementary run (73 other prompt variations on 160 questions); the
    # published 87 is computed over both of mc057's runs together, which geomon gives within 1 point.
    far = per_run[per_run["difference"].abs() > 1]
    assert far[["model", "run"]].values.tolist() == [["mc057", "master_output_20250414-1"]]
    per_model = gm.correct_rates(results)
    assert abs(per_model.at["mc057", "correct_rate"] - published["mc057"]) <= 1
    assert ((per_model["correct_rate"] - published.reindex(per_model.index)).abs() <= 1).all()


def test_pre_grading_settles_only_unambiguous_answers(data):
    prompts = gm.build_prompts(data, sample_questions=1, sample_variations=1, seed=3)
    options, correctness = prompts.iloc[0]["options"], prompts.iloc[0]["correctness"]
    answers = [f"I think {options[0]}.", f"{options[0]} or {options[1]}", "No idea", None]
    # one option named, but negated, doubted or in an error: the judges' call (the rubric's equivocal answer)
    answers += [
        f"It is definitely not {options[0]}.",
        f"I cannot know; some sources say {options[0]} but that is unverified.",
        f"Error: {options[0]} quota exceeded",
        f"可能是{options[0]}",
        f"It isn\u2019t {options[0]}.",  # a typographic apostrophe
        f"I don\u2019t think it is {options[0]}.",
        f"It is unlikely to be {options[0]}.",
        f"{options[0]} is incorrect.",
        f"{options[0]} is wrong.",
    ]
    grades = gm.pre_grade(pd.concat([prompts] * len(answers), ignore_index=True), answers)
    assert grades == [{1: "correct", 2: "wrong", 3: "very_wrong"}[correctness[0]]] + [None] * (len(answers) - 1)
    # an option's own words are not the answer's doubt: "It is not a member", named plainly, is that option
    options = ["It is not a member", "It is a member", "It left"]
    member = pd.DataFrame({"options": [options], "correctness": [[1, 2, 3]]})
    assert gm.pre_grade(member, ["It is not a member."]) == ["correct"]


def test_rank_classification_grades_the_likeliest_option_and_states_its_probability_on_the_correct_one():
    """A base model ranks the three options after "Answer:": the likeliest is its answer, graded by its correctness
    (never indecisive), and ``correct_p`` is the softmax share of the correct option; a failed ranking has neither.
    Per question, ``items`` averages the share over its wordings — the ``correct_probability`` headline's rows."""
    prompts = pd.DataFrame(
        {
            "prompt_id": ["q1|v1", "q1|v2", "q2|v1"],
            "question_id": ["q1", "q1", "q2"],
            "prompt_variation_id": ["v1", "v2", "v1"],
            "family": ["f", "g", "f"],
            "language": "en-US",
            "topic": ["sdg-world-01", "sdg-world-01", "other"],
            "options": [["a", "b", "c"]] * 3,
            "correctness": [[2, 1, 3], [2, 1, 3], [1, 3, 2]],
        }
    )
    ln = math.log
    scores = [[ln(0.2), ln(0.5), ln(0.3)], [ln(0.6), ln(0.3), ln(0.1)], [None, ln(0.5), ln(0.5)]]
    assert gm.ranked_grades(prompts, scores) == ["correct", "wrong", None]
    responses = pd.DataFrame({"text": ["b", "a", None], "error": [None, None, "timeout"], "logprobs": scores})
    graded = gm.score(prompts, responses, gm.ranked_grades(prompts, scores), pd.DataFrame(), "m", ranked=True)
    assert list(graded["graded_by"]) == ["ranked", "ranked", "failed"]
    assert graded["correct_p"].tolist()[:2] == pytest.approx([0.5, 0.3]) and math.isnan(graded["correct_p"][2])
    rows = gm.items(graded).set_index("item")
    assert rows.loc["q1", "correct_p"] == pytest.approx(0.4) and "q2" not in rows.index  # failed: left out
    # never indecisive by construction: no indecisive figure to compare (a 0 would ask for ≈330 questions to decide)
    assert rows["indecisive"].isna().all() and rows["family_indecisive"].isna().all()
    assert gm.diagnose(graded, resamples=10)["summary"]["correct_probability"] == pytest.approx(40.0)
    generated = gm.score(prompts, responses, ["correct", "wrong", None], pd.DataFrame(), "m")
    assert generated["correct_p"].isna().all()  # a generated answer states no probability


def test_jury_on_the_real_judges_replies():
    """The three commercial judges' real replies in example_batch/, read and aggregated by geomon's jury."""
    letters = {"A": "indecisive", "B": "very_wrong", "C": "wrong", "D": "correct"}
    votes: dict[str, list[str | None]] = {}
    for judge in ("gpt-4o", "claude-3-5", "gimini-1-5"):
        path = ROOT / "example_batch" / f"mc039-question_prompts-response-eval-prompts-{judge}-response.jsonl"
        for line in path.read_text().splitlines():
            reply = json.loads(line)
            votes.setdefault(reply["custom_id"], []).append(letters.get(parse_verdict(reply["content"], "ABCD")))
    decided = {cid.split("-", 2)[2].removesuffix("-correctness"): decide(v).grade for cid, v in votes.items()}
    # "D\nD" and "C\n\nC" are read; "???" is not and casts no vote.
    assert decided == {
        "no_option_letter": "correct",
        "v_sensetive": "indecisive",  # wrong / very wrong / indecisive: no majority
        "v_pick_most_correct": "wrong",
        "v_nobody_knows": "correct",  # "???" + correct + correct
        "v_help_me_guess": "indecisive",  # wrong / unreadable / very wrong
    }
    recorded = read_results(REFERENCE / "results")
    recorded = recorded[(recorded["model"] == "mc039") & (recorded["question_id"] == "1541")]
    recorded = recorded.set_index("prompt_variation_id")["grade"]
    agree = sum(recorded[v] == g for v, g in decided.items())
    # Gapminder recorded "correct" for all five; the example replies agree on two. The same replies are
    # filed for mc040 too, so they illustrate the format rather than being the replies behind the record.
    assert agree == 2


def test_language_gap_needs_both_languages():
    graded = _graded("m1 q1 correct wrong")
    assert "needs answers in en-US and zh-CN" in gm.language_gap(graded)["note"]
    both = pd.concat([graded, graded.assign(language="zh-CN", grade=["wrong", "wrong"])], ignore_index=True)
    gap = gm.language_gap(both, resamples=200)
    assert gap["en_minus_zh"] == pytest.approx(50.0)


def test_language_gap_is_paired_on_questions():
    """The same questions in both languages: the interval resamples questions once for both languages
    (stats.uncertainty.group_gaps, paired): per-question gaps of 50, 0, 0 and 50 points can only average
    between 0 and 50."""
    graded = _graded("m1 q1 correct wrong\nm1 q2 correct correct\nm1 q3 wrong wrong\nm1 q4 correct wrong")
    zh = graded.assign(language="zh-CN")
    zh.loc[zh["question_id"].isin(["q1", "q4"]), "grade"] = "wrong"  # 50 points lower on two of four questions
    gap = gm.language_gap(pd.concat([graded, zh], ignore_index=True), resamples=500)
    assert gap["en_minus_zh"] == pytest.approx(25.0) and gap["questions"] == 4
    assert 0.0 <= gap["en_minus_zh_ci_low"] <= 25.0 <= gap["en_minus_zh_ci_high"] <= 50.0
