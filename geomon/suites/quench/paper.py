"""QUENCH's published results: the paper's aggregated scores table (the release's ``Results/``), read, what it can
show (its Indic gaps and the smallest it could detect), and its rows on the leaderboard."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geomon.suites.quench.diagnostics import detectable
from geomon.suites.quench.scoring import PAPER_SCORES

PAPER_TABLE = "Aggregated Scores  - aggregated_scores.csv"  # in the release's Results/ (reference/quench/)


def read_paper_table(path: str | Path) -> pd.DataFrame:
    """The paper's aggregated judge scores (``Results/Aggregated Scores - aggregated_scores.csv``) as
    model, mode, subset and the three scores, plus the GEval columns of Tables 4, 7 and 8 (× 100; a
    rationale's 1-5 mean ÷ 5 × 100)."""
    table = pd.read_csv(path)
    missing = [c for c in ("key_name", *PAPER_SCORES) if c not in table.columns]
    if missing:
        raise ValueError(f"QUENCH results table {path}: no column(s) {missing}")
    parts = table["key_name"].str.extract(r"^(?P<model>.+)_(?P<mode>normal|cot)_Aggregated_(?P<subset>.+)$")
    if parts.isna().any().any():
        bad = table.loc[parts.isna().any(axis=1), "key_name"].tolist()
        raise ValueError(f"QUENCH results table {path}: key_name(s) not <model>_<mode>_Aggregated_<subset>: {bad[:3]}")
    out = pd.concat([parts, table[list(PAPER_SCORES)]], axis=1)
    out["geval_answer"] = out["correct_answer_score"] * 100
    out["geval_pred_rationale"] = out["pred_rationale_score"] / 5 * 100
    out["geval_gold_rationale"] = out["gold_rationale_score"] / 5 * 100
    return out


def paper_gaps(paper: pd.DataFrame, indic_entities: int = 80, other_entities: int = 379) -> pd.DataFrame:
    """What the paper's own table can show: Indic − non-Indic entity correctness per model and mode with a
    normal-approximation 95 % interval and the smallest detectable gap (``detectable``). The paper publishes
    no per-item scores, so the standard error is the bound for a 0-1 score with that mean, p(1 − p) / n,
    entities as units (the release's 80 / 379) — an approximation, named as such."""
    wide = paper.pivot_table(index=["model", "mode"], columns="subset", values="correct_answer_score")
    p_i, p_n = wide["Indic"], wide["Non-Indic"]
    se = np.sqrt(p_i * (1 - p_i) / indic_entities + p_n * (1 - p_n) / other_entities)
    out = pd.DataFrame({"indic": p_i, "non_indic": p_n, "gap": p_i - p_n, "se": se})
    out["ci_low"], out["ci_high"] = out["gap"] - 1.959964 * se, out["gap"] + 1.959964 * se
    out["detectable"] = [detectable(v) for v in se]
    return out.reset_index()


def published_rows(settings: Any) -> pd.DataFrame | None:
    """The paper's aggregated scores (no CoT, all entities) per model, and its Indic − non-Indic gap in
    entity correctness, as leaderboard rows."""
    folder = settings.quench.paper_results
    path = folder / PAPER_TABLE if folder is not None else None
    if path is None or not path.is_file():
        return None
    paper = read_paper_table(path)
    normal = paper[paper["mode"] == "normal"].set_index(["model", "subset"])
    rows = []
    for model in sorted({m for m, _ in normal.index}):
        row = {"model": model, **{score: normal.loc[(model, "All"), score] for score in PAPER_SCORES}}
        row["indic_gap_correct_answer_score"] = (
            normal.loc[(model, "Indic"), "correct_answer_score"]
            - normal.loc[(model, "Non-Indic"), "correct_answer_score"]
        )
        rows.append(row)
    return pd.DataFrame(rows)
