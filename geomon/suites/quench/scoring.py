"""QUENCH's scores: every score of every (entity, mode) — the jury's, the embeddings' similarity, exact match —
their means per subset (the paper's aggregation, in its table's layout), and the per-item rows the metric history
compares."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import numpy as np
import pandas as pd

from geomon.suites.info import answered_outcome
from geomon.suites.quench.prompts import question_group

SUBSETS = ("Indic", "Non-Indic", "All")
SCORES = (
    "correct_answer_score",
    "pred_rationale_score",
    "gold_rationale_score",
    "exact_match",
    "answer_similarity",
    "pred_rationale_similarity",
    "gold_rationale_similarity",
)
PAPER_SCORES = ("correct_answer_score", "pred_rationale_score", "gold_rationale_score")


def normalise(text: Any) -> str:
    """Casefolded, accents and punctuation removed, "&" as "and", a leading article dropped."""
    if not isinstance(text, str):
        return ""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold().replace("&", " and ")
    text = re.sub(r"[^\w\s]", " ", text)
    text = re.sub(r"^\s*(?:the|a|an)\s+", "", text)
    return " ".join(text.split())


def exact_match(predicted: Any, gold: str) -> float:
    """1.0 when the normalised answer equals the normalised gold answer or one of its listed forms
    ("Quiet Luxury/Stealth Wealth"; "Apollo 11 Astronauts (Neil Armstrong, …)" also without the
    parenthesis); NaN when there is no answer."""
    if not isinstance(predicted, str) or not predicted.strip():
        return float("nan")
    forms = {gold, re.sub(r"\s*\([^)]*\)", "", gold), *gold.split("/")}
    return float(normalise(predicted) in {normalise(f) for f in forms if f.strip()})


def score(
    prompts: pd.DataFrame,
    answers: pd.DataFrame,
    rationales: pd.DataFrame,
    judged: dict[str, pd.DataFrame],
    similarity: pd.DataFrame,
    model: str,
) -> pd.DataFrame:
    """One row per (entity, mode): the answer and its status, and every score.

    ``judged["entities"]`` has (prompt_id, score, votes) from the entity jury; ``judged["rationales"]``
    (rationale_id, score, votes) from the rationale jury; ``similarity`` (id, similarity) for answers
    (prompt_id) and rationales (rationale_id). Unanswered and failed entities keep NaN entity scores
    (excluded, counted); the gold-answer rationale is scored for every entity.
    """
    out = prompts[
        ["prompt_id", "entity_id", "question_id", "variable", "mode", "indic", "themes", "gold_answer"]
    ].copy()
    out.insert(0, "model", model)
    out = out.merge(answers[["prompt_id", "answer", "read_as", "status"]], on="prompt_id", how="left")
    entity = judged["entities"].set_index("prompt_id")
    out["correct_answer_score"] = out["prompt_id"].map(entity["score"]).astype(float)
    out["correct_votes"] = out["prompt_id"].map(entity["votes"]).fillna(0).astype(int)
    out["exact_match"] = [exact_match(a, g) for a, g in zip(out["answer"], out["gold_answer"], strict=True)]
    sims = similarity.set_index("id")["similarity"]
    out["answer_similarity"] = out["prompt_id"].map(sims).astype(float)
    rationale = judged["rationales"].set_index("rationale_id")
    given = rationales.set_index("rationale_id")["status"]
    for kind, prefix in (("predicted", "pred"), ("gold", "gold")):
        ids = out["prompt_id"] + f"|{kind}"
        out[f"{prefix}_rationale_score"] = ids.map(rationale["score"]).astype(float)
        out[f"{prefix}_rationale_similarity"] = ids.map(sims).astype(float)
        out[f"{prefix}_rationale_status"] = ids.map(given).fillna("not asked")
    unanswered = out["status"] != "answered"
    out.loc[unanswered, ["correct_answer_score", "exact_match", "answer_similarity"]] = np.nan
    return out


def _subset(scores: pd.DataFrame, subset: str) -> pd.DataFrame:
    if subset == "Indic":
        return scores[scores["indic"].astype(bool)]
    if subset == "Non-Indic":
        return scores[~scores["indic"].astype(bool)]
    return scores


def aggregate(scores: pd.DataFrame) -> pd.DataFrame:
    """Per model, mode and subset (Indic / Non-Indic / All): each score's mean over the entities that have
    it — the paper's Σ over questions and entities ÷ entities — with the entity counts behind it."""
    rows = []
    for (model, mode), frame in scores.groupby(["model", "mode"], sort=False):
        for subset in SUBSETS:
            part = _subset(frame, subset)
            status = part["status"].value_counts()
            row = {
                "model": model,
                "mode": mode,
                "subset": subset,
                "entities": len(part),
                "questions": int(part["question_id"].nunique()),
                "answered": int(status.get("answered", 0)),
                "unanswered": int(status.get("unanswered", 0)),
                "failed": int(status.get("failed", 0)),
            }
            for column in SCORES:
                row[column] = float(part[column].mean()) if part[column].notna().any() else float("nan")
                row[f"{column}_n"] = int(part[column].notna().sum())
            rows.append(row)
    return pd.DataFrame(rows)


def paper_layout(aggregated: pd.DataFrame) -> pd.DataFrame:
    """The layout of the paper's ``aggregated_scores.csv``: key_name ``<model>_<mode>_Aggregated_<subset>``
    and correct_answer_score (0-1), pred_rationale_score and gold_rationale_score (1-5)."""
    keys = aggregated["model"] + "_" + aggregated["mode"] + "_Aggregated_" + aggregated["subset"]
    return pd.DataFrame({"key_name": keys, **{c: aggregated[c].to_numpy() for c in PAPER_SCORES}})


def items(scores: pd.DataFrame) -> pd.DataFrame:
    """Per (entity, mode) ``item``, every one asked: the jury's correctness (NaN when not answered), whether it
    was answered and the Indic flag, so the headline, the gap and the answer rate are recomputed exactly on
    the items two runs share."""
    return pd.DataFrame(
        {
            "item": scores["prompt_id"].to_numpy(),
            "question_id": scores["question_id"].astype(str).to_numpy(),
            "mode": scores["mode"].to_numpy(),
            "correct": scores["correct_answer_score"].to_numpy(dtype=float),
            "answered": answered_outcome(scores["status"]),
            "indic": scores["indic"].astype(bool).to_numpy(),
            # the group the questions are tested by, one by one: Indic or not
            "questions": [question_group(indic) for indic in scores["indic"]],
        }
    )
