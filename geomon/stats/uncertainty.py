"""Bootstrap confidence intervals that resample the right unit, for a suite's own diagnostics: the group tables
and gaps its paper reports. A tracked headline's figures — what the leaderboard, the history and the verdicts
read — come from its declaration's cluster bootstrap instead (``geomon.stats.bootstrap``).

- ``group_gaps``: every group's statistic, the disparity across groups (max − min) and any two groups'
  difference from one set of resamples, in three designs: items within groups (countries within a
  region), clusters within groups (QUENCH's questions holding entities), clusters shared by the groups
  (a Gapminder question asked in two languages, paired). WorldBench's region gaps, BorderLines' language
  rates, Gapminder's language gap, QUENCH's Indic gap and SAGED's country gaps all come from it.
- ``bootstrap_ci``: a statistic of several per-item arrays drawn together (BorderLines' ratio scores over
  territories), where a resample can leave the statistic undefined.
- ``mean_interval`` / ``mean_difference``: one sample, or two independent ones, through
  scipy.stats.bootstrap (BCa), which fits there: the statistic is defined in every resample.

The first two are percentile intervals computed with numpy on an index matrix (vectorized: one draw
for all resamples, cached so several statistics of the same units share it). scipy.stats.bootstrap has
no cluster or paired-cluster design, and where a resample can leave a statistic undefined (no
Unknown-controller territory drawn, a zero denominator) scipy returns NaN bounds and warns, while here
undefined resamples are dropped and counted in the interval's ``note``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

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


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its percentile interval and bootstrap standard error, and what it rests on
    (``items`` values in ``clusters`` resampling units)."""

    point: float
    interval: Interval
    se: float
    items: int
    clusters: int


def _estimate(point: float, draws: np.ndarray, items: int, clusters: int, confidence: float, what: str) -> Estimate:
    if draws.size == 0:
        return Estimate(
            point, Interval(float("nan"), float("nan"), "no resampling asked"), float("nan"), items, clusters
        )
    if clusters < 2:
        unit = "item" if items == clusters else "cluster"
        missing = Interval(float("nan"), float("nan"), f"{clusters} {unit}(s): no interval")
        return Estimate(point, missing, float("nan"), items, clusters)
    finite = draws[np.isfinite(draws)]
    se = float(finite.std(ddof=1)) if finite.size > 1 else float("nan")
    return Estimate(point, percentile_interval(draws, confidence, what), se, items, clusters)


# --- one way to compare groups: every suite's group gaps -------------------------------------------

DESIGNS = {
    "items": "items resampled within each group",
    "clusters": "clusters resampled within each group (a cluster's items move together)",
    "paired": "clusters resampled once for every group (each cluster has items in several groups)",
}


@lru_cache(maxsize=4)
def _index(sizes: tuple[int, ...], resamples: int, seed: int) -> tuple[np.ndarray, ...]:
    """Bootstrap draws (resamples × size) for units of these sizes. Cached and read-only: every statistic
    computed on the same units (the mean and the median, SAGED's three features) reuses the same draws,
    which keeps their intervals consistent and costs the drawing once."""
    rng = np.random.default_rng(seed)
    draws = tuple(rng.integers(0, max(size, 1), size=(resamples, size), dtype=np.int32) for size in sizes)
    for draw in draws:
        draw.setflags(write=False)
    return draws


def resample_within_groups(
    groups: Sequence[np.ndarray], *, resamples: int = RESAMPLES, seed: int = 0
) -> list[np.ndarray]:
    """Each group's values drawn with replacement within the group (resamples × group size), the draws
    ``group_gaps`` uses for the same sizes, seed and resamples: a statistic it does not offer (SAGED's
    selection rate against each resample's pooled mean) is computed from exactly the same resamples."""
    index = _index(tuple(len(g) for g in groups), resamples, seed)
    return [np.asarray(g, dtype=float)[i] for g, i in zip(groups, index, strict=True)]


@dataclass(frozen=True)
class GroupGaps:
    """Every group's statistic, the disparity (max − min over groups) and any two groups' difference, all
    from the same resamples. ``draws`` holds one column per group, in ``groups``' order."""

    groups: dict[str, Estimate]
    disparity: Estimate
    draws: np.ndarray
    design: str
    stat: str
    confidence: float
    dropped: int  # values that were not finite and were left out

    def difference(self, a: str, b: str) -> Estimate:
        """Group ``a``'s statistic minus group ``b``'s, with its interval from the same resamples."""
        names = list(self.groups)
        for name in (a, b):
            if name not in self.groups:
                missing = Interval(float("nan"), float("nan"), f"no values in group {name!r}")
                return Estimate(float("nan"), missing, float("nan"), 0, 0)
        ga, gb = self.groups[a], self.groups[b]
        draws = self.draws[:, names.index(a)] - self.draws[:, names.index(b)]
        clusters = min(ga.clusters, gb.clusters)
        return _estimate(ga.point - gb.point, draws, ga.items, clusters, self.confidence, "an empty group drawn")

    def table(self) -> pd.DataFrame:
        """One row per group: value, interval, standard error, items, clusters and why an interval is missing."""
        rows = [
            {
                "group": name,
                "value": e.point,
                "ci_low": e.interval.low,
                "ci_high": e.interval.high,
                "se": e.se,
                "items": e.items,
                "clusters": e.clusters,
                "ci_note": e.interval.note,
            }
            for name, e in self.groups.items()
        ]
        return pd.DataFrame(rows, columns=["group", "value", "ci_low", "ci_high", "se", "items", "clusters", "ci_note"])


def _cluster_sums(values: np.ndarray, codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    return np.bincount(codes, weights=values, minlength=size), np.bincount(codes, minlength=size).astype(float)


def group_gaps(
    values: Sequence[float] | np.ndarray,
    groups: Sequence[Any] | np.ndarray,
    *,
    clusters: Sequence[Any] | np.ndarray | None = None,
    paired: bool = False,
    stat: str = "mean",
    resamples: int = RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> GroupGaps:
    """Group statistics, the disparity across groups and the groups' differences with bootstrap intervals
    that resample the right unit: WorldBench's regions, BorderLines' languages, Gapminder's languages,
    QUENCH's Indic subsets and SAGED's countries all go through here.

    - no ``clusters``: items are independent; they are resampled within each group, which keeps group
      sizes as observed (countries within a region);
    - ``clusters`` (e.g. questions holding several entities): whole clusters are resampled within each group,
      and a group's mean is its drawn items' mean (the ratio of the drawn clusters' sums to their counts),
      so duplicating items inside a cluster adds no information;
    - ``paired=True`` with ``clusters``: the same clusters appear in several groups (one question asked in
      English and in Chinese); clusters are drawn once per resample for every group, so the groups'
      difference keeps the pairing.

    Non-finite values are left out and counted (``dropped``). A group with one unit has a value but no
    interval of its own (its note says so); it still takes part in the disparity. ``stat="median"`` needs
    independent items (a median of clusters is not defined here).
    """
    if stat not in ("mean", "median"):
        raise ValueError(f"unknown group statistic {stat!r}; use mean or median")
    values = np.asarray(values, dtype=float)
    labels = np.asarray(groups, dtype=object)
    if labels.shape != values.shape:
        raise ValueError(f"group_gaps: {values.size} values but {labels.size} group labels")
    if paired and clusters is None:
        raise ValueError("group_gaps: paired=True needs the clusters shared by the groups")
    if stat == "median" and clusters is not None:
        raise ValueError("group_gaps: the median is resampled over independent items only; leave clusters out")
    units = np.arange(values.size) if clusters is None else np.asarray(clusters, dtype=object)
    if units.shape != values.shape:
        raise ValueError(f"group_gaps: {values.size} values but {units.size} cluster labels")
    keep = np.isfinite(values) & ~pd.isna(labels)
    dropped = int((~np.isfinite(values)).sum())
    values, labels, units = values[keep], labels[keep], units[keep]
    names = sorted(set(labels.tolist()), key=str)
    design = "paired" if paired else "items" if clusters is None else "clusters"

    points, draws, counts = [], [], []
    if design == "paired":
        _, codes = np.unique(units.astype(str), return_inverse=True)
        size = int(codes.max()) + 1 if codes.size else 0
        (index,) = _index((size,), resamples, seed)
        for name in names:
            mine = labels == name
            sums, n = _cluster_sums(values[mine], codes[mine], size)
            with np.errstate(invalid="ignore", divide="ignore"):
                draws.append(sums[index].sum(axis=1) / n[index].sum(axis=1))
            points.append(float(values[mine].mean()))
            counts.append((int(mine.sum()), int((n > 0).sum())))
    else:
        parts = [labels == name for name in names]
        if design == "items":
            drawn = resample_within_groups([values[m] for m in parts], resamples=resamples, seed=seed)
            reduce = np.mean if stat == "mean" else np.median
            for mine, sample in zip(parts, drawn, strict=True):
                draws.append(reduce(sample, axis=1))
                points.append(float(reduce(values[mine])))
                counts.append((int(mine.sum()), int(mine.sum())))
        else:
            coded = [np.unique(units[m].astype(str), return_inverse=True)[1] for m in parts]
            sizes = tuple(int(c.max()) + 1 for c in coded)
            for mine, codes, index in zip(parts, coded, _index(sizes, resamples, seed), strict=True):
                sums, n = _cluster_sums(values[mine], codes, int(codes.max()) + 1)
                draws.append(sums[index].sum(axis=1) / n[index].sum(axis=1))
                points.append(float(values[mine].mean()))
                counts.append((int(mine.sum()), int(codes.max()) + 1))
    matrix = np.column_stack(draws) if draws else np.zeros((resamples, 0))
    return gaps_from_draws(
        names, points, matrix, counts, design=design, stat=stat, confidence=confidence, dropped=dropped
    )


def gaps_from_draws(
    names: Sequence[str],
    points: Sequence[float],
    draws: np.ndarray,
    units: Sequence[tuple[int, int]],
    *,
    design: str = "items",
    stat: str = "mean",
    confidence: float = CONFIDENCE,
    dropped: int = 0,
) -> GroupGaps:
    """The intervals, standard errors and disparity of ``group_gaps`` from group statistics already drawn
    (``draws``: resamples × groups; ``units``: (items, resampled units) per group) — for a caller that
    computes more than the mean from the same resamples (SAGED's selection rates) and gathers them once."""
    estimates = {
        name: _estimate(point, draws[:, i], items, n_units, confidence, "an empty group drawn")
        for i, (name, point, (items, n_units)) in enumerate(zip(names, points, units, strict=True))
    }
    items = sum(n for n, _ in units)
    if len(names) < 2:
        missing = Interval(float("nan"), float("nan"), "fewer than two groups")
        spread = Estimate(float("nan"), missing, float("nan"), items, 0)
    else:
        point = float(max(points) - min(points))
        with np.errstate(invalid="ignore"):
            spread_draws = draws.max(axis=1) - draws.min(axis=1)
        spread_draws[~np.isfinite(draws).all(axis=1)] = np.nan
        if max(n_units for _, n_units in units) < 2:
            missing = Interval(float("nan"), float("nan"), "every group has one unit: no interval")
            spread = Estimate(point, missing, float("nan"), items, len(names))
        else:
            spread = _estimate(point, spread_draws, items, len(names), confidence, "an empty group drawn")
    return GroupGaps(estimates, spread, draws, design, stat, confidence, dropped)


# --- one sample or two independent samples: scipy.stats.bootstrap ----------------------------------


def _scipy_interval(
    samples: tuple[np.ndarray, ...], statistic: Callable[..., Any], resamples: int, seed: int, confidence: float
) -> tuple[Interval, float]:
    """BCa interval and standard error from scipy.stats.bootstrap (each sample resampled on its own)."""
    from scipy.stats import bootstrap

    if all(np.ptp(s) == 0 for s in samples):
        value = float(statistic(*samples, axis=-1))
        return Interval(value, value, "every value is the same"), 0.0
    result = bootstrap(
        samples,
        statistic,
        n_resamples=resamples,
        vectorized=True,
        confidence_level=confidence,
        method="BCa",
        rng=np.random.default_rng(seed),
    )
    ci = result.confidence_interval
    return Interval(float(ci.low), float(ci.high)), float(result.standard_error)


def mean_interval(
    values: Sequence[float] | np.ndarray, *, resamples: int = RESAMPLES, seed: int = 0, confidence: float = CONFIDENCE
) -> Estimate:
    """The mean of independent items with a BCa interval (scipy.stats.bootstrap); non-finite values left out."""
    a = np.asarray(values, dtype=float)
    a = a[np.isfinite(a)]
    if a.size < 2:
        missing = Interval(float("nan"), float("nan"), f"{a.size} item(s): no interval")
        return Estimate(float(a.mean()) if a.size else float("nan"), missing, float("nan"), a.size, a.size)
    interval, se = _scipy_interval((a,), lambda x, axis=-1: np.mean(x, axis=axis), resamples, seed, confidence)
    return Estimate(float(a.mean()), interval, se, a.size, a.size)


def mean_difference(
    a: np.ndarray, b: np.ndarray, *, resamples: int = RESAMPLES, seed: int = 0, confidence: float = CONFIDENCE
) -> tuple[float, Interval]:
    """mean(a) − mean(b) of two independent samples, with a BCa interval resampling each sample on its own
    (scipy.stats.bootstrap)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size == 0 or b.size == 0:
        return float("nan"), Interval(float("nan"), float("nan"), "one of the two samples is empty")
    point = float(a.mean() - b.mean())
    if a.size < 2 or b.size < 2:
        return point, Interval(float("nan"), float("nan"), "a sample with one item: no interval")

    def difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(x, axis=axis) - np.mean(y, axis=axis)

    interval, _ = _scipy_interval((a, b), difference, resamples, seed, confidence)
    return point, interval
