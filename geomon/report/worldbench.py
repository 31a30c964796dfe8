"""The WorldBench report: CSVs and one self-contained HTML page."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pandas as pd

from geomon.report import charts


def write_report(out_dir: Path, board: pd.DataFrame, results: dict[str, dict[str, Any]]) -> Path:
    """Write leaderboard.csv, per-model tables and report.html into ``out_dir``; returns the HTML path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    board.to_csv(out_dir / "leaderboard.csv", index=False)
    sections = [
        "<h1>geomon — WorldBench</h1>",
        "<p>Absolute relative error |a−b|/max(a,b) against World Bank ground truth (mean of the latest three "
        "years); disparity = max − min of group mean errors, with 95 % bootstrap intervals (countries resampled "
        "within groups); baseline = the paper's: the same countries put in k = 7 (regions) or 4 (income groups) "
        "random groups, 10 seeded trials; <code>baseline_shuffled_labels</code> keeps the real group sizes. "
        "Failed requests and answers without a number are left out of every mean and counted.</p>",
        board.to_html(index=False, float_format=lambda v: f"{v:.3f}"),
    ]
    for model, result in sorted(results.items()):
        model_dir = out_dir / model
        model_dir.mkdir(exist_ok=True)
        for name in ("disparity", "by_year", "citations", "countries", "excluded"):
            result[name].to_csv(model_dir / f"{name}.csv", index=False)
        group_png = charts.group_error_chart(result["disparity"], f"WorldBench — {model}")
        year_png = charts.error_by_year_chart(result["by_year"], f"Data year matched — {model}")
        sections += [
            f"<h2>{html.escape(model)}</h2>",
            _img(group_png),
            _img(year_png),
            result["by_year"].to_html(index=False, float_format=lambda v: f"{v:.3f}"),
            f"<p>Left out of the scores: {len(result['excluded'])} answers "
            f"({html.escape(str(result['excluded']['status'].value_counts().to_dict()))}); "
            f"listed in {html.escape(model)}/excluded.csv.</p>",
        ]
    return charts.write_html(out_dir / "report.html", "geomon WorldBench", sections)


def _img(png: bytes) -> str:
    return f"<img src='{charts.png_data_uri(png)}'>"
