"""Great Expectations suites: the real tables pass; broken ones fail with the rows that broke them."""

from __future__ import annotations

import pandas as pd

from geomon import quality
from geomon.sources.borderlines import read_disputes, read_snapshot, unaccounted_rows
from geomon.suites import borderlines
from geomon_tests.conftest import SHARED

ROOT = SHARED / "snapshots" / "borderlines"


def test_world_bank_tables(snapshot):
    assert quality.validate(snapshot.economies, "economies", quality.economies_expectations()).success
    wide, expectations = quality.worldbank_expectations(snapshot.values)
    assert quality.validate(wide, "values", expectations).success
    with_aggregate = pd.concat(
        [snapshot.economies, pd.DataFrame([{"iso3": "WLD", "name": "World", "region": "Aggregates"}])]
    )
    report = quality.validate(with_aggregate, "economies", quality.economies_expectations())
    assert not report.success
    assert report.failures[0]["expectation"] == "expect_column_values_to_not_match_regex"
    assert report.failures[0]["examples"] == ["World"]
    broken = snapshot.values.copy()
    broken.loc[broken["indicator"] == "EG.ELC.ACCS.ZS", "value"] *= 10  # percent values above 100
    wide, expectations = quality.worldbank_expectations(broken)
    failed = quality.validate(wide, "values", expectations).failures
    assert [(f["column"], f["expectation"]) for f in failed] == [
        ("EG.ELC.ACCS.ZS", "expect_column_values_to_be_between")
    ]
    assert failed[0]["unexpected_count"] > 50


def test_an_impossible_value_in_an_earlier_year_of_the_window_fails(snapshot):
    """Ground truth averages the last three years: a negative population in 2020 must not pass because
    2022's value is fine."""
    broken = snapshot.values.copy()
    at = broken.index[(broken["indicator"] == "SP.POP.TOTL") & (broken["iso3"] == "FRA") & (broken["year"] == 2020)]
    broken.loc[at, "value"] = -67_000_000
    wide, expectations = quality.worldbank_expectations(broken)
    failed = quality.validate(wide, "values", expectations).failures
    assert [(f["column"], f["unexpected_count"]) for f in failed] == [("SP.POP.TOTL", 1)]


def test_coverage_against_the_minimum_and_the_previous_snapshot(snapshot):
    coverage = quality.recent_coverage(snapshot.values, years=3)
    assert coverage["SP.POP.TOTL"] == 217 and min(coverage.values()) >= 100
    assert quality.validate(quality.coverage_frame(coverage), "c", quality.coverage_expectations(100)).success
    thin = {**coverage, "SE.XPD.TOTL.GD.ZS": 40}
    failed = quality.validate(quality.coverage_frame(thin), "c", quality.coverage_expectations(100)).failures
    assert failed[0]["examples"] == ["40"]
    cut = {k: v for k, v in coverage.items() if k != "EG.ELC.ACCS.ZS"} | {"SP.POP.TOTL": 160}
    assert quality.coverage_drops(coverage, cut, 0.05) == {
        "SP.POP.TOTL": "217 → 160 countries",
        "EG.ELC.ACCS.ZS": f"{coverage['EG.ELC.ACCS.ZS']} → 0 countries",
    }
    assert quality.coverage_drops(coverage, {**coverage, "SP.POP.TOTL": 210}, 0.05) == {}


def test_disputes_tables_and_collapse_between_revisions():
    countries = read_snapshot(ROOT).countries
    for table in (
        "disputed_territories.csv",
        *(f"data_misc/disputed_territories_{v}.csv" for v in ("2021-08", "2021-12")),
    ):
        frame = unaccounted_rows(read_disputes(ROOT / table), countries)  # the release's own quirks pass
        assert quality.validate(frame, "disputes", quality.disputes_expectations(previous_size=225)).success, table
    frame = unaccounted_rows(read_disputes(ROOT / "disputed_territories.csv"), countries)
    collapsed = quality.validate(frame.head(40), "disputes", quality.disputes_expectations(previous_size=251))
    assert not collapsed.success and collapsed.failures[0]["expectation"] == "expect_table_row_count_to_be_between"
    assert collapsed.failures[0]["observed"] == "40"


def test_an_unknown_claimant_or_a_controller_outside_the_claimants_fails_without_allowance():
    data = read_snapshot(ROOT)
    disputes = data.disputes.copy()
    crimea = disputes.index[disputes["territory"] == "Crimea"][0]
    disputes.at[crimea, "controller"] = "Atlantis"  # one row in 251: under the old 1 % allowance
    kuril = disputes.index[disputes["territory"] == "Kuril/Chishima Islands"][0]
    disputes.at[kuril, "claimants"] = ["Japan", "Russsia"]
    report = quality.validate(
        unaccounted_rows(disputes, data.countries), "disputes", quality.disputes_expectations(None)
    )
    failed = {f["column"]: f["examples"] for f in report.failures}
    assert failed == {
        "controller_unaccounted": ["Kuril/Chishima Islands: Russia", "Crimea: Atlantis"],
        "claimants_without_country_info": ["Kuril/Chishima Islands: Russsia"],
    }


def test_prompts_without_silent_english_fallback():
    data = read_snapshot(ROOT)
    prompts = borderlines.build_prompts(data.with_disputes(data.disputes.head(20)), ["vanilla"])
    languages = sorted(data.templates)
    assert quality.validate(quality.prompts_frame(prompts), "p", quality.prompts_expectations(languages)).success
    english = prompts.set_index(["territory", "lang"])["query"]
    fallback = prompts.copy()
    native = fallback.index[fallback["lang"] != "en"][0]
    fallback.at[native, "query"] = english[(fallback.at[native, "territory"], "en")]  # untranslated
    report = quality.validate(quality.prompts_frame(fallback), "p", quality.prompts_expectations(languages))
    assert [f["column"] for f in report.failures] == ["same_as_english"]
