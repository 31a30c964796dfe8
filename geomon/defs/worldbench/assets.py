"""WorldBench assets: World Bank snapshot → prompts → per-model responses → scores → disparity → leaderboard."""

import dagster as dg
import pandas as pd

from geomon import parsing
from geomon.defs import monitoring
from geomon.defs.automation import ANNUAL_DATA, EAGER, wdi_release
from geomon.defs.engine import ask_model
from geomon.defs.execution import model_call_options
from geomon.defs.leaderboard import leaderboard
from geomon.defs.resources import (
    GeomonResource,
    models_partitions,
    options_metadata,
    persisted_options,
)
from geomon.defs.versions import source_version, versioned_output
from geomon.defs.worldbench import checks
from geomon.monitor.history import MetricValue, metrics_from_mapping
from geomon.report import charts
from geomon.report.worldbench import write_report
from geomon.sources import worldbank
from geomon.sources.worldbank import DEFAULT_INDICATORS, WorldBankSnapshot
from geomon.stats import disparity as disparity_stats
from geomon.suites import worldbench

GROUP = "worldbench"
SOURCE_VERSION = source_version(worldbank)
PROMPT_VERSION = source_version(worldbench)
SCORE_VERSION = source_version(worldbench, parsing, disparity_stats)


class WorldBankConfig(dg.Config):
    indicators: list[str] = list(DEFAULT_INDICATORS)  # noqa: RUF012 - pydantic copies defaults


@dg.multi_asset(
    outs={
        "economies": dg.AssetOut(
            key=["worldbank", "economies"],
            group_name="worldbank",
            code_version=SOURCE_VERSION,
            automation_condition=EAGER,
            freshness_policy=ANNUAL_DATA,
            description="Countries with their World Bank region and income group.",
        ),
        "indicators": dg.AssetOut(
            key=["worldbank", "indicators"],
            group_name="worldbank",
            code_version=SOURCE_VERSION,
            automation_condition=EAGER,
            freshness_policy=ANNUAL_DATA,
            description="Indicator values per country and year (a WorldBankSnapshot).",
        ),
    },
    deps=[wdi_release],
)
def worldbank_snapshot(context: dg.AssetExecutionContext, config: WorldBankConfig, geomon: GeomonResource):
    """The World Bank data: the snapshot directory offline, the live API (wbgapi) otherwise."""
    settings = geomon.settings()
    if settings.worldbank_snapshot is not None:
        snapshot = worldbank.read_snapshot(settings.worldbank_snapshot, config.indicators)
    else:
        snapshot = worldbank.fetch_live(settings.worldbank_api_url, config.indicators)
    report = snapshot.report
    context.log.info("World Bank %s from %s: %s", snapshot.version, snapshot.source, report)
    yield versioned_output(
        snapshot.economies,
        snapshot.version,
        output_name="economies",
        metadata={
            "countries": len(snapshot.economies),
            "aggregates_excluded": len(report["aggregates_excluded"]),
            "without_income_group": ", ".join(report["economies_without_income_group"]) or "none",
            "escaped_labels_fixed": report["escaped_labels_fixed"],
            "source": snapshot.source,
        },
    )
    yield versioned_output(
        snapshot,
        snapshot.version,
        output_name="indicators",
        metadata={
            "values": len(snapshot.values),
            "last_updated": snapshot.last_updated,
            "latest_year": snapshot.latest_year,
            "latest_year_by_indicator": dg.MetadataValue.json(snapshot.latest_years_by_indicator()),
            "values_per_indicator": dg.MetadataValue.json(report["values_per_indicator"]),
            checks.COVERAGE_KEY: dg.MetadataValue.json(checks.question_coverage(snapshot)),
            "countries_without_any_value": ", ".join(report["countries_without_any_value"]) or "none",
            "rows_left_out": dg.MetadataValue.json(report["rows_left_out"]),
            "non_country_codes_left_out": dg.MetadataValue.json(report["non_country_codes"]),
            "source": snapshot.source,
        },
    )


class PromptConfig(dg.Config):
    sample_countries: int = 0  # 0 = every country; N = N countries spread over the regions
    example_country: str = "CHE"  # Switzerland as in the paper; COL and MLI are the alternatives
    year: int | None = None  # ask "... in 2016" instead of the latest value


@dg.asset(
    key=["worldbench", "prompts"],
    group_name=GROUP,
    automation_condition=EAGER,
    code_version=PROMPT_VERSION,
    ins={"snapshot": dg.AssetIn(key=["worldbank", "indicators"])},
)
def worldbench_prompts(
    context: dg.AssetExecutionContext, config: PromptConfig, snapshot: WorldBankSnapshot
) -> dg.Output[pd.DataFrame]:
    """One question per (indicator, country) with ground truth, in chat and completion form; the sample and
    variant persist until a run sets them again (``persisted_options``)."""
    config = persisted_options(context, config)
    countries = worldbench.sample_countries(snapshot, config.sample_countries) if config.sample_countries else None
    prompts = worldbench.build_prompts(
        snapshot, example_country=config.example_country, year=config.year, countries=countries
    )
    skipped = prompts.attrs["skipped"]
    return dg.Output(
        prompts,
        metadata={
            "questions": len(prompts),
            "countries": prompts["iso3"].nunique(),
            "left_out_without_ground_truth": sum(skipped.values()),
            "left_out_by_indicator": dg.MetadataValue.json(skipped),
            "indicators_left_out": dg.MetadataValue.json(prompts.attrs["indicators_left_out"]),
            "example_country": config.example_country,
            "year": config.year or "latest three years",
            **options_metadata(config),
            "preview": dg.MetadataValue.md(
                charts.markdown_table(prompts[["question_id", "country", "ground_truth"]].head(5))
            ),
        },
    )


@dg.asset(
    key=["worldbench", "responses"],
    **model_call_options(),
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=models_partitions,
    code_version=PROMPT_VERSION,
    ins={"prompts": dg.AssetIn(key=["worldbench", "prompts"])},
)
def worldbench_responses(
    context: dg.AssetExecutionContext, geomon: GeomonResource, prompts: pd.DataFrame
) -> dg.Output[pd.DataFrame]:
    """Each model's answers, through the response store: nothing already answered is asked again."""
    settings = geomon.settings()
    spec = settings.model(context.partition_key)
    responses, metadata = ask_model(settings, spec, worldbench.requests_for(prompts, spec))
    responses.insert(0, "question_id", prompts["question_id"].to_numpy())
    return dg.Output(responses, metadata=metadata)


@dg.asset(
    key=["worldbench", "scores"],
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=models_partitions,
    code_version=SCORE_VERSION,
    check_specs=[checks.PARSE_RATE_SPEC],
    ins={
        "prompts": dg.AssetIn(key=["worldbench", "prompts"]),
        "responses": dg.AssetIn(key=["worldbench", "responses"]),
    },
)
def worldbench_scores(prompts: pd.DataFrame, responses: pd.DataFrame):
    """Parsed numbers and absolute relative errors per answer."""
    scores = worldbench.score(prompts, responses)
    parsed = scores["parsed"].notna()
    yield dg.Output(
        scores,
        metadata={
            "answers": len(scores),
            "parse_rate": float(parsed.mean()) if len(scores) else 0.0,
            "mean_error": float(scores["error"].mean()),
            "answers_by_status": dg.MetadataValue.json(scores["status"].value_counts().to_dict()),
            "negative_answers_scored_as_error_1": int((scores["parsed"] < 0).sum()),
            "ranges_read_as_midpoint": int(scores["parse_note"].str.contains("range").sum()),
            "world_bank_mentions": int(scores["mentions_world_bank"].sum()),
            "citations": int(scores["cited_year"].notna().sum()),
            "unparsed_examples": dg.MetadataValue.md(
                charts.markdown_table(scores.loc[~parsed, ["question_id", "response"]].head(5))
                if (~parsed).any()
                else "none"
            ),
        },
    )
    yield checks.parse_rate_above_floor(scores)


@dg.asset(
    key=["worldbench", "disparity"],
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=models_partitions,
    code_version=SCORE_VERSION,
    check_specs=[monitoring.regression_spec(["worldbench", "disparity"], models_partitions)],
    ins={"scores": dg.AssetIn(key=["worldbench", "scores"]), "snapshot": dg.AssetIn(key=["worldbank", "indicators"])},
)
def worldbench_disparity(
    context: dg.AssetExecutionContext, geomon: GeomonResource, scores: pd.DataFrame, snapshot: WorldBankSnapshot
):
    """Error per region and income group, disparity vs a random baseline, citations, best-matching year;
    recorded in the metric history and checked for regression."""
    result = worldbench.diagnose(scores, snapshot)
    summary = result["summary"]
    table = result["disparity"]
    overall = table[(table["indicator"] == "all") & table["rank"].notna()]
    model = context.partition_key
    numbers = {k: float(v) for k, v in summary.items() if isinstance(v, int | float) and v is not None}
    yield dg.Output(
        result,
        metadata={
            **numbers,
            "disparity_table": dg.MetadataValue.md(
                charts.markdown_table(
                    table[table["indicator"] == "all"][
                        ["categorization", "group", "mean_error", "mean_ci_low", "mean_ci_high", "countries", "rank"]
                    ]
                )
            ),
            "excluded_answers": dg.MetadataValue.json(
                {"failed": summary["failed_requests"], "unanswered (no number read)": summary["unanswered"]}
            ),
            "group_error_chart": dg.MetadataValue.md(
                charts.png_markdown(
                    charts.group_error_chart(table, f"WorldBench — {model}"), "error per region and income group"
                )
            ),
            "error_by_year_chart": dg.MetadataValue.md(
                charts.png_markdown(
                    charts.error_by_year_chart(result["by_year"], f"Which data year do {model}'s answers match?"),
                    "error by ground-truth year",
                )
            ),
        },
    )
    metrics = metrics_from_mapping(numbers, n=len(scores))
    metrics += [
        MetricValue(
            "mean_error",
            float(row.mean_error),
            f"{row.categorization}={row.group}",
            _finite(row.mean_ci_low),
            _finite(row.mean_ci_high),
            int(row.countries),
        )
        for row in overall.itertuples()
    ]
    yield monitoring.track_evaluation(
        context,
        geomon.settings(),
        ["worldbench", "disparity"],
        "worldbench",
        model,
        metrics,
        worldbench.items(scores),
        worldbench.REGRESSION_METRICS,
        # A run is compared only with runs of the same data snapshot and prompt variant (year, example).
        scope=f"{snapshot.version}|{scores['variant'].iloc[0] if len(scores) else worldbench.prompt_variant()}",
        versions={"data": snapshot.version, "prompts": PROMPT_VERSION, "code": SCORE_VERSION},
    )


def _finite(value: float) -> float | None:
    return float(value) if pd.notna(value) else None


@dg.asset(
    key=["worldbench", "leaderboard"],
    group_name=GROUP,
    automation_condition=EAGER,
    code_version=SCORE_VERSION,
    ins={"disparity": dg.AssetIn(key=["worldbench", "disparity"], partition_mapping=dg.AllPartitionMapping())},
)
def worldbench_leaderboard(
    context: dg.AssetExecutionContext, geomon: GeomonResource, disparity: dict
) -> dg.Output[pd.DataFrame]:
    """All models side by side, written to the results directory with an HTML report."""
    out_dir = geomon.settings().results_dir / "worldbench"
    columns = (
        "parse_rate",
        "mean_error",
        "region_disparity_mean",
        "region_baseline_mean",
        "income_group_disparity_mean",
        "income_group_baseline_mean",
        "best_matching_year",
    )
    return leaderboard(
        context, "disparity", disparity, lambda board, results: write_report(out_dir, board, results), columns
    )
