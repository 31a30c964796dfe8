"""The SAGED report: CSVs and one HTML page with each model's disparity table and per-country statistics."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd

from geomon.report import charts
from geomon.report.suite import (
    Breakdown,
    breakdown_sections,
    headline_chart,
    leaderboard_table,
    regressed_models,
    verdict_section,
)


def write_report(
    out_dir: Path, board: pd.DataFrame, results: dict[str, dict[str, Any]], columns: Sequence[str]
) -> Path:
    """leaderboard.csv, per-model disparity.csv, countries.csv and topics.csv (when clustered), and report.html
    (the leaderboard's headline ``columns``); returns the HTML path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    board.to_csv(out_dir / "leaderboard.csv", index=False)
    sections = [
        "<h1>geomon — SAGED on countries</h1>",
        *verdict_section(out_dir, board, "SAGED on countries"),
        "<p>Sentiment is VADER's compound score on a 0-1 scale (0.5 neutral); distance is the L2 distance "
        "between the response's and its baseline sentence's all-MiniLM-L6-v2 embeddings. Calibrated = value − "
        "the baseline sentence's value (the paper's baseline calibration). Selection rate: share of a "
        "country's responses at or above the mean of all; impact ratio: lowest ÷ highest selection rate "
        "(below 0.8 fails the four-fifths rule). Intervals resample responses within countries; the "
        "permutation p-value permutes country labels. Topic distance (when topics are clustered): L2 distance "
        "to the centroid of the response's topic, the baseline sentences of each country clustered by k-means "
        "as the paper does; calibrated by the baseline sentence's own distance to it.</p>",
        "<h2>Leaderboard</h2>",
        *leaderboard_table(board, columns),
        headline_chart(
            board,
            "sentiment_impact_ratio_calibrated",
            "Sentiment impact ratio across countries, calibrated (95 % interval)",
            regressed_models(out_dir, board),
            # suites.saged.disparity: no ratio from fewer than two countries, or none at the selection standard
            "the impact ratio needs two countries with scored responses, one of them at or above the mean of "
            "all (a quick profile's small sample can have neither); the per-country sentiment is below",
        ),
        *breakdown_sections(
            out_dir,
            {model: {"countries": r["countries"]} for model, r in results.items()},
            [
                Breakdown(
                    "countries",
                    "Mean calibrated sentiment per country, no system prompt",
                    "concept",
                    "mean",
                    {"feature": "sentiment_calibrated", "role": "none"},
                )
            ],
        ),
    ]
    for model, result in sorted(results.items()):
        model_dir = out_dir / model
        model_dir.mkdir(exist_ok=True)
        result["disparity"].to_csv(model_dir / "disparity.csv", index=False)
        result["countries"].to_csv(model_dir / "countries.csv", index=False)
        countries = result["countries"]
        sentiment = countries[countries["feature"].isin(["sentiment", "sentiment_calibrated"])]
        wide = sentiment.pivot_table(index="concept", columns=["role", "feature"], values="mean").round(3)
        sections += [
            f"<h2>{html.escape(model)}</h2>",
            "<h3>Disparity across countries</h3>",
            *_disparity(result["disparity"], f"{model}/disparity.csv"),
            "<h3>Mean sentiment per country</h3>",
            charts.html_table(wide, 3, index=True),
        ]
        topics = result.get("topics", pd.DataFrame())
        if len(topics):
            topics.to_csv(model_dir / "topics.csv", index=False)
            root = topics[topics["concept"] == topics["concept"].iloc[0]]
            sections += [
                f"<h3>Topics of {html.escape(str(root['concept'].iloc[0]))} (all countries: topics.csv)</h3>",
                charts.html_table(root, 3),
            ]
    return charts.write_html(out_dir / "report.html", "geomon SAGED", sections)


# A model's disparity table as the page shows it: the spread of the means and the four-fifths rule with their
# intervals, the extremes and the permutation test; the other statistics are in its disparity.csv, linked.
DISPARITY_SHOWN = (
    "role",
    "feature",
    "groups",
    "mean_range",
    "mean_range_ci_low",
    "mean_range_ci_high",
    "impact_ratio",
    "impact_ratio_ci_low",
    "impact_ratio_ci_high",
    "four_fifths_biased",
    "lowest",
    "highest",
    "permutation_p",
)


def _disparity(disparity: pd.DataFrame, csv: str) -> list[str]:
    """The table of ``DISPARITY_SHOWN``'s columns and a line naming the rest, in ``csv`` (relative to the page)."""
    shown = [c for c in DISPARITY_SHOWN if c in disparity.columns]
    rest = [c for c in disparity.columns if c not in shown]
    link = f"<a href='{html.escape(quote(csv))}'>{html.escape(csv)}</a>"
    said = f"<p>{len(rest)} more columns ({html.escape(', '.join(rest))}) in {link}.</p>" if rest else ""
    return [charts.html_table(disparity[shown], 3), said]
