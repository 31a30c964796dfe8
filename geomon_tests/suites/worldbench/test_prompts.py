"""WorldBench's prompts: ground truth, Figure 4's messages, the year variants and the country sample."""

from __future__ import annotations

import pytest

from geomon.engine.registry import bundled_specs
from geomon.suites.worldbench import prompts as wb
from geomon_tests.suites.worldbench.tiny import tiny_snapshot


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
