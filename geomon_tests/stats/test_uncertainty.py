"""The one uncertainty module: group gaps in every design, scipy's BCa where it fits.

Reference values come from outside geomon's resampler: scipy.stats.bootstrap on the same data (percentile
intervals agree within Monte Carlo error) and normal theory for large samples.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from geomon.stats.uncertainty import (
    gaps_from_draws,
    group_gaps,
    mean_difference,
    mean_interval,
    resample_within_groups,
)

RNG = np.random.default_rng(7)


def test_duplicating_items_within_a_cluster_adds_no_information():
    """Three identical entities in a question are one observation: the interval resampling questions is
    the same as with one entity per question (an item bootstrap would shrink it by √3)."""
    values = RNG.random(30)
    groups = np.full(30, "all")
    once = group_gaps(values, groups, clusters=np.arange(30), seed=5).groups["all"]
    thrice = group_gaps(np.repeat(values, 3), np.repeat(groups, 3), clusters=np.repeat(np.arange(30), 3), seed=5)
    thrice_all = thrice.groups["all"]
    assert thrice_all.point == pytest.approx(once.point)
    assert (thrice_all.interval.low, thrice_all.interval.high) == pytest.approx((once.interval.low, once.interval.high))
    assert thrice_all.items == 90 and thrice_all.clusters == 30
    items = group_gaps(np.repeat(values, 3), np.repeat(groups, 3), seed=5).groups["all"]  # wrongly independent
    assert items.se == pytest.approx(once.se / math.sqrt(3), rel=0.15)


def test_difference_resamples_each_side_and_ignores_missing_items():
    values = np.array([1.0, 1.0, 0.0, np.nan, 0.0, 0.0, 1.0, 0.0])
    clusters = np.array(["a", "a", "b", "c", "d", "e", "f", "g"])
    side = np.array(["x", "x", "x", "x", "y", "y", "y", "y"])
    gaps = group_gaps(values, side, clusters=clusters, resamples=500)
    estimate = gaps.difference("x", "y")
    assert estimate.point == pytest.approx(2 / 3 - 1 / 4)  # the NaN entity is left out, not a zero
    assert gaps.dropped == 1 and estimate.items == 3 and estimate.clusters == 2
    assert estimate.interval.low <= estimate.point <= estimate.interval.high and estimate.se > 0
    one_side = group_gaps(values, np.where(clusters == "a", "x", "y"), clusters=clusters).difference("x", "y")
    assert math.isnan(one_side.interval.low) and "cluster" in one_side.interval.note
    assert math.isnan(gaps.difference("x", "z").point)  # an absent group is named, not a KeyError


def test_items_design_agrees_with_scipy_bootstrap():
    """Two independent groups: geomon's percentile interval for the difference of means matches
    scipy.stats.bootstrap's (each sample resampled on its own) within Monte Carlo error."""
    a, b = RNG.normal(1.0, 1.0, 60), RNG.normal(0.4, 2.0, 90)
    gaps = group_gaps(np.r_[a, b], ["a"] * 60 + ["b"] * 90, resamples=20_000, seed=1)
    ours = gaps.difference("a", "b")
    ref = stats.bootstrap(
        (a, b),
        lambda x, y, axis=-1: x.mean(axis=axis) - y.mean(axis=axis),
        n_resamples=20_000,
        method="percentile",
        rng=np.random.default_rng(2),
    )
    assert ours.point == pytest.approx(a.mean() - b.mean())
    assert ours.interval.low == pytest.approx(ref.confidence_interval.low, abs=0.03)
    assert ours.interval.high == pytest.approx(ref.confidence_interval.high, abs=0.03)
    assert ours.se == pytest.approx(ref.standard_error, rel=0.03)
    # Normal theory: SE of a difference of independent means.
    assert ours.se == pytest.approx(math.sqrt(a.var(ddof=1) / 60 + b.var(ddof=1) / 90), rel=0.05)


def test_paired_design_keeps_the_pairing():
    """One question asked in two languages: the paired interval is scipy's paired bootstrap of the
    differences, and much narrower than treating the languages as independent samples."""
    base = RNG.normal(50, 20, 80)
    en, zh = base + RNG.normal(3, 2, 80), base + RNG.normal(0, 2, 80)
    values, languages, questions = np.r_[en, zh], ["en"] * 80 + ["zh"] * 80, np.r_[np.arange(80), np.arange(80)]
    paired = group_gaps(values, languages, clusters=questions, paired=True, resamples=20_000).difference("en", "zh")
    ref = stats.bootstrap(
        (en, zh),
        lambda x, y, axis=-1: x.mean(axis=axis) - y.mean(axis=axis),
        paired=True,
        n_resamples=20_000,
        method="percentile",
        rng=np.random.default_rng(3),
    )
    assert paired.interval.low == pytest.approx(ref.confidence_interval.low, abs=0.1)
    assert paired.interval.high == pytest.approx(ref.confidence_interval.high, abs=0.1)
    independent = group_gaps(values, languages, resamples=2000).difference("en", "zh")
    assert paired.se < independent.se / 4
    with pytest.raises(ValueError, match="paired=True needs"):
        group_gaps(values, languages, paired=True)


def test_group_table_disparity_median_and_small_groups():
    values = np.array([0.1, 0.2, 0.3, 0.5, 0.6, 0.7, 0.9])
    regions = np.array(["a", "a", "a", "b", "b", "b", "c"])
    gaps = group_gaps(values, regions, resamples=2000)
    table = gaps.table().set_index("group")
    assert table.loc["b", "value"] == pytest.approx(0.6) and table.loc["b", "items"] == 3
    assert math.isnan(table.loc["c", "ci_low"]) and "1 item" in table.loc["c", "ci_note"]
    assert gaps.disparity.point == pytest.approx(0.9 - 0.2)  # the one-country group still counts
    assert gaps.disparity.interval.low <= 0.7 <= gaps.disparity.interval.high
    median = group_gaps(values, regions, stat="median", resamples=2000)
    assert median.groups["a"].point == pytest.approx(0.2) and median.stat == "median"
    with pytest.raises(ValueError, match="median"):
        group_gaps(values, regions, clusters=regions, stat="median")
    singles = group_gaps([1.0, 2.0], ["a", "b"])
    assert singles.disparity.point == 1.0 and "one unit" in singles.disparity.interval.note
    assert "no resampling" in group_gaps(values, regions, resamples=0).disparity.interval.note
    assert "fewer than two" in group_gaps([1.0, 2.0], ["a", "a"]).disparity.interval.note


def test_statistics_of_the_same_units_share_their_resamples():
    """The mean's draws from group_gaps and a custom statistic's from resample_within_groups are the same
    resamples: a group's mean over resample_within_groups' draws is group_gaps' draw column."""
    groups = [RNG.random(12), RNG.random(7)]
    gaps = group_gaps(np.r_[groups[0], groups[1]], ["a"] * 12 + ["b"] * 7, resamples=300, seed=9)
    drawn = resample_within_groups(groups, resamples=300, seed=9)
    assert np.allclose(gaps.draws[:, 0], drawn[0].mean(axis=1))
    assert np.allclose(gaps.draws[:, 1], drawn[1].mean(axis=1))
    rebuilt = gaps_from_draws(
        ["a", "b"], [g.mean() for g in groups], np.column_stack([d.mean(axis=1) for d in drawn]), [(12, 12), (7, 7)]
    )
    assert rebuilt.disparity.interval.low == pytest.approx(gaps.disparity.interval.low)
    assert rebuilt.difference("a", "b").se == pytest.approx(gaps.difference("a", "b").se)


def test_scipy_bca_for_one_and_two_independent_samples():
    values = RNG.normal(10, 3, 400)
    estimate = mean_interval(values, resamples=5000)
    half_width = 1.959964 * values.std(ddof=1) / math.sqrt(400)  # normal theory
    assert estimate.interval.high - estimate.interval.low == pytest.approx(2 * half_width, rel=0.1)
    assert estimate.interval.low < values.mean() < estimate.interval.high
    constant = mean_interval([2.0, 2.0, 2.0])
    assert (constant.interval.low, constant.interval.high) == (2.0, 2.0) and "same" in constant.interval.note
    assert "1 item" in mean_interval([1.0, np.nan]).interval.note
    point, ci = mean_difference(RNG.normal(1, 1, 200), RNG.normal(0, 1, 200), resamples=4000)
    assert ci.low < point < ci.high and ci.low > 0.5 and ci.high < 1.5
    assert "one item" in mean_difference([1.0], [1.0, 2.0])[1].note
