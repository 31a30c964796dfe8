"""WorldBench's reply reading and scoring: the number each answer gives, its absolute relative error, any
source and year it cites; and the per-country items the metric history compares."""

from __future__ import annotations

import numpy as np
import pandas as pd

from geomon.parsing import find_citation, mentions_world_bank, parse_number_detail
from geomon.stats.disparity import abs_rel_error
from geomon.suites.info import status_of


def score(prompts: pd.DataFrame, responses: pd.DataFrame) -> pd.DataFrame:
    """Per answer: parsed number, how it was read, absolute relative error, any cited source and year.

    ``status``: answered (a number was read), failed (the request errored) or unanswered (no number) —
    failed and unanswered answers have no error and are left out of every mean, and counted. A negative
    number for these non-negative indicators is wrong by the full amount: error 1 (the paper's error lies
    in [0, 1]; |a − b| / max(|a|, |b|) would exceed 1), noted in ``parse_note``.
    """
    if len(prompts) != len(responses):
        raise ValueError(f"{len(prompts)} prompts but {len(responses)} responses")
    texts = [t if isinstance(t, str) else None for t in responses["text"]]
    parsed = [parse_number_detail(t) for t in texts]
    citations = [find_citation(t) for t in texts]
    out = prompts.drop(columns=["messages", "prompt"]).reset_index(drop=True).copy()
    out["response"] = responses["text"].to_numpy()
    out["response_error"] = responses["error"].to_numpy()
    out["parsed"] = [p.value if p else np.nan for p in parsed]
    negative = out["parsed"].to_numpy() < 0
    out["parse_note"] = [
        "; ".join(filter(None, [p.note if p else "", "negative: error 1" if neg else ""]))
        for p, neg in zip(parsed, negative, strict=True)
    ]
    out["error"] = answer_errors(out["parsed"].to_numpy(), out["ground_truth"].to_numpy())
    out["status"] = status_of(out["parsed"], out["response_error"])
    out["cited_source"] = [c.source if c else None for c in citations]
    out["cited_year"] = [c.year if c else None for c in citations]
    out["mentions_world_bank"] = [mentions_world_bank(t) for t in texts]
    return out


def per_country(scores: pd.DataFrame) -> pd.DataFrame:
    """Mean error per country over the indicators it was parsed for."""
    valid = scores.dropna(subset=["error"])
    return (
        valid.groupby(["iso3", "country", "region", "income_group"], dropna=False)["error"]
        .agg(["mean", "count"])
        .rename(columns={"mean": "error", "count": "answers"})
        .reset_index()
    )


def answer_errors(parsed: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Absolute relative error with the suite's rule for negative answers (error 1)."""
    return np.where(parsed < 0, 1.0, abs_rel_error(parsed, truth))


def items(scores: pd.DataFrame) -> pd.DataFrame:
    """Per country (``item``): summed error and the answers it is over, so group means can be recomputed exactly,
    and the questions asked and answered (a number read): a country the model stops answering is never dropped,
    its answer rate falls."""
    frame = scores.assign(_answered=(scores["status"] == "answered").astype(int))
    out = (
        frame.groupby(["iso3", "region", "income_group"], dropna=False)
        .agg(
            error_sum=("error", "sum"),
            answers=("error", "count"),
            answered=("_answered", "sum"),
            asked=("_answered", "size"),
        )
        .reset_index()
        .rename(columns={"iso3": "item"})
    )
    return out
