"""The one power module: the MDE every surface states, the chance a worsening pages, Holm's levels and the standard
error an MDE is planned at."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from geomon.stats import compare, power, verdicts
from geomon.stats.declarations import TrackedMetric
from geomon.stats.statistics import Mean


def test_the_one_mde_is_one_sided_and_plans_a_two_sample_gap():
    assert power.minimum_detectable_effect(0.1, 0.05, 0.8) == pytest.approx((1.644854 + 0.841621) * 0.1, rel=1e-5)
    assert math.isnan(power.minimum_detectable_effect(float("nan"), 0.05, 0.8))
    # QUENCH's full release, questions as units, worst-case 0-1 spread: 70 Indic vs 330 other questions.
    assert power.planned_mde(70, 330) == pytest.approx(2.4865 * 0.5 * math.sqrt(1 / 70 + 1 / 330), rel=1e-4)
    assert math.isnan(power.planned_mde(0, 10))


def test_the_clusters_to_detect_a_change_bring_its_mde_down_to_it():
    need = power.clusters_to_detect(2.0, 0.5, 0.01, 0.8)
    assert power.minimum_detectable_effect(2.0 / math.sqrt(need), 0.01, 0.8) <= 0.5
    assert power.minimum_detectable_effect(2.0 / math.sqrt(need - 1), 0.01, 0.8) > 0.5
    assert (
        power.clusters_to_detect(None, 0.5, 0.01, 0.8) is None and power.clusters_to_detect(2.0, 0, 0.01, 0.8) is None
    )


def test_the_first_level_is_alpha_times_the_weight_over_the_family():
    assert power.first_level(0.05, 1.0, 4) == 0.05 / 4
    weights, levels = power.first_levels([10.0, 0.1, float("nan")], 0.05, 0.8, 0.25)
    assert list(weights) == [1.0, 0.25, 1.0]
    assert levels == pytest.approx([0.05 / 2.25, 0.05 * 0.25 / 2.25, 0.05 / 2.25])
    assert power.holm_levels(0.05, 3) == pytest.approx((0.05 / 3, 0.05 / 2, 0.05))


def test_the_planned_se_is_the_spread_times_root_two_with_the_agresti_coull_floor_for_a_bounded_mean():
    spread = power.Spread(se=0.02, value=0.5, clusters=100, bounded_mean=False)
    assert power.planned_se(spread, (0, 1)) == pytest.approx(math.sqrt(2) * 0.02)
    certain = power.Spread(se=0.0, value=1.0, clusters=100, bounded_mean=True)
    assert power.planned_se(certain, (0, 1)) > 0  # a baseline at 100 % is not a certainty
    assert math.isnan(power.planned_se(power.UNKNOWN, None))


def test_the_decidable_set_is_the_largest_that_decides_at_the_level_it_gets():
    """``paging_weights``: the strongest comparisons keep weight 1 as long as every one of them decides at α over
    the family's total weight; a comparison that would decide alone but not beside the others does not pull the
    stronger ones below their power; unknown spreads keep weight 1."""
    z = power.minimum_detectable_effect(1.0, 0.05 / 2.25, 0.8)  # the ratio deciding at α/2.25
    weights = power.paging_weights([z + 0.01, z + 0.01, 0.5], 0.05, 0.8, 0.25)
    assert list(weights) == [1.0, 1.0, 0.25]  # total 2.25: each decidable one at α/2.25
    assert list(power.paging_weights([z + 0.01, z - 0.01, 0.5], 0.05, 0.8, 0.25)) == [1.0, 0.25, 0.25]
    # Beside one comparison of unknown spread (weight 1) and two hopeless ones: total 2.5 with the strongest.
    alone = power.minimum_detectable_effect(1.0, 0.05 / 2.5, 0.8)
    weights = power.paging_weights([alone + 0.01, alone - 0.3, 0.5, float("nan")], 0.05, 0.8, 0.25)
    assert list(weights) == [1.0, 0.25, 0.25, 1.0]
    assert list(power.paging_weights([0.1, 0.2], 0.05, 0.8, 0.25)) == [0.25, 0.25]


def test_the_planned_error_is_the_pairs_paired_one_the_same_under_every_swap():
    """``paired_se``: planned from what the sign-flip test conditions on — each cluster's two evaluations as an
    unordered pair — so swapping any clusters' two evaluations (what the null does) plans the same error and the
    weight never favours a baseline high by chance; and a serving change that answers most items alike is planned
    as paired: 400 yes/no items of which 12 differ decide a 5-point worsening at α 0.005, where two independent
    samples of 400 (√2 × one side, ``planned_se``) would not. Mutations caught: the planned error read from the
    baseline's spread as if independent (the decidability assertion), the minimum effect's worsening left out
    (an unchanged pair planned at 0)."""
    rng = np.random.default_rng(3)
    metric = TrackedMetric("acc", Mean("value"), min_effect=5.0, bounds=(0, 100))
    before = rng.binomial(1, 0.7, 400) * 100.0
    after = before.copy()
    after[:12] = 100 - after[:12]  # 12 of 400 answers changed, either way
    frame = lambda v: pd.DataFrame({"item": [f"q{i}" for i in range(400)], "value": v})  # noqa: E731
    settings = verdicts.VerdictSettings(resamples=999)
    (test,) = compare.compare((metric,), frame(before), frame(after), 0.005, settings).tests
    swap = rng.random(400) < 0.5
    swapped = compare.compare(
        (metric,), frame(np.where(swap, after, before)), frame(np.where(swap, before, after)), 0.005, settings
    ).tests[0]
    assert swapped.planned_se == pytest.approx(test.planned_se, rel=1e-9)
    assert power.minimum_detectable_effect(test.planned_se, 0.005, 0.8) < metric.min_effect
    independent = power.planned_se(power.Spread(float(before.std() / 20), float(before.mean()), 400, True), (0, 100))
    assert power.minimum_detectable_effect(independent, 0.005, 0.8) > 2 * metric.min_effect
    (unchanged,) = compare.compare((metric,), frame(before), frame(before), 0.005, settings).tests
    assert unchanged.planned_se == pytest.approx(math.sqrt(5.0 * 100 / 400))  # the minimum effect's worsening alone


def test_holm_levels_weighted_are_every_level_a_step_can_reach():
    """Weighted: α·w/S for w ∈ {1, weight} and S any weight left (k of weight 1 and u of ``weight``), capped at α —
    where a p-value's precision matters. Mutation caught: the weight ignored (unweighted levels only)."""
    levels = power.holm_levels(0.05, 2, 0.25)
    left = {1.0, 2.0, 0.25, 0.5, 1.25}
    expected = sorted({round(min(0.05 * w / s, 0.05), 12) for s in left for w in (1.0, 0.25)})
    assert sorted({round(level, 12) for level in levels}) == expected
    assert 0.05 * 0.25 / 2.0 not in power.holm_levels(0.05, 2)


def test_no_alpha_weighs_nothing():
    """A look with α 0 (spent, or a suite's share of 0) decides nothing: every weight 1, no error (it raised)."""
    assert list(power.paging_weights([5.0, 0.1], 0.0, 0.8, 0.25)) == [1.0, 1.0]
