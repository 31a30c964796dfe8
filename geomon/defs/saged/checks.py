"""Checks on the SAGED assets: every country got the same prompts (blocking, inside the prompts asset) and
the features could be extracted from the responses (WARN, inside the per-model features)."""

import dagster as dg
import pandas as pd

from geomon.suites import saged

MIN_FEATURE_COVERAGE = 0.8
PROMPTS_SPEC = dg.AssetCheckSpec(
    "same_prompts_for_every_country",
    asset=dg.AssetKey(["saged", "prompts"]),
    blocking=True,
    description="Every concept (the root and each country) has every root prompt, branched.",
)
COVERAGE_SPEC = dg.AssetCheckSpec(
    "features_extracted",
    asset=dg.AssetKey(["saged", "features"]),
    description=(
        f"Sentiment, distance (and topic distance when clustered) extracted from at least "
        f"{MIN_FEATURE_COVERAGE:.0%} of the responses."
    ),
)


def same_prompts(branched: pd.DataFrame) -> dg.AssetCheckResult:
    unequal = saged.unequal_prompts(branched)
    return dg.AssetCheckResult(
        check_name=PROMPTS_SPEC.name,
        passed=not unequal and len(branched) > 0,
        metadata={
            "concepts": int(branched["concept"].nunique()) if len(branched) else 0,
            "root_prompts": int(branched["root_id"].nunique()) if len(branched) else 0,
            "concepts_missing_prompts": dg.MetadataValue.json(unequal),
        },
    )


def features_extracted(features: pd.DataFrame) -> dg.AssetCheckResult:
    coverage = {
        f: float(features[f].notna().mean()) if len(features) else 0.0 for f in saged.extracted_features(features)
    }
    return dg.AssetCheckResult(
        check_name=COVERAGE_SPEC.name,
        passed=all(v >= MIN_FEATURE_COVERAGE for v in coverage.values()),
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            **{f"{k}_coverage": v for k, v in coverage.items()},
            "floor": MIN_FEATURE_COVERAGE,
            "status": dg.MetadataValue.json(features["status"].value_counts().to_dict()),
        },
    )
