"""The Gapminder report: CSVs and one self-contained HTML page."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pandas as pd

from geomon.report import charts


def write_report(out_dir: Path, board: pd.DataFrame, results: dict[str, dict[str, Any]]) -> Path:
    """leaderboard.csv, per-model breakdowns and report.html in ``out_dir``; returns the HTML path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    board.to_csv(out_dir / "leaderboard.csv", index=False)
    fmt = {"float_format": lambda v: f"{v:.2f}", "index": False}
    sections = [
        "<h1>geomon — Gapminder AI worldview</h1>",
        "<p>Correct rate = per question, correct ÷ (answers − indecisive) × 100, averaged over questions "
        "(Gapminder's formula), with a 95 % bootstrap interval over questions. Answers naming exactly one "
        "option are pre-graded; the rest are graded by the jury (majority of the judges; no majority or too "
        "few readable verdicts = indecisive). Failed requests are excluded and counted.</p>",
        board.to_html(**fmt),
    ]
    for model, result in sorted(results.items()):
        model_dir = out_dir / model
        model_dir.mkdir(exist_ok=True)
        for name in ("by_language", "by_family", "by_topic", "reasons"):
            result[name].to_csv(model_dir / f"{name}.csv", index=False)
        pairs = result["agreement"]["pairs"]
        sections += [
            f"<h2>{html.escape(model)}</h2>",
            f"<p>English − Chinese: {html.escape(result['language_gap_note'] or 'see the leaderboard')}</p>",
            "<h3>By prompt family</h3>",
            result["by_family"].to_html(**fmt),
            "<h3>How answers were graded</h3>",
            result["reasons"].to_html(**fmt),
            "<h3>Judge agreement</h3>",
            pairs.to_html(**fmt) if len(pairs) else "<p>one judge or no jury items</p>",
        ]
    return charts.write_html(out_dir / "report.html", "geomon Gapminder", sections)
