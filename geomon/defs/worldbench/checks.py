"""Data-quality checks on the WorldBench assets; every result carries the numbers that explain it."""

import dagster as dg
import numpy as np
import pandas as pd

from geomon.sources.worldbank import WorldBankSnapshot

PERCENT_INDICATORS = {
    "SL.UEM.TOTL.ZS",
    "SG.GEN.PARL.ZS",
    "EG.ELC.ACCS.ZS",
    "AG.LND.AGRI.ZS",
    "EG.FEC.RNEW.ZS",
    "SE.XPD.TOTL.GD.ZS",
}
MIN_COUNTRIES_PER_INDICATOR = 100
MIN_PARSE_RATE = 0.5


@dg.asset_check(asset=dg.AssetKey(["worldbank", "economies"]), blocking=True)
def economies_are_countries(economies: pd.DataFrame) -> dg.AssetCheckResult:
    """No aggregate (World, regions, income groups) among the countries; every country has a region."""
    no_region = economies["region"].isna() | (economies["region"].astype(str).str.strip() == "")
    aggregate_names = economies["name"].str.contains(r"\b(?:income|World|IDA|IBRD|dividend|total)\b", regex=True)
    bad = economies[no_region | aggregate_names]
    return dg.AssetCheckResult(
        passed=bad.empty,
        metadata={
            "countries": len(economies),
            "suspect_rows": len(bad),
            "suspects": ", ".join(bad["iso3"].head(20)) or "none",
            "without_income_group": int(economies["income_group"].isna().sum()),
        },
    )


@dg.asset_check(asset=dg.AssetKey(["worldbank", "indicators"]), blocking=True)
def indicator_values_plausible(indicators: WorldBankSnapshot) -> dg.AssetCheckResult:
    """Percentages within 0–100, other indicators non-negative, and enough countries per indicator."""
    values = indicators.values
    pct = values[values["indicator"].isin(PERCENT_INDICATORS)]
    out_of_range = int(((pct["value"] < 0) | (pct["value"] > 100)).sum())
    negative = int((values.loc[~values["indicator"].isin(PERCENT_INDICATORS), "value"] < 0).sum())
    coverage = values[values["year"] > indicators.latest_year - 3].groupby("indicator")["iso3"].nunique()
    thin = {k: int(v) for k, v in coverage.items() if v < MIN_COUNTRIES_PER_INDICATOR}
    return dg.AssetCheckResult(
        passed=out_of_range == 0 and negative == 0 and not thin and bool(np.isfinite(values["value"]).all()),
        metadata={
            "percent_values_out_of_range": out_of_range,
            "negative_values": negative,
            "indicators_with_few_countries": dg.MetadataValue.json(thin),
            "min_countries_required": MIN_COUNTRIES_PER_INDICATOR,
            "countries_per_indicator": dg.MetadataValue.json({k: int(v) for k, v in coverage.items()}),
        },
    )


@dg.asset_check(asset=dg.AssetKey(["worldbench", "prompts"]), blocking=True)
def prompts_complete(prompts: pd.DataFrame) -> dg.AssetCheckResult:
    """Every question has a prompt, a country name and finite ground truth."""
    empty = int((prompts["prompt"].str.strip() == "").sum() + (prompts["country"].str.strip() == "").sum())
    bad_truth = int((~np.isfinite(prompts["ground_truth"])).sum())
    duplicates = int(prompts["question_id"].duplicated().sum())
    return dg.AssetCheckResult(
        passed=len(prompts) > 0 and empty == 0 and bad_truth == 0 and duplicates == 0,
        metadata={
            "questions": len(prompts),
            "empty_prompts": empty,
            "non_finite_ground_truth": bad_truth,
            "duplicate_ids": duplicates,
        },
    )


PARSE_RATE_SPEC = dg.AssetCheckSpec(
    "parse_rate_above_floor",
    asset=dg.AssetKey(["worldbench", "scores"]),
    description="A model whose answers mostly cannot be read gives disparity numbers on too few countries.",
)


def parse_rate_above_floor(scores: pd.DataFrame) -> dg.AssetCheckResult:
    """Evaluated inside the partitioned scores asset, per model (a separate check would load every model)."""
    rate = float(scores["parsed"].notna().mean()) if len(scores) else 0.0
    return dg.AssetCheckResult(
        check_name=PARSE_RATE_SPEC.name,
        passed=rate >= MIN_PARSE_RATE,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "parse_rate": rate,
            "floor": MIN_PARSE_RATE,
            "answers": len(scores),
            "failed_requests": int(scores["response_error"].notna().sum()),
        },
    )
