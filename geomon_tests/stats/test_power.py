"""The one power module: the MDE every surface states, the chance a worsening pages, Holm's levels and the standard
error an MDE is planned at."""

from __future__ import annotations

import math

import pytest

from geomon.stats import power


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
