"""WorldBench's prompts, scores and diagnosis, on hand-made data and on the real snapshot."""

from __future__ import annotations

import pandas as pd
import pytest

from geomon.engine.registry import bundled_specs
from geomon.sources.worldbank import WorldBankSnapshot
from geomon.stats.disparity import random_baseline
from geomon.suites import worldbench as wb


def tiny_snapshot() -> WorldBankSnapshot:
    """Four countries, one indicator, values for 2018–2022 (some missing)."""
    economies = pd.DataFrame(
        {
            "iso3": ["CHE", "AAA", "BBB", "CCC", "DDD"],
            "name": ["Switzerland", "Aland", "Bland", "Cland", "Dland"],
            "region": ["Europe", "Europe", "Africa", "Africa", "Asia"],
            "income_group": ["High income", "High income", "Low income", "Low income", pd.NA],
        }
    )
    rows = []
    for iso3, series in {
        "CHE": {2020: 8_600_000, 2021: 8_700_000, 2022: 8_800_000},
        "AAA": {2018: 90, 2020: 100, 2021: 110, 2022: 120},  # mean of latest three = 110
        "BBB": {2019: 50, 2021: 200},  # only 2021 in the window = 200
        "CCC": {2018: 10, 2019: 20},  # nothing in 2020-2022: left out, counted
        "DDD": {2022: 1000},
    }.items():
        rows += [{"indicator": "SP.POP.TOTL", "iso3": iso3, "year": y, "value": float(v)} for y, v in series.items()]
    return WorldBankSnapshot(
        values=pd.DataFrame(rows),
        economies=economies,
        indicators=pd.DataFrame(
            {"indicator": ["SP.POP.TOTL"], "name": ["Population, total"], "last_updated": ["2023-12-18"]}
        ),
        last_updated="2023-12-18",
        source="test",
    )


def test_ground_truth_is_the_mean_of_the_latest_three_years():
    truth = wb.ground_truth(tiny_snapshot()).set_index("iso3")
    assert truth.loc["AAA", "ground_truth"] == 110
    assert truth.loc["AAA", "gt_years"] == "2020,2021,2022"
    assert truth.loc["BBB", "ground_truth"] == 200
    assert "CCC" not in truth.index
    assert wb.ground_truth(tiny_snapshot(), year=2020).set_index("iso3").loc["AAA", "ground_truth"] == 100


def test_prompts_follow_figure_4():
    prompts = wb.build_prompts(tiny_snapshot())
    assert list(prompts["iso3"]) == ["AAA", "BBB", "DDD"]  # the example country is not asked; CCC has no data
    assert prompts.attrs["skipped"] == {"SP.POP.TOTL": 1}
    messages = prompts.iloc[0]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert "only answer with the number" in messages[0]["content"] and "population" in messages[0]["content"]
    assert messages[1]["content"] == "Sounds good, will do."
    assert "Switzerland" in messages[2]["content"] and messages[3]["content"] == "8,700,000"
    assert messages[4]["content"].startswith("What is the total population for the country Aland?")  # Table 1
    assert prompts.iloc[0]["prompt"].endswith(
        "country Aland? Do not answer in a complete sentence - only provide the number!\nAnswer:"
    )
    year = wb.build_prompts(tiny_snapshot(), year=2021)
    assert "country Aland in 2021?" in year.iloc[0]["messages"][4]["content"]
    assert year.set_index("iso3").loc["AAA", "ground_truth"] == 110


def test_prompt_errors_name_the_problem():
    with pytest.raises(wb.PromptError, match=r"example country 'XXX'"):
        wb.build_prompts(tiny_snapshot(), example_country="XXX")
    with pytest.raises(wb.PromptError, match=r"no questions: .*SP.POP.TOTL.*CHE has no value in 2018"):
        wb.build_prompts(tiny_snapshot(), year=2018)
    with pytest.raises(wb.PromptError, match=r"NOT.THERE"):
        wb.build_prompts(tiny_snapshot(), indicators={"NOT.THERE": "x"})


def test_requests_use_messages_for_chat_and_completion_for_base_models():
    prompts = wb.build_prompts(tiny_snapshot())
    chat, base = bundled_specs()
    chat_req = wb.requests_for(prompts, chat)[0]
    base_req = wb.requests_for(prompts, base)[0]
    assert chat_req.mode == "chat" and chat_req.params["max_tokens"] == wb.MAX_TOKENS
    assert base_req.mode == "completion" and base_req.params["stop"] == ["\n", "Question:"]


def _scored(texts: list[str | None]) -> pd.DataFrame:
    prompts = wb.build_prompts(tiny_snapshot())
    responses = pd.DataFrame({"text": texts, "error": [None if t is not None else "boom" for t in texts]})
    return wb.score(prompts, responses)


def test_score_hand_computed():
    scores = _scored(["121", "about 100 (World Bank, 2019)", None])
    assert scores["parsed"].tolist()[:2] == [121.0, 100.0]
    assert scores["error"].tolist()[0] == pytest.approx(11 / 121)  # |121-110| / 121
    assert scores["error"].tolist()[1] == pytest.approx(100 / 200)  # |100-200| / 200
    assert pd.isna(scores["error"].tolist()[2]) and scores["response_error"].tolist()[2] == "boom"
    assert scores["cited_year"].tolist()[1] == 2019


def test_diagnose_hand_computed():
    scores = _scored(["121", "about 120 (World Bank, 2019)", "1000"])
    result = wb.diagnose(scores, tiny_snapshot(), trials=10)
    summary = result["summary"]
    assert summary["questions"] == 3 and summary["parse_rate"] == 1.0
    errors = [11 / 121, 80 / 200, 0.0]
    assert summary["mean_error"] == pytest.approx(sum(errors) / 3)
    # Regions: Europe 11/121, Africa 0.4, Asia 0 → disparity 0.4.
    assert summary["region_disparity_mean"] == pytest.approx(0.4)
    # Income: High 11/121, Low 0.4 (DDD has no income group and is left out) → 0.4 − 11/121.
    assert summary["income_group_disparity_mean"] == pytest.approx(0.4 - 11 / 121)
    table = result["disparity"]
    ranks = table[(table["indicator"] == "all") & (table["categorization"] == "region")].set_index("group")["rank"]
    assert ranks[["Asia", "Europe", "Africa"]].tolist() == [1, 2, 3]
    # The citation "World Bank, 2019" is checked against BBB's 2019 value (50) and every year:
    # 120 is 70/120 off the cited year but 80/200 off 2021, the best-matching year.
    cites = result["citations"].iloc[0]
    assert cites["error_cited_year"] == pytest.approx(70 / 120)
    assert cites["best_year"] == 2021 and cites["error_best_year"] == pytest.approx(0.4)
    # AAA answered 121: closest to 2022 (120); the paired delta picks 2022 as best-matching year.
    by_year = result["by_year"].set_index("reference")
    assert by_year.loc["2022", "answers"] == 2
    assert summary["best_matching_year"] in {2021, 2022}


def test_real_snapshot_gives_one_question_per_pair_with_recent_data(snapshot):
    prompts = wb.build_prompts(snapshot)
    recent = snapshot.values[snapshot.values["year"] >= 2020]
    pairs = recent[recent["iso3"] != "CHE"].groupby(["indicator", "iso3"]).ngroups
    assert len(prompts) == pairs == 2149
    assert prompts["question_id"].is_unique
    assert set(prompts["region"]) >= {"Sub-Saharan Africa", "Europe & Central Asia"}
    assert sum(prompts.attrs["skipped"].values()) > 0


def test_year_variants_of_the_paper(snapshot):
    # WDI 2023-12 ends CO2, maternal mortality and renewables in 2020: the 2021 variant leaves those
    # indicators out and says so, instead of failing or asking without an example.
    missing = "CHE has no value in 2021"
    expected = {2016: {}, 2021: {"EN.ATM.CO2E.PC": missing, "SH.STA.MMRT": missing, "EG.FEC.RNEW.ZS": missing}}
    for year, left_out in expected.items():
        prompts = wb.build_prompts(snapshot, year=year)
        assert prompts.attrs["indicators_left_out"] == left_out
        assert prompts["indicator"].nunique() == 11 - len(left_out)
        assert f"in {year}? Do not answer" in prompts["messages"].iloc[0][4]["content"]


def test_sample_spreads_over_regions(snapshot):
    picked = wb.sample_countries(snapshot, 7)
    regions = snapshot.economies.set_index("iso3").loc[picked, "region"]
    assert len(picked) == 7 and regions.nunique() == 7
    assert picked == wb.sample_countries(snapshot, 7)


def test_failed_unanswered_and_negative_answers():
    scores = _scored(["-121", "I don't know", None])
    # A negative number for a non-negative indicator is wrong by the full amount, not 2× wrong.
    assert scores["error"].tolist()[0] == 1.0 and "negative" in scores["parse_note"].tolist()[0]
    assert scores["status"].tolist() == ["answered", "unanswered", "failed"]
    summary = wb.diagnose(scores, tiny_snapshot(), resamples=100)["summary"]
    assert (summary["parsed"], summary["unanswered"], summary["failed_requests"], summary["negative_answers"]) == (
        1,
        1,
        1,
        1,
    )


def test_most_recent_year_leaves_out_countries_without_recent_values():
    snap = tiny_snapshot()
    # CCC's last values are from 2018–2019: inside the past five years (2018–2022), so it counts;
    # a country whose latest value is 2017 would not.
    snap.values.loc[(snap.values["iso3"] == "CCC") & (snap.values["year"] == 2019), "year"] = 2017
    snap.values.loc[(snap.values["iso3"] == "CCC") & (snap.values["year"] == 2018), "year"] = 2016
    prompts = wb.build_prompts(snap)
    # Ask CCC too, with a made-up ground truth, to see the most-recent rule leave it out.
    extra = prompts.iloc[[0]].assign(iso3="CCC", question_id="SP.POP.TOTL|CCC|latest", ground_truth=15.0)
    prompts = pd.concat([prompts, extra], ignore_index=True)
    scores = wb.score(prompts, pd.DataFrame({"text": ["120", "200", "1000", "20"], "error": [None] * 4}))
    by_year = wb.error_by_year(scores, snap).set_index("reference")
    assert by_year.loc["most recent per country", "answers"] == 3  # AAA, BBB, DDD — not CCC (2017)
    assert by_year.loc["most recent per country", "mean_error"] == 0.0  # 120 (AAA 2022), 200 (BBB 2021), 1000


def test_paper_random_baseline_uses_k_random_groups(snapshot):
    countries = pd.DataFrame({"region": ["North America"] * 3 + ["Sub-Saharan Africa"] * 48, "error": range(51)})
    paper = random_baseline(countries, "region", trials=10, seed=0, k=7)
    same_sizes = random_baseline(countries, "region", trials=10, seed=0, method="shuffled_labels")
    assert paper["groups"] == 7 and paper["method"] == "random_categorization"
    assert same_sizes["groups"] == 2
    assert paper != same_sizes


def test_group_intervals_and_world_bank_mentions_on_real_prompts(snapshot):
    prompts = wb.build_prompts(snapshot, countries=wb.sample_countries(snapshot, 40))
    prompts = prompts[prompts["indicator"] == "SP.POP.TOTL"].reset_index(drop=True)
    # Answers 30 % off the truth, with "World Bank" mentioned in every third answer and those 60 % off.
    texts = [
        f"{gt * 0.4:.0f} (World Bank)" if i % 3 == 0 else f"{gt * 1.3:.0f}"
        for i, gt in enumerate(prompts["ground_truth"])
    ]
    scores = wb.score(prompts, pd.DataFrame({"text": texts, "error": [None] * len(texts)}))
    result = wb.diagnose(scores, snapshot, resamples=300)
    summary = result["summary"]
    assert summary["world_bank_mentions"] == len(range(0, len(texts), 3))
    assert summary["world_bank_mention_error"] == pytest.approx(0.6, abs=1e-4)  # answers are rounded
    assert summary["no_mention_error"] == pytest.approx(0.3 / 1.3, abs=1e-4)
    assert summary["mention_minus_no_mention_ci_low"] > 0  # clearly worse, and the interval says so
    table = result["disparity"]
    groups = table[(table["indicator"] == "all") & table["rank"].notna()]
    several = groups[groups["countries"] > 1]
    assert (several["mean_ci_low"] <= several["mean_error"] + 1e-12).all()
    assert (several["mean_error"] <= several["mean_ci_high"] + 1e-12).all()
    disparity = table[(table["indicator"] == "all") & (table["group"] == "disparity_mean")]
    assert (disparity["mean_ci_low"] <= disparity["mean_ci_high"]).all()
    assert set(disparity["expected_groups"]) == {7, 4}
