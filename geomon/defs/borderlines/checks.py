"""Data-quality checks on the BorderLines assets (Great Expectations suites from geomon.quality), evaluated
inside their partitioned assets (a separate check on a partitioned asset would load every partition).

The disputes table and the prompts are blocking: a broken table or untranslated queries must not reach
models or scores. The answered-rate check is WARN: a model that rarely commits is a finding."""

import dagster as dg
import pandas as pd

from geomon import quality
from geomon.defs.quality_checks import read_rate_above_floor, result
from geomon.defs.resources import check_spec, model_revision_partitions
from geomon.sources.borderlines import BorderLinesData, unaccounted_rows

MIN_ANSWERED_RATE = 0.5

DISPUTES_SPEC = dg.AssetCheckSpec(
    "disputes_table_valid",
    asset=dg.AssetKey(["wikipedia", "dispute_revisions"]),
    blocking=True,
    description=(
        "≥ 2 claimants, controller among them or Unknown, claimants with country info (the release's own quirks "
        "named in geomon.sources.borderlines), no collapse against the previous revision."
    ),
)
PROMPTS_SPEC = dg.AssetCheckSpec(
    "prompts_translated",
    asset=dg.AssetKey(["borderlines", "prompts"]),
    blocking=True,
    description="No empty query; every non-English query differs from its English one (no silent fallback).",
)
ANSWERED_SPEC = check_spec(
    "answered_above_floor",
    ["borderlines", "scores"],
    model_revision_partitions,
    description="Concurrence scores from a model that commits to a claimant in few answers are not comparable.",
)


def disputes_table_valid(
    disputes: pd.DataFrame, countries: dict[str, dict], revision: str, previous: tuple[str, int] | None
) -> dg.AssetCheckResult:
    """``previous``: the key and size of the latest earlier revision evaluated, if any."""
    report = quality.validate(
        unaccounted_rows(disputes, countries),
        "disputes_table",
        quality.disputes_expectations(previous and previous[1]),
    )
    return result(
        report,
        DISPUTES_SPEC.name,
        revision=revision,
        territories=len(disputes),
        previous_revision=previous[0] if previous else "none",
        previous_territories=previous[1] if previous else 0,
    )


def prompts_translated(prompts: pd.DataFrame, release: BorderLinesData) -> dg.AssetCheckResult:
    report = quality.validate(
        quality.prompts_frame(prompts), "borderlines_prompts", quality.prompts_expectations(sorted(release.templates))
    )
    return result(report, PROMPTS_SPEC.name, queries=len(prompts), translation_gaps=len(prompts.attrs.get("gaps", [])))


def answered_above_floor(scores: pd.DataFrame) -> dg.AssetCheckResult:
    return read_rate_above_floor(
        scores,
        "answer",
        MIN_ANSWERED_RATE,
        ANSWERED_SPEC.name,
        rate_name="answered_rate",
        count_name="queries",
        error_column="error",
    )
