"""Bootstrap intervals for items that cluster (QUENCH's entities within questions) and detectable sizes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from geomon.stats.uncertainty import (
    cluster_mean,
    cluster_mean_difference,
    detectable_difference,
    planned_detectable_difference,
)


def test_duplicating_items_within_a_cluster_adds_no_information():
    """Three identical entities in a question are one observation: the interval resampling questions is
    the same as with one entity per question (an item bootstrap would shrink it by √3)."""
    rng = np.random.default_rng(1)
    values = rng.random(30)
    clusters = np.arange(30)
    once = cluster_mean(values, clusters, seed=5)
    thrice = cluster_mean(np.repeat(values, 3), np.repeat(clusters, 3), seed=5)
    assert thrice.point == pytest.approx(once.point)
    assert (thrice.interval.low, thrice.interval.high) == pytest.approx((once.interval.low, once.interval.high))
    assert thrice.items == 90 and thrice.clusters == 30


def test_difference_resamples_each_side_and_ignores_missing_items():
    values = np.array([1.0, 1.0, 0.0, np.nan, 0.0, 0.0, 1.0, 0.0])
    clusters = np.array(["a", "a", "b", "c", "d", "e", "f", "g"])
    in_a = np.array([True, True, True, True, False, False, False, False])
    estimate = cluster_mean_difference(values, clusters, in_a, resamples=500)
    assert estimate.point == pytest.approx(2 / 3 - 1 / 4)  # the NaN entity is left out, not a zero
    assert estimate.items == 3 and estimate.clusters == 2
    assert estimate.interval.low <= estimate.point <= estimate.interval.high and estimate.se > 0
    one_side = cluster_mean_difference(values, clusters, clusters == "a")  # one cluster in a: no interval
    assert math.isnan(one_side.interval.low) and "cluster" in one_side.interval.note


def test_detectable_sizes():
    assert detectable_difference(0.1) == pytest.approx((1.959964 + 0.841621) * 0.1, rel=1e-5)
    # QUENCH's full release, questions as units, worst-case 0-1 spread: 70 Indic vs 330 other questions.
    assert planned_detectable_difference(70, 330) == pytest.approx(2.8016 * 0.5 * math.sqrt(1 / 70 + 1 / 330), rel=1e-4)
    assert math.isnan(planned_detectable_difference(0, 10))
