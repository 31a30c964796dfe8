"""The WorldBench report: CSVs and one self-contained HTML page."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from geomon.report import charts, world_map
from geomon.report.suite import leaderboard_table, verdict_section


def write_report(
    out_dir: Path, board: pd.DataFrame, results: dict[str, dict[str, Any]], columns: Sequence[str]
) -> Path:
    """Write leaderboard.csv, per-model tables and report.html (the leaderboard's headline ``columns``) into
    ``out_dir``; returns the HTML path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    board.to_csv(out_dir / "leaderboard.csv", index=False)
    sections = [
        "<h1>geomon — WorldBench</h1>",
        *verdict_section(out_dir, board, "WorldBench"),
        "<p>Absolute relative error |a−b|/max(a,b) against World Bank ground truth (mean of the latest three "
        "years); disparity = max − min of group mean errors, with 95 % bootstrap intervals (countries resampled "
        "within groups); baseline = the paper's: the same countries put in k = 7 (regions) or 4 (income groups) "
        "random groups, 10 seeded trials; <code>baseline_shuffled_labels</code> keeps the real group sizes. "
        "Failed requests and answers without a number are left out of every mean and counted.</p>",
        "<h2>Leaderboard</h2>",
        *leaderboard_table(board, columns),
    ]
    if results:
        disparities = {model: result["disparity"] for model, result in results.items()}
        sections += [
            "<h2>Models side by side</h2>",
            charts.png_html(charts.model_comparison_chart(disparities, "WorldBench — mean error per group")),
            _sample_note(results),
        ]
    for model, result in sorted(results.items()):
        model_dir = out_dir / model
        model_dir.mkdir(exist_ok=True)
        for name in ("disparity", "by_year", "citations", "countries", "excluded"):
            result[name].to_csv(model_dir / f"{name}.csv", index=False)
        group_png = charts.group_error_chart(result["disparity"], f"WorldBench — {model}")
        year_png = charts.error_by_year_chart(result["by_year"], f"Data year matched — {model}")
        countries = result["countries"]
        world, not_drawn = world_map.world_map_svg(
            {r.iso3: (r.country, r.error) for r in countries.dropna(subset=["error"]).itertuples()},
            f"WorldBench — {model}",
            "mean absolute relative error per country (all indicators)",
        )
        sections += [
            f"<h2>{html.escape(model)}</h2>",
            world,
            f"<p style='font-size:12px'>{len(countries.dropna(subset=['error']))} countries with a score"
            + (f"; not on the map's outlines: {html.escape(', '.join(not_drawn))}" if not_drawn else "")
            + ".</p>",
            charts.png_html(group_png),
            charts.png_html(year_png),
            result["by_year"].astype({"year": "Int64"}).pipe(charts.html_table, 3),
            f"<p>Left out of the scores: {len(result['excluded'])} answers "
            f"({charts.counts_text(result['excluded']['status'].value_counts().to_dict())}); "
            f"listed in {html.escape(model)}/excluded.csv.</p>",
        ]
    return charts.write_html(out_dir / "report.html", "geomon WorldBench", sections)


def _sample_note(results: dict[str, dict[str, Any]]) -> str:
    """Say when a disparity cannot be read as one: a sample with one country in a group makes that group's
    interval a single point, and one country per group makes the disparity the spread of single countries,
    which the random baseline (the same countries, regrouped) equals by construction."""
    countries = next(iter(results.values()))["countries"]
    notes = []
    for cat in ("region", "income_group"):
        sizes = countries.groupby(cat)["iso3"].nunique()
        if len(sizes) and sizes.max() == 1:
            notes.append(
                f"every {cat.replace('_', ' ')} has one country in this sample: its disparity is the spread of "
                "single countries, and the random baseline equals it by construction"
            )
        elif len(sizes) and sizes.min() == 1:
            singles = ", ".join(html.escape(str(g)) for g in sizes[sizes == 1].index)
            notes.append(f"one country only (its interval is that country's value alone): {singles}")
    return f"<p style='font-size:12px'>Note: {'; '.join(notes)}.</p>" if notes else ""
