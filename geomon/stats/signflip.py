"""The paired sign-flip test: two evaluations of a declared metric compared on the items they share. Under no
change a cluster's before and after rows are exchangeable, so flipping whole clusters between the two arms gives the
change's null distribution: one-sided toward worse (the claim a regression alert makes), with the other side's p for
improvements; exact where few clusters differ, refined near the decision's thresholds (``Precision``). How a release
is decided from these tests is described once, in ``geomon.stats.verdicts``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from geomon.stats.declarations import TrackedMetric
from geomon.stats.statistics import (
    Range,
    Weights,
    categorical,
    cluster_codes,
    evaluate,
    group_values,
    is_disparity,
    one_blas_thread,
    rows_with_value,
    smallest_group,
)


@dataclass(frozen=True)
class PairedTest:
    """One metric (or one of its groups) compared on the items two evaluations share. ``change`` is after −
    before in the metric's units; ``p_value`` is one-sided toward *worse* (the claim a regression alert makes:
    the change is at least this far in the worse direction), ``p_better`` one-sided toward better (None when
    the statistic is undefined on either side, or nothing is shared); ``se`` the standard deviation of the
    sign-flip null (the change's standard error under no change), from which the minimum detectable effect
    follows; ``null_size`` how many sign-flips the p-values count (2^k when ``exact``: every flip of the k
    clusters that differ)."""

    metric: str
    breakdown: str
    before: float
    after: float
    change: float
    p_value: float | None
    se: float
    items: int
    clusters: int
    higher_is_worse: bool
    min_effect: float
    bounds: tuple[float, float] | None = None
    note: str = ""  # why there is no p-value
    p_better: float | None = None
    exact: bool = False
    null_size: int = 0
    disparity: bool = False  # a statistic between groups (a range, gap, impact ratio): shown, never paged
    # The standard error the MDE and power are stated at, planned before the new data (``compare.planned``);
    # NaN: ``se``.
    planned_se: float = math.nan
    # The change's standard error planned from the pair pooled (``compare.planned``): what weighs it in Holm. The
    # sign-flip test conditions on each cluster's two evaluations as a pair, not on which is the baseline.
    weighing_se: float = math.nan
    # The clusters this comparison reads whose rows differ between the two evaluations (None: not counted). None
    # differing is the one thing that takes it out of the Holm family: known from what the sign-flip test
    # conditions on, never from the change it observed.
    differing: int | None = None

    @property
    def worse(self) -> bool:
        return self.change > 0 if self.higher_is_worse else self.change < 0


def _aligned(before: pd.DataFrame, after: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows of the items both share, in the order of their keys (compared as text: a stored key may have been
    read back as a number): the clusters are numbered, and the seeded sign-flips drawn, the same way whatever order
    the rows were stored in, so a pair's p-values and planned error never depend on it."""
    b_keys, a_keys = before["item"].astype(str), after["item"].astype(str)
    if len(b_keys) == len(a_keys) and (b_keys.to_numpy() == a_keys.to_numpy()).all():
        order = np.argsort(b_keys.to_numpy(), kind="stable")
        return (
            before.assign(item=b_keys).iloc[order].reset_index(drop=True),
            after.assign(item=a_keys).iloc[order].reset_index(drop=True),
        )
    b = before.assign(item=b_keys).set_index("item")
    a = after.assign(item=a_keys).set_index("item")
    shared = sorted(set(b.index) & set(a.index))
    return b.loc[shared].reset_index(), a.loc[shared].reset_index()


def paired_test(
    metric: TrackedMetric,
    before: pd.DataFrame,
    after: pd.DataFrame,
    *,
    resamples: int = 4999,
    seed: int = 0,
    chunk: int = 1000,
    precision: Precision | None = None,
) -> list[PairedTest]:
    """Each part of ``metric`` (the headline and, with ``by``, its groups) compared on the shared items: under
    no change, a cluster's before and after rows are exchangeable, so flipping whole clusters between the two
    arms gives the null distribution of the change (one-sided each way; identical data gives p = 1). Exact
    (every flip enumerated) when few clusters differ, else ``resamples`` random flips, refined near the
    decision's thresholds (``Precision``). A statistic that is undefined (NaN) on either side has no p-value.
    Errors in the statistic are not swallowed."""
    return paired_tests([metric], before, after, resamples=resamples, seed=seed, chunk=chunk, precision=precision)


@one_blas_thread
def paired_tests(
    metrics: Sequence[TrackedMetric],
    before: pd.DataFrame,
    after: pd.DataFrame,
    *,
    resamples: int = 4999,
    seed: int = 0,
    chunk: int = 1000,
    precision: Precision | None = None,
) -> list[PairedTest]:
    """``paired_test`` of each metric on the same two evaluations, which are checked, paired and stacked once."""
    for metric in metrics:
        metric.check(before, f"{metric.name}, the earlier evaluation")
        metric.check(after, f"{metric.name}, the later evaluation")
    old, new = _aligned(before, after)
    columns = set().union(*(m.columns() for m in metrics)) if metrics else set()
    stacked = categorical(pd.concat([old, new], ignore_index=True), columns)
    return [
        test
        for metric in metrics
        for test in _paired(
            metric, old, new, stacked, resamples=resamples, seed=seed, chunk=chunk, precision=precision or Precision()
        )
    ]


@dataclass(frozen=True)
class Precision:
    """How precise a paired test's p-values must be. With at most ``exact_up_to`` clusters that differ between
    the two evaluations every sign-flip is enumerated (2^k: the exact p-value); otherwise random flips, and a
    p-value whose Monte Carlo error (four standard errors) straddles one of ``thresholds`` (the levels the
    decision compares it with) is computed again with ``max_resamples``, so no verdict near a threshold
    depends on the seed."""

    exact_up_to: int = 16
    thresholds: tuple[float, ...] = ()
    max_resamples: int = 99_999
    min_clusters: int = 0  # below it a comparison is an insufficient sample, never decided: no refinement


def _paired(
    metric: TrackedMetric,
    old: pd.DataFrame,
    new: pd.DataFrame,
    stacked: pd.DataFrame,
    *,
    resamples: int,
    seed: int,
    chunk: int,
    precision: Precision,
) -> list[PairedTest]:
    n = len(new)
    codes, clusters = cluster_codes(new, metric.cluster, metric.group) if n else (np.zeros(0, dtype=int), 0)
    parts = metric.parts(stacked if n else new)
    if n == 0:
        return [_undefined(metric, st, b, math.nan, math.nan, 0, 0, "no items in common") for b, st in parts]
    statistics = [statistic for _, statistic in parts]
    arms = np.concatenate([np.zeros(n), np.ones(n)])
    b_values = [float(v[0]) for v in evaluate(statistics, stacked, Weights.rows(1 - arms))]
    a_values = [float(v[0]) for v in evaluate(statistics, stacked, Weights.rows(arms))]
    differs = _differing_rows(metric, old, new)
    differing = np.unique(codes[differs]) if clusters else np.zeros(0, dtype=int)
    exact = differing.size <= precision.exact_up_to
    if exact:
        flips = _Flips.every(differing, clusters)
    else:
        flips = _Flips.coins(np.random.default_rng(seed), resamples, clusters)
    nulls = _nulls(statistics, stacked, codes, flips, chunk)
    out = []
    for (breakdown, statistic), b_value, a_value, null in zip(parts, b_values, a_values, nulls, strict=True):
        used = rows_with_value(statistic, stacked)
        used_pairs = used[:n] | used[n:]
        items, used_clusters = int(used_pairs.sum()), int(np.unique(codes[used_pairs]).size)
        smallest = smallest_group(statistic, new, codes, used_pairs)
        used_clusters = used_clusters if smallest is None else smallest
        if not (math.isfinite(b_value) and math.isfinite(a_value)):
            side = "before" if not math.isfinite(b_value) else "after"
            undefined = _undefined(
                metric, statistic, breakdown, b_value, a_value, items, used_clusters, f"undefined {side}"
            )
            out.append(undefined)
            continue
        change = a_value - b_value
        null = null[np.isfinite(null)]
        higher_is_worse = metric.higher_is_worse_for(statistic)
        p_worse, p_better = _one_sided(change, null, higher_is_worse, exact)
        # The null's spread from the one draw every decision of this pair makes (seeded): what its MDE and weight are
        # planned from, the same whichever levels refine the p-value below (they depend on the look's α).
        spread = float(np.std(null)) if null.size else math.nan
        decidable = used_clusters >= precision.min_clusters  # an insufficient sample is never decided
        if not exact and decidable and _near(min(p_worse, p_better), null.size, precision.thresholds):
            more = _Flips.coins(np.random.default_rng([seed, 1]), precision.max_resamples, clusters)
            (null,) = _nulls([statistic], stacked, codes, more, chunk)
            null = null[np.isfinite(null)]
            p_worse, p_better = _one_sided(change, null, higher_is_worse, exact)
        out.append(
            PairedTest(
                metric.name_for(statistic),
                breakdown,
                b_value,
                a_value,
                change,
                p_worse,
                spread,
                items,
                used_clusters,
                higher_is_worse,
                metric.min_effect_for(statistic),
                metric.bounds_for(statistic),
                note=_moved(statistic, stacked, n) if change else "",
                p_better=p_better,
                exact=exact,
                null_size=int(null.size),
                disparity=is_disparity(statistic),
                differing=int(np.unique(codes[differs & used_pairs]).size),
            )
        )
    return out


def _moved(statistic: Any, stacked: pd.DataFrame, n: int) -> str:
    """For a range, the group that moved most between the two evaluations (``country=Kenya 60 → 85``): whether
    a gap widened because a group got worse or because another got better."""
    if not isinstance(statistic, Range):
        return ""
    arms = np.concatenate([np.zeros(n), np.ones(n)])
    before, names = group_values(statistic.of, statistic.by, stacked, Weights.rows(1 - arms))
    after, _ = group_values(statistic.of, statistic.by, stacked, Weights.rows(arms))
    moves = after[0] - before[0]
    if not np.isfinite(moves).any():
        return ""
    g = int(np.nanargmax(np.abs(moves)))
    return f"moved most: {statistic.by}={names[g]} {before[0][g]:.4g} → {after[0][g]:.4g}"


def _differing_rows(metric: TrackedMetric, old: pd.DataFrame, new: pd.DataFrame) -> np.ndarray:
    """The rows that differ between the two evaluations in a column the statistic reads: flipping a cluster with
    none swaps identical rows and changes nothing."""
    columns = sorted(metric.columns() - {"item"})
    differs = np.zeros(len(new), dtype=bool)
    for column in columns:
        differs |= _cells_differ(old[column], new[column])
    return differs


def _cells_differ(before: pd.Series, after: pd.Series) -> np.ndarray:
    """Row by row, whether two columns' cells differ: as numbers where both read as numbers (a value stored as 100
    and read back from the history's JSON as 100.0 is the same value), two missing cells never, else as text."""
    # Two missing cells are the same outcome however they were stored (NaN in memory, None read back from the store).
    as_text = (before.astype(str).to_numpy() != after.astype(str).to_numpy()) & ~(
        before.isna().to_numpy() & after.isna().to_numpy()
    )
    try:
        a = pd.to_numeric(before, errors="coerce").to_numpy(dtype=float)
        b = pd.to_numeric(after, errors="coerce").to_numpy(dtype=float)
    except (TypeError, ValueError):  # cells no number parser reads (lists, mappings): their text
        return as_text
    # As numbers, to the precision the history stores them with (a rate of 11/12 read back as 0.9166666667).
    return np.where(~np.isnan(a) & ~np.isnan(b), ~np.isclose(a, b, rtol=1e-9, atol=1e-9), as_text)


class _Flips:
    """Sign-flips (1: a cluster's rows swap arms), made a chunk at a time so that 99,999 flips of thousands of
    clusters never sit in memory at once: every flip of the clusters that differ (exact), or fair coins."""

    def __init__(self, total: int, clusters: int, make: Any) -> None:
        self.total, self.clusters, self.make = total, clusters, make

    @classmethod
    def every(cls, differing: np.ndarray, clusters: int) -> _Flips:
        k = differing.size

        def make(start: int, size: int) -> np.ndarray:
            patterns = (np.arange(start, start + size)[:, None] >> np.arange(k)[None, :]) & 1
            flips = np.zeros((size, clusters))
            flips[:, differing] = patterns
            return flips

        return cls(2**k, clusters, make)

    @classmethod
    def coins(cls, rng: np.random.Generator, resamples: int, clusters: int) -> _Flips:
        return cls(resamples, clusters, lambda start, size: _coin_flips(rng, size, clusters))


def _nulls(
    statistics: list[Any], stacked: pd.DataFrame, codes: np.ndarray, flips: _Flips, chunk: int
) -> list[np.ndarray]:
    """Each statistic's change (after arm − before arm) under each of ``flips``, drawn a chunk at a time."""
    n = len(codes)
    stacked_codes = np.concatenate([codes, codes])
    # A flipped cluster's before rows join the after arm and its after rows leave it; the mirror moves them back.
    to_after = np.concatenate([np.zeros(n), np.ones(n)]), np.concatenate([np.ones(n), -np.ones(n)])
    to_before = np.concatenate([np.ones(n), np.zeros(n)])
    total = flips.total
    nulls = [np.empty(total) for _ in statistics]
    for start in range(0, total, chunk):
        flip = flips.make(start, min(chunk, total - start))
        both = evaluate(statistics, stacked, Weights(flip, stacked_codes, *to_after, mirror=to_before))
        for null, values in zip(nulls, both, strict=True):
            null[start : start + chunk] = values[: len(flip)] - values[len(flip) :]
    return nulls


def _one_sided(change: float, null: np.ndarray, higher_is_worse: bool, exact: bool) -> tuple[float, float]:
    """(p toward worse, p toward better): the share of flips at least as far in that direction as the change.
    Exact enumeration counts the observed flip among its 2^k; random flips add it ((count + 1) / (N + 1)). A
    change of 0 is an outcome like any other: where clusters differ (20 of 40 items, net zero) the flips that move
    it either way count; p = 1 both ways only when no flip moves it."""
    tolerance = 1e-9 * max(1.0, abs(change))
    if null.size == 0:
        return 1.0, 1.0
    toward_worse = null if higher_is_worse else -null
    observed = change if higher_is_worse else -change
    worse_count = float(np.sum(toward_worse >= observed - tolerance))
    better_count = float(np.sum(toward_worse <= observed + tolerance))
    if exact:
        return worse_count / null.size, better_count / null.size
    return (worse_count + 1) / (null.size + 1), (better_count + 1) / (null.size + 1)


def _near(p: float, resamples: int, thresholds: Sequence[float]) -> bool:
    """Whether a Monte Carlo p-value from ``resamples`` flips could lie on either side of a threshold."""
    error = 4 * math.sqrt(max(p * (1 - p), 1 / resamples) / resamples)
    at = bisect.bisect_right(thresholds, p - error)  # thresholds are sorted (``power.holm_levels``)
    return at < len(thresholds) and thresholds[at] < p + error


def _coin_flips(rng: np.random.Generator, resamples: int, clusters: int) -> np.ndarray:
    """Resamples × clusters fair coins as 0.0 / 1.0, eight from each random byte."""
    packed = rng.integers(0, 256, size=(resamples, (clusters + 7) // 8), dtype=np.uint8)
    return np.unpackbits(packed, axis=1, count=clusters).astype(float)


def _undefined(
    metric: TrackedMetric,
    statistic: Any,
    breakdown: str,
    before: float,
    after: float,
    items: int,
    clusters: int,
    note: str,
) -> PairedTest:
    """A part of ``metric`` with no p-value, under the name and direction its part is recorded with."""
    change = after - before if math.isfinite(before) and math.isfinite(after) else math.nan
    return PairedTest(
        metric.name_for(statistic),
        breakdown,
        before,
        after,
        change,
        None,
        math.nan,
        items,
        clusters,
        metric.higher_is_worse_for(statistic),
        metric.min_effect_for(statistic),
        metric.bounds_for(statistic),
        note,
    )
