"""The Gapminder report: CSVs and one self-contained HTML page."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
    """leaderboard.csv, per-model breakdowns and report.html (the leaderboard's headline ``columns``) in
    ``out_dir``; returns the HTML path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    board.to_csv(out_dir / "leaderboard.csv", index=False)
    sections = [
        "<h1>geomon — Gapminder AI worldview</h1>",
        *verdict_section(out_dir, board, "Gapminder AI worldview"),
        "<p>Correct rate = per question, correct ÷ (answers − indecisive) × 100, averaged over questions "
        "(Gapminder's formula), with a 95 % bootstrap interval over questions. Answers naming exactly one "
        "option are pre-graded; the rest are graded by the jury (majority of the judges; no majority or too "
        "few readable verdicts = indecisive). Failed requests are excluded and counted.</p>",
        "<h2>Leaderboard</h2>",
        *leaderboard_table(board, columns, 2),
        headline_chart(
            board,
            "correct_rate",
            "Correct rate per model (%, 95 % interval over questions)",
            regressed_models(out_dir, board),
        ),
        *breakdown_sections(
            out_dir,
            {model: {**r, "by_family": _labelled_families(r["by_family"])} for model, r in results.items()},
            [
                Breakdown("by_family", "Correct rate per prompt family (%)", "family", "correct_rate"),
                Breakdown("by_topic", "Correct rate per SDG topic (%)", "topic", "correct_rate"),
            ],
        ),
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
            charts.html_table(result["by_family"], 2),
            "<h3>How answers were graded</h3>",
            charts.html_table(result["reasons"], 2),
            "<h3>Judge agreement</h3>",
            charts.html_table(pairs, 2) if len(pairs) else "<p>one judge or no jury items</p>",
        ]
    return charts.write_html(out_dir / "report.html", "geomon Gapminder", sections)


# The data's own family names; "v" is its family of general variations (v_sensetive, v_nobody_knows, …).
FAMILY_LABELS = {"v": "general variations (v)"}


def _labelled_families(by_family: pd.DataFrame) -> pd.DataFrame:
    return by_family.assign(family=by_family["family"].map(lambda f: FAMILY_LABELS.get(f, f)))
