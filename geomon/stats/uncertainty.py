"""Bootstrap confidence intervals that resample the right unit, shared by every suite.

Two shapes cover the suites: ``bootstrap_ci`` resamples items (territories, countries, questions) with
every per-item array drawn together (paired), and ``group_bootstrap`` resamples items *within* each
group (countries within a region), which keeps group sizes as observed — the design WorldBench's groups
have — and gives an interval for each group's statistic and for the disparity across groups from the
same resamples.

Both are percentile intervals computed with numpy on an index matrix (vectorized: one draw for all
resamples). scipy.stats.bootstrap is not used here because a resample can leave a statistic undefined
(no Unknown-controller territory drawn, a zero denominator): scipy then returns NaN bounds and warns
once per call, while here undefined resamples are dropped and counted in the interval's ``note``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 1000


@dataclass(frozen=True)
class Interval:
    """A percentile interval; ``note`` says why it is missing or what it left out."""

    low: float
    high: float
    note: str = ""

    @property
    def defined(self) -> bool:
        return bool(np.isfinite(self.low) and np.isfinite(self.high))


def percentile_interval(draws: np.ndarray, confidence: float, what: str) -> Interval:
    finite = draws[np.isfinite(draws)]
    if finite.size == 0:
        return Interval(float("nan"), float("nan"), f"undefined in every resample ({what})")
    alpha = (1 - confidence) / 2
    low, high = np.quantile(finite, [alpha, 1 - alpha])
    note = ""
    if finite.size < draws.size:
        note = f"{draws.size - finite.size} of {draws.size} resamples undefined ({what}) and left out"
    elif low == high:
        note = "every resample gives the same value"
    return Interval(float(low), float(high), note)


def bootstrap_ci(
    data: tuple[np.ndarray, ...],
    statistic: Callable[..., np.ndarray],
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> Interval:
    """Percentile interval of ``statistic(*data, axis=-1)`` over paired resamples of the items.

    ``data`` holds equal-length per-item arrays; each resample draws item indices once and takes every
    array at those indices. ``statistic`` must accept arrays of shape (resamples, items) and reduce the
    last axis.
    """
    n = len(data[0])
    if any(len(d) != n for d in data):
        raise ValueError("bootstrap_ci: every per-item array must have the same length")
    if n < 2:
        return Interval(float("nan"), float("nan"), f"{n} item(s): no interval")
    rng = np.random.default_rng(seed)
    index = rng.integers(0, n, size=(resamples, n))
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = np.asarray(statistic(*(np.asarray(d)[index] for d in data), axis=-1), dtype=float)
    return percentile_interval(draws, confidence, "a resample without the items this score needs")


def _group_stat(values: np.ndarray, stat: str) -> np.ndarray:
    if stat == "mean":
        return values.mean(axis=-1)
    if stat == "median":
        return np.median(values, axis=-1)
    raise ValueError(f"unknown group statistic {stat!r}; use mean or median")


@dataclass(frozen=True)
class GroupIntervals:
    groups: dict[str, Interval]
    disparity: Interval


def group_bootstrap(
    values_by_group: Mapping[str, np.ndarray],
    *,
    stat: str = "mean",
    resamples: int = RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> GroupIntervals:
    """Intervals for each group's ``stat`` and for the disparity (max − min over groups), resampling
    items within groups. A group with one item has no interval of its own (its value is fixed in every
    resample) and says so; the disparity interval still resamples the others."""
    rng = np.random.default_rng(seed)
    per_group: dict[str, np.ndarray] = {}
    groups: dict[str, Interval] = {}
    for name, values in values_by_group.items():
        values = np.asarray(values, dtype=float)
        values = values[np.isfinite(values)]
        if values.size == 0:
            groups[name] = Interval(float("nan"), float("nan"), "no items")
            continue
        index = rng.integers(0, values.size, size=(resamples, values.size))
        per_group[name] = _group_stat(values[index], stat)
        groups[name] = (
            Interval(float(values[0]), float(values[0]), "one item: no interval")
            if values.size == 1
            else percentile_interval(per_group[name], confidence, "empty group")
        )
    if len(per_group) < 2:
        return GroupIntervals(groups, Interval(float("nan"), float("nan"), "fewer than two groups"))
    stacked = np.vstack(list(per_group.values()))
    disparity = percentile_interval(stacked.max(axis=0) - stacked.min(axis=0), confidence, "empty group")
    return GroupIntervals(groups, disparity)


def mean_difference(
    a: np.ndarray, b: np.ndarray, *, resamples: int = RESAMPLES, seed: int = 0, confidence: float = CONFIDENCE
) -> tuple[float, Interval]:
    """mean(a) − mean(b) of two independent samples, with a percentile interval resampling each sample."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size == 0 or b.size == 0:
        return float("nan"), Interval(float("nan"), float("nan"), "one of the two samples is empty")
    point = float(a.mean() - b.mean())
    if a.size < 2 or b.size < 2:
        return point, Interval(float("nan"), float("nan"), "a sample with one item: no interval")
    rng = np.random.default_rng(seed)
    draws = a[rng.integers(0, a.size, (resamples, a.size))].mean(axis=1) - b[
        rng.integers(0, b.size, (resamples, b.size))
    ].mean(axis=1)
    return point, percentile_interval(draws, confidence, "empty sample")


# --- items that cluster: entities within questions (QUENCH) ----------------------------------------


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its percentile interval and bootstrap standard error, and what it rests on."""

    point: float
    interval: Interval
    se: float
    items: int
    clusters: int


def _cluster_draws(
    values: np.ndarray, clusters: np.ndarray, rng: np.random.Generator, resamples: int
) -> tuple[float, np.ndarray, int, int]:
    """Point mean over items and ``resamples`` means over resampled clusters (each draw keeps a cluster's
    items together: the ratio of the drawn clusters' sums to their item counts)."""
    values = np.asarray(values, dtype=float)
    keep = np.isfinite(values)
    values, clusters = values[keep], np.asarray(clusters)[keep]
    if values.size == 0:
        return float("nan"), np.full(resamples, np.nan), 0, 0
    codes, index = np.unique(clusters, return_inverse=True)
    sums = np.bincount(index, weights=values)
    counts = np.bincount(index).astype(float)
    draw = rng.integers(0, codes.size, size=(resamples, codes.size))
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = sums[draw].sum(axis=1) / counts[draw].sum(axis=1)
    return float(values.mean()), draws, int(values.size), int(codes.size)


def _estimate(point: float, draws: np.ndarray, items: int, clusters: int, confidence: float) -> Estimate:
    if clusters < 2:
        missing = Interval(float("nan"), float("nan"), f"{clusters} cluster(s): no interval")
        return Estimate(point, missing, float("nan"), items, clusters)
    finite = draws[np.isfinite(draws)]
    se = float(finite.std(ddof=1)) if finite.size > 1 else float("nan")
    return Estimate(point, percentile_interval(draws, confidence, "no items drawn"), se, items, clusters)


def cluster_mean(
    values: np.ndarray,
    clusters: np.ndarray,
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> Estimate:
    """The mean over items with an interval that resamples clusters (questions), not items (entities):
    entities of one question share its context and are not independent. NaN items are left out."""
    rng = np.random.default_rng(seed)
    point, draws, items, n_clusters = _cluster_draws(values, clusters, rng, resamples)
    return _estimate(point, draws, items, n_clusters, confidence)


def cluster_mean_difference(
    values: np.ndarray,
    clusters: np.ndarray,
    in_a: np.ndarray,
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> Estimate:
    """mean(items in a) − mean(items not in a), resampling clusters within each side (stratified: each
    side keeps its number of clusters). ``items``/``clusters`` count side a; the interval needs two
    clusters on each side."""
    rng = np.random.default_rng(seed)
    in_a = np.asarray(in_a, dtype=bool)
    values, clusters = np.asarray(values, dtype=float), np.asarray(clusters)
    a_point, a_draws, a_items, a_clusters = _cluster_draws(values[in_a], clusters[in_a], rng, resamples)
    b_point, b_draws, _, b_clusters = _cluster_draws(values[~in_a], clusters[~in_a], rng, resamples)
    estimate = _estimate(a_point - b_point, a_draws - b_draws, a_items, min(a_clusters, b_clusters), confidence)
    return Estimate(estimate.point, estimate.interval, estimate.se, a_items, a_clusters)


def detectable_difference(se: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true difference a two-sided test at ``alpha`` detects with probability ``power``,
    given the difference's standard error: (z₁₋α/₂ + z_power) × SE (2.80 × SE at the defaults)."""
    from scipy.stats import norm

    return float((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * se)


def planned_detectable_difference(
    n_a: int, n_b: int, sd: float = 0.5, alpha: float = 0.05, power: float = 0.8
) -> float:
    """``detectable_difference`` before seeing any answer: two independent samples of ``n_a`` and ``n_b``
    units with standard deviation ``sd`` (0.5: the worst case of a yes/no score)."""
    if n_a < 1 or n_b < 1:
        return float("nan")
    return detectable_difference(sd * float(np.sqrt(1 / n_a + 1 / n_b)), alpha, power)
