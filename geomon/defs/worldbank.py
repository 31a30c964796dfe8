"""The World Bank data as Dagster assets, shared by WorldBench and the drift probe: countries and indicator
values (one multi-asset, data-versioned by the WDI release), and the blocking checks that keep a broken
release from producing prompts or disparity tables: no aggregate among the countries, plausible values,
enough countries per indicator, no coverage lost against the previous materialization."""

import dagster as dg
import pandas as pd

from geomon import quality
from geomon.defs.automation import ANNUAL_DATA, EAGER, wdi_release
from geomon.defs.quality_checks import result
from geomon.defs.resources import GeomonResource
from geomon.defs.versions import source_version, versioned_output
from geomon.sources import worldbank
from geomon.sources.worldbank import DEFAULT_INDICATORS, WorldBankSnapshot

SOURCE_VERSION = source_version(worldbank)


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
            COVERAGE_KEY: dg.MetadataValue.json(question_coverage(snapshot)),
            "countries_without_any_value": ", ".join(report["countries_without_any_value"]) or "none",
            "rows_left_out": dg.MetadataValue.json(report["rows_left_out"]),
            "non_country_codes_left_out": dg.MetadataValue.json(report["non_country_codes"]),
            "source": snapshot.source,
        },
    )


MIN_COUNTRIES_PER_INDICATOR = 100
MAX_COVERAGE_DROP = 0.05
COVERAGE_KEY = "countries_per_indicator"  # recent-value coverage in the asset's metadata


def question_coverage(snapshot: WorldBankSnapshot) -> dict[str, int]:
    """Per indicator, the countries with a value in WorldBench's ground-truth window."""
    return quality.recent_coverage(snapshot.values, worldbank.GROUND_TRUTH_YEARS)


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
