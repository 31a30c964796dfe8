"""The pure comparison: two evaluations' items in, every comparison's paired test and verdict out, with no history;
``monitor/test_release.py`` checks the history stores exactly what it returns."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from geomon.stats import compare, verdicts
from geomon.stats.declarations import TrackedMetric
from geomon.stats.statistics import Mean

ACC = TrackedMetric("acc", Mean("value"), min_effect=5.0, bounds=(0, 100), by=("group",))


def _items(wrong_in_b: int, seed: int = 0) -> pd.DataFrame:
    """60 questions in two groups, most right; the first ``wrong_in_b`` of group b's turn wrong."""
    rng = np.random.default_rng(seed)
    right = rng.random(60) < 0.8
    group = np.where(np.arange(60) % 2, "b", "a")
    value = np.where(right, 100.0, 0.0)
    value[np.flatnonzero(group == "b")[:wrong_in_b]] = 0.0
    return pd.DataFrame({"item": [f"q{i}" for i in range(60)], "group": group, "value": value})


def test_compare_pairs_plans_and_decides_without_a_history():
    settings = verdicts.VerdictSettings(resamples=199)
    before, after = _items(0), _items(20)
    tests, decided, _ = compare.compare((ACC,), before, after, 0.01, settings)
    assert [(t.metric, t.breakdown) for t in tests] == [(v.metric, v.breakdown) for v in decided]
    by = {v.breakdown: v for v in decided}
    assert by["group=b"].verdict == verdicts.REGRESSION and by["group=b"].alpha == 0.01
    # The MDE, power, label and weight are planned from one standard error: the pair's paired differences (the
    # sign-flip null's spread) with a worsening of the minimum effect added.
    test = {t.breakdown: t for t in tests}["group=b"]
    added = ACC.min_effect * 100 / test.clusters
    assert test.planned_se == test.weighing_se == pytest.approx(math.sqrt(test.se**2 + added))
    # No baseline items: every metric undefined, nothing decided.
    tests, decided, _ = compare.compare((ACC,), None, after, 0.01, settings)
    assert {v.verdict for v in decided} == {verdicts.UNDEFINED} and all(math.isnan(t.change) for t in tests)
