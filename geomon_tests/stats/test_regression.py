"""The regression test: a real worsening is flagged, noise and tiny shifts are not."""

from __future__ import annotations

import numpy as np
import pandas as pd

from geomon.stats.regression import paired_regression
from geomon.suites import worldbench


def _items(errors: np.ndarray, regions: list[str]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "item": [f"C{i:03d}" for i in range(len(errors))],
            "region": regions,
            "income_group": "x",
            "error_sum": errors,
            "answers": 1,
        }
    )


REGIONS = ["Europe"] * 30 + ["Africa"] * 30
STAT, _, _ = worldbench.REGRESSION_METRICS["region_disparity_mean"]


def test_a_worse_group_is_a_regression():
    rng = np.random.default_rng(0)
    before = _items(rng.uniform(0.2, 0.4, 60), REGIONS)
    worse = before.copy()
    worse.loc[30:, "error_sum"] += 0.3  # Africa's answers get worse, Europe's do not
    result = paired_regression("region_disparity_mean", before, worse, STAT, min_effect=0.03, alpha=0.01)
    assert result.regressed and result.effect > 0.25 and result.p_value < 0.01 and result.items == 60


def test_noise_and_improvements_are_not():
    rng = np.random.default_rng(1)
    before = _items(rng.uniform(0.2, 0.4, 60), REGIONS)
    noisy = before.assign(error_sum=before["error_sum"] + rng.normal(0, 0.02, 60))
    assert not paired_regression("d", before, noisy, STAT, min_effect=0.03).regressed
    gap = before.copy()
    gap.loc[30:, "error_sum"] += 0.3
    narrower = before.copy()
    narrower.loc[30:, "error_sum"] += 0.1  # Africa's answers improve: the disparity shrinks
    assert not paired_regression("d", gap, narrower, STAT, min_effect=0.03).regressed
    # Identical re-run: effect 0, p = 1.
    same = paired_regression("d", before, before.copy(), STAT, min_effect=0.03)
    assert same.effect == 0 and same.p_value == 1.0 and not same.regressed


def test_a_significant_but_tiny_shift_does_not_page():
    rng = np.random.default_rng(2)
    before = _items(rng.uniform(0.2, 0.4, 60), REGIONS)
    shifted = before.copy()
    shifted.loc[30:, "error_sum"] += 0.01  # every African item a little worse: p tiny, effect below 0.03
    result = paired_regression("d", before, shifted, STAT, min_effect=0.03)
    assert result.p_value < 0.01 and not result.regressed


def test_only_shared_items_are_compared():
    rng = np.random.default_rng(3)
    before = _items(rng.uniform(0.2, 0.4, 60), REGIONS)
    after = before.iloc[10:].copy()
    assert paired_regression("d", before, after, STAT).items == 50
