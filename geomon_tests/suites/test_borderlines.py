"""BorderLines: the real release's tables and translations, and the score formulas on hand-made answers."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from geomon.sources.borderlines import BorderLinesData, DisputesError, read_disputes, read_snapshot
from geomon.suites import borderlines as bl
from geomon_tests.conftest import SHARED

ROOT = SHARED / "snapshots" / "borderlines"


@pytest.fixture(scope="module")
def data() -> BorderLinesData:
    return read_snapshot(ROOT)


def test_release_tables_are_read_whole(data):
    assert data.report["territories"] == 251 and data.report["unknown_controller"] == 90
    assert data.report["controller_not_claimant"] == ["Lachin corridor"]  # kept as published, reported
    assert data.report["claimants_without_country_info"] == ["Suriname"]
    assert len(data.templates) == 49 and len(data.terms) == 49
    assert len(read_disputes(ROOT / "data_misc" / "disputed_territories_2021-08.csv")) == 225


def test_queries_reproduce_the_published_translations(data):
    prompts = bl.build_prompts(data)
    english = (ROOT / "prompts" / "prompts_q_mc.txt").read_text(encoding="utf-8").splitlines()
    assert prompts[prompts["lang"] == "en"]["query"].tolist() == english
    same = total = 0
    territories = data.disputes["territory"]
    for path in sorted((ROOT / "translate" / "prompts_mc_q").glob("prompts.*")):
        lang = path.suffix[1:]
        if lang == "en":
            continue
        published = path.read_text(encoding="utf-8").splitlines()
        lines = json.loads((ROOT / "translate" / "terms" / f"line_inds.{lang}.txt").read_text())
        ours = prompts[prompts["lang"] == lang].set_index("territory")["query"]
        for index, query in zip(lines, published, strict=True):
            total += 1
            same += ours.get(territories[index]) == query
    # All but the four Dutch queries about Suriname, whose country info the release lacks:
    # those are counted gaps, not English fallbacks.
    assert (same, total) == (465, 469)
    suriname_gaps = [g for g in prompts.attrs["gaps"] if "Suriname" in g["missing"]]
    assert len(suriname_gaps) == 4


def test_missing_translation_is_a_counted_gap_not_an_english_fallback(data):
    terms = {lang: dict(t) for lang, t in data.terms.items()}
    del terms["zhs"]["Abagaitu Islet"]
    prompts = bl.build_prompts(BorderLinesData(data.disputes, data.countries, data.templates, terms))
    assert "Abagaitu Islet|zhs" not in set(prompts["query_id"])
    assert {"territory": "Abagaitu Islet", "lang": "zhs", "missing": "Abagaitu Islet"} in prompts.attrs["gaps"]


def test_a_table_with_a_single_claimant_is_an_error(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("Territory,Claimants,Controller,Region\nX,Only,Only,Asia\n")
    with pytest.raises(DisputesError, match=r"row 2 \(X\): fewer than two claimants"):
        read_disputes(path)


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
    scores = bl.concurrence_scores(scored, COUNTRIES)
    assert scores["kb_cs"] == pytest.approx(50.0)  # 1 of 2 English answers name the controller
    assert scores["con_cs"] == pytest.approx(100.0)  # both controller-language answers do
    assert scores["non_cs"] == pytest.approx(25.0)  # 1 of 4 non-controller-language answers
    assert scores["delta_cs_unnormalized"] == pytest.approx(75.0)
    assert scores["delta_cs"] == pytest.approx(300.0)  # (100 − 25) / 25
    # Pairs agreeing: T1 {A,B,A} 1/3, T2 {B,A,C} 0/3, T3 {A,A,B} 1/3 → mean 2/9.
    assert scores["cst_cs_all"] == pytest.approx(200 / 9) and scores["cst_cs_all_territories"] == 3
    assert scores["cst_cs_unknown"] == pytest.approx(100 / 3) and scores["cst_cs_unknown_territories"] == 1
    assert scores["response_countries_mean"] == pytest.approx((2 + 3 + 2) / 3)


def test_score_matches_answers_in_the_query_language(data):
    prompts = bl.build_prompts(data)
    row = prompts[prompts["query_id"] == "Abyei|ar"]
    assert not row.empty
    choices = row.iloc[0]["choices"]
    scored = bl.score(row, pd.Series([f"الإجابة: {choices[1]}"]))
    assert scored.iloc[0]["answer"] == row.iloc[0]["claimants"][1]
