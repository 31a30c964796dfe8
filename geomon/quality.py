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
from typing import Any

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


def worldbank_expectations(values: pd.DataFrame, min_countries: int) -> tuple[pd.DataFrame, list[Any]]:
    """Values wide (one column per indicator, latest three years): ranges per indicator, coverage."""
    import great_expectations.expectations as gxe

    recent = values[values["year"] > values["year"].max() - 3]
    wide = recent.groupby(["iso3", "indicator"])["value"].last().unstack("indicator").reset_index()
    expectations: list[Any] = [gxe.ExpectColumnValuesToBeUnique(column="iso3")]
    for indicator in wide.columns.drop("iso3"):
        top = 100 if indicator in PERCENT_INDICATORS else None
        expectations.append(gxe.ExpectColumnValuesToBeBetween(column=indicator, min_value=0, max_value=top))
        # Coverage: at least ``min_countries`` countries have a recent value of every indicator.
        share = min(1.0, min_countries / max(len(wide), 1))
        expectations.append(gxe.ExpectColumnValuesToNotBeNull(column=indicator, mostly=share))
    return wide, expectations


def economies_expectations() -> list[Any]:
    """Countries only: no aggregate among them, every country in a region, ISO3 codes."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectColumnValuesToBeUnique(column="iso3"),
        gxe.ExpectColumnValuesToMatchRegex(column="iso3", regex=r"^[A-Z0-9]{3}$"),
        gxe.ExpectColumnValuesToNotBeNull(column="region"),
        gxe.ExpectColumnValuesToNotMatchRegex(column="name", regex=AGGREGATE_NAME),
    ]


def disputes_expectations(previous_size: int | None, collapse_ratio: float = 0.8) -> list[Any]:
    """≥ 2 claimants, controller among the claimants or Unknown, no collapse against the previous version.

    The controller rule allows one exception in a hundred: the 2023-05 table itself has Artsakh controlling
    the Lachin corridor without being a claimant country, and that is kept as published.
    """
    import great_expectations.expectations as gxe

    expectations = [
        gxe.ExpectColumnValuesToBeUnique(column="territory"),
        gxe.ExpectColumnValuesToBeBetween(column="claimant_count", min_value=2),
        gxe.ExpectColumnValuesToBeInSet(column="controller_is_claimant_or_unknown", value_set=[True], mostly=0.99),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
    ]
    if previous_size:
        expectations.append(gxe.ExpectTableRowCountToBeBetween(min_value=int(previous_size * collapse_ratio)))
    return expectations


def disputes_frame(disputes: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "territory": disputes["territory"],
            "claimant_count": disputes["claimants"].map(len),
            "controller_is_claimant_or_unknown": [
                c == "Unknown" or c in names
                for c, names in zip(disputes["controller"], disputes["claimants"], strict=True)
            ],
        }
    )


def prompts_expectations(languages: list[str]) -> list[Any]:
    """No empty query, known languages only, and no non-English query identical to its English one."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectColumnValuesToBeUnique(column="query_id"),
        gxe.ExpectColumnValuesToMatchRegex(column="query", regex=r"\S"),
        gxe.ExpectColumnValuesToMatchRegex(column="system", regex=r"\S"),
        gxe.ExpectColumnValuesToBeInSet(column="lang", value_set=languages),
        gxe.ExpectColumnValuesToBeInSet(column="same_as_english", value_set=[False]),
    ]


def prompts_frame(prompts: pd.DataFrame) -> pd.DataFrame:
    english = prompts[prompts["lang"] == "en"].set_index(["territory", "persona"])["query"]
    same = [
        lang != "en" and english.get((t, p)) == q
        for t, p, lang, q in zip(
            prompts["territory"], prompts["persona"], prompts["lang"], prompts["query"], strict=True
        )
    ]
    return prompts[["query_id", "query", "system", "lang"]].assign(same_as_english=same)


def worldbench_prompts_expectations() -> list[Any]:
    """Every question has a prompt text, a country and finite ground truth; ids are unique."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectColumnValuesToBeUnique(column="question_id"),
        gxe.ExpectColumnValuesToMatchRegex(column="prompt", regex=r"\S"),
        gxe.ExpectColumnValuesToMatchRegex(column="country", regex=r"\S"),
        gxe.ExpectColumnValuesToNotBeNull(column="ground_truth"),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
    ]


def answered_expectations(column: str, floor: float) -> list[Any]:
    """A model's answers: at least ``floor`` of them read (parsed / committed to a claimant)."""
    import great_expectations.expectations as gxe

    return [gxe.ExpectColumnValuesToNotBeNull(column=column, mostly=floor)]


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


def quench_release_expectations(entities: int | None, questions: int | None) -> list[Any]:
    """QUENCH's release is whole: its entity and question counts (when known), every question annotated
    Indic or not, every entity with an answer and a rationale to judge against."""
    import great_expectations.expectations as gxe

    expectations: list[Any] = [
        gxe.ExpectColumnValuesToBeInSet(column="annotated", value_set=[True]),
        gxe.ExpectColumnValueLengthsToBeBetween(column="answer", min_value=1),
        gxe.ExpectColumnValueLengthsToBeBetween(column="rationale", min_value=1),
    ]
    if entities is not None:
        expectations.append(gxe.ExpectTableRowCountToEqual(value=entities))
    if questions is not None:
        expectations.append(
            gxe.ExpectColumnUniqueValueCountToBeBetween(column="question_id", min_value=questions, max_value=questions)
        )
    return expectations
