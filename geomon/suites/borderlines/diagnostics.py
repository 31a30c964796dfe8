"""BorderLines' diagnostics: the concurrence scores of the paper's Table 4 (``concurrence_scores``, with
bootstrap intervals over territories), per persona, region and query language (``diagnose``), and how the
disputes table changed between revisions (``compare_tables``, ``table_changes``)."""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np
import pandas as pd

from geomon.suites.borderlines.scoring import TRACKED_PERSONA, answer_status, per_territory, tracked_persona
from geomon.suites.borderlines.source import UNKNOWN

SCORES = ("kb_cs", "con_cs", "non_cs", "delta_cs_unnormalized", "delta_cs", "cst_cs_all", "cst_cs_unknown")


def _nanmean(values: np.ndarray, axis: int) -> np.ndarray:
    # An empty subset (no Unknown territory, no pair of answers) is NaN, reported as such.
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(values, axis=axis)


def _ratios(t: dict[str, np.ndarray], axis: int = -1) -> dict[str, np.ndarray]:
    """Table 4's scores (percent) from per-territory arrays; works on bootstrap resamples too."""
    kb, con, non = (_nanmean(t[name], axis) * 100 for name in ("kb", "con", "non"))
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = (con - non) / non * 100
    return {
        "kb_cs": kb,
        "con_cs": con,
        "non_cs": non,
        "delta_cs_unnormalized": con - non,
        "delta_cs": delta,
        "cst_cs_all": _nanmean(t["cst"], axis) * 100,
        "cst_cs_unknown": _nanmean(np.where(t["unknown"] > 0, t["cst"], np.nan), axis) * 100,
    }


VALUE_COLUMNS = ("kb", "con", "non", "cst", "unknown")


def _arrays(table: pd.DataFrame) -> dict[str, np.ndarray]:
    return {c: table[c].to_numpy(dtype=float) for c in VALUE_COLUMNS}


def concurrence_scores(
    scored: pd.DataFrame, countries: dict[str, dict], resamples: int = 0, seed: int = 0
) -> dict[str, float]:
    """Table 4 of the paper, in percent: KB, Con, Non, Δ (normalized and not), Cst (all, Unknown).

    Each score is the mean over territories of a per-territory value (``per_territory``), as in the
    release's scoring script. With ``resamples`` > 0, each score also gets a 95 % percentile bootstrap
    interval over territories (``<score>_ci_low`` / ``<score>_ci_high``, scipy.stats.bootstrap); a score
    without one says why in ``<score>_ci_note``.
    """
    table = per_territory(scored, countries)
    arrays = _arrays(table)
    out: dict[str, Any] = {k: float(v) for k, v in _ratios(arrays).items()}
    # What answering uniformly at random over each territory's claimants would score (the paper's
    # "Random" row): the mean of 1/k over the territories with a known controller.
    known = table[~table["unknown"]]
    out["random_cs"] = float((100 / known["claimant_count"]).mean()) if len(known) else float("nan")
    out["kb_cs_territories"] = int(table["kb"].notna().sum())
    out["con_cs_territories"] = int(table["con"].notna().sum())
    out["non_cs_territories"] = int(table["non"].notna().sum())
    out["cst_cs_all_territories"] = int(table["cst"].notna().sum())
    out["cst_cs_unknown_territories"] = int((table["cst"].notna() & table["unknown"]).sum())
    out["territories"] = len(table)
    status = answer_status(scored)
    out["answers"] = int((status == "answered").sum())
    out["failed"] = int((status == "failed").sum())
    out["unanswered"] = int((status == "unanswered").sum())
    out["response_countries_mean"] = float(table["countries_answered"].mean()) if len(table) else float("nan")
    out["response_countries_with_en_mean"] = (
        float(table["countries_answered_with_en"].mean()) if len(table) else float("nan")
    )
    if resamples:
        out.update(_bootstrap(arrays, out, resamples, seed))
    return out


def _bootstrap(arrays: dict[str, np.ndarray], point: dict[str, Any], resamples: int, seed: int) -> dict[str, Any]:
    from geomon.stats.uncertainty import bootstrap_ci

    names = list(arrays)
    out: dict[str, Any] = {}
    for score_name in SCORES:

        def statistic(*columns: np.ndarray, axis: int = -1, _name: str = score_name) -> np.ndarray:
            return _ratios(dict(zip(names, columns, strict=True)), axis=axis)[_name]

        if not np.isfinite(point[score_name]):
            out[f"{score_name}_ci_note"] = "no territory has this score's answers"
            continue
        ci = bootstrap_ci(tuple(arrays[n] for n in names), statistic, resamples=resamples, seed=seed)
        out[f"{score_name}_ci_low"], out[f"{score_name}_ci_high"] = ci.low, ci.high
        if ci.note:
            out[f"{score_name}_ci_note"] = ci.note
    return out


def language_breakdown(
    scored: pd.DataFrame, countries: dict[str, dict], resamples: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """Per query language: answers, how often they name the controller (known controllers) and the claimant
    whose language it is (how often a model sides with the country that speaks the language), each rate
    with a 95 % interval resampling territories within the language (``stats.uncertainty.group_gaps``)."""
    from geomon.stats.uncertainty import group_gaps

    lang = scored["lang"].to_numpy(dtype=object)
    hits = {
        "controller_rate": np.where(
            scored["controller"] != UNKNOWN, (scored["answer"] == scored["controller"]) * 100.0, np.nan
        ),
        "own_claimant_rate": np.where(
            lang != "en",
            [
                100.0 * (isinstance(a, str) and countries.get(a, {}).get("Lang_Code") == code)
                for a, code in zip(scored["answer"], lang, strict=True)
            ],
            np.nan,
        ),
    }
    out = scored.groupby("lang").agg(queries=("lang", "size"), answered=("answer", "count"))
    for name, values in hits.items():
        table = group_gaps(values, lang, clusters=scored["territory"], resamples=resamples, seed=seed).table()
        table = table.set_index("group")[["value", "ci_low", "ci_high"]]
        out = out.join(table.rename(columns=lambda c, n=name: n if c == "value" else f"{n}_{c}"))
    return out.reset_index().sort_values("queries", ascending=False, ignore_index=True)


def diagnose(scored: pd.DataFrame, countries: dict[str, dict], resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Concurrence scores per persona (with bootstrap CIs), per region, and per language (vanilla persona,
    or the only one present); ``excluded`` lists every failed or unanswered query with its reason."""
    personas = list(scored["persona"].unique()) if "persona" in scored else [TRACKED_PERSONA]
    by_persona, by_region = [], []
    for persona in personas:
        subset = scored[scored["persona"] == persona] if "persona" in scored else scored
        by_persona.append({"persona": persona, **concurrence_scores(subset, countries, resamples, seed)})
        for region, part in subset.groupby("region"):
            by_region.append({"persona": persona, "region": region, **concurrence_scores(part, countries)})
    tracked = scored[scored["persona"] == tracked_persona(scored)] if "persona" in scored else scored
    status = answer_status(scored)
    columns = [c for c in ("query_id", "territory", "lang", "error") if c in scored]
    excluded = scored.loc[status != "answered", columns].assign(reason=status[status != "answered"])
    return {
        "by_persona": pd.DataFrame(by_persona),
        "by_region": pd.DataFrame(by_region),
        "by_language": language_breakdown(tracked, countries, resamples, seed),
        "answered_rate": float((status == "answered").mean()) if len(scored) else 0.0,
        "excluded": excluded.reset_index(drop=True),
    }


def compare_tables(old: pd.DataFrame, new: pd.DataFrame) -> dict[str, Any]:
    """Two versions of the disputes table: territories added, removed, and whose controller changed."""
    before = old.set_index("territory")["controller"]
    after = new.set_index("territory")["controller"]
    common = before.index.intersection(after.index)
    changed = [{"territory": t, "before": before[t], "after": after[t]} for t in common if before[t] != after[t]]
    return {
        "territories_before": len(before),
        "territories_after": len(after),
        "in_both": len(common),
        "added": sorted(set(after.index) - set(before.index)),
        "removed": sorted(set(before.index) - set(after.index)),
        "controller_changed": changed,
    }


def table_changes(tables: dict[str, pd.DataFrame]) -> list[dict[str, Any]]:
    """How the disputes table changed between successive revisions (keys sort by date)."""
    versions = sorted(tables)
    return [
        {"from": old, "to": new, **compare_tables(tables[old], tables[new])}
        for old, new in itertools.pairwise(versions)
    ]
