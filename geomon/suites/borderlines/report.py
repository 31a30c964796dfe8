"""The BorderLines report: CSVs, the table-version comparison and one self-contained HTML page."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from geomon.report import charts
from geomon.report.suite import verdict_section

COLUMNS = [
    "revision",
    "model",
    "persona",
    "territories",
    "kb_cs",
    "con_cs",
    "non_cs",
    "delta_cs_unnormalized",
    "delta_cs",
    "cst_cs_all",
    "cst_cs_unknown",
    "response_countries_mean",
]


SCORES = ("kb_cs", "con_cs", "non_cs", "delta_cs", "cst_cs_all", "cst_cs_unknown")


def score_text(row: pd.Series, score: str) -> str:
    """A score as "value [low, high]", or, where it or its interval cannot be computed, why not (a score
    without the territories it needs, Δ CS with Non CS = 0, an interval over a single territory)."""
    value = row.get(score)
    territories = row.get(f"{score}_territories")
    if value is None or pd.isna(value):
        return "not computed: no territory in this sample has the answers it needs"
    if score == "delta_cs" and not math.isfinite(float(value)):
        return f"undefined: Non CS is 0 (Con − Non = {row.get('delta_cs_unnormalized', float('nan')):.1f})"
    low, high = row.get(f"{score}_ci_low"), row.get(f"{score}_ci_high")
    if low is None or pd.isna(low) or pd.isna(high):
        note = row.get(f"{score}_ci_note")
        why = note if isinstance(note, str) and note else "no interval"
        return f"{value:.1f} (no interval: {why})"
    text = f"{value:.1f} [{low:.1f}, {high:.1f}]"
    if territories is not None and pd.notna(territories) and int(territories) < 2:
        text += " (one territory: the interval is that territory's value)"
    return text


def _with_ci(board: pd.DataFrame) -> pd.DataFrame:
    """Scores as "value [low, high]" where a bootstrap interval exists, and why not where it does not."""
    out = board[[c for c in COLUMNS if c in board]].copy()
    for score in SCORES:
        if score in board:
            out[score] = [score_text(row, score) for _, row in board.iterrows()]
    return out


def _corrected(board: pd.DataFrame) -> list[Any]:
    """The published rows whose reader corrected a figure (its note after the published mark), to say so."""
    if "sample_note" not in board or "origin" not in board:
        return []
    published = board[(board["origin"] == "published") & board["sample_note"].fillna("").str.contains("; ")]
    notes = published["sample_note"].str.split("; ", n=1).str[1]
    return list(published.assign(note=notes)[["model", "note"]].itertuples(index=False))


def _charts(board: pd.DataFrame, results: dict[str, dict[str, Any]]) -> list[str]:
    """Concurrence per model and persona, the own-language preference per language, the table versions."""
    sections = []
    for revision, part in board.groupby("revision"):
        long = pd.concat(
            [
                part.assign(
                    score=label,
                    series=part["model"] + " · " + part["persona"],
                    value=part[score],
                    value_ci_low=part.get(f"{score}_ci_low"),
                    value_ci_high=part.get(f"{score}_ci_high"),
                )
                for score, label in (("kb_cs", "KB"), ("con_cs", "Con"), ("non_cs", "Non"), ("cst_cs_all", "Cst"))
            ]
        )
        sections.append(
            charts.png_html(
                charts.interval_bars(
                    long, "value", "series", "score", f"Concurrence scores — {revision}", "% (95 % interval)"
                )
            )
        )
    languages = [
        result["by_language"].assign(model=str(key).split("|")[0])
        for key, result in sorted(results.items())
        if str(key).split("|")[1] == board["revision"].max() and "own_claimant_rate" in result["by_language"]
    ]
    if languages:
        own = pd.concat(languages)
        own = own[own["lang"] != "en"]
        sections += [
            "<h3>Own-language preference (vanilla): answers naming the claimant whose language the query is in</h3>",
            charts.png_html(
                charts.interval_bars(
                    own, "own_claimant_rate", "model", "lang", f"{board['revision'].max()}", "% of answers"
                )
            ),
        ]
    if board["revision"].nunique() > 1:
        vanilla = board[board["persona"] == "vanilla"]
        sections += [
            "<h3>Table versions (vanilla): KB CS per model</h3>",
            charts.png_html(charts.interval_bars(vanilla, "kb_cs", "revision", "model", "KB CS by table version", "%")),
        ]
    return sections


def write_report(
    out_dir: Path, board: pd.DataFrame, changes: list[dict[str, Any]], results: dict[str, dict[str, Any]]
) -> Path:
    """leaderboard.csv, table_changes.json, per model and revision by_region/by_language CSVs, report.html."""
    out_dir.mkdir(parents=True, exist_ok=True)
    board.to_csv(out_dir / "leaderboard.csv", index=False)
    (out_dir / "table_changes.json").write_text(json.dumps(changes, indent=2, ensure_ascii=False))
    sections = [
        "<h1>geomon — BorderLines</h1>",
        *verdict_section(out_dir, board, "BorderLines"),
        "<p>Concurrence scores in percent (Li et al., Table 4): KB = English answer vs the table's controller; "
        "Con / Non = answers in the controller's / the other claimants' languages vs the controller; "
        "Δ = (Con − Non) / Non; Cst = agreeing pairs among the claimant-language answers. "
        "Brackets: 95 % bootstrap intervals over territories. Rows whose revision is <em>release scores</em> are "
        "the release's published scores (its scores_for_all.csv), beside geomon's: aggregates, so without intervals "
        "— the per-territory answers behind them are not public; not all of them are the paper's tables (its "
        "BLOOM and BLOOMZ rows come from an older table of territories; docs/suites/borderlines.md).</p>",
        *[f"<p>{html.escape(str(row.model))}: {html.escape(str(row.note))}.</p>" for row in _corrected(board)],
        _with_ci(board).pipe(charts.html_table, 2),
        *(_charts(board, results) if len(board) else []),
        "<h2>Table versions</h2>",
    ]
    for change in changes:
        moved = pd.DataFrame(change["controller_changed"])
        sections.append(
            f"<p>{html.escape(change['from'])} → {html.escape(change['to'])}: {change['in_both']} territories in both, "
            f"{len(change['added'])} added, {len(change['removed'])} removed, "
            f"{len(change['controller_changed'])} changed controller.</p>"
        )
        if not moved.empty:
            sections.append(charts.html_table(moved))
    for key, result in sorted(results.items()):
        model, revision = str(key).split("|")
        folder = out_dir / revision / model
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("by_persona", "by_region", "by_language", "excluded"):
            result[name].to_csv(folder / f"{name}.csv", index=False)
        excluded = result["excluded"]["reason"].value_counts().to_dict()
        sections += [
            f"<h2>{html.escape(model)} — {html.escape(revision)}</h2>",
            "<h3>Per region</h3>",
            charts.html_table(
                result["by_region"][["persona", "region", "territories", "kb_cs", "con_cs", "non_cs", "delta_cs"]], 1
            ),
            "<h3>Per query language (vanilla persona)</h3>",
            result["by_language"].pipe(charts.html_table, 1),
            f"<p>Left out of the scores (failed or no claimant read): {charts.counts_text(excluded)}; "
            "listed in excluded.csv.</p>",
        ]
    return charts.write_html(out_dir / "report.html", "geomon BorderLines", sections)
