"""BLEnD's diagnostics on scripted replies: SEM per country, the country gap, local against English, the tables'
sufficiency rule, and an answer rate that moves no SEM-B figure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from geomon.stats import bootstrap, sufficiency, verdicts
from geomon.stats.signflip import PairedTest
from geomon.suites.blend import TRACKED
from geomon.suites.blend.diagnostics import diagnose
from geomon.suites.blend.prompts import build_prompts
from geomon.suites.blend.scoring import items, score


def _scored(release, right: set[str]) -> pd.DataFrame:
    """Scores of scripted replies: the top annotated answer for countries in ``right``, "nothing" elsewhere."""
    prompts = build_prompts(release, ("inst-4",), sample=30, seed=0)
    texts = [
        (p.annotations[0]["answers" if p.asked_in != "English" else "en_answers"][0] if p.annotations else "x")
        if p.country in right
        else "nothing"
        for p in prompts.itertuples()
    ]
    responses = pd.DataFrame({"text": texts, "error": [None] * len(texts)})
    return score(prompts, responses, "scripted")


def test_scores_and_diagnosis_on_scripted_replies(release):
    scores = _scored(release, right={"UK", "South_Korea"})
    valid = scores[scores["status"] == "answered"]
    assert (valid.loc[valid["country"].isin(["UK", "South_Korea"]), "sem_b"] == 100).all()
    assert (valid.loc[valid["country"].isin(["UK", "South_Korea"]), "sem_w"] == 100).all()
    others = valid[~valid["country"].isin(["UK", "South_Korea"])]
    # Elsewhere "nothing" is right only where annotators gave it: one Hausa question of this sample, in both languages.
    hits = others[others["sem_b"] == 100]
    assert list(zip(hits["question_id"], hits["matched"], strict=True)) == [("Na-ko-43", "nothing")] * 2
    assert scores.loc[scores["status"] == "invalid", "sem_b"].isna().all()
    result = diagnose(scores, resamples=200)
    summary = result["summary"]
    countries = result["countries"]
    local = countries[(countries["view"] == "local") & (countries["metric"] == "sem_b")].set_index("group")
    assert local.loc["UK", "value"] == 100 and local.loc["Spain", "value"] == 0
    assert summary["country_gap_sem_b_local"] == 100
    expected = valid.loc[valid["mode"] == "local", "sem_b"].mean()
    assert summary["sem_b_local"] == pytest.approx(expected)
    assert local.loc["Spain", "vs_best"] == -100
    paired = result["local_vs_english"].set_index("country")
    assert paired.loc["South_Korea", "difference"] == 0  # right in both languages
    assert paired.loc["Spain", "difference"] == 0 and np.isfinite(paired.loc["Spain", "ci_low"]) is np.True_
    assert (paired["insufficient_sample"] == (paired["questions"] < sufficiency.MIN_SAMPLE)).all()
    assert paired["questions"].max() <= 30
    rows = items(scores)
    assert len(rows) == len(valid) and set(rows.columns) == {
        "item",
        "question",
        "value",
        "answered",
        "country",
        "mode",
        "asked_in",
    }


def _scored_countries(questions: dict[str, int]) -> pd.DataFrame:
    """Scored rows of each country's ``questions`` questions, asked in Spanish and in English, half of them right."""
    rows = [
        {
            "country": country, "language": "Spanish", "question_id": f"{country}-{q}", "topic": "food",
            "status": "answered", "mode": mode, "asked_in": "Spanish" if mode == "local" else "English",
            "sem_b": 100.0 * (q % 2), "sem_w": 100.0 * (q % 2),
        }
        for country, n in questions.items() for q in range(n) for mode in ("local", "english")
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_the_tables_flag_a_country_by_the_verdicts_sufficiency_rule():
    """A country's figure in BLEnD's tables is insufficient exactly where its verdict would be: below
    ``sufficiency.MIN_SAMPLE`` questions (30). Mutation caught: the tables' own 20 (a country with 25 questions
    sufficient in its table and insufficient in its verdict)."""
    scores = _scored_countries({"Spain": 25, "Mexico": 30})
    result = diagnose(scores, resamples=50)
    countries = result["countries"].drop_duplicates("group").set_index("group")
    paired = result["local_vs_english"].set_index("country")
    for country, questions in (("Spain", 25), ("Mexico", 30)):
        (verdict,) = verdicts.decide([_paired_test(clusters=questions)], verdicts.VerdictSettings())
        insufficient = verdict.verdict == verdicts.INSUFFICIENT
        assert countries.loc[country, "items"] == paired.loc[country, "questions"] == questions
        assert countries.loc[country, "insufficient_sample"] == paired.loc[country, "insufficient_sample"]
        assert bool(paired.loc[country, "insufficient_sample"]) is insufficient is (country == "Spain")


def _paired_test(clusters: int) -> PairedTest:
    """A significant worsening over ``clusters`` clusters: decided, unless the sample is too small."""
    return PairedTest("sem_b", "country=x", 50.0, 30.0, -20.0, 0.0001, 1.0, clusters, clusters, False, 5.0)


def test_the_answer_rate_moves_no_sem_b_figure(release):
    """Splitting ``unanswered`` from ``answered`` adds the answer rate and moves nothing the paper reports: every
    SEM-B/SEM-W figure of ``diagnose`` and every tracked SEM-B headline is what it is when the unanswered replies
    are counted as answered misses (the scoring before the split). Mutation caught: ``diagnose`` or ``items``
    dropping the unanswered replies."""
    scores = _scored(release, right={"UK", "South_Korea"})
    hedged = scores["country"].isin(["Spain", "Mexico"]) & (scores["status"] == "answered")
    scores.loc[hedged, "status"] = "unanswered"  # as "I don't know" or an empty reply: a miss either way
    assert scores.loc[hedged, "sem_b"].eq(0).all() and hedged.sum() > 20
    before = scores.assign(status=scores["status"].replace("unanswered", "answered"))
    now, then = diagnose(scores, resamples=200), diagnose(before, resamples=200)
    figures = [k for k in then["summary"] if k.startswith(("sem_", "country_gap_", "n_"))]
    assert figures and {k: now["summary"][k] for k in figures} == {k: then["summary"][k] for k in figures}
    pd.testing.assert_frame_equal(now["countries"], then["countries"])
    pd.testing.assert_frame_equal(now["local_vs_english"], then["local_vs_english"])
    assert now["summary"]["scored"] == then["summary"]["answered"] == now["summary"]["answered"] + hedged.sum()
    found, was = (
        {(e.metric, e.breakdown): e.value for m in TRACKED for e in bootstrap.estimates(m, rows, resamples=0)}
        for rows in (items(scores), items(before))
    )
    sem_b = [k for k in was if k[0] != "answered_rate"]
    assert sem_b and {k: found[k] for k in sem_b} == {k: was[k] for k in sem_b}
    assert found[("answered_rate", "country=Spain")] == 0 and found[("answered_rate", "country=UK")] == 100
    assert found[("answered_rate", "")] < was[("answered_rate", "")] == 100
