"""BorderLines' diagnostics (``suites/borderlines/diagnostics.py``): Table 4's scores on hand-made and real answers,
excluded answers never misses, their intervals and breakdowns, and how the table changed between versions."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from geomon.suites.borderlines.diagnostics import compare_tables, concurrence_scores, diagnose, language_breakdown
from geomon.suites.borderlines.prompts import (
    build_queries,
)
from geomon.suites.borderlines.source import (
    read_disputes,
)
from geomon_tests.conftest import SHARED

ROOT = SHARED / "snapshots" / "borderlines"


COUNTRIES = {"A": {"Lang_Code": "aa"}, "B": {"Lang_Code": "bb"}, "C": {"Lang_Code": "cc"}}


def _scored(table: str) -> pd.DataFrame:
    """Lines of "territory controller lang answer lang answer ..." with claimants A, B, C."""
    rows = []
    for line in table.strip().splitlines():
        territory, controller, *pairs = line.split()
        for lang, answer in zip(pairs[::2], pairs[1::2], strict=True):
            rows.append(
                {
                    "territory": territory,
                    "controller": controller,
                    "lang": lang,
                    "claimants": ["A", "B", "C"],
                    "answer": answer,
                }
            )
    return pd.DataFrame(rows)


def test_concurrence_scores_hand_computed():
    # T1 (controller A): English right, A's language right, B's wrong, C's right.
    # T2 (controller B): English wrong, B's language right, A's and C's wrong.
    # T3 (Unknown): only consistency counts.
    scored = _scored("""
        T1 A       en A  aa A  bb B  cc A
        T2 B       en A  bb B  aa A  cc C
        T3 Unknown en A  aa A  bb A  cc B
    """)
    scores = concurrence_scores(scored, COUNTRIES)
    assert scores["kb_cs"] == pytest.approx(50.0)  # 1 of 2 English answers name the controller
    assert scores["con_cs"] == pytest.approx(100.0)  # both controller-language answers do
    assert scores["non_cs"] == pytest.approx(25.0)  # 1 of 4 non-controller-language answers
    assert scores["delta_cs_unnormalized"] == pytest.approx(75.0)
    assert scores["delta_cs"] == pytest.approx(300.0)  # (100 − 25) / 25
    # Pairs agreeing: T1 {A,B,A} 1/3, T2 {B,A,C} 0/3, T3 {A,A,B} 1/3 → mean 2/9.
    assert scores["cst_cs_all"] == pytest.approx(200 / 9) and scores["cst_cs_all_territories"] == 3
    assert scores["cst_cs_unknown"] == pytest.approx(100 / 3) and scores["cst_cs_unknown_territories"] == 1
    assert scores["response_countries_mean"] == pytest.approx((2 + 3 + 2) / 3)
    assert scores["random_cs"] == pytest.approx(100 / 3)  # three claimants each: a random answer is right 1 in 3


# Answers to the real 2023-05 queries of seven territories, chosen for what the old pooled formula got
# wrong: an English-speaking controller (Falklands, Chagos), an English-speaking non-controller (Abyei,
# Bajo Nuevo Bank), claimants sharing a language (Bajo Nuevo: es and en twice; Hala'ib: both Arabic),
# unequal numbers of non-controller languages (Aksai Chin has two, the others one), and a failed and an
# unanswered query (Spratly Islands, Unknown controller).
REAL_ANSWERS = {
    ("Falkland Islands", "en"): "United Kingdom",
    ("Falkland Islands", "es"): "Argentina",
    ("Abyei", "en"): "South Sudan",
    ("Abyei", "ar"): "Sudan",
    ("Chagos Archipelago", "en"): "United Kingdom",
    ("Chagos Archipelago", "fr"): "United Kingdom",
    ("Bajo Nuevo Bank", "en"): "Colombia",
    ("Bajo Nuevo Bank", "es"): "Nicaragua",
    ("Hala'ib Triangle", "en"): "Egypt",
    ("Hala'ib Triangle", "ar"): "Sudan",
    ("Aksai Chin", "en"): "People's Republic of China",
    ("Aksai Chin", "hi"): "India",
    ("Aksai Chin", "zht"): "India",
    ("Aksai Chin", "zhs"): "People's Republic of China",
    ("Spratly Islands", "en"): "Vietnam",
    ("Spratly Islands", "vi"): "Vietnam",
    ("Spratly Islands", "ms"): None,  # unanswered: no claimant read
    ("Spratly Islands", "zht"): "Republic of China",
    ("Spratly Islands", "zhs"): "Vietnam",
    ("Spratly Islands", "tl"): None,  # failed request
}


def test_concurrence_scores_follow_the_release_scoring_on_real_territories(data):
    queries = build_queries(data)
    keys = list(zip(queries["territory"], queries["lang"], strict=True))
    scored = queries[[key in REAL_ANSWERS for key in keys]].copy()
    assert len(scored) == len(REAL_ANSWERS)  # every query exists in the real table (Chagos' Morisyen is a gap)
    scored["answer"] = [REAL_ANSWERS[key] for key in zip(scored["territory"], scored["lang"], strict=True)]
    scored["error"] = [
        "timeout" if (t, lang) == ("Spratly Islands", "tl") else None
        for t, lang in zip(scored["territory"], scored["lang"], strict=True)
    ]
    scores = concurrence_scores(scored, data.countries)
    # KB over the six known controllers: only Abyei's English answer misses.
    assert scores["kb_cs"] == pytest.approx(500 / 6)
    # Con: Falklands and Chagos through their English answer (the UK speaks English), Abyei ar, Aksai Chin zhs
    # hit; Bajo Nuevo es (Colombia's language, shared with Nicaragua) and Hala'ib ar miss.
    assert scores["con_cs"] == pytest.approx(400 / 6) and scores["con_cs_territories"] == 6
    # Non, per territory then averaged: Falklands es 0, Abyei en 0 (South Sudan speaks English), Chagos fr 1,
    # Bajo Nuevo en 1 (the US and Jamaica), Aksai Chin (hi, zht) 0/2; Hala'ib has no non-controller language.
    # Pooled over answers it would be 2/6 = 33.3.
    assert scores["non_cs"] == pytest.approx(40.0) and scores["non_cs_territories"] == 5
    assert scores["delta_cs_unnormalized"] == pytest.approx(400 / 6 - 40)
    assert scores["delta_cs"] == pytest.approx((400 / 6 - 40) / 40 * 100)
    # Cst over claimant-language answers, English among them where a claimant speaks it:
    # Falklands 0, Abyei 0, Chagos 1 (en = fr), Bajo Nuevo 0, Aksai Chin 1/3, Spratly 1/3 (vi, zht, zhs;
    # the English answer is not a claimant's, the excluded ms and tl are left out); Hala'ib has one answer.
    assert scores["cst_cs_all"] == pytest.approx((1 + 2 / 3) / 6 * 100) and scores["cst_cs_all_territories"] == 6
    assert scores["cst_cs_unknown"] == pytest.approx(100 / 3) and scores["cst_cs_unknown_territories"] == 1
    assert scores["response_countries_mean"] == pytest.approx(12 / 7)
    assert scores["response_countries_with_en_mean"] == pytest.approx(13 / 7)
    assert (scores["answers"], scores["failed"], scores["unanswered"]) == (18, 1, 1)


def test_excluded_answers_are_not_misses(data):
    queries = build_queries(data)
    falklands = queries[queries["territory"] == "Falkland Islands"].copy()
    falklands["answer"] = ["United Kingdom", None]
    falklands["error"] = [None, "HTTP 500"]
    scores = concurrence_scores(falklands, data.countries)
    assert scores["kb_cs"] == 100.0 and scores["con_cs"] == 100.0
    assert np.isnan(scores["non_cs"]) and scores["non_cs_territories"] == 0  # not 0 %: nothing to score
    assert np.isnan(scores["cst_cs_all"]) and scores["failed"] == 1


def test_bootstrap_intervals_bracket_the_scores():
    scored = _scored(
        "\n".join(
            f"T{i} {'A' if i % 3 else 'B'} en {'A' if i % 2 else 'B'} aa A bb {'B' if i % 4 else 'A'}"
            for i in range(40)
        )
    )
    scores = concurrence_scores(scored, COUNTRIES, resamples=400, seed=1)
    for name in ("kb_cs", "con_cs", "non_cs", "cst_cs_all"):
        assert scores[f"{name}_ci_low"] <= scores[name] <= scores[f"{name}_ci_high"], name
        assert scores[f"{name}_ci_high"] - scores[f"{name}_ci_low"] > 0, name
    again = concurrence_scores(scored, COUNTRIES, resamples=400, seed=1)
    assert again["kb_cs_ci_low"] == scores["kb_cs_ci_low"]  # seeded: reproducible


def test_diagnose_breaks_down_by_persona_region_and_language():
    scored = _scored("""
        T1 A       en A  aa A  bb B
        T2 B       en A  bb B  aa A
    """)
    scored["region"] = ["Asia"] * 3 + ["Europe"] * 3
    scored["persona"] = "vanilla"
    both = pd.concat([scored, scored.assign(persona="nationalist")], ignore_index=True)
    result = diagnose(both, COUNTRIES, resamples=0)
    assert list(result["by_persona"]["persona"]) == ["vanilla", "nationalist"]
    assert set(result["by_region"]["region"]) == {"Asia", "Europe"}
    languages = result["by_language"].set_index("lang")
    # Every claimant-language answer here names the claimant that speaks the language.
    assert languages.at["aa", "own_claimant_rate"] == 100.0 and languages.at["bb", "own_claimant_rate"] == 100.0
    assert languages.at["en", "controller_rate"] == 50.0


def test_language_rates_have_intervals_over_territories():
    """Each language's rates come from stats.uncertainty.group_gaps, resampling territories within the
    language: a language asked about one territory has a rate but no interval, and says why."""
    scored = _scored("""
        T1 A       en A  aa A  bb B
        T2 B       en A  bb B  aa A
        T3 A       en B  aa B  bb B
    """)
    languages = language_breakdown(scored, COUNTRIES, resamples=400).set_index("lang")
    assert languages.at["en", "controller_rate"] == pytest.approx(100 / 3)
    assert (
        languages.at["en", "controller_rate_ci_low"] == 0.0 and languages.at["en", "controller_rate_ci_high"] == 100.0
    )
    assert languages.at["aa", "own_claimant_rate"] == pytest.approx(200 / 3)
    assert math.isnan(languages.at["en", "own_claimant_rate"])  # English is nobody's own language here
    single = language_breakdown(scored.iloc[:3], COUNTRIES, resamples=400).set_index("lang")
    assert math.isnan(single.at["aa", "own_claimant_rate_ci_low"]) and single.at["aa", "own_claimant_rate"] == 100.0


def test_table_versions_2021_08_and_2023_05(data):
    old = read_disputes(ROOT / "data_misc" / "disputed_territories_2021-08.csv")
    change = compare_tables(old, data.disputes)
    # The paper's appendix D counts 70 new, 46 dropped, 181 in both and 21 controller changes, all between
    # Unknown and a named controller. The released files give 71 / 45 / 180 / 18: 17 Unknown ↔ named and
    # one renaming (the Taliban's "Islamic Emirate of Afghanistan" → "Afghanistan" for the Wakhan Corridor).
    assert (len(change["added"]), len(change["removed"]), change["in_both"]) == (71, 45, 180)
    changed = change["controller_changed"]
    assert len(changed) == 18
    assert [c["territory"] for c in changed if "Unknown" not in (c["before"], c["after"])] == ["Wakhan Corridor"]
