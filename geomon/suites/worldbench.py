"""WorldBench (Moayeri et al.): World Bank indicators of every country, asked of each model.

A suite is data + three functions: ``build_prompts`` (snapshot → one prompt per indicator and
country), ``score`` (responses → parsed numbers and errors) and ``diagnose`` (scores → per-group
errors, disparity, random baseline, citation hallucination and the best-matching data year).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pandas as pd

from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.parsing import find_citation, mentions_world_bank, parse_number_detail
from geomon.sources.worldbank import DEFAULT_INDICATORS, WorldBankSnapshot
from geomon.stats.declarations import TrackedMetric, undeclared
from geomon.stats.disparity import abs_rel_error, disparity, group_errors, group_ranks, random_baseline
from geomon.stats.statistics import Mean, Range, Ratio
from geomon.stats.uncertainty import group_gaps, mean_difference
from geomon.suites.pipeline import Markdown, Option, Pipeline, Stage, StageCheck, StageResult, Tracked, responses_stage
from geomon.suites.registry import Headline, RunOption, SuiteInfo, status_of

SUITE = SuiteInfo(
    name="worldbench",
    title="WorldBench",
    spec="Moayeri et al., WorldBench (seeds/worldbench.txt)",
    headlines=(
        Headline("region_disparity_mean", "WorldBench: region disparity (max − min mean error)"),
        Headline("income_group_disparity_mean", "WorldBench: income-group disparity"),
        Headline("mean_error", "WorldBench: mean absolute relative error", bounds=(0, 1)),
        Headline("best_matching_year", "WorldBench: best-matching data year (knowledge recency)"),
        Headline("parse_rate", "WorldBench: share of questions answered with a number", bounds=(0, 1)),
    ),
    options=(
        RunOption(
            "--sample",
            "WorldBench: ask about N countries spread over the regions (0 = all; default: the profile's)",
            int,
            None,
            "sample_countries",
        ),
        RunOption(
            "--year", "WorldBench: ask for a given year's value (the paper's 2016/2021 variant)", int, None, "year"
        ),
        RunOption(
            "--example-country",
            "WorldBench: ISO3 of the example country (default CHE; also COL, MLI)",
            str,
            None,
            "example_country",
        ),
    ),
    order=1,
    sample="parsed",
    unit=("iso3",),
    profiles={"quick": {"sample_countries": 8}, "default": {"sample_countries": 218}},
)

CODE_VERSION = "worldbench-1"
EXAMPLE_COUNTRIES = {"CHE": "Switzerland", "COL": "Colombia", "MLI": "Mali"}
GROUND_TRUTH_YEARS = 3
YEARS_FOR_RECENCY = 10  # the citation cross-check and the by-year curve look this far back
RECENT_WINDOW_YEARS = 5  # "most recent" values: countries without any in the past five years are left out
CATEGORIZATIONS = (("region", 7), ("income_group", 4))  # the paper's k for its random baseline
MAX_TOKENS = 20  # a number, maybe with a unit or a citation; the paper asks for the number only

BASE_INSTRUCTION = (
    "I will ask you factual questions about countries. Specifically, I will ask you for the {indicator}. "
    "You will answer as concisely as possible - only answer with the number! First I will give an example "
    "with the answer. Then I will ask you my question, and you will provide the answer in the same way."
)
ACK = "Sounds good, will do."
QUESTION = (
    "What is the {indicator} for the country {country}{year}? Do not answer in a complete sentence "
    "- only provide the number!"
)


class PromptError(ValueError):
    pass


def ground_truth(snapshot: WorldBankSnapshot, year: int | None = None) -> pd.DataFrame:
    """(indicator, iso3, ground_truth, gt_years): mean of the values in the snapshot's latest three
    years, or the single value of ``year``. Pairs without data are absent (counted by the caller)."""
    values = snapshot.values
    if year is None:
        first = snapshot.latest_year - GROUND_TRUTH_YEARS + 1
        window = values[values["year"] >= first]
    else:
        window = values[values["year"] == year]
    grouped = window.groupby(["indicator", "iso3"])
    out = grouped["value"].mean().rename("ground_truth").to_frame()
    out["gt_years"] = grouped["year"].apply(lambda y: ",".join(str(v) for v in sorted(y)))
    return out.reset_index()


def prompt_variant(example_country: str = "CHE", year: int | None = None) -> str:
    """The prompt variant a run asked: regression checks compare runs of the same variant only."""
    return f"example={example_country},year={year or 'latest'}"


def format_value(value: float) -> str:
    """How the example answer is written: thousands separators for large numbers."""
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.2f}".rstrip("0").rstrip(".")


def build_prompts(
    snapshot: WorldBankSnapshot,
    indicators: dict[str, str] | None = None,
    example_country: str = "CHE",
    year: int | None = None,
    countries: list[str] | None = None,
) -> pd.DataFrame:
    """One row per (indicator, iso3) with ground truth (public, DESIGN.md).

    Columns: question_id, indicator, iso3, country, region, income_group, ground_truth, gt_years,
    year, variant (``prompt_variant``), messages (chat form, Figure 4 of the paper) and prompt (the
    equivalent completion prompt for base models). ``year`` asks "… in 2016" and takes that year's value
    as ground truth. ``attrs["skipped"]`` counts the pairs left out for lack of data; ``attrs["indicators_left_out"]``
    names the indicators a year variant cannot ask (no example value that year).
    """
    indicators = indicators or {c: DEFAULT_INDICATORS.get(c, c) for c in snapshot.indicators["indicator"]}
    missing = set(indicators) - set(snapshot.indicators["indicator"])
    if missing:
        raise PromptError(f"indicator(s) {sorted(missing)} are not in snapshot {snapshot.source}")
    economies = snapshot.economies.set_index("iso3")
    if example_country not in economies.index:
        raise PromptError(f"example country {example_country!r} is not an economy of the snapshot")
    truth = ground_truth(snapshot, year)
    truth = truth[truth["indicator"].isin(list(indicators))]
    example_name = economies.loc[example_country, "name"]
    rows = []
    skipped: dict[str, int] = {}
    indicators_left_out: dict[str, str] = {}
    wanted = economies.index if countries is None else pd.Index(countries)
    unknown = set(wanted) - set(economies.index)
    if unknown:
        raise PromptError(f"countries {sorted(unknown)} are not economies of the snapshot")
    year_text = f" in {year}" if year else ""
    variant = prompt_variant(example_country, year)
    for code, phrase in indicators.items():
        by_iso = truth[truth["indicator"] == code].set_index("iso3")
        if example_country not in by_iso.index:
            if year is None:
                raise PromptError(
                    f"example country {example_country} has no value for {code}; choose another example country"
                )
            # A named year may predate or postdate an indicator's data (WDI 2023-12 has no 2021 CO2):
            # that indicator is left out of this variant and reported, not the whole prompt set.
            indicators_left_out[code] = f"{example_country} has no value in {year}"
            continue
        example_value = format_value(float(by_iso.loc[example_country, "ground_truth"]))
        instruction = BASE_INSTRUCTION.format(indicator=phrase)
        example_q = QUESTION.format(indicator=phrase, country=example_name, year=year_text)
        skipped[code] = int(sum(iso not in by_iso.index for iso in wanted if iso != example_country))
        for iso3 in wanted:
            if iso3 == example_country or iso3 not in by_iso.index:
                continue
            econ = economies.loc[iso3]
            question = QUESTION.format(indicator=phrase, country=econ["name"], year=year_text)
            messages = (
                {"role": "user", "content": instruction},
                {"role": "assistant", "content": ACK},
                {"role": "user", "content": example_q},
                {"role": "assistant", "content": example_value},
                {"role": "user", "content": question},
            )
            prompt = f"{instruction}\n\nQuestion: {example_q}\nAnswer: {example_value}\n\nQuestion: {question}\nAnswer:"
            rows.append(
                {
                    "question_id": f"{code}|{iso3}|{year or 'latest'}",
                    "indicator": code,
                    "iso3": iso3,
                    "country": econ["name"],
                    "region": econ["region"],
                    "income_group": econ["income_group"],
                    "ground_truth": float(by_iso.loc[iso3, "ground_truth"]),
                    "gt_years": by_iso.loc[iso3, "gt_years"],
                    "year": year,
                    "variant": variant,
                    "messages": messages,
                    "prompt": prompt,
                }
            )
    if not rows:
        raise PromptError(f"no questions: {indicators_left_out or 'no country has ground truth'}")
    frame = pd.DataFrame(rows)
    frame.attrs["skipped"] = skipped
    frame.attrs["indicators_left_out"] = indicators_left_out
    return frame


def requests_for(prompts: pd.DataFrame, spec: ModelSpec) -> list[GenerationRequest]:
    """Chat models get the messages; base models the completion prompt, stopped at the line's end."""
    params = {"max_tokens": MAX_TOKENS, **spec.params}
    if spec.kind == "chat":
        return [GenerationRequest("chat", messages=m, params=params) for m in prompts["messages"]]
    params["stop"] = ["\n", "Question:"]
    return [GenerationRequest("completion", prompt=p, params=params) for p in prompts["prompt"]]


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
    out["error"] = _errors(out["parsed"].to_numpy(), out["ground_truth"].to_numpy())
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
            y: float(_errors(np.array([rec.parsed]), np.array([values[(rec.indicator, rec.iso3, y)]]))[0])
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
                "error_cited_year": float(_errors(np.array([rec.parsed]), np.array([cited_value]))[0])
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
        errors = _errors(merged["parsed"].to_numpy(), merged["value"].to_numpy())
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


def _errors(parsed: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Absolute relative error with the suite's rule for negative answers (error 1)."""
    return np.where(parsed < 0, 1.0, abs_rel_error(parsed, truth))


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


def sample_countries(snapshot: WorldBankSnapshot, n: int, seed: int = 0) -> list[str]:
    """``n`` countries spread over the regions (round-robin, seeded) for quick looks and tests."""
    rng = np.random.default_rng(seed)
    by_region = {
        region: list(rng.permutation(sorted(group["iso3"]))) for region, group in snapshot.economies.groupby("region")
    }
    picked: list[str] = []
    while len(picked) < n and any(by_region.values()):
        for region in sorted(by_region):
            if by_region[region] and len(picked) < n:
                picked.append(str(by_region[region].pop(0)))
    return sorted(picked)


# --- monitoring: per-item values and the metrics regression checks compare -----------------------


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


_PER_COUNTRY_ERROR = Mean("error_sum", per="answers")  # each country's mean error over its indicators

# The tracked headlines, each declared once (geomon.stats.declarations): value, interval, sample and paired test.
TRACKED = (
    TrackedMetric("mean_error", Ratio("error_sum", "answers"), "item", True, 0.03, bounds=(0, 1)),
    # Whether the model still answers, overall and per region and income group: one that stops answering a
    # region's questions pages (its error is over the answers it still gives, so it would look no worse).
    TrackedMetric(
        "parse_rate",
        Ratio("answered", "asked"),
        "item",
        False,
        0.05,
        by=("region", "income_group"),
        bounds=(0, 1),
    ),
    # The gaps are shown; each region's and income group's mean error (``mean_error``, ``region=…``: the mean of
    # its countries' errors, as the suite reports it) is tested too, and a group that gets worse pages by name.
    TrackedMetric(
        "region_disparity_mean",
        Range(_PER_COUNTRY_ERROR, "region"),
        "item",
        True,
        0.03,
        by=("region",),
        groups_name="mean_error",
    ),
    TrackedMetric(
        "income_group_disparity_mean",
        Range(_PER_COUNTRY_ERROR, "income_group"),
        "item",
        True,
        0.03,
        by=("income_group",),
        groups_name="mean_error",
    ),
)


# --- the suite's graph (built into Dagster assets by geomon.defs.factory) ------------------------------

MIN_PARSE_RATE = 0.5  # below it, a model's disparity rests on too few countries (the check is a WARN)


def _prompts_stage(context: Any, indicators: WorldBankSnapshot) -> StageResult:
    """One question per (indicator, country) with ground truth, in chat and completion form; the sample and
    variant persist until a run sets them again."""
    options = context.options
    sample = options["sample_countries"]
    countries = sample_countries(indicators, sample) if sample else None
    prompts = build_prompts(
        indicators, example_country=options["example_country"], year=options["year"], countries=countries
    )
    skipped = prompts.attrs["skipped"]
    return StageResult(
        prompts,
        metadata={
            "questions": len(prompts),
            "countries": int(prompts["iso3"].nunique()),
            "left_out_without_ground_truth": sum(skipped.values()),
            "left_out_by_indicator": skipped,
            "indicators_left_out": prompts.attrs["indicators_left_out"],
            "example_country": options["example_country"],
            "year": options["year"] or "latest three years",
            "preview": prompts[["question_id", "country", "ground_truth"]].head(5),
        },
    )


def _prompts_complete(context: Any, prompts: pd.DataFrame) -> Any:
    """Every question has a prompt, a country name and ground truth."""
    from geomon import quality

    report = quality.validate(prompts, "worldbench_prompts", quality.worldbench_prompts_expectations())
    return quality.outcome(report, "prompts_complete", questions=len(prompts))


def _scores_stage(context: Any, prompts: pd.DataFrame, responses: pd.DataFrame) -> StageResult:
    """Parsed numbers and absolute relative errors per answer."""
    from geomon import quality

    scores = score(prompts, responses)
    parsed = scores["parsed"].notna()
    check = quality.read_rate_outcome(
        scores,
        "parsed",
        MIN_PARSE_RATE,
        "parse_rate_above_floor",
        rate_name="parse_rate",
        count_name="answers",
        error="response_error",
    )
    return StageResult(
        scores,
        metadata={
            "answers": len(scores),
            "parse_rate": float(parsed.mean()) if len(scores) else 0.0,
            "mean_error": float(scores["error"].mean()),
            "answers_by_status": scores["status"].value_counts().to_dict(),
            "negative_answers_scored_as_error_1": int((scores["parsed"] < 0).sum()),
            "ranges_read_as_midpoint": int(scores["parse_note"].str.contains("range").sum()),
            "world_bank_mentions": int(scores["mentions_world_bank"].sum()),
            "citations": int(scores["cited_year"].notna().sum()),
            "unparsed_examples": scores.loc[~parsed, ["question_id", "response"]].head(5)
            if (~parsed).any()
            else "none",
        },
        checks=[check],
    )


def _disparity_stage(context: Any, scores: pd.DataFrame, indicators: WorldBankSnapshot) -> StageResult:
    """Error per region and income group, disparity vs a random baseline, citations, best-matching year;
    recorded in the metric history and checked for regression."""
    from geomon.report import charts
    from geomon.stats.values import metrics_from_mapping

    result = diagnose(scores, indicators)
    summary = result["summary"]
    table = result["disparity"]
    model = context.model
    numbers = {k: float(v) for k, v in summary.items() if isinstance(v, int | float) and v is not None}
    group_chart = charts.group_error_chart(table, f"WorldBench — {model}")
    year_chart = charts.error_by_year_chart(result["by_year"], f"Which data year do {model}'s answers match?")
    # A run is compared only with runs of the same data snapshot and prompt variant (year, example).
    scope = f"{indicators.version}|{scores['variant'].iloc[0] if len(scores) else prompt_variant()}"
    return StageResult(
        result,
        metadata={
            **numbers,
            "disparity_table": table[table["indicator"] == "all"][
                ["categorization", "group", "mean_error", "mean_ci_low", "mean_ci_high", "countries", "rank"]
            ],
            "excluded_answers": {
                "failed": summary["failed_requests"],
                "unanswered (no number read)": summary["unanswered"],
            },
            "group_error_chart": Markdown(charts.png_markdown(group_chart, "error per region and income group")),
            "error_by_year_chart": Markdown(charts.png_markdown(year_chart, "error by ground-truth year")),
        },
        tracked=Tracked(
            items(scores),
            scope,
            data_version=indicators.version,
            others=undeclared(metrics_from_mapping(numbers, n=len(scores)), TRACKED),
        ),
    )


def _write_report(out: Any, board: pd.DataFrame, results: dict[str, dict[str, Any]], settings: Any) -> Any:
    from geomon.report.worldbench import write_report

    return write_report(out, board, results, PIPELINE.leaderboard_columns)


def _pipeline() -> Pipeline:
    from geomon import parsing
    from geomon.stats import disparity as disparity_stats

    this = sys.modules[__name__]
    scoring = (this, parsing, disparity_stats)
    return Pipeline(
        stages=(
            Stage(
                "prompts",
                _prompts_stage,
                inputs=("worldbank/indicators",),
                checks=(StageCheck("prompts_complete", blocking=True, evaluate=_prompts_complete),),
                options=(
                    Option("sample_countries", int, 0, "0 = every country; N = N countries spread over the regions"),
                    Option("example_country", str, "CHE", "the example's country (the paper: CHE; also COL, MLI)"),
                    Option("year", int, None, "ask for this year's value instead of the latest"),
                ),
            ),
            responses_stage(requests_for, "question_id"),
            Stage(
                "scores",
                _scores_stage,
                inputs=("prompts", "responses"),
                per_model=True,
                versioned_by=scoring,
                checks=(
                    StageCheck(
                        "parse_rate_above_floor",
                        "A model whose answers mostly cannot be read gives disparity numbers on too few countries.",
                    ),
                ),
            ),
            Stage(
                "disparity",
                _disparity_stage,
                inputs=("scores", "worldbank/indicators"),
                per_model=True,
                versioned_by=scoring,
                tracked=True,
            ),
        ),
        write_report=_write_report,
        leaderboard_columns=(
            "parse_rate",
            "mean_error",
            "region_disparity_mean",
            "region_baseline_mean",
            "income_group_disparity_mean",
            "income_group_baseline_mean",
            "best_matching_year",
        ),
        per_model_description="Responses, scores and disparity of one model (a partition of `models`).",
        upstream=("worldbank/economies", "worldbank/indicators"),
    )


PIPELINE = _pipeline()
