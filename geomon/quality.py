"""Data-quality expectations (Great Expectations 1.x) on geomon's tables, run in-process on DataFrames.

Each ``*_expectations`` function states what a table must satisfy; ``validate`` runs them through an
ephemeral GX context and returns a report whose failures name the expectation, the column, how many
rows broke it and examples — the numbers a Dagster check result carries.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

import pandas as pd

PERCENT_INDICATORS = {
    "SL.UEM.TOTL.ZS",
    "SG.GEN.PARL.ZS",
    "EG.ELC.ACCS.ZS",
    "AG.LND.AGRI.ZS",
    "EG.FEC.RNEW.ZS",
    "SE.XPD.TOTL.GD.ZS",
}
AGGREGATE_NAME = r"\b(?:income|World|IDA|IBRD|dividend|total|Euro area|members|countries|small states)\b"


@dataclass
class QualityReport:
    name: str
    success: bool
    evaluated: int
    failures: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class CheckOutcome:
    """What a check found: the asset check a stage of a suite (or its separate check) reports."""

    name: str
    passed: bool
    metadata: dict[str, Any] = field(default_factory=dict)
    severity: Literal["error", "warn"] = "error"


def outcome(report: QualityReport, check_name: str, **metadata: Any) -> CheckOutcome:
    """A declared suite's check outcome from a quality report (the failures listed, counted)."""
    return CheckOutcome(
        check_name,
        passed=report.success,
        metadata={
            "expectations": report.evaluated,
            "failed_expectations": len(report.failures),
            "failures": report.failures,
            **metadata,
        },
    )


@cache
def _context() -> Any:
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx

    # GX pins this module's logger at INFO, so "Created temporary directory …" reaches every run's log
    # whatever the "great_expectations" logger is set to; let it inherit instead.
    logging.getLogger("great_expectations.data_context.types.base").setLevel(logging.NOTSET)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = {"globally": False}
    return context


def validate(frame: pd.DataFrame, name: str, expectations: list[Any]) -> QualityReport:
    """Run ``expectations`` (great_expectations.expectations objects) on ``frame``."""
    import great_expectations as gx

    context = _context()
    source = context.data_sources.add_or_update_pandas(f"geomon-{name}")
    asset = source.add_dataframe_asset(name)
    batch = asset.add_batch_definition_whole_dataframe("whole").get_batch(batch_parameters={"dataframe": frame})
    suite = gx.ExpectationSuite(name=name, expectations=expectations)
    result = batch.validate(suite)
    failures = []
    for item in result.results:
        if item.success:
            continue
        config = item.expectation_config
        details = item.result or {}
        failures.append(
            {
                "expectation": config.type,
                "column": config.kwargs.get("column", ""),
                "unexpected_count": details.get("unexpected_count"),
                "unexpected_percent": details.get("unexpected_percent"),
                "examples": [str(v) for v in (details.get("partial_unexpected_list") or [])[:10]],
                "observed": str(details.get("observed_value")) if details.get("observed_value") is not None else None,
            }
        )
    return QualityReport(name, bool(result.success), len(result.results), failures)


def worldbank_expectations(values: pd.DataFrame) -> tuple[pd.DataFrame, list[Any]]:
    """Every value of every year, one row per (country, year) and one column per indicator: percentages
    within 0–100, the rest non-negative. Every year, not the latest value only: WorldBench's ground truth
    averages the last three years and its year variant asks any year."""
    import great_expectations.expectations as gxe

    wide = values.pivot_table(index=["iso3", "year"], columns="indicator", values="value", aggfunc="first")
    wide = wide.reset_index()
    wide.columns.name = None
    expectations: list[Any] = [gxe.ExpectCompoundColumnsToBeUnique(column_list=["iso3", "year"])]
    for indicator in wide.columns.drop(["iso3", "year"]):
        top = 100 if indicator in PERCENT_INDICATORS else None
        expectations.append(gxe.ExpectColumnValuesToBeBetween(column=indicator, min_value=0, max_value=top))
    return wide, expectations


def recent_coverage(values: pd.DataFrame, years: int) -> dict[str, int]:
    """Per indicator, the countries with a value in the latest ``years`` years (WorldBench's ground-truth
    window: the questions it can ask)."""
    recent = values[values["year"] > values["year"].max() - years]
    return {str(k): int(v) for k, v in recent.groupby("indicator")["iso3"].nunique().items()}


def coverage_expectations(min_countries: int) -> list[Any]:
    """On ``coverage_frame``: at least ``min_countries`` countries per indicator."""
    import great_expectations.expectations as gxe

    return [gxe.ExpectColumnValuesToBeBetween(column="countries", min_value=min_countries)]


def coverage_frame(coverage: dict[str, int]) -> pd.DataFrame:
    return pd.DataFrame({"indicator": list(coverage), "countries": list(coverage.values())})


def coverage_drops(previous: dict[str, int], current: dict[str, int], max_drop: float) -> dict[str, str]:
    """Indicators whose country coverage fell by more than ``max_drop`` (a share) against the previous
    snapshot, or that vanished: a cut or corrupted file loses countries without any error of its own."""
    drops = {}
    for indicator, before in previous.items():
        now = current.get(indicator, 0)
        if before and (before - now) / before > max_drop:
            drops[indicator] = f"{before} → {now} countries"
    return drops


def combine(name: str, *reports: QualityReport) -> QualityReport:
    """One report from several validations of the same asset (different frames)."""
    return QualityReport(
        name,
        all(r.success for r in reports),
        sum(r.evaluated for r in reports),
        [failure for r in reports for failure in r.failures],
    )


def economies_expectations() -> list[Any]:
    """Countries only: no aggregate among them, every country in a region, ISO3 codes."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectColumnValuesToBeUnique(column="iso3"),
        gxe.ExpectColumnValuesToMatchRegex(column="iso3", regex=r"^[A-Z0-9]{3}$"),
        gxe.ExpectColumnValuesToNotBeNull(column="region"),
        gxe.ExpectColumnValuesToNotMatchRegex(column="name", regex=AGGREGATE_NAME),
    ]


def answered_expectations(column: str, floor: float) -> list[Any]:
    """A model's answers: at least ``floor`` of them read (parsed / committed to a claimant)."""
    import great_expectations.expectations as gxe

    return [gxe.ExpectColumnValuesToNotBeNull(column=column, mostly=floor)]


def read_rate_outcome(
    answers: pd.DataFrame, column: str, floor: float, check_name: str, *, rate_name: str, count_name: str, error: str
) -> Any:
    """The WARN check that at least ``floor`` of a model's answers could be read (``column`` not null): a
    model that answers badly is a finding, not broken data. ``error``: the column of failed requests."""
    report = validate(answers[[column]], check_name, answered_expectations(column, floor))
    check = outcome(
        report,
        check_name,
        **{
            rate_name: float(answers[column].notna().mean()) if len(answers) else 0.0,
            "floor": floor,
            count_name: len(answers),
            "failed_requests": int(answers[error].notna().sum()),
        },
    )
    check.severity = "warn"
    return check


def question_bank_frame(options: pd.DataFrame) -> pd.DataFrame:
    """Per (question, language): how many options there are and how many are marked correct."""
    grouped = options.groupby(["question_id", "language"])["correctness"]
    return pd.DataFrame({"options": grouped.size(), "correct_options": grouped.apply(lambda c: int((c == 1).sum()))})


def question_bank_expectations() -> list[Any]:
    """Every question has three options and exactly one correct one (Gapminder's 1/2/3 levels)."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectColumnValuesToBeBetween(column="correct_options", min_value=1, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="options", min_value=3, max_value=3),
    ]
