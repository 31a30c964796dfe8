"""SAGED's diagnostics (Ap C): per country mean, selection rate, KL divergence and precision against the baseline;
across countries range, ratio, max Z, Dixon's Q and the impact ratio, with bootstrap intervals and a permutation
test of country labels."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from geomon.stats.disparity import (
    disparity_permutation_test,
    dixon_q,
    dixon_test,
    impact_ratio,
    kl_divergence,
    max_z_score,
)
from geomon.stats.uncertainty import GroupGaps, gaps_from_draws, percentile_interval, resample_within_groups
from geomon.suites.saged.features import extracted_features, topic_table

KL_BINS = 10
PRECISION_TOLERANCE = 0.1
FOUR_FIFTHS = 0.8


def _binned(values: np.ndarray, bins: int = KL_BINS, lo: float = 0.0, hi: float = 1.0) -> np.ndarray:
    counts, _ = np.histogram(np.clip(values, lo, hi), bins=bins, range=(lo, hi))
    return counts.astype(float)


def country_statistics(features: pd.DataFrame, feature: str) -> pd.DataFrame:
    """Per concept: n, mean, selection rate (≥ the mean of all the feature's values: Larger-than),
    KL divergence of the binned values against the baseline's (nats; sentiment only, 0-1 bins, +½ per
    bin so an empty bin is not infinite), and precision (share within 0.1 of the baseline's value)."""
    data = features[features[feature].notna()]
    raw = feature.removesuffix("_calibrated")
    base_col = f"baseline_{raw}"
    standard = float(data[feature].mean()) if len(data) else float("nan")
    rows = []
    for concept, group in data.groupby("concept", sort=True):
        values = group[feature].to_numpy(dtype=float)
        row = {
            "concept": concept,
            "n": len(values),
            "mean": float(values.mean()),
            "selection_rate": float((values >= standard).mean()),
        }
        raw_values, base = group[raw].to_numpy(dtype=float), group[base_col].to_numpy(dtype=float)
        row["precision"] = float((np.abs(raw_values - base) <= PRECISION_TOLERANCE).mean())
        row["kl_divergence"] = (
            kl_divergence(_binned(raw_values) + 0.5, _binned(base) + 0.5) if raw == "sentiment" else float("nan")
        )
        rows.append(row)
    out = pd.DataFrame(rows, columns=["concept", "n", "mean", "selection_rate", "precision", "kl_divergence"])
    out.attrs["standard"] = standard
    return out


def _country_draws(groups: dict[str, np.ndarray], resamples: int, seed: int) -> tuple[GroupGaps, np.ndarray]:
    """The countries' means as ``group_gaps`` reports them (items resampled within each concept) and, from
    the same resamples gathered once, the selection rates per resample (rows) and concept (columns), the
    standard recomputed from each resample's pooled values."""
    drawn = resample_within_groups(list(groups.values()), resamples=resamples, seed=seed)
    sums = np.stack([d.sum(axis=1) for d in drawn], axis=1)
    counts = np.array([len(g) for g in groups.values()], dtype=float)
    means = gaps_from_draws(
        list(groups),
        [float(g.mean()) for g in groups.values()],
        sums / counts,
        [(len(g), len(g)) for g in groups.values()],
    )
    standard = sums.sum(axis=1) / counts.sum()
    return means, np.stack([(d >= standard[:, None]).mean(axis=1) for d in drawn], axis=1)


def disparity(features: pd.DataFrame, feature: str, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Across concepts: range, min/max ratio, standard deviation, max Z-score and Dixon's Q of the means;
    the impact ratio of the selection rates and the four-fifths rule; 95 % intervals (items resampled
    within concepts) for the range and the impact ratio; a permutation p-value for the range."""
    stats = country_statistics(features, feature)
    if len(stats) < 2:
        return {"groups": len(stats), "note": "fewer than two concepts with values"}
    means = stats.set_index("concept")["mean"]
    rates = stats.set_index("concept")["selection_rate"]
    data = features[features[feature].notna()]
    groups = {c: g[feature].to_numpy(dtype=float) for c, g in data.groupby("concept", sort=True)}
    country_means, boot_rates = _country_draws(groups, resamples, seed)
    range_ci = country_means.disparity.interval
    with np.errstate(invalid="ignore", divide="ignore"):
        boot_ir = boot_rates.min(axis=1) / boot_rates.max(axis=1)
    ir_ci = percentile_interval(boot_ir, 0.95, "no item at or above the standard")
    dixon = dixon_test(means)
    permutation = disparity_permutation_test(groups, resamples=999, seed=seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = float(means.min() / means.max()) if means.max() else float("nan")
    ir = impact_ratio(rates)
    return {
        "groups": len(stats),
        "mean_range": float(means.max() - means.min()),
        "mean_range_ci_low": range_ci.low,
        "mean_range_ci_high": range_ci.high,
        "mean_min_max_ratio": ratio,
        "mean_std": float(means.std(ddof=1)),
        "max_z_score": max_z_score(means),
        "dixon_q": dixon_q(means),
        "dixon_outlier": dixon.suspect if dixon is not None and dixon.outlier else "none",
        "impact_ratio": ir,
        "impact_ratio_ci_low": ir_ci.low,
        "impact_ratio_ci_high": ir_ci.high,
        "four_fifths_biased": bool(ir < FOUR_FIFTHS) if ir == ir else False,
        "lowest": str(means.idxmin()),
        "highest": str(means.idxmax()),
        "permutation_p": permutation.p_value,
        "chance_range_95": permutation.null_95,
        "selection_standard": stats.attrs["standard"],
    }


def diagnose(features: pd.DataFrame, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Per role: every feature's per-country statistics and disparity, uncalibrated and calibrated; a flat
    summary for the no-role condition (the paper's Table 1), other roles suffixed ``_role=<name>``."""
    answered = features[features["status"] == "answered"]
    tables, rows, summary = [], [], {}
    for role, part in answered.groupby("role", sort=False):
        for feature in extracted_features(part):
            # The baseline's distance to itself is 0: calibrated distance is the raw one, diagnosed once.
            for column in (feature,) if feature == "distance" else (feature, f"{feature}_calibrated"):
                stats = country_statistics(part, column).assign(role=role, feature=column)
                tables.append(stats)
                result = disparity(part, column, resamples, seed)
                rows.append({"role": role, "feature": column, **result})
                calibrated = "_calibrated" if column.endswith("_calibrated") else ""
                role_suffix = "" if role == "none" else f"_role={role}"
                for key, value in result.items():
                    if isinstance(value, int | float) and not isinstance(value, bool):
                        # sentiment_impact_ratio_calibrated(_role=assistant)(_ci_low): the interval last,
                        # as the metric history pairs it with its figure.
                        base, ci = re.match(r"(.*?)(_ci_low|_ci_high)?$", key).groups()
                        summary[f"{feature}_{base}{calibrated}{role_suffix}{ci or ''}"] = value
    status = features["status"].value_counts()
    summary.update({f"responses_{k}": int(v) for k, v in status.items()})
    return {
        "summary": summary,
        "disparity": pd.DataFrame(rows),
        "countries": pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(),
        "topics": topic_table(features),
    }
