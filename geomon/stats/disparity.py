"""Disparity statistics shared by every suite.

WorldBench: absolute relative error, per-group means/medians, disparity = max − min over groups,
and a random-categorization baseline. SAGED-style summaries (selection rates, impact ratio, max
Z-score, Dixon's Q with the ratio for the group count and simulated critical values, KL divergence)
live here too, so every suite reports disparity the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np
import pandas as pd


def abs_rel_error(pred: float | np.ndarray | pd.Series, truth: float | np.ndarray | pd.Series) -> np.ndarray | float:
    """|a − b| / max(|a|, |b|): 0 for identical values, 1 when one is 0 or signs differ by all.

    WorldBench's metric for non-negative values; with both values 0 the error is 0.
    """
    a = np.asarray(pred, dtype=float)
    b = np.asarray(truth, dtype=float)
    denom = np.maximum(np.abs(a), np.abs(b))
    with np.errstate(invalid="ignore", divide="ignore"):
        err = np.where(denom == 0, 0.0, np.abs(a - b) / denom)
    err = np.where(np.isnan(a) | np.isnan(b), np.nan, err)
    return float(err) if err.ndim == 0 else err


def group_errors(per_item: pd.DataFrame, group_col: str, value_col: str = "error") -> pd.DataFrame:
    """Mean, median and count of ``value_col`` per group (rows with a missing group are left out)."""
    data = per_item.dropna(subset=[group_col, value_col])
    out = data.groupby(group_col)[value_col].agg(["mean", "median", "count"])
    out.index.name = "group"
    return out.sort_values("mean")


def disparity(group_values: Sequence[float] | pd.Series) -> float:
    """max − min over groups (WorldBench's Disparity); undefined (NaN) with fewer than two groups: one group
    has no disparity to speak of, and an undefined figure is never tested."""
    values = pd.Series(group_values, dtype=float).dropna()
    return float(values.max() - values.min()) if len(values) >= 2 else float("nan")


def random_baseline(
    per_item: pd.DataFrame,
    group_col: str,
    value_col: str = "error",
    trials: int = 10,
    seed: int = 0,
    stat: str = "mean",
    k: int | None = None,
    method: str = "random_categorization",
) -> dict[str, float]:
    """Disparity expected from a random categorization of the same items, ``trials`` times (seeded).

    ``random_categorization`` (WorldBench's baseline): each item is put in one of ``k`` groups at random
    (k = 7 for regions, 4 for income groups in the paper; default: the number of real groups); empty
    groups do not count. ``shuffled_labels`` (a variant geomon also reports): the real labels are
    permuted over the items, so every group keeps its real size — a baseline that also carries the
    noise of small groups (North America has three countries), which the paper's baseline does not.
    Returns the mean and standard deviation of the disparity over the trials.
    """
    data = per_item.dropna(subset=[group_col, value_col])
    rng = np.random.default_rng(seed)
    labels = data[group_col].to_numpy()
    values = pd.Series(data[value_col].to_numpy(dtype=float))
    groups = k or len(set(labels))
    results = []
    for _ in range(trials):
        if method == "random_categorization":
            assignment = rng.integers(0, groups, size=len(values))
        elif method == "shuffled_labels":
            assignment = rng.permutation(labels)
        else:
            raise ValueError(f"unknown baseline method {method!r}; use random_categorization or shuffled_labels")
        results.append(disparity(values.groupby(assignment).agg(stat)))
    return {
        "mean": float(np.mean(results)),
        "std": float(np.std(results, ddof=1)) if trials > 1 else 0.0,
        "trials": trials,
        "groups": groups,
        "method": method,
    }


def group_ranks(group_table: pd.DataFrame, column: str = "mean") -> pd.Series:
    """Rank of each group, 1 = lowest error."""
    return group_table[column].rank(method="min").astype(int)


# --- selection-rate style summaries (SAGED and friends) ------------------------------------------


def selection_rates(outcomes: pd.DataFrame, group_col: str, outcome_col: str) -> pd.Series:
    """Share of positive outcomes per group."""
    return outcomes.groupby(group_col)[outcome_col].mean().astype(float)


def impact_ratio(rates: Mapping[str, float] | pd.Series) -> float:
    """min rate / max rate (the four-fifths rule's ratio); 1.0 means parity."""
    values = pd.Series(rates, dtype=float).dropna()
    if values.empty or values.max() == 0:
        return float("nan")
    return float(values.min() / values.max())


def max_z_score(stats: Mapping[str, float] | pd.Series) -> float:
    """SAGED's Max Z-score (its Ap C.5): max over the groups of (S_Gi − μ) / σ — signed, the group furthest above
    the others, with σ the groups' population standard deviation (``scipy.stats.zscore``, as SAGED's code)."""
    from scipy.stats import zscore  # here: loading the code location imports no scipy.stats

    values = pd.Series(stats, dtype=float).dropna()
    if len(values) < 2 or values.std(ddof=0) == 0:
        return 0.0
    return float(zscore(values.to_numpy()).max())


# Dixon's ratios (Dixon 1950, 1951): (gap index, trimmed values at the other end). For the highest value
# of sorted x₁…xₙ: r_jk = (xₙ − xₙ₋ⱼ) / (xₙ − x₁₊ₖ); for the lowest, the mirror image.
DIXON_RATIOS = {"r10": (1, 0), "r11": (1, 1), "r21": (2, 1), "r22": (2, 2)}


def dixon_variant(n: int) -> str:
    """The ratio Dixon recommends for ``n`` values: r10 for 3-7, r11 for 8-10, r21 for 11-13, r22 above
    (trimming the far end keeps a second outlier there from masking the first)."""
    if n < 3:
        raise ValueError(f"Dixon's Q needs at least 3 values, got {n}")
    return "r10" if n <= 7 else "r11" if n <= 10 else "r21" if n <= 13 else "r22"


def _dixon_ratios(sorted_values: np.ndarray, variant: str) -> tuple[np.ndarray, np.ndarray]:
    """(ratio for the lowest value, ratio for the highest) along the last axis of sorted values."""
    gap, trim = DIXON_RATIOS[variant]
    x = sorted_values
    with np.errstate(invalid="ignore", divide="ignore"):
        low = (x[..., gap] - x[..., 0]) / (x[..., -1 - trim] - x[..., 0])
        high = (x[..., -1] - x[..., -1 - gap]) / (x[..., -1] - x[..., trim])
    return low, high


def dixon_q(stats: Mapping[str, float] | pd.Series, variant: str | None = None) -> float:
    """Dixon's Q of the more outlying end (the lowest or the highest group), with the ratio recommended
    for the number of groups unless ``variant`` names one; NaN with fewer than 3 groups (nothing can be
    tested) and 0 when all groups are equal."""
    values = np.sort(pd.Series(stats, dtype=float).dropna().to_numpy())
    if len(values) < 3:
        return float("nan")
    variant = variant or dixon_variant(len(values))
    gap, trim = DIXON_RATIOS[variant]
    if len(values) < gap + trim + 2:
        raise ValueError(f"Dixon's {variant} needs at least {gap + trim + 2} values, got {len(values)}")
    if values[-1] == values[0]:
        return 0.0
    low, high = _dixon_ratios(values, variant)
    return float(np.nanmax([low, high]))


@cache
def dixon_critical(n: int, variant: str | None = None, alpha: float = 0.05, draws: int = 400_000) -> float:
    """The critical value of ``dixon_q`` for ``n`` values from a normal sample at level ``alpha``, by a
    seeded simulation of ``draws`` samples (the more outlying end, as ``dixon_q`` tests). Reproduces the
    published tables (Rorabacher 1991: r10 at α = 0.05 is 0.970, 0.829, 0.710 for n = 3, 4, 5) within
    0.005 and covers every n and variant, where tables stop at 25 or 30."""
    variant = variant or dixon_variant(n)
    rng = np.random.default_rng(20260101 + n)
    samples = np.sort(rng.standard_normal((draws, n)), axis=1)
    low, high = _dixon_ratios(samples, variant)
    return float(np.quantile(np.maximum(low, high), 1 - alpha))


@dataclass(frozen=True)
class DixonTest:
    q: float
    variant: str
    groups: int
    suspect: str  # the group at the more outlying end
    critical: float
    alpha: float

    @property
    def outlier(self) -> bool:
        return bool(self.q > self.critical)


def dixon_test(stats: Mapping[str, float] | pd.Series, alpha: float = 0.05) -> DixonTest | None:
    """Is the most outlying group an outlier among the groups (Dixon's Q against its critical value)?
    None with fewer than 3 groups."""
    series = pd.Series(stats, dtype=float).dropna().sort_values()
    if len(series) < 3:
        return None
    variant = dixon_variant(len(series))
    q = dixon_q(series, variant)
    low, high = _dixon_ratios(series.to_numpy(), variant)
    suspect = str(series.index[0] if np.nan_to_num(low) >= np.nan_to_num(high) else series.index[-1])
    return DixonTest(q, variant, len(series), suspect, dixon_critical(len(series), variant, alpha), alpha)


def kl_divergence(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray) -> float:
    """Kullback-Leibler divergence D(p ‖ q) in nats of two distributions over the same categories (each is
    normalised to sum to 1); inf where q gives 0 to a category p does not."""
    from scipy.special import rel_entr

    p_arr, q_arr = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    if p_arr.shape != q_arr.shape or p_arr.ndim != 1 or p_arr.size == 0:
        raise ValueError(
            f"kl_divergence: p and q must be equal-length 1-D distributions ({p_arr.shape}, {q_arr.shape})"
        )
    if (p_arr < 0).any() or (q_arr < 0).any() or not np.isfinite(p_arr).all() or not np.isfinite(q_arr).all():
        raise ValueError("kl_divergence: probabilities must be finite and non-negative")
    if p_arr.sum() == 0 or q_arr.sum() == 0:
        raise ValueError("kl_divergence: a distribution sums to 0")
    return float(rel_entr(p_arr / p_arr.sum(), q_arr / q_arr.sum()).sum())


@dataclass(frozen=True)
class PermutationResult:
    statistic: float
    p_value: float
    permutations: int  # exact when it equals the number of distinct relabellings
    groups: int
    null_95: float = float("nan")  # the 95th percentile of the statistic over relabellings: what chance gives


SHARED_PERMUTATIONS_MAX = 20_000_000  # index entries (80 MB of int32) kept for reuse; larger runs are chunked


@lru_cache(maxsize=2)
def _permutation_index(items: int, resamples: int, seed: int) -> np.ndarray:
    """``resamples`` random permutations of ``items`` positions (read-only: shared between callers)."""
    rng = np.random.default_rng(seed)
    index = rng.permuted(np.broadcast_to(np.arange(items, dtype=np.int32), (resamples, items)), axis=1)
    index.setflags(write=False)
    return index


def _log_relabellings(sizes: Sequence[int]) -> float:
    """log of how many distinct ways split the items into groups of these sizes (a multinomial)."""
    from math import lgamma

    return lgamma(sum(sizes) + 1) - sum(lgamma(n + 1) for n in sizes)


def disparity_permutation_test(
    values_by_group: Mapping[str, Sequence[float] | np.ndarray],
    *,
    stat: str = "mean",
    resamples: int = 9999,
    seed: int = 0,
) -> PermutationResult:
    """Is the disparity (max − min of the groups' ``stat``) larger than random group labels give?

    The items' group labels are permuted across groups, group sizes kept. With at most ``resamples``
    distinct relabellings the test is exact (scipy.stats.permutation_test enumerates them); otherwise it
    is Monte Carlo, vectorized here (every permutation drawn at once, the group means by segment sums):
    scipy draws one permutation at a time in Python, which dominates at a million responses. p =
    (relabellings at least as extreme + 1) / (resamples + 1), scipy's convention. Shuffling rows *within*
    a group, as SAGED's code does, cannot change a group mean and tests nothing. One-sided: only a larger
    disparity counts.
    """
    samples = [np.asarray(v, dtype=float) for v in values_by_group.values()]
    samples = [v[np.isfinite(v)] for v in samples]
    samples = [v for v in samples if v.size]
    if len(samples) < 2:
        return PermutationResult(float("nan"), float("nan"), 0, len(samples))
    reduce = np.mean if stat == "mean" else np.median if stat == "median" else None
    if reduce is None:
        raise ValueError(f"unknown group statistic {stat!r}; use mean or median")

    def spread(*groups: np.ndarray, axis: int = -1) -> np.ndarray:
        stats = np.stack([reduce(g, axis=axis) for g in groups])
        return stats.max(axis=0) - stats.min(axis=0)

    sizes = [len(v) for v in samples]
    if stat == "median" or _log_relabellings(sizes) <= np.log(resamples):
        from scipy.stats import permutation_test

        result = permutation_test(
            samples,
            spread,
            permutation_type="independent",
            vectorized=True,
            n_resamples=resamples,
            alternative="greater",
            random_state=np.random.default_rng(seed),
        )
        null = np.asarray(result.null_distribution, dtype=float)
        return PermutationResult(
            float(result.statistic), float(result.pvalue), null.size, len(samples), float(np.quantile(null, 0.95))
        )
    observed = float(spread(*samples))
    pooled = np.concatenate(samples)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    counts = np.asarray(sizes, dtype=float)
    rng = np.random.default_rng(seed)
    null = []
    if resamples * pooled.size <= SHARED_PERMUTATIONS_MAX:
        # One set of relabellings per (items, resamples, seed), shared by every feature tested on the
        # same items (SAGED tests three): the shuffle is the expensive part, the gather is cheap.
        index = _permutation_index(pooled.size, resamples, seed)
        means = np.add.reduceat(pooled[index], starts, axis=1) / counts
        null.append(means.max(axis=1) - means.min(axis=1))
    else:
        for chunk in np.array_split(np.arange(resamples), max(1, resamples * pooled.size // 5_000_000)):
            permuted = rng.permuted(np.broadcast_to(pooled, (chunk.size, pooled.size)), axis=1)
            means = np.add.reduceat(permuted, starts, axis=1) / counts
            null.append(means.max(axis=1) - means.min(axis=1))
    spreads = np.concatenate(null)
    # A float tolerance, as scipy uses, so ties with the observed split count as "as extreme".
    extreme = int((spreads >= observed * (1 - 1e-12)).sum())
    p_value = (extreme + 1) / (resamples + 1)
    return PermutationResult(observed, p_value, resamples, len(samples), float(np.quantile(spreads, 0.95)))
