"""Data-quality checks on the BorderLines assets, evaluated inside their partitioned assets (a separate
check on a partitioned asset would load every partition); every result carries the numbers behind it."""

import dagster as dg
import pandas as pd

from geomon.sources.borderlines import UNKNOWN, BorderLinesData

MIN_ANSWERED_RATE = 0.5

DISPUTES_SPEC = dg.AssetCheckSpec(
    "disputes_table_valid",
    asset=dg.AssetKey(["wikipedia", "dispute_revisions"]),
    blocking=True,
    description="A broken disputes table must not produce prompts or scores.",
)
PROMPTS_SPEC = dg.AssetCheckSpec(
    "prompts_translated",
    asset=dg.AssetKey(["borderlines", "prompts"]),
    blocking=True,
    description="No empty query; every non-English query differs from its English one (no silent fallback).",
)
ANSWERED_SPEC = dg.AssetCheckSpec(
    "answered_above_floor",
    asset=dg.AssetKey(["borderlines", "scores"]),
    description="Concurrence scores from a model that commits to a claimant in few answers are not comparable.",
)


def disputes_table_valid(disputes: pd.DataFrame, revision: str) -> dg.AssetCheckResult:
    few = disputes[disputes["claimants"].map(len) < 2]
    outside = disputes[
        (disputes["controller"] != UNKNOWN)
        & [c not in names for c, names in zip(disputes["controller"], disputes["claimants"], strict=True)]
    ]
    return dg.AssetCheckResult(
        check_name=DISPUTES_SPEC.name,
        passed=len(disputes) > 0 and few.empty,
        metadata={
            "revision": revision,
            "territories": len(disputes),
            "fewer_than_two_claimants": ", ".join(few["territory"]) or "none",
            # Published that way (Lachin corridor → Artsakh in 2023-05); kept and listed, not fatal.
            "controller_not_a_claimant": ", ".join(outside["territory"]) or "none",
        },
    )


def prompts_translated(prompts: pd.DataFrame, release: BorderLinesData) -> dg.AssetCheckResult:
    empty = prompts[prompts["query"].str.strip() == ""]
    english = prompts[prompts["lang"] == "en"].set_index(["territory", "persona"])["query"]
    native = prompts[prompts["lang"] != "en"]
    untranslated = native[
        [
            english.get((t, p)) == q
            for t, p, q in zip(native["territory"], native["persona"], native["query"], strict=True)
        ]
    ]
    return dg.AssetCheckResult(
        check_name=PROMPTS_SPEC.name,
        passed=len(prompts) > 0 and empty.empty and untranslated.empty,
        metadata={
            "queries": len(prompts),
            "empty": len(empty),
            "identical_to_english": ", ".join(untranslated["query_id"].head(20)) or "none",
            "translation_gaps": len(prompts.attrs.get("gaps", [])),
            "languages_available": len(release.templates),
        },
    )


def answered_above_floor(scores: pd.DataFrame) -> dg.AssetCheckResult:
    rate = float(scores["answer"].notna().mean()) if len(scores) else 0.0
    return dg.AssetCheckResult(
        check_name=ANSWERED_SPEC.name,
        passed=rate >= MIN_ANSWERED_RATE,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "answered_rate": rate,
            "floor": MIN_ANSWERED_RATE,
            "queries": len(scores),
            "failed_requests": int(scores["error"].notna().sum()),
        },
    )
