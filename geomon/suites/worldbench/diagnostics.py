"""WorldBench's diagnostics, as the paper reports them: error per region and income group with its disparity
against the random baseline, the citation cross-check, the "World Bank" mentions and the best-matching data
year."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from geomon.sources.worldbank import WorldBankSnapshot
from geomon.stats.disparity import disparity, group_errors, group_ranks, random_baseline
from geomon.stats.uncertainty import group_gaps, mean_difference
from geomon.suites.worldbench.scoring import answer_errors, per_country

YEARS_FOR_RECENCY = 10  # the citation cross-check and the by-year curve look this far back
RECENT_WINDOW_YEARS = 5  # "most recent" values: countries without any in the past five years are left out
CATEGORIZATIONS = (("region", 7), ("income_group", 4))  # the paper's k for its random baseline


def disparity_table(scores: pd.DataFrame, trials: int = 10, seed: int = 0, resamples: int = 1000) -> pd.DataFrame:
    """One row per (categorization, group) plus disparity rows, per indicator and overall.

    Group rows: mean and median error over the group's countries (each country's mean over its
    indicators) with 95 % bootstrap intervals resampling countries within the group. Disparity rows
    (``disparity_mean``, ``disparity_median``): max − min over groups, its interval from the same
    resamples, the paper's baseline (countries put in k = 7 / 4 random groups, 10 trials) and the
    size-preserving variant (``baseline_shuffled_labels``).
    """
    rows = []
    for indicator, subset in [("all", scores), *scores.groupby("indicator")]:
        countries = per_country(subset)
        for categorization, k in CATEGORIZATIONS:
            table = group_errors(countries, categorization)
            ranks = group_ranks(table)
            intervals = {
                stat: group_gaps(
                    countries["error"], countries[categorization], stat=stat, resamples=resamples, seed=seed
                )
                for stat in ("mean", "median")
            }
            for group, rec in table.iterrows():
                ci_mean, ci_median = (
                    intervals["mean"].groups[group].interval,
                    intervals["median"].groups[group].interval,
                )
                rows.append(
                    {
                        "indicator": indicator,
                        "categorization": categorization,
                        "group": group,
                        "mean_error": rec["mean"],
                        "mean_ci_low": ci_mean.low,
                        "mean_ci_high": ci_mean.high,
                        "median_error": rec["median"],
                        "median_ci_low": ci_median.low,
                        "median_ci_high": ci_median.high,
                        "ci_note": ci_mean.note,
                        "countries": int(rec["count"]),
                        "rank": int(ranks[group]),
                    }
                )
            for stat in ("mean", "median"):
                base = random_baseline(countries, categorization, "error", trials=trials, seed=seed, stat=stat, k=k)
                shuffled = random_baseline(
                    countries, categorization, "error", trials=trials, seed=seed, stat=stat, method="shuffled_labels"
                )
                ci = intervals[stat].disparity.interval
                rows.append(
                    {
                        "indicator": indicator,
                        "categorization": categorization,
                        "group": f"disparity_{stat}",
                        "mean_error": disparity(table[stat]),
                        "mean_ci_low": ci.low,
                        "mean_ci_high": ci.high,
                        "ci_note": ci.note,
                        "median_error": np.nan,
                        "countries": int(table["count"].sum()),
                        "rank": np.nan,
                        "baseline": base["mean"],
                        "baseline_std": base["std"],
                        "baseline_shuffled_labels": shuffled["mean"],
                        "groups": len(table),
                        "expected_groups": k,
                    }
                )
    return pd.DataFrame(rows)


def citation_check(scores: pd.DataFrame, snapshot: WorldBankSnapshot) -> pd.DataFrame:
    """Answers that cite a source and year: error against that year's value and the best-matching year."""
    cited = scores.dropna(subset=["cited_year", "parsed"])
    if cited.empty:
        return pd.DataFrame(
            columns=[
                "question_id",
                "cited_source",
                "cited_year",
                "error",
                "error_cited_year",
                "best_year",
                "error_best_year",
            ]
        )
    values = snapshot.values.set_index(["indicator", "iso3", "year"])["value"]
    first = snapshot.latest_year - YEARS_FOR_RECENCY + 1
    rows = []
    for rec in cited.itertuples():
        cited_value = values.get((rec.indicator, rec.iso3, int(rec.cited_year)))
        errs = {
            y: float(answer_errors(np.array([rec.parsed]), np.array([values[(rec.indicator, rec.iso3, y)]]))[0])
            for y in range(first, snapshot.latest_year + 1)
            if (rec.indicator, rec.iso3, y) in values.index
        }
        best = min(errs, key=errs.get) if errs else None
        rows.append(
            {
                "question_id": rec.question_id,
                "cited_source": rec.cited_source,
                "cited_year": int(rec.cited_year),
                "error": rec.error,
                "error_cited_year": float(answer_errors(np.array([rec.parsed]), np.array([cited_value]))[0])
                if cited_value is not None
                else np.nan,
                "best_year": best,
                "error_best_year": errs.get(best, np.nan) if best else np.nan,
            }
        )
    return pd.DataFrame(rows)


def world_bank_mentions(scores: pd.DataFrame, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The paper's citation comparison: are answers that mention "World Bank" (case-insensitive) any more
    accurate than the others? Mean error of each, and the difference with a bootstrap interval."""
    answered = scores.dropna(subset=["error"])
    mentioned = answered["mentions_world_bank"].astype(bool)
    difference, ci = mean_difference(
        answered.loc[mentioned, "error"].to_numpy(),
        answered.loc[~mentioned, "error"].to_numpy(),
        resamples=resamples,
        seed=seed,
    )
    return {
        "world_bank_mentions": int(mentioned.sum()),
        "world_bank_mention_error": float(answered.loc[mentioned, "error"].mean()) if mentioned.any() else float("nan"),
        "no_mention_error": float(answered.loc[~mentioned, "error"].mean()) if (~mentioned).any() else float("nan"),
        "mention_minus_no_mention": difference,
        "mention_minus_no_mention_ci_low": ci.low,
        "mention_minus_no_mention_ci_high": ci.high,
        "mention_minus_no_mention_ci_note": ci.note,
    }


def error_by_year(scores: pd.DataFrame, snapshot: WorldBankSnapshot) -> pd.DataFrame:
    """Mean error against each single year's value, the most recent value per country, and the default rule
    (the paper's Figure 11 and appendix D.2).

    Each year's error is over the answers whose country has that year's value (the paper's curve); the
    year with the lowest one is the data year the answers match best. "Most recent per country" takes each
    country's latest value and, as the paper does, leaves out countries with no value in any of the past
    five years. Coverage differs between years, so a variant named ``paired`` is given too: each year's
    error minus the default rule's on the same answers (``delta_vs_default``).
    """
    answered = scores.dropna(subset=["parsed"])[["indicator", "iso3", "parsed", "error"]]
    values = snapshot.values
    rows = [
        {
            "reference": "latest-3-year mean",
            "year": np.nan,
            "mean_error": answered["error"].mean(),
            "answers": len(answered),
            "delta_vs_default": 0.0,
        }
    ]
    recent = values[values["year"] > snapshot.latest_year - RECENT_WINDOW_YEARS]
    latest = recent.sort_values("year").groupby(["indicator", "iso3"]).tail(1)
    references = [("most recent per country", np.nan, answered.merge(latest, on=["indicator", "iso3"]))]
    for year in range(snapshot.latest_year - YEARS_FOR_RECENCY + 1, snapshot.latest_year + 1):
        references.append((str(year), year, answered.merge(values[values["year"] == year], on=["indicator", "iso3"])))
    for name, year, merged in references:
        if merged.empty:
            continue
        errors = answer_errors(merged["parsed"].to_numpy(), merged["value"].to_numpy())
        rows.append(
            {
                "reference": name,
                "year": year,
                "mean_error": float(np.mean(errors)),
                "answers": len(merged),
                "delta_vs_default": float(np.mean(errors - merged["error"].to_numpy())),
            }
        )
    return pd.DataFrame(rows)


def best_matching_year(by_year: pd.DataFrame, paired: bool = False) -> int | None:
    """The year whose values the answers match best: lowest mean error (the paper), or with ``paired``
    the lowest error relative to the default rule on the same answers."""
    years = by_year.dropna(subset=["year"])
    if years.empty:
        return None
    column = "delta_vs_default" if paired else "mean_error"
    return int(years.loc[years[column].idxmin(), "year"])


def diagnose(
    scores: pd.DataFrame, snapshot: WorldBankSnapshot, trials: int = 10, seed: int = 0, resamples: int = 1000
) -> dict[str, Any]:
    """Everything a person asks of one model's WorldBench run."""
    total = len(scores)
    status = scores["status"].value_counts()
    table = disparity_table(scores, trials=trials, seed=seed, resamples=resamples)
    overall = table[table["indicator"] == "all"].set_index(["categorization", "group"])
    by_year = error_by_year(scores, snapshot)
    citations = citation_check(scores, snapshot)
    summary = {
        "questions": total,
        "parsed": int(status.get("answered", 0)),
        "parse_rate": int(status.get("answered", 0)) / total if total else float("nan"),
        "failed_requests": int(status.get("failed", 0)),
        "unanswered": int(status.get("unanswered", 0)),
        "negative_answers": int((scores["parsed"] < 0).sum()),
        "mean_error": float(scores["error"].mean()),
        "median_error": float(scores["error"].median()),
        "best_matching_year": best_matching_year(by_year),
        "best_matching_year_paired": best_matching_year(by_year, paired=True),
        "citations": len(citations),
        "citation_mean_error": float(citations["error"].mean()) if len(citations) else float("nan"),
        **world_bank_mentions(scores, resamples=resamples, seed=seed),
    }
    for cat, _ in CATEGORIZATIONS:
        for stat in ("mean", "median"):
            rec = overall.loc[(cat, f"disparity_{stat}")]
            summary[f"{cat}_disparity_{stat}"] = float(rec["mean_error"])
            summary[f"{cat}_disparity_{stat}_ci_low"] = float(rec["mean_ci_low"])
            summary[f"{cat}_disparity_{stat}_ci_high"] = float(rec["mean_ci_high"])
            summary[f"{cat}_baseline_{stat}"] = float(rec["baseline"])
            summary[f"{cat}_baseline_shuffled_labels_{stat}"] = float(rec["baseline_shuffled_labels"])
    excluded = scores.loc[scores["status"] != "answered", ["question_id", "status", "response", "response_error"]]
    return {
        "summary": summary,
        "disparity": table,
        "by_year": by_year,
        "citations": citations,
        "countries": per_country(scores),
        "excluded": excluded.reset_index(drop=True),
    }
