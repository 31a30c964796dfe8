"""Checks on the Gapminder assets: the question bank is sound (blocking), prompts are filled (blocking,
inside the prompts asset), and judges' replies can be read (WARN, inside the per-model judgements)."""

import dagster as dg
import pandas as pd

from geomon import quality
from geomon.defs.quality_checks import result
from geomon.sources.gapminder import GapminderData
from geomon.suites import gapminder

MIN_JUDGE_READ_RATE = 0.5
PROMPTS_SPEC = dg.AssetCheckSpec(
    "prompts_filled",
    asset=dg.AssetKey(["gapminder", "prompts"]),
    blocking=True,
    description="Every prompt rendered with no unfilled placeholder.",
)
JUDGES_SPEC = dg.AssetCheckSpec(
    "judge_replies_readable",
    asset=dg.AssetKey(["gapminder", "judgements"]),
    description=f"At least {MIN_JUDGE_READ_RATE:.0%} of the judges' replies name a verdict.",
)


AGREEMENT_SPEC = dg.AssetCheckSpec(
    "judge_agreement_stable",
    asset=dg.AssetKey(["gapminder", "rates"]),
    description="The judges' Fleiss' kappa did not fall by 0.2 or more since the model's previous run.",
)


@dg.asset_check(asset=dg.AssetKey(["gapminder", "question_bank"]), blocking=True)
def one_correct_option(question_bank: GapminderData) -> dg.AssetCheckResult:
    """Every question has three options and exactly one correct option."""
    frame = quality.question_bank_frame(question_bank.options).reset_index()
    report = quality.validate(frame, "gapminder_question_bank", quality.question_bank_expectations())
    return result(report, questions=int(frame["question_id"].nunique()))


def prompts_filled(prompts: pd.DataFrame) -> dg.AssetCheckResult:
    unfilled = gapminder.unfilled_placeholders(prompts)
    return dg.AssetCheckResult(
        check_name=PROMPTS_SPEC.name,
        passed=not unfilled and len(prompts) > 0,
        metadata={"prompts": len(prompts), "unfilled": len(unfilled), "examples": dg.MetadataValue.json(unfilled[:10])},
    )


def judge_replies_readable(verdicts: pd.DataFrame) -> dg.AssetCheckResult:
    counts = verdicts["status"].value_counts().to_dict() if len(verdicts) else {}
    rate = counts.get("read", 0) / len(verdicts) if len(verdicts) else 1.0
    return dg.AssetCheckResult(
        check_name=JUDGES_SPEC.name,
        passed=rate >= MIN_JUDGE_READ_RATE,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"read_rate": float(rate), "floor": MIN_JUDGE_READ_RATE, "replies": dg.MetadataValue.json(counts)},
    )
