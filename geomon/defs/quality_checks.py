"""Turning Great Expectations reports (geomon.quality) into Dagster check results, for every suite."""

import dagster as dg
import pandas as pd

from geomon import quality


def result(report: quality.QualityReport, check_name: str | None = None, **metadata) -> dg.AssetCheckResult:
    """A check result from a quality report; WARN severity comes through ``metadata['severity']``."""
    severity = metadata.pop("severity", dg.AssetCheckSeverity.ERROR)
    return dg.AssetCheckResult(
        check_name=check_name,
        passed=report.success,
        severity=severity,
        metadata={
            "expectations": report.evaluated,
            "failed_expectations": len(report.failures),
            "failures": dg.MetadataValue.json(report.failures),
            **metadata,
        },
    )


def read_rate_above_floor(
    scores: pd.DataFrame,
    column: str,
    floor: float,
    check_name: str,
    *,
    rate_name: str,
    count_name: str,
    error_column: str,
) -> dg.AssetCheckResult:
    """WARN when fewer than ``floor`` of a model's answers could be read (``column`` not null): a model
    that answers badly is a finding, not broken data. Evaluated inside the partitioned asset, per model
    (a separate check would load every model's partition)."""
    report = quality.validate(scores[[column]], check_name, quality.answered_expectations(column, floor))
    return result(
        report,
        check_name,
        severity=dg.AssetCheckSeverity.WARN,
        **{
            rate_name: float(scores[column].notna().mean()) if len(scores) else 0.0,
            "floor": floor,
            count_name: len(scores),
            "failed_requests": int(scores[error_column].notna().sum()),
        },
    )
