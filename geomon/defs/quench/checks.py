"""Checks on the QUENCH assets: the release is whole (459 entities, every question annotated Indic or not;
blocking), prompts are filled (blocking, inside the prompts asset), and the judges' replies can be read
(WARN, inside the per-model judgements)."""

import dagster as dg
import pandas as pd

from geomon import quality
from geomon.defs.quality_checks import result
from geomon.report import charts
from geomon.sources.quench import QuenchRelease
from geomon.suites import quench

MIN_JUDGE_READ_RATE = 0.5
PROMPTS_SPEC = dg.AssetCheckSpec(
    "prompts_filled",
    asset=dg.AssetKey(["quench", "prompts"]),
    blocking=True,
    description="Every entity-prediction prompt rendered with no unfilled placeholder.",
)
RATIONALE_PROMPTS_SPEC = dg.AssetCheckSpec(
    "rationale_prompts_filled",
    asset=dg.AssetKey(["quench", "rationales"]),
    blocking=True,
    description="Every rationale prompt rendered with no unfilled placeholder.",
)
JUDGES_SPEC = dg.AssetCheckSpec(
    "judge_replies_readable",
    asset=dg.AssetKey(["quench", "judgements"]),
    description=f"At least {MIN_JUDGE_READ_RATE:.0%} of the judges' replies give a verdict or a score.",
)


@dg.asset_check(asset=dg.AssetKey(["quench", "question_bank"]), blocking=True, required_resource_keys={"geomon"})
def release_complete(context: dg.AssetCheckExecutionContext, question_bank: QuenchRelease) -> dg.AssetCheckResult:
    """The release's counts (400 questions, 459 masked entities unless geomon.yaml says otherwise), every
    question with its Indic annotation, every entity with an answer and a rationale."""
    settings = context.resources.geomon.settings().quench
    items = question_bank.items
    report = quality.validate(
        items.assign(annotated=items["indic"].notna()),
        "quench_release",
        quality.quench_release_expectations(settings.expected_entities, settings.expected_questions),
    )
    return result(
        report,
        questions=int(items["question_id"].nunique()),
        entities=len(items),
        indic_questions=question_bank.report["indic_questions"],
        indic_entities=question_bank.report["indic_entities"],
        expected=f"{settings.expected_questions} questions, {settings.expected_entities} entities",
        questions_without_annotation=dg.MetadataValue.json(question_bank.unannotated[:20]),
    )


def prompts_filled(
    prompts: pd.DataFrame, spec: dg.AssetCheckSpec = PROMPTS_SPEC, id_column: str = "prompt_id"
) -> dg.AssetCheckResult:
    unfilled = quench.unfilled_placeholders(prompts, id_column)
    return dg.AssetCheckResult(
        check_name=spec.name,
        passed=not unfilled and (len(prompts) > 0 or spec is not PROMPTS_SPEC),
        metadata={"prompts": len(prompts), "unfilled": len(unfilled), "examples": dg.MetadataValue.json(unfilled[:10])},
    )


def judge_replies_readable(verdicts: pd.DataFrame) -> dg.AssetCheckResult:
    counts = verdicts.groupby(["task", "status"]).size().rename("replies").reset_index() if len(verdicts) else None
    rate = float((verdicts["status"] == "read").mean()) if len(verdicts) else 1.0
    return dg.AssetCheckResult(
        check_name=JUDGES_SPEC.name,
        passed=rate >= MIN_JUDGE_READ_RATE,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "read_rate": rate,
            "floor": MIN_JUDGE_READ_RATE,
            "replies": dg.MetadataValue.md(charts.markdown_table(counts) if counts is not None else "none"),
        },
    )
