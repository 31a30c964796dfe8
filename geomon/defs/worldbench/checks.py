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
from geomon.sources.worldbank import WorldBankSnapshot

MIN_COUNTRIES_PER_INDICATOR = 100
MIN_PARSE_RATE = 0.5


@dg.asset_check(asset=dg.AssetKey(["worldbank", "economies"]), blocking=True)
def economies_are_countries(economies: pd.DataFrame) -> dg.AssetCheckResult:
    """No aggregate (World, regions, income groups) among the countries; every country in a region."""
    report = quality.validate(economies, "worldbank_economies", quality.economies_expectations())
    return result(report, countries=len(economies), without_income_group=int(economies["income_group"].isna().sum()))


@dg.asset_check(asset=dg.AssetKey(["worldbank", "indicators"]), blocking=True)
def indicator_values_plausible(indicators: WorldBankSnapshot) -> dg.AssetCheckResult:
    """Percentages within 0–100, other indicators non-negative, enough countries per indicator."""
    wide, expectations = quality.worldbank_expectations(indicators.values, MIN_COUNTRIES_PER_INDICATOR)
    report = quality.validate(wide, "worldbank_values", expectations)
    coverage = wide.drop(columns="iso3").notna().sum()
    return result(
        report,
        min_countries_required=MIN_COUNTRIES_PER_INDICATOR,
        countries_per_indicator=dg.MetadataValue.json({k: int(v) for k, v in coverage.items()}),
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
