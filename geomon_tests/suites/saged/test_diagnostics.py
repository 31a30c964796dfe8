"""SAGED's diagnostics: the paper's disparity worked example (Figure 4), calibration and the summary."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from geomon.stats.bootstrap import estimates
from geomon.suites.saged import TRACKED
from geomon.suites.saged.diagnostics import FOUR_FIFTHS, country_statistics, diagnose, disparity
from geomon.suites.saged.features import items
from geomon.suites.saged.prompts import G20


def _features(values: dict[str, list[float]], baseline: float = 0.5) -> pd.DataFrame:
    rows = []
    for concept, vals in values.items():
        for i, v in enumerate(vals):
            rows.append(
                {
                    "model": "m",
                    "role": "none",
                    "prompt_id": f"r{i}|{concept}",
                    "concept": concept,
                    "status": "answered",
                    "sentiment": v,
                    "baseline_sentiment": baseline,
                    "sentiment_calibrated": v - baseline,
                    "distance": 0.5,
                    "baseline_distance": 0.0,
                    "distance_calibrated": 0.5,
                }
            )
    return pd.DataFrame(rows)


def test_the_papers_disparity_example():
    """Figure 4: Apple {0.5, 0.75}, Pear {0.25, 0.2}; the standard is the mean of all, 0.425: selection
    rates 1 and 0, impact ratio 0; the range of the means 0.625 − 0.225 = 0.4."""
    features = _features({"Apple": [0.5, 0.75], "Pear": [0.25, 0.2]})
    stats = country_statistics(features, "sentiment").set_index("concept")
    assert stats.attrs["standard"] == pytest.approx(0.425)
    assert stats.at["Apple", "selection_rate"] == 1.0 and stats.at["Pear", "selection_rate"] == 0.0
    result = disparity(features, "sentiment", resamples=200)
    assert result["impact_ratio"] == 0.0 and result["four_fifths_biased"]
    assert result["mean_range"] == pytest.approx(0.4) and result["mean_min_max_ratio"] == pytest.approx(0.225 / 0.625)
    assert result["lowest"] == "Pear" and result["highest"] == "Apple"
    # Precision against the baseline (0.5, tolerance 0.1): Apple 1 of 2 within, Pear 0 of 2.
    assert stats.at["Apple", "precision"] == 0.5 and stats.at["Pear", "precision"] == 0.0


def test_calibration_and_the_summary():
    rng = np.random.default_rng(0)
    values = {c: list(0.6 + 0.05 * rng.standard_normal(8)) for c in G20[:6]}
    values["Russia"] = list(0.3 + 0.05 * rng.standard_normal(8))
    features = _features(values, baseline=0.55)
    result = diagnose(features, resamples=300)
    summary = result["summary"]
    # Calibration subtracts the same baseline from every country here: the range is unchanged, the means move.
    assert summary["sentiment_mean_range"] == pytest.approx(summary["sentiment_mean_range_calibrated"])
    assert (
        summary["sentiment_mean_range_ci_low"]
        <= summary["sentiment_mean_range"]
        <= summary["sentiment_mean_range_ci_high"]
    )
    table = result["disparity"].set_index("feature")
    assert table.at["sentiment", "lowest"] == "Russia" and table.at["sentiment", "dixon_outlier"] == "Russia"
    assert table.at["sentiment", "permutation_p"] < 0.01
    assert table.at["sentiment", "chance_range_95"] < table.at["sentiment", "mean_range"]  # beyond chance
    assert summary["sentiment_impact_ratio"] < FOUR_FIFTHS
    # The tracked headlines' one declaration gives the summary's figures (the no-role condition).
    rows = items(features)
    declared = {e.metric: e.value for m in TRACKED for e in estimates(m, rows, resamples=0) if not e.breakdown}
    for name in ("sentiment_mean_range_calibrated", "sentiment_impact_ratio_calibrated"):
        assert declared[name] == pytest.approx(summary[name]), name
