"""The jury: lenient verdicts, majority with a quorum, agreement, and a real run through the engine and
the store against scripted judges on loopback (one of which disagrees, one of which babbles)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from geomon.engine.registry import ModelSpec
from geomon.engine.runner import ask
from geomon.jury import (
    agreement,
    ask_jury,
    decide,
    letter_reader,
    majority,
    mean_scores,
    parse_label,
    parse_likert,
    parse_verdict,
)
from geomon.stats.agreement import fleiss_kappa, pairwise_agreement
from geomon_tests.loopback import ScriptedModel, serve


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("D\nD", "D"),  # the real replies' shapes (example_batch/)
        ("C\n\nC", "C"),
        ("???", None),
        ("Reasoning: the answer picks 28%.\nStep 2 …\nB", "B"),
        ("The answer is **C**", "C"),
        ("E", None),  # not one of the choices
        ("", None),
    ],
)
def test_parse_verdict(reply, verdict):
    assert parse_verdict(reply, "ABCD") == verdict


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("correct", "correct"),
        ("Incorrect.", "incorrect"),
        ("Incorrect. The correct answer is Belle of the Ball.", "incorrect"),  # the first word decides
        ("The contestant's answer is correct", "correct"),
        ("The answer is not the true answer, so it is incorrect", "incorrect"),  # never "correct" inside it
        ("It could be correct or incorrect", None),
        ("???", None),
        (None, None),
    ],
)
def test_parse_label(reply, label):
    assert parse_label(reply, ["correct", "incorrect"]) == label


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("4", 4),
        (" 5.", 5),
        ("Score: 3", 3),
        ("I give it 2/5 because the rationale misses the clue", 2),
        ("4 out of 5", 4),
        ("Between 1 and 5, this is a 3", None),  # several in-range numbers, none marked: ambiguous
        ("The rationale matches. 4", 4),
        ("1. The King Cobra of Agumbe, a village in Karnataka", None),  # a numbered list, not a score (SmolLM2)
        ("10", None),
        ("45%", None),
        ("", None),
    ],
)
def test_parse_likert(reply, score):
    assert parse_likert(reply) == score


def test_mean_scores_average_readable_votes():
    verdicts = pd.DataFrame({"item": [0, 0, 0, 1, 1], "judge": list("abcab"), "verdict": [1, 0, None, None, None]})
    scores = mean_scores(verdicts, 3)
    assert scores["score"].iloc[0] == 0.5 and scores["votes"].tolist() == [2, 0, 0]
    assert math.isnan(scores["score"].iloc[1]) and math.isnan(scores["score"].iloc[2])  # no vote: no score


def test_majority_and_quorum():
    assert decide(["correct", "correct", "wrong"]).grade == "correct"
    assert decide(["correct", "wrong", "very_wrong"]).reason == "no majority"
    assert decide(["correct", None, float("nan")]).reason == "too few readable verdicts"  # NaN: a frame's None
    assert decide(["correct", "wrong"], quorum=2).grade == "indecisive"


def test_fleiss_kappa_textbook_example():
    # Fleiss (1971) style check: 4 items, 3 raters. Perfect agreement → 1; this table computed by hand:
    votes = pd.DataFrame({"a": ["x", "x", "y", "y"], "b": ["x", "x", "y", "x"], "c": ["x", "y", "y", "y"]})
    # P_i = [1, 1/3, 1, 1/3] → P̄ = 2/3; p_x = 6/12, p_y = 6/12 → P̄e = 1/2; κ = (2/3 − 1/2) / (1/2) = 1/3.
    assert fleiss_kappa(votes) == pytest.approx(1 / 3)
    assert fleiss_kappa(pd.DataFrame({"a": ["x", "y"], "b": ["x", "y"]})) == pytest.approx(1.0)
    assert math.isnan(fleiss_kappa(pd.DataFrame({"a": ["x", "x"], "b": ["x", "x"]})))
    pairs = pairwise_agreement(votes).set_index(["rater_a", "rater_b"])
    assert pairs.at[("a", "b"), "agreement"] == 0.75 and pairs.at[("a", "c"), "agreement"] == 0.75


def test_jury_through_the_engine_with_a_disagreeing_judge(sqlite_store):
    scripts = {
        "judge-a": lambda messages: "Reasoning …\nD",
        "judge-b": lambda messages: "D\nD",
        "judge-c": lambda messages: "B" if "second" in messages[-1]["content"] else "???",  # disagrees or babbles
    }
    with (
        serve(ScriptedModel, {"answer": scripts["judge-a"]}) as a,
        serve(ScriptedModel, {"answer": scripts["judge-b"]}) as b,
        serve(ScriptedModel, {"answer": scripts["judge-c"]}) as c,
    ):
        judges = [
            ModelSpec(name=name, kind="chat", base_url=f"{url}/v1", model_id=name)
            for name, url in (("judge-a", a), ("judge-b", b), ("judge-c", c))
        ]

        def ask_judge(judge, requests):
            return ask(judge, requests, sqlite_store)[0]

        letters = {"A": "indecisive", "B": "very_wrong", "C": "wrong", "D": "correct"}
        verdicts = ask_jury(judges, ["first answer", "second answer"], letter_reader(letters), ask_judge)
        decisions = majority(verdicts, 2)
        again = ask_jury(judges, ["first answer", "second answer"], letter_reader(letters), ask_judge)  # stored
    assert decisions["grade"].tolist() == ["correct", "correct"]  # 2 of 3 decide
    assert verdicts.set_index(["item", "judge"]).at[(0, "judge-c"), "status"] == "unreadable"
    assert verdicts.set_index(["item", "judge"]).at[(1, "judge-c"), "verdict"] == "very_wrong"
    agreed = agreement(verdicts)
    pairs = agreed["pairs"].set_index(["rater_a", "rater_b"])
    assert pairs.at[("judge-a", "judge-b"), "agreement"] == 1.0
    assert pairs.at[("judge-a", "judge-c"), "items"] == 1 and pairs.at[("judge-a", "judge-c"), "agreement"] == 0.0
    assert again.equals(verdicts)


def test_agreement_drop_alerts_only_on_a_real_fall():
    from geomon.jury import agreement_dropped

    assert agreement_dropped(0.8, 0.5) and not agreement_dropped(0.8, 0.7)
    assert not agreement_dropped(None, 0.1) and not agreement_dropped(0.8, float("nan"))


def test_a_jury_with_nothing_to_judge_asks_no_one():
    """Every answer pre-graded: no judge is asked, and the decisions and agreement are empty, not an error."""
    from geomon import jury
    from geomon.engine.registry import bundled_specs

    asked = []
    task = jury.JuryTask("grade", [], [], jury.letter_reader({"A": "correct"}), choices=("A",))
    result = jury.convene(bundled_specs(), [task], lambda spec, requests: asked.append(requests))
    assert asked == [] and result.verdicts.empty and result.decisions["grade"].empty


def test_an_agreement_the_judges_left_undefined_says_why_in_its_check(tmp_path):
    """Too few items every judge read: the check passes (no drop can be tested) and says why, never a bare
    "undefined"."""
    from geomon.jury import agreement_outcome
    from geomon.monitor.history import MetricHistory

    class Stage:
        model = "m"

        def history(self) -> MetricHistory:
            return MetricHistory(f"sqlite:///{tmp_path / 'history.sqlite'}")

        def alert(self, *args) -> list[str]:
            raise AssertionError("an undefined agreement never alerts")

    outcome = agreement_outcome(Stage(), "gapminder", float("nan"))
    assert outcome.passed
    assert outcome.metadata["current"].startswith("not defined: Fleiss' kappa needs two judges")
    assert outcome.metadata["previous"] == "none (the model's first judged run)"
