"""The BorderLines report: CSVs, the table-version comparison and one self-contained HTML page."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pandas as pd

from geomon.report import charts

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


def _with_ci(board: pd.DataFrame) -> pd.DataFrame:
    """Scores as "value [low, high]" where a bootstrap interval exists."""
    out = board[[c for c in COLUMNS if c in board]].copy()
    for score in ("kb_cs", "con_cs", "non_cs", "delta_cs", "cst_cs_all", "cst_cs_unknown"):
        low, high = board.get(f"{score}_ci_low"), board.get(f"{score}_ci_high")
        if low is not None:
            out[score] = [
                f"{v:.1f} [{lo:.1f}, {hi:.1f}]" if pd.notna(lo) else f"{v:.1f}"
                for v, lo, hi in zip(board[score], low, high, strict=True)
            ]
    return out


def write_report(
    out_dir: Path, board: pd.DataFrame, changes: list[dict[str, Any]], results: dict[str, dict[str, Any]]
) -> Path:
    """leaderboard.csv, table_changes.json, per model and revision by_region/by_language CSVs, report.html."""
    out_dir.mkdir(parents=True, exist_ok=True)
    board.to_csv(out_dir / "leaderboard.csv", index=False)
    (out_dir / "table_changes.json").write_text(json.dumps(changes, indent=2, ensure_ascii=False))
    sections = [
        "<h1>geomon — BorderLines</h1>",
        "<p>Concurrence scores in percent (Li et al., Table 4): KB = English answer vs the table's controller; "
        "Con / Non = answers in the controller's / the other claimants' languages vs the controller; "
        "Δ = (Con − Non) / Non; Cst = agreeing pairs among the claimant-language answers. "
        "Brackets: 95 % bootstrap intervals over territories.</p>",
        _with_ci(board).to_html(index=False, float_format=lambda v: f"{v:.2f}"),
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
            sections.append(moved.to_html(index=False))
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
            result["by_region"][["persona", "region", "territories", "kb_cs", "con_cs", "non_cs", "delta_cs"]].to_html(
                index=False, float_format=lambda v: f"{v:.1f}"
            ),
            "<h3>Per query language (vanilla persona)</h3>",
            result["by_language"].to_html(index=False, float_format=lambda v: f"{v:.1f}"),
            f"<p>Left out of the scores (failed or no claimant read): {html.escape(str(excluded or 'none'))}; "
            "listed in excluded.csv.</p>",
        ]
    return charts.write_html(out_dir / "report.html", "geomon BorderLines", sections)
