"""The QUENCH report: CSVs (geomon's aggregated scores in the paper's layout among them) and one HTML page
with the Indic gaps, the CoT effect, themes and the paper's own table beside geomon's."""

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
    out_dir: Path,
    board: pd.DataFrame,
    results: dict[str, dict[str, Any]],
    columns: Sequence[str],
    reference: pd.DataFrame | None = None,
    reference_gaps: pd.DataFrame | None = None,
) -> Path:
    """leaderboard.csv, per-model CSVs and report.html (the leaderboard's headline ``columns``) in ``out_dir``;
    returns the HTML path. ``reference``:
    the paper's aggregated judge scores and ``reference_gaps`` what they can show, as the suite reads them."""
    out_dir.mkdir(parents=True, exist_ok=True)
    board.to_csv(out_dir / "leaderboard.csv", index=False)
    layout = pd.concat([r["paper_layout"] for r in results.values()], ignore_index=True) if results else pd.DataFrame()
    layout.to_csv(out_dir / "aggregated_scores.csv", index=False)  # the paper's file layout, geomon's numbers
    sections = [
        "<h1>geomon — QUENCH</h1>",
        *verdict_section(out_dir, board, "QUENCH"),
        "<p>Entity correctness (0-1) and rationale scores (1-5) are the jury's: each judge scores every item "
        "with the paper's Appendix C prompts and an item's score is the judges' mean; a subset's score is the "
        "mean over its entities (the paper's aggregation). Gaps are Indic − non-Indic with 95 % intervals "
        "that resample questions within each subset; <em>detectable</em> is the smallest gap this sample "
        "could detect (80 % power, one-sided at α = 0.05: the minimum detectable effect the verdicts state, at "
        "the whole 5 %). Unanswered replies (no entity in the requested format) and failed requests are "
        "excluded and counted. Similarity is the cosine of all-MiniLM-L6-v2 embeddings "
        "(not the paper's BERTScore). Rows with origin <em>published</em> are the paper's aggregated scores "
        "(no CoT, all entities) beside geomon's: aggregates, so without intervals — its per-item judgements are "
        "not public.</p>",
        "<h2>Leaderboard</h2>",
        *leaderboard_table(board, columns),
        headline_chart(
            board,
            "correct_answer_score",
            "Entity correctness by the jury per model (0-1, no CoT)",
            regressed_models(out_dir, board),
        ),
        *breakdown_sections(
            out_dir,
            {model: {"gaps": _labelled_gaps(r["gaps"])} for model, r in results.items()},
            [Breakdown("gaps", "Indic − non-Indic per score and mode (95 % interval over questions)", "what", "gap")],
        ),
        "<h2>geomon's figures in the paper's layout</h2>",
        charts.html_table(layout, 3),
    ]
    if reference is not None:
        sections += [
            "<h2>The paper's aggregated judge scores (reference)</h2>",
            charts.html_table(reference, 3),
        ]
    if reference_gaps is not None:
        sections += [
            "<h3>What the paper's table can show: Indic − non-Indic correctness (normal approximation)</h3>",
            charts.html_table(reference_gaps, 3),
        ]
    for model, result in sorted(results.items()):
        model_dir = out_dir / model
        model_dir.mkdir(exist_ok=True)
        for name in ("aggregated", "gaps", "cot", "themes", "unanswered"):
            result[name].to_csv(model_dir / f"{name}.csv", index=False)
        gaps = result["gaps"][
            [
                "mode",
                "score",
                "indic",
                "non_indic",
                "gap",
                "ci_low",
                "ci_high",
                "detectable",
                "detectable_planned",
                "indic_entities",
                "indic_questions",
                "non_indic_entities",
                "non_indic_questions",
            ]
        ]
        sections += [
            f"<h2>{html.escape(model)}</h2>",
            "<h3>Indic − non-Indic</h3>",
            charts.html_table(gaps, 3),
            "<h3>CoT − no CoT (paired on the same entities)</h3>",
            charts.html_table(result["cot"], 3) if len(result["cot"]) else "<p>no entity scored in both modes</p>",
            "<h3>By theme (no CoT)</h3>",
            charts.html_table(result["themes"][result["themes"]["mode"] == "normal"].head(15), 3),
        ]
    return charts.write_html(out_dir / "report.html", "geomon QUENCH", sections)


def _labelled_gaps(gaps: pd.DataFrame) -> pd.DataFrame:
    """The gaps with one label per row (score · mode), for a chart of every model side by side."""
    return gaps.assign(what=gaps["score"] + " · " + gaps["mode"])
