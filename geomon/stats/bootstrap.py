"""A declared metric's figures: its value, its 95 % interval and standard error from a cluster bootstrap (whole
clusters drawn with replacement, within each group where clusters are nested in groups), and its sample (items
and clusters; a group statistic's smallest group's clusters) for the sufficiency rule. Drawn once per metric, rows,
resamples and seed in a process.
"""

from __future__ import annotations

import collections
import hashlib
import math
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from geomon.stats.declarations import TrackedMetric, drawn_as
from geomon.stats.statistics import (
    Difference,
    Mean,
    Range,
    Ratio,
    Weights,
    categorical,
    cluster_codes,
    evaluate,
    group_values,
    one_blas_thread,
    rows_with_value,
    smallest_group,
)


@dataclass(frozen=True)
class Estimate:
    metric: str
    breakdown: str
    value: float
    ci_low: float
    ci_high: float
    items: int
    clusters: int  # the sample size of the sufficiency rule (a group statistic: its smallest group's clusters)
    se: float = math.nan  # the bootstrap standard error (a gap's: of its signed contrast, ``_signed_gap``)


def _bootstrap_weights(
    codes: np.ndarray, clusters: int, resamples: int, rng: np.random.Generator, strata: np.ndarray | None = None
) -> Weights:
    """Clusters drawn with replacement; with ``strata`` (each cluster's group), within each group, so every
    group keeps its own number of clusters in every resample (a group statistic is never missing a group)."""
    if strata is None:
        counts = rng.multinomial(clusters, np.full(clusters, 1.0 / clusters), size=resamples).astype(float)
    else:
        counts = np.zeros((resamples, clusters))
        for stratum in np.unique(strata):
            members = np.flatnonzero(strata == stratum)
            drawn = rng.multinomial(members.size, np.full(members.size, 1.0 / members.size), size=resamples)
            counts[:, members] = drawn
    return Weights(counts, codes, np.zeros(len(codes)), np.ones(len(codes)))


def _strata(frame: pd.DataFrame, codes: np.ndarray, clusters: int, group: str) -> np.ndarray | None:
    """Each cluster's group, where clusters are nested in the groups of ``group`` (else None)."""
    if not group or not clusters:
        return None
    groups = pd.Series(frame[group].astype(str).to_numpy()).groupby(codes).agg(["first", "nunique"])
    if len(groups) != clusters or not (groups["nunique"] == 1).all():
        return None
    return pd.factorize(groups["first"])[0]


# The last estimates drawn, by (metric, resamples, seed, the rows' content): an evaluation's headline is
# estimated by its suite's tracked stage and again when it is recorded (the same rows, the same seed), and a
# bootstrap is the costly part of both; the second reads the first's numbers, which are the same by construction.
_DRAWN: collections.OrderedDict[tuple[Any, ...], list[Estimate]] = collections.OrderedDict()
_DRAWN_KEPT = 64
_DRAWN_LOCK = threading.Lock()  # steps may estimate from threads


def _content(frame: pd.DataFrame, columns: set[str]) -> bytes:
    """A digest of ``columns`` of ``frame`` in row order (names, types and values): equal for equal rows."""
    chosen = frame[sorted(columns)]
    digest = hashlib.blake2b(repr([(c, str(t)) for c, t in chosen.dtypes.items()]).encode(), digest_size=32)
    digest.update(pd.util.hash_pandas_object(chosen, index=False).to_numpy().tobytes())
    return digest.digest()


RESAMPLES = 1000  # a declared figure's cluster bootstrap: its interval and its standard error


def estimates(
    metric: TrackedMetric, frame: pd.DataFrame, *, resamples: int = RESAMPLES, seed: int = 0, where: str = ""
) -> list[Estimate]:
    """The metric (and each of its groups with ``by``) on ``frame``: value, 95 % percentile interval from a
    cluster bootstrap, items and clusters counted where the statistic has a value. Drawn once per metric, rows,
    resamples and seed in a process (``_DRAWN``; the minimum effects, which a draw never reads, are not part of
    what is drawn: the figures and a comparison's plan share one draw)."""
    metric.check(frame, where or metric.name)
    key = (drawn_as(metric), resamples, seed, _content(frame, metric.columns()))
    try:
        with _DRAWN_LOCK:
            drawn = _DRAWN.get(key)
    except TypeError:  # a statistic holding an unhashable value: drawn every time
        return _estimates(metric, frame, resamples=resamples, seed=seed)
    if drawn is None:
        drawn = _estimates(metric, frame, resamples=resamples, seed=seed)
    with _DRAWN_LOCK:
        _DRAWN[key] = drawn
        _DRAWN.move_to_end(key)
        while len(_DRAWN) > _DRAWN_KEPT:
            _DRAWN.popitem(last=False)
    return list(drawn)


@one_blas_thread
def _estimates(metric: TrackedMetric, frame: pd.DataFrame, *, resamples: int, seed: int) -> list[Estimate]:
    frame = categorical(frame, metric.columns())
    if frame.empty:
        return [Estimate(metric.name, b, math.nan, math.nan, math.nan, 0, 0) for b, _ in metric.parts(frame)]
    codes, clusters = cluster_codes(frame, metric.cluster, metric.group)
    strata = _strata(frame, codes, clusters, metric.group)
    draws = _bootstrap_weights(codes, clusters, resamples, np.random.default_rng(seed), strata) if resamples else None
    parts = metric.parts(frame)
    statistics = [statistic for _, statistic in parts]
    values = evaluate(statistics, frame, Weights.rows(np.ones(len(frame))))
    boots = evaluate(statistics, frame, draws) if draws is not None else [None] * len(parts)
    out = []
    for (breakdown, statistic), value, boot in zip(parts, values, boots, strict=True):
        value = float(value[0])
        low = high = se = math.nan
        if boot is not None and math.isfinite(value):
            boot = boot[np.isfinite(boot)]
            if boot.size >= 0.9 * resamples:  # an interval only where nearly every resample has the figure
                low, high = (float(q) for q in np.quantile(boot, [0.025, 0.975]))
                signed = _signed_gap(statistic, frame, draws)
                signed = boot if signed is None else signed[np.isfinite(signed)]
                se = float(np.std(signed)) if signed.size >= 0.9 * resamples else math.nan
        rows = rows_with_value(statistic, frame)
        sample = smallest_group(statistic, frame, codes, rows)
        clustered = int(np.unique(codes[rows]).size) if sample is None else sample
        bounds = metric.bounds_for(statistic)
        if isinstance(statistic, Mean | Ratio) and bounds is not None and math.isfinite(value):
            low, high = _no_narrower_than_wilson(value, low, high, clustered, bounds)
        out.append(Estimate(metric.name_for(statistic), breakdown, value, low, high, int(rows.sum()), clustered, se))
    return out


def _signed_gap(statistic: Any, frame: pd.DataFrame, draws: Weights) -> np.ndarray | None:
    """A gap that is a size (a range, an absolute difference) drawn as the signed contrast between the groups that
    define it in the data: the range's highest and lowest group, the difference's two sides. Its standard error
    is the gap's: the size's own draws fold at 0, so a gap near 0 would state a spread, and plan an MDE, well
    below what its groups allow. None for any other statistic."""
    if isinstance(statistic, Difference) and statistic.absolute:
        return statistic.minuend.weighted(frame, draws) - statistic.subtrahend.weighted(frame, draws)
    if not isinstance(statistic, Range):
        return None
    point = group_values(statistic.of, statistic.by, frame, Weights.rows(np.ones(len(frame))))[0][0]
    present = np.flatnonzero(np.isfinite(point))
    if present.size < 2:
        return None
    order = present[np.argsort(point[present], kind="stable")]
    values, _ = group_values(statistic.of, statistic.by, frame, draws)
    return values[:, order[-1]] - values[:, order[0]]


def _no_narrower_than_wilson(
    value: float, low: float, high: float, clusters: int, bounds: tuple[float, float]
) -> tuple[float, float]:
    """A bounded mean's interval widened to at least the Wilson score interval of a proportion over its
    clusters: a small group whose answers were all right (or all wrong) has a percentile bootstrap interval of
    zero width, narrower than its few clusters allow."""
    if clusters <= 0:
        return low, high
    lo, hi = bounds
    p = _share(value, bounds)
    z, n = 1.959964, clusters
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    w_low, w_high = lo + (centre - half) * (hi - lo), lo + (centre + half) * (hi - lo)
    if not (math.isfinite(low) and math.isfinite(high)):
        return w_low, w_high
    return min(low, w_low), max(high, w_high)


def agresti_coull_se(value: float, clusters: int, bounds: tuple[float, float] | None) -> float:
    """The Agresti–Coull standard error of a bounded mean ``value`` over ``clusters`` (two successes and two
    failures added: never 0 at the bounds); NaN without bounds or clusters."""
    if bounds is None or clusters <= 0 or not math.isfinite(value):
        return math.nan
    p = (_share(value, bounds) * clusters + 2) / (clusters + 4)
    return (bounds[1] - bounds[0]) * math.sqrt(p * (1 - p) / (clusters + 4))


def _share(value: float, bounds: tuple[float, float]) -> float:
    """A bounded value as a share of its range, clipped to [0, 1]."""
    low, high = bounds
    return min(max((value - low) / (high - low), 0.0), 1.0)
