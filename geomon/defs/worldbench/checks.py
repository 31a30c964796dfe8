"""Data-quality checks on the WorldBench assets (Great Expectations suites from geomon.quality).

Blocking where bad data would spread: a World Bank table with aggregates among the countries or
impossible values must not produce prompts or disparity tables. The parse-rate check is WARN: a
model that answers badly is a finding, not broken data. Every result carries the failing
expectations with counts and examples.
"""

import dagster as dg
import pandas as pd

from geomon import quality
from geomon.defs.quality_checks import read_rate_above_floor, result
from geomon.defs.resources import models_partitions
from geomon.sources.worldbank import WorldBankSnapshot
from geomon.suites import worldbench

MIN_COUNTRIES_PER_INDICATOR = 100
MIN_PARSE_RATE = 0.5
MAX_COVERAGE_DROP = 0.05
COVERAGE_KEY = "countries_per_indicator"  # recent-value coverage in the asset's metadata


def question_coverage(snapshot: WorldBankSnapshot) -> dict[str, int]:
    """Per indicator, the countries with a value in WorldBench's ground-truth window."""
    return quality.recent_coverage(snapshot.values, worldbench.GROUND_TRUTH_YEARS)


@dg.asset_check(asset=dg.AssetKey(["worldbank", "economies"]), blocking=True)
def economies_are_countries(economies: pd.DataFrame) -> dg.AssetCheckResult:
    """No aggregate (World, regions, income groups) among the countries; every country in a region."""
    report = quality.validate(economies, "worldbank_economies", quality.economies_expectations())
    return result(report, countries=len(economies), without_income_group=int(economies["income_group"].isna().sum()))


@dg.asset_check(asset=dg.AssetKey(["worldbank", "indicators"]), blocking=True)
def indicator_values_plausible(indicators: WorldBankSnapshot) -> dg.AssetCheckResult:
    """Every year's percentages within 0–100, other indicators non-negative, enough countries per indicator."""
    wide, expectations = quality.worldbank_expectations(indicators.values)
    coverage = question_coverage(indicators)
    report = quality.combine(
        "worldbank_values",
        quality.validate(wide, "worldbank_values", expectations),
        quality.validate(
            quality.coverage_frame(coverage),
            "worldbank_coverage",
            quality.coverage_expectations(MIN_COUNTRIES_PER_INDICATOR),
        ),
    )
    return result(
        report,
        min_countries_required=MIN_COUNTRIES_PER_INDICATOR,
        countries_per_indicator=dg.MetadataValue.json(coverage),
    )


@dg.asset_check(asset=dg.AssetKey(["worldbank", "indicators"]), blocking=True)
def coverage_kept(context: dg.AssetCheckExecutionContext, indicators: WorldBankSnapshot) -> dg.AssetCheckResult:
    """No indicator loses more than 5 % of its countries (with a recent value) against the previous materialization.

    A file cut short or a broken export loses countries without an error of its own. If the World Bank
    really published fewer countries, materialize the downstream assets by hand after reading this."""
    current = question_coverage(indicators)
    records = context.instance.fetch_materializations(dg.AssetKey(["worldbank", "indicators"]), limit=2).records
    previous_entry = records[1].asset_materialization.metadata.get(COVERAGE_KEY) if len(records) > 1 else None
    previous = previous_entry.value if previous_entry is not None else None
    drops = quality.coverage_drops(previous, current, MAX_COVERAGE_DROP) if previous else {}
    return dg.AssetCheckResult(
        passed=not drops,
        metadata={
            "dropped": dg.MetadataValue.json(drops),
            "max_drop": MAX_COVERAGE_DROP,
            "previous": dg.MetadataValue.json(previous or {}),
            COVERAGE_KEY: dg.MetadataValue.json(current),
            "compared_with_previous": bool(previous),
        },
        description=(
            "coverage fell: " + "; ".join(f"{k} {v}" for k, v in drops.items())
            if drops
            else "no indicator lost countries against the previous materialization"
            if previous
            else "first materialization: nothing to compare with"
        ),
    )


@dg.asset_check(asset=dg.AssetKey(["worldbench", "prompts"]), blocking=True)
def prompts_complete(prompts: pd.DataFrame) -> dg.AssetCheckResult:
    """Every question has a prompt, a country name and ground truth."""
    report = quality.validate(prompts, "worldbench_prompts", quality.worldbench_prompts_expectations())
    return result(report, questions=len(prompts))


PARSE_RATE_SPEC = dg.AssetCheckSpec(
    "parse_rate_above_floor",
    asset=dg.AssetKey(["worldbench", "scores"]),
    description="A model whose answers mostly cannot be read gives disparity numbers on too few countries.",
    partitions_def=models_partitions,
)


def parse_rate_above_floor(scores: pd.DataFrame) -> dg.AssetCheckResult:
    return read_rate_above_floor(
        scores,
        "parsed",
        MIN_PARSE_RATE,
        PARSE_RATE_SPEC.name,
        rate_name="parse_rate",
        count_name="answers",
        error_column="response_error",
    )
