"""Great Expectations suites: the real tables pass; broken ones fail with the rows that broke them."""

from __future__ import annotations

import pandas as pd

from geomon import quality


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
