"""The statistics a suite declares over its per-item rows compute what they say (their observed values; the
resamples that weigh them are the bootstrap's and the sign-flip test's)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from geomon.stats.bootstrap import estimates
from geomon.stats.declarations import TrackedMetric
from geomon.stats.statistics import Difference, ImpactRatio, Mean, Range, Ratio


def test_declared_statistics_compute_what_they_say():
    frame = pd.DataFrame(
        {
            "item": ["a", "b", "c", "d"],
            "num": [1.0, 3.0, 0.0, 2.0],
            "den": [2.0, 4.0, 0.0, 2.0],
            "group": ["x", "x", "y", "y"],
            "flag": [True, False, True, False],
        }
    )
    one = lambda s: estimates(TrackedMetric("m", s), frame, resamples=0)[0].value  # noqa: E731
    assert one(Ratio("num", "den")) == pytest.approx(6 / 8)
    # A per-row rate: c (den 0) has none; mean of 0.5, 0.75, 1.0 — not the pooled 6/8.
    assert one(Mean("num", per="den", scale=100)) == pytest.approx(75.0)
    assert one(Range(Mean("num"), "group")) == pytest.approx(2.0 - 1.0)
    assert one(Difference(Mean("num", where=(("flag", True),)), Mean("num", where=(("flag", False),)))) == -2.0
    # A tracked gap is its size (BorderLines' |Con − Non|): the same whichever side is ahead.
    flagged, unflagged = Mean("num", where=(("flag", True),)), Mean("num", where=(("flag", False),))
    assert one(Difference(flagged, unflagged, absolute=True)) == one(Difference(unflagged, flagged)) == 2.0
    # A gap rests on its smaller side: 40 clusters with the flag, 3 without → 3 (a mutation counting both: 43).
    sides = pd.DataFrame({"item": [f"c{i}" for i in range(43)], "num": 1.0, "flag": [True] * 40 + [False] * 3})
    gap = TrackedMetric("gap", Difference(flagged, unflagged, absolute=True))
    assert estimates(gap, sides, resamples=0)[0].clusters == 3
    # Larger-than standard: mean 1.5; x selects b (3 ≥ 1.5) of 2, y selects d of 2 → 0.5 / 0.5.
    assert one(ImpactRatio("num", "group")) == pytest.approx(1.0)
    assert math.isnan(one(Range(Mean("num", where=(("group", "x"),)), "group")))  # one group: no range
