"""WorldBench's page: what it says about the sample its disparities rest on."""

from __future__ import annotations

import pandas as pd

from geomon.suites.worldbench.report import _sample_note


def test_a_sample_with_one_country_per_group_says_the_disparity_is_the_baseline_by_construction():
    one_each = pd.DataFrame(
        {
            "iso3": ["FRA", "KEN", "USA"],
            "region": ["Europe", "Africa", "North America"],
            "income_group": ["H", "L", "H"],
        }
    )
    note = _sample_note({"m": {"countries": one_each}})
    assert "every region has one country" in note and "equals it by construction" in note
    assert "one country only" in note and "L" in note  # income: L has one country, H has two
    two_each = pd.concat([one_each, one_each.assign(iso3=["DEU", "UGA", "CAN"])])
    assert _sample_note({"m": {"countries": two_each}}) == ""
