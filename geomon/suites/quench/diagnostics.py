"""QUENCH's diagnostics, as the paper reports them: the Indic − non-Indic gap per score with intervals over
questions and the smallest gap a sample can detect (``detectable``), the CoT effect and themes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from geomon.stats.power import minimum_detectable_effect, planned_mde
from geomon.stats.uncertainty import Estimate, Interval, group_gaps
from geomon.suites.quench.prompts import MODES
from geomon.suites.quench.scoring import PAPER_SCORES, SCORES, aggregate, paper_layout

ALPHA, POWER = 0.05, 0.8  # a gap's ``detectable``: the one MDE (``stats.power``), one-sided at α 0.05, 80 % power


def detectable(se: float) -> float:
    """The smallest gap a sample whose gap has standard error ``se`` detects: ``power.minimum_detectable_effect``
    at ``ALPHA`` and ``POWER`` — the MDE every surface states (one-sided), here at the whole 5 %."""
    return minimum_detectable_effect(se, ALPHA, POWER)


def indic_gaps(scores: pd.DataFrame, resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Indic − non-Indic per model, mode and score, with a bootstrap interval that resamples questions
    within each subset (a question's entities move together), its standard error, the smallest gap this
    sample could detect (``detectable``) from that SE, and the same before any answer is seen
    (worst-case spread of a 0-1 score, questions as units)."""
    rows = []
    for (model, mode), frame in scores.groupby(["model", "mode"], sort=False):
        indic = frame["indic"].astype(bool).to_numpy()
        questions = frame["question_id"].to_numpy()
        for column in SCORES:
            values = frame[column].to_numpy(dtype=float)
            gap = group_gaps(
                values, np.where(indic, "Indic", "Non-Indic"), clusters=questions, resamples=resamples, seed=seed
            ).difference("Indic", "Non-Indic")
            have = np.isfinite(values)
            n_indic_q = len(set(questions[have & indic]))
            n_other_q = len(set(questions[have & ~indic]))
            rows.append(
                {
                    "model": model,
                    "mode": mode,
                    "score": column,
                    "indic": float(np.nanmean(values[indic])) if (have & indic).any() else float("nan"),
                    "non_indic": float(np.nanmean(values[~indic])) if (have & ~indic).any() else float("nan"),
                    "gap": gap.point,
                    "ci_low": gap.interval.low,
                    "ci_high": gap.interval.high,
                    "se": gap.se,
                    "detectable": detectable(gap.se) if gap.se > 0 else float("nan"),
                    "detectable_planned": planned_mde(n_indic_q, n_other_q, alpha=ALPHA, power=POWER)
                    if column in ("correct_answer_score", "exact_match")
                    else float("nan"),
                    "indic_entities": int((have & indic).sum()),
                    "indic_questions": n_indic_q,
                    "non_indic_entities": int((have & ~indic).sum()),
                    "non_indic_questions": n_other_q,
                    "note": gap.interval.note,
                }
            )
    return pd.DataFrame(rows)


_NO_PAIRS = Estimate(
    float("nan"), Interval(float("nan"), float("nan"), "no entity scored in both modes"), float("nan"), 0, 0
)


def cot_effect(scores: pd.DataFrame, resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """CoT − no CoT per model and score, paired on the entities both modes scored, with an interval that
    resamples questions."""
    rows = []
    for model, frame in scores.groupby("model", sort=False):
        wide = frame.pivot_table(
            index=["entity_id", "question_id"], columns="mode", values=list(SCORES), aggfunc="first"
        )
        for column in SCORES:
            if column not in wide or not set(MODES) <= set(wide[column].columns):
                continue
            pair = wide[column][list(MODES)].dropna()
            diff = pair["cot"] - pair["normal"]
            estimate = group_gaps(
                diff.to_numpy(),
                np.full(len(diff), "paired"),
                clusters=pair.index.get_level_values("question_id").to_numpy(),
                resamples=resamples,
                seed=seed,
            ).groups.get("paired", _NO_PAIRS)
            rows.append(
                {
                    "model": model,
                    "score": column,
                    "normal": float(pair["normal"].mean()) if len(pair) else float("nan"),
                    "cot": float(pair["cot"].mean()) if len(pair) else float("nan"),
                    "cot_minus_normal": estimate.point,
                    "ci_low": estimate.interval.low,
                    "ci_high": estimate.interval.high,
                    "paired_entities": estimate.items,
                    "questions": estimate.clusters,
                    "note": estimate.interval.note,
                }
            )
    return pd.DataFrame(rows)


def by_theme(scores: pd.DataFrame) -> pd.DataFrame:
    """Per model, mode and theme (a question can have several; one without themes is "(none)"): entities,
    how many are Indic, and the mean of each paper score."""
    exploded = scores.assign(theme=scores["themes"].map(lambda t: list(t) or ["(none)"])).explode("theme")
    grouped = exploded.groupby(["model", "mode", "theme"])
    out = grouped.agg(
        entities=("entity_id", "size"),
        indic_entities=("indic", "sum"),
        **{column: (column, "mean") for column in (*PAPER_SCORES, "exact_match")},
    )
    return out.reset_index().sort_values(["model", "mode", "entities"], ascending=[True, True, False])


def diagnose(scores: pd.DataFrame, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The paper's aggregated scores per subset and mode, the Indic gaps with intervals and detectable
    sizes, the CoT effect, themes, and a flat summary (no-CoT figures unsuffixed, CoT ones ``_cot``)."""
    aggregated = aggregate(scores)
    gaps = indic_gaps(scores, resamples, seed)
    cot = cot_effect(scores, resamples, seed)
    summary: dict[str, Any] = {}
    for row in aggregated[aggregated["subset"] == "All"].itertuples(index=False):
        suffix = "" if row.mode == "normal" else f"_{row.mode}"
        for column in SCORES:
            summary[f"{column}{suffix}"] = getattr(row, column)
        for count in ("entities", "answered", "unanswered", "failed"):
            summary[f"{count}{suffix}"] = getattr(row, count)
    for row in gaps.itertuples(index=False):
        suffix = "" if row.mode == "normal" else f"_{row.mode}"
        for part, value in (
            ("", row.gap),
            ("_ci_low", row.ci_low),
            ("_ci_high", row.ci_high),
            ("_detectable", row.detectable),
        ):
            summary[f"indic_gap_{row.score}{suffix}{part}"] = value
    for row in cot.itertuples(index=False):
        summary[f"cot_effect_{row.score}"] = row.cot_minus_normal
        summary[f"cot_effect_{row.score}_ci_low"] = row.ci_low
        summary[f"cot_effect_{row.score}_ci_high"] = row.ci_high
    return {
        "summary": summary,
        "aggregated": aggregated,
        "paper_layout": paper_layout(aggregated),
        "gaps": gaps,
        "cot": cot,
        "themes": by_theme(scores),
        "unanswered": scores.loc[scores["status"] != "answered", ["prompt_id", "status", "read_as"]],
    }
