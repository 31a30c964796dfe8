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


def _percentile_interval(draws: np.ndarray, confidence: float, what: str) -> Interval:
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
    return _percentile_interval(draws, confidence, "a resample without the items this score needs")


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
            else _percentile_interval(per_group[name], confidence, "empty group")
        )
    if len(per_group) < 2:
        return GroupIntervals(groups, Interval(float("nan"), float("nan"), "fewer than two groups"))
    stacked = np.vstack(list(per_group.values()))
    disparity = _percentile_interval(stacked.max(axis=0) - stacked.min(axis=0), confidence, "empty group")
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
    return point, _percentile_interval(draws, confidence, "empty sample")
