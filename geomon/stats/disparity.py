"""Disparity statistics shared by every suite.

WorldBench: absolute relative error, per-group means/medians, disparity = max − min over groups,
and a random-categorization baseline. SAGED-style summaries (selection rates, impact ratio, max
Z-score, Dixon's Q) live here too, so every suite reports disparity the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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
    """max − min over groups (WorldBench's Disparity)."""
    values = pd.Series(group_values, dtype=float).dropna()
    return float(values.max() - values.min()) if len(values) else float("nan")


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
    """The largest |z| of a group's statistic against the mean and standard deviation of all groups."""
    values = pd.Series(stats, dtype=float).dropna()
    if len(values) < 2 or values.std(ddof=1) == 0:
        return 0.0
    return float(((values - values.mean()) / values.std(ddof=1)).abs().max())


def dixon_q(stats: Mapping[str, float] | pd.Series) -> float:
    """Dixon's Q of the most outlying group: gap to its nearest neighbour / range (0 with < 3 groups)."""
    values = np.sort(pd.Series(stats, dtype=float).dropna().to_numpy())
    if len(values) < 3 or values[-1] == values[0]:
        return 0.0
    spread = values[-1] - values[0]
    return float(max(values[1] - values[0], values[-1] - values[-2]) / spread)
