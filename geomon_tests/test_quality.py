"""Great Expectations suites: the real tables pass; broken ones fail with the rows that broke them."""

from __future__ import annotations

import pandas as pd

from geomon import quality
from geomon.sources.borderlines import read_disputes, read_snapshot
from geomon.suites import borderlines
from geomon_tests.conftest import SHARED

ROOT = SHARED / "snapshots" / "borderlines"


def test_world_bank_tables(snapshot):
    assert quality.validate(snapshot.economies, "economies", quality.economies_expectations()).success
    wide, expectations = quality.worldbank_expectations(snapshot.values, 100)
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
    wide, expectations = quality.worldbank_expectations(broken, 100)
    failed = quality.validate(wide, "values", expectations).failures
    assert [(f["column"], f["expectation"]) for f in failed] == [
        ("EG.ELC.ACCS.ZS", "expect_column_values_to_be_between")
    ]
    assert failed[0]["unexpected_count"] > 50


def test_disputes_tables_and_collapse_between_revisions():
    table = read_disputes(ROOT / "disputed_territories.csv")
    frame = quality.disputes_frame(table)
    assert quality.validate(frame, "disputes", quality.disputes_expectations(previous_size=225)).success
    collapsed = quality.validate(frame.head(40), "disputes", quality.disputes_expectations(previous_size=251))
    assert not collapsed.success and collapsed.failures[0]["expectation"] == "expect_table_row_count_to_be_between"
    assert collapsed.failures[0]["observed"] == "40"


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
