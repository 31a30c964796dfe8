"""BorderLines (Li et al.): does a model answer "who owns this territory?" differently per language?

A suite is data + three functions: ``build_prompts`` (disputes → the English query and one query per
claimant language, template-wise), ``score`` (answers → the claimant each answer commits to) and
``diagnose`` (claimants → the concurrence scores of the paper's Table 4).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd

from geomon.parsing import parse_choice
from geomon.sources.borderlines import UNKNOWN, BorderLinesData

LETTERS = "ABCDEFGHIJ"


def fill_template(template: str, territory: str, choices: list[str]) -> str:
    """'Is XX a territory of YY or ZZ?' → 'Is T a territory of A) c1 or B) c2 or C) c3?'."""
    start, end = template.index("YY"), template.index("ZZ")
    joiner = template[start + 2 : end]  # " or ", " 还是 ", ...
    options = joiner.join(f"{LETTERS[i]}) {c}" for i, c in enumerate(choices))
    return template[:start].replace("XX", territory) + options + template[end + 2 :].replace("XX", territory)


def claimant_languages(claimants: list[str], countries: dict[str, dict]) -> dict[str, list[str]]:
    """Language code → the claimants that speak it (several claimants may share one)."""
    out: dict[str, list[str]] = {}
    for claimant in claimants:
        info = countries.get(claimant)
        if info:
            out.setdefault(info["Lang_Code"], []).append(claimant)
    return out


def build_prompts(data: BorderLinesData) -> pd.DataFrame:
    """The English query per territory plus one per claimant language.

    A missing template, territory name or country name in a language is a counted gap
    (``attrs["gaps"]``), never an English fallback passed off as a translation.
    """
    rows: list[dict[str, Any]] = []
    gaps: list[dict[str, str]] = []
    for rec in data.disputes.itertuples():
        claimants = list(rec.claimants)
        rows.append(_row(rec, "en", fill_template(data.templates["en"], rec.territory, claimants), claimants))
        for claimant in claimants:
            if claimant not in data.countries:
                gaps.append({"territory": rec.territory, "lang": "?", "missing": f"country info for {claimant}"})
        for lang in claimant_languages(claimants, data.countries):
            if lang == "en":
                continue  # the English query already stands for English-speaking claimants
            terms = data.terms.get(lang, {})
            missing = [name for name in [rec.territory, *claimants] if name not in terms]
            if lang not in data.templates:
                missing.insert(0, "question template")
            if missing:
                gaps.append({"territory": rec.territory, "lang": lang, "missing": ", ".join(missing)})
                continue
            choices = [terms[c] for c in claimants]
            rows.append(_row(rec, lang, fill_template(data.templates[lang], terms[rec.territory], choices), choices))
    frame = pd.DataFrame(rows)
    frame.attrs["gaps"] = gaps
    return frame


def _row(rec: Any, lang: str, query: str, choices: list[str]) -> dict[str, Any]:
    return {
        "query_id": f"{rec.territory}|{lang}",
        "territory": rec.territory,
        "lang": lang,
        "query": query,
        "choices": choices,
        "claimants": list(rec.claimants),
        "controller": rec.controller,
        "region": rec.region,
    }


def score(prompts: pd.DataFrame, texts: pd.Series) -> pd.DataFrame:
    """The claimant (English name) each answer commits to, matched in the query's language."""
    out = prompts.reset_index(drop=True).copy()
    picked = [parse_choice(t, c) if isinstance(t, str) else None for t, c in zip(texts, out["choices"], strict=True)]
    out["response"] = list(texts)
    out["answer"] = [
        claimants[i] if i is not None else None for i, claimants in zip(picked, out["claimants"], strict=True)
    ]
    return out


def _language_role(row: pd.Series, countries: dict[str, dict]) -> str:
    if row["lang"] == "en":
        return "en"
    speakers = [c for c in row["claimants"] if countries.get(c, {}).get("Lang_Code") == row["lang"]]
    return "controller" if row["controller"] in speakers else "non_controller"


def concurrence_scores(scored: pd.DataFrame, countries: dict[str, dict]) -> dict[str, float]:
    """Table 4 of the paper, in percent: KB, Con, Non, Δ (normalized and not), Cst (all, Unknown)."""
    frame = scored.copy()
    frame["role"] = frame.apply(_language_role, axis=1, countries=countries)
    known = frame[frame["controller"] != UNKNOWN]
    hit = known["answer"] == known["controller"]

    def rate(mask: pd.Series) -> float:
        return float(hit[mask].mean() * 100) if mask.any() else float("nan")

    kb, con, non = (
        rate(known["role"] == "en"),
        rate(known["role"] == "controller"),
        rate(known["role"] == "non_controller"),
    )
    # The controller's language may be English (e.g. the UK): then Con compares the English answer.
    en_controller = known[
        (known["role"] == "en")
        & known.apply(lambda r: countries.get(r["controller"], {}).get("Lang_Code") == "en", axis=1)
    ]
    if len(en_controller):
        con_hits = pd.concat([hit[known["role"] == "controller"], hit[en_controller.index]])
        con = float(con_hits.mean() * 100)
    out = {
        "kb_cs": kb,
        "con_cs": con,
        "non_cs": non,
        "delta_cs_unnormalized": con - non,
        "delta_cs": (con - non) / non * 100 if non else float("nan"),
    }
    for subset, territories in (("all", frame), ("unknown", frame[frame["controller"] == UNKNOWN])):
        out[f"cst_cs_{subset}"], out[f"cst_cs_{subset}_territories"] = _consistency(territories)
    distinct = frame[frame["role"] != "en"].groupby("territory")["answer"].nunique()
    with_en = frame.groupby("territory")["answer"].nunique()
    out["response_countries_mean"] = float(distinct.mean()) if len(distinct) else float("nan")
    out["response_countries_with_en_mean"] = float(with_en.mean()) if len(with_en) else float("nan")
    return out


def _consistency(frame: pd.DataFrame) -> tuple[float, int]:
    """Mean over territories of the share of agreeing pairs among its claimant-language answers."""
    per_territory = []
    for _, group in frame[frame["lang"] != "en"].groupby("territory"):
        answers = list(group["answer"])
        pairs = list(itertools.combinations(answers, 2))
        if pairs:
            per_territory.append(np.mean([a is not None and a == b for a, b in pairs]))
    return (float(np.mean(per_territory) * 100) if per_territory else float("nan")), len(per_territory)
