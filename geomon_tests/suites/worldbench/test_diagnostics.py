"""WorldBench's diagnostics: group errors and disparity against the paper's baseline, citations, the data year."""

from __future__ import annotations

import pandas as pd
import pytest

from geomon.stats.disparity import random_baseline
from geomon.suites.worldbench.diagnostics import diagnose, error_by_year
from geomon.suites.worldbench.prompts import build_prompts, sample_countries
from geomon.suites.worldbench.scoring import score
from geomon_tests.suites.worldbench.tiny import scored, tiny_snapshot


def test_diagnose_hand_computed():
    scores = scored(["121", "about 120 (World Bank, 2019)", "1000"])
    result = diagnose(scores, tiny_snapshot(), trials=10)
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


def test_most_recent_year_leaves_out_countries_without_recent_values():
    snap = tiny_snapshot()
    # CCC's last values are from 2018–2019: inside the past five years (2018–2022), so it counts;
    # a country whose latest value is 2017 would not.
    snap.values.loc[(snap.values["iso3"] == "CCC") & (snap.values["year"] == 2019), "year"] = 2017
    snap.values.loc[(snap.values["iso3"] == "CCC") & (snap.values["year"] == 2018), "year"] = 2016
    prompts = build_prompts(snap)
    # Ask CCC too, with a made-up ground truth, to see the most-recent rule leave it out.
    extra = prompts.iloc[[0]].assign(iso3="CCC", question_id="SP.POP.TOTL|CCC|latest", ground_truth=15.0)
    prompts = pd.concat([prompts, extra], ignore_index=True)
    scores = score(prompts, pd.DataFrame({"text": ["120", "200", "1000", "20"], "error": [None] * 4}))
    by_year = error_by_year(scores, snap).set_index("reference")
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
    prompts = build_prompts(snapshot, countries=sample_countries(snapshot, 40))
    prompts = prompts[prompts["indicator"] == "SP.POP.TOTL"].reset_index(drop=True)
    # Answers 30 % off the truth, with "World Bank" mentioned in every third answer and those 60 % off.
    texts = [
        f"{gt * 0.4:.0f} (World Bank)" if i % 3 == 0 else f"{gt * 1.3:.0f}"
        for i, gt in enumerate(prompts["ground_truth"])
    ]
    scores = score(prompts, pd.DataFrame({"text": texts, "error": [None] * len(texts)}))
    result = diagnose(scores, snapshot, resamples=300)
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
