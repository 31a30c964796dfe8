"""Turning Great Expectations reports (geomon.quality) into Dagster check results, for every suite."""

import dagster as dg

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
