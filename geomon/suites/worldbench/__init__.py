"""WorldBench (Moayeri et al.): World Bank indicators of every country, asked of each model.

The benchmark's folder: ``prompts.py`` (snapshot → one prompt per indicator and country), ``scoring.py``
(responses → parsed numbers and errors; the per-country items the history compares), ``diagnostics.py``
(scores → per-group errors, disparity, random baseline, citation hallucination and the best-matching data year)
and ``report.py`` (its page). This module declares the suite: ``SUITE``, ``TRACKED`` and ``PIPELINE``.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import pandas as pd

from geomon.sources.worldbank import WorldBankSnapshot
from geomon.stats.declarations import TrackedMetric, undeclared
from geomon.stats.statistics import Mean, Range, Ratio
from geomon.suites.pipeline import (
    DriftProbe,
    Markdown,
    Option,
    Pipeline,
    Stage,
    StageCheck,
    StageResult,
    Tracked,
    responses_stage,
)
from geomon.suites.registry import Headline, RunOption, SuiteInfo
from geomon.suites.worldbench import diagnostics, prompts, scoring
from geomon.suites.worldbench.diagnostics import diagnose
from geomon.suites.worldbench.prompts import (
    build_prompts,
    prompt_variant,
    prompts_expectations,
    requests_for,
    sample_countries,
)
from geomon.suites.worldbench.scoring import items, score

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

    report = quality.validate(prompts, "worldbench_prompts", prompts_expectations())
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
    from geomon.suites.worldbench.report import write_report

    return write_report(out, board, results, PIPELINE.leaderboard_columns)


def _pipeline() -> Pipeline:
    from geomon import parsing
    from geomon.stats import disparity as disparity_stats

    # a stage is versioned by the benchmark's code it runs (the folder's rooms, not its report page)
    code = (sys.modules[__name__], prompts, scoring, diagnostics)
    reading = (*code, parsing, disparity_stats)
    return Pipeline(
        stages=(
            Stage(
                "prompts",
                _prompts_stage,
                inputs=("worldbank/indicators",),
                versioned_by=code,
                checks=(StageCheck("prompts_complete", blocking=True, evaluate=_prompts_complete),),
                options=(
                    Option("sample_countries", int, 0, "0 = every country; N = N countries spread over the regions"),
                    Option("example_country", str, "CHE", "the example's country (the paper: CHE; also COL, MLI)"),
                    Option("year", int, None, "ask for this year's value instead of the latest"),
                ),
            ),
            dataclasses.replace(responses_stage(requests_for, "question_id"), versioned_by=code),
            Stage(
                "scores",
                _scores_stage,
                inputs=("prompts", "responses"),
                per_model=True,
                versioned_by=reading,
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
                versioned_by=reading,
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
        # the drift probe re-asks a fixed set chosen from the whole question bank (never a run's sample)
        drift_probe=DriftProbe("worldbank/indicators", build_prompts, requests_for),
    )


PIPELINE = _pipeline()
