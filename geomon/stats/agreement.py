"""Agreement between raters (judge models): per pair and Fleiss' kappa over all of them.

Judge drift is a known failure of LLM-judged benchmarks, so every jury run reports how much its judges
agree; a drop is as much a signal as a change in the scores.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd


def pairwise_agreement(votes: pd.DataFrame) -> pd.DataFrame:
    """``votes``: one column per rater, one row per item (None/NaN = no vote). Per pair of raters: items
    both voted on, the share where they agree, and Cohen's kappa."""
    rows = []
    for a, b in itertools.combinations(votes.columns, 2):
        both = votes[[a, b]].dropna()
        n = len(both)
        agree = float((both[a] == both[b]).mean()) if n else float("nan")
        rows.append(
            {"rater_a": a, "rater_b": b, "items": n, "agreement": agree, "cohen_kappa": _cohen(both[a], both[b])}
        )
    return pd.DataFrame(rows, columns=["rater_a", "rater_b", "items", "agreement", "cohen_kappa"])


def _cohen(a: pd.Series, b: pd.Series) -> float:
    if len(a) == 0:
        return float("nan")
    observed = float((a == b).mean())
    categories = set(a) | set(b)
    expected = sum(float((a == c).mean()) * float((b == c).mean()) for c in categories)
    return float("nan") if expected == 1 else (observed - expected) / (1 - expected)


def fleiss_kappa(votes: pd.DataFrame) -> float:
    """Fleiss' kappa over the items every rater voted on (Fleiss 1971): (P̄ − P̄e) / (1 − P̄e).

    NaN when fewer than two raters or items remain, or when every vote is the same category (no
    disagreement is possible, so chance agreement is 1)."""
    complete = votes.dropna()
    raters = complete.shape[1]
    if raters < 2 or len(complete) < 2:
        return float("nan")
    categories = sorted(set(complete.to_numpy().ravel()))
    counts = np.stack([(complete == c).sum(axis=1).to_numpy() for c in categories], axis=1)  # items × categories
    per_item = (np.sum(counts * counts, axis=1) - raters) / (raters * (raters - 1))
    p_bar = per_item.mean()
    shares = counts.sum(axis=0) / counts.sum()
    p_e = float(np.sum(shares**2))
    return float("nan") if p_e == 1 else float((p_bar - p_e) / (1 - p_e))
