"""BorderLines' scoring: the claimant each answer commits to (``score``: parsed from a chat answer, or the
likeliest claimant by rank classification), each territory's values Table 4 averages (``per_territory``), and
the tracked rows the regression checks compare (``items``, of the tracked persona)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from geomon.parsing import parse_choice
from geomon.suites.borderlines.source import UNKNOWN
from geomon.suites.info import answered_outcome, status_of
from geomon.suites.kit import continuation_logprob, likeliest, probabilities


def score(prompts: pd.DataFrame, responses: pd.DataFrame, owners: Sequence[tuple[int, int]]) -> pd.DataFrame:
    """The claimant (English name) each query's answer commits to.

    Chat answers: ``parse_choice`` in the query's language (name first, then the option letter).
    Rank classification: the claimant whose name has the highest log-probability; ``choice_logprobs``
    keeps every claimant's score and ``controller_probability`` the controller's share of the claimants'
    probability (``kit.probabilities``: NaN for a chat answer, an unknown controller or a failed request).
    """
    out = prompts.reset_index(drop=True).copy()
    texts: list[str | None] = [None] * len(out)
    errors: list[str | None] = [None] * len(out)
    logps: list[list[float | None]] = [[None] * len(c) for c in out["choices"]]
    for (i, j), response in zip(owners, responses.itertuples(index=False), strict=True):
        if response.error:
            errors[i] = response.error
        if j < 0:
            texts[i] = response.text
        else:
            logps[i][j] = continuation_logprob(response.logprobs)
    ranked = any(j >= 0 for _, j in owners)
    picked: list[int | None] = []
    for i, choices in enumerate(out["choices"]):
        if ranked:
            picked.append(likeliest(logps[i]))
        else:
            picked.append(parse_choice(texts[i], choices) if isinstance(texts[i], str) else None)
    out["method"] = "rank_classification" if ranked else "parsed"
    out["response"] = texts
    out["choice_logprobs"] = logps
    out["error"] = errors
    out["answer"] = [c[p] if p is not None else None for p, c in zip(picked, out["claimants"], strict=True)]
    out["status"] = answer_status(out)
    out["controller_probability"] = [
        shares[claimants.index(controller)] if shares is not None and controller in claimants else np.nan
        for shares, claimants, controller in zip(
            (probabilities(lp) if ranked else None for lp in logps), out["claimants"], out["controller"], strict=True
        )
    ]
    return out


def answer_status(scored: pd.DataFrame) -> pd.Series:
    """answered (a claimant was read), failed (the request errored) or unanswered (no claimant read)."""
    errors = scored["error"] if "error" in scored else pd.Series(None, index=scored.index)
    return status_of(scored["answer"], errors)


def claimant_responses(group: pd.DataFrame, countries: dict[str, dict]) -> dict[str, Any]:
    """One territory's answers keyed by claimant language, as the release's scoring script builds them.

    Every claimant language has one answer; English is one of them only when a claimant speaks English
    (then the English query's answer is that claimant's answer). Excluded answers (failed, unanswered)
    are kept as None so they are counted, and left out of every score.
    """
    claimant_codes = {countries[c]["Lang_Code"] for c in group["claimants"].iloc[0] if c in countries}
    return {
        lang: answer
        for lang, answer in zip(group["lang"], group["answer"], strict=True)
        if lang in claimant_codes or (lang == "en" and "en" in claimant_codes)
    }


def per_territory(scored: pd.DataFrame, countries: dict[str, dict]) -> pd.DataFrame:
    """Per territory, the values Table 4's scores average over territories (the release's scoring script).

    ``kb``: the English answer names the controller (known controllers only); ``kb_p``: the English query's
    probability on the controller (rank classification only: ``score``). ``con``: the answer in the
    controller's language names it (that language may be English, e.g. the UK). ``non``: the mean, over the
    other claimant languages, of answers naming the controller — averaged per territory first, then over
    territories. ``cst``: the share of agreeing pairs among the claimant-language answers (English among
    them when a claimant speaks it). Failed and unanswered requests are excluded from every value and
    counted in ``excluded``; a value with nothing left is NaN and the territory drops out of that mean.
    """
    rows = []
    for territory, group in scored.groupby("territory", sort=False):
        controller = group["controller"].iloc[0]
        known = controller != UNKNOWN
        controller_lang = countries.get(controller, {}).get("Lang_Code") if known else None
        english = group.loc[group["lang"] == "en", "answer"]
        english_answer = english.iloc[0] if len(english) and pd.notna(english.iloc[0]) else None
        english_p = group.loc[group["lang"] == "en"].get("controller_probability", pd.Series(dtype=float))
        responses = claimant_responses(group, countries)
        answered = {lang: a for lang, a in responses.items() if pd.notna(a)}
        con = [a == controller for lang, a in answered.items() if known and lang == controller_lang]
        non = [a == controller for lang, a in answered.items() if known and lang != controller_lang]
        pairs = list(itertools.combinations(answered.values(), 2))
        with_en = set(answered.values()) | ({english_answer} if english_answer is not None else set())
        rows.append(
            {
                "territory": territory,
                "region": group["region"].iloc[0] if "region" in group else None,
                "unknown": not known,
                "claimant_count": len(group["claimants"].iloc[0]),
                "kb": float(english_answer == controller) if known and english_answer is not None else np.nan,
                "kb_p": float(english_p.iloc[0]) if known and len(english_p) else np.nan,
                "con": float(con[0]) if con else np.nan,
                "non": float(np.mean(non)) if non else np.nan,
                "non_n": len(non),
                "cst": float(np.mean([a == b for a, b in pairs])) if pairs else np.nan,
                "cst_pairs": len(pairs),
                "languages": len(responses),
                "excluded": int(group["answer"].isna().sum()),
                "countries_answered": len(set(answered.values())) if answered else np.nan,
                "countries_answered_with_en": len(with_en) if with_en else np.nan,
            }
        )
    return pd.DataFrame(rows)


def items(scored: pd.DataFrame, countries: dict[str, dict], persona: str = "vanilla") -> pd.DataFrame:
    """The tracked rows of one persona, two levels clustered on the territory: one per territory (``item`` the
    territory: the values Table 4's scores average) and one per query (``item`` ``territory|lang``, ``lang``
    its language, English included): whether it was answered, and for a claimant's language whether its
    answer names the controller (known controllers only). A query row has no territory value and a territory
    row no ``lang``, so each statistic reads its own level."""
    subset = scored[scored["persona"] == persona] if "persona" in scored else scored
    territories = per_territory(subset, countries).rename(columns={"territory": "item"})
    territories["territory"] = territories["item"]
    queries = []
    for territory, group in subset.groupby("territory", sort=False):
        controller = group["controller"].iloc[0]
        claimant = claimant_responses(group, countries)
        outcomes = answered_outcome(answer_status(group))
        shares = group["controller_probability"] if "controller_probability" in group else [np.nan] * len(group)
        for lang, answer, outcome, share in zip(group["lang"], group["answer"], outcomes, shares, strict=True):
            answered = pd.notna(answer)
            queries.append(
                {
                    "item": f"{territory}|{lang}",
                    "territory": territory,
                    "lang": lang,
                    "answered": outcome,
                    # Over the answered queries, as the paper's scores are: a query left unanswered pages once,
                    # on the answer rate.
                    "concurs": float(answer == controller)
                    if answered and lang in claimant and controller != UNKNOWN
                    else np.nan,
                    "concurs_p": float(share) if lang in claimant else np.nan,
                }
            )
    columns = ["item", "territory", "lang", "answered", "concurs", "concurs_p"]
    return pd.concat([territories, pd.DataFrame(queries, columns=columns)], ignore_index=True)


def tracked_persona(scored: pd.DataFrame) -> str:
    """The persona regression checks follow: vanilla when it was asked, else the first one asked."""
    personas = list(scored["persona"].unique()) if "persona" in scored else [TRACKED_PERSONA]
    return TRACKED_PERSONA if TRACKED_PERSONA in personas else str(personas[0])


TRACKED_PERSONA = "vanilla"  # the persona the regression check and the trends follow (README)
