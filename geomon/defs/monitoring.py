"""Wiring the monitor into the suites' assets: every evaluation goes into the metric history, is compared
with the model's previous run (or, for a new model, with its predecessor), and a regression raises an
alert. Also the alert on failed runs. Any suite plugs in with ``track_evaluation``."""

from datetime import UTC, datetime
from typing import Any

import dagster as dg
import pandas as pd

from geomon.config import Settings
from geomon.monitor import alerts, tracking
from geomon.monitor.history import MetricHistory, MetricValue


def regression_spec(key: list[str]) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(
        "no_regression",
        asset=dg.AssetKey(key),
        description="Disparity vs the model's previous run (a new model: vs its registry predecessor), "
        "paired permutation test over the same items plus a minimum effect size.",
    )


def track_evaluation(
    context: dg.AssetExecutionContext,
    settings: Settings,
    asset_key: list[str],
    suite: str,
    model: str,
    metrics: list[MetricValue],
    items: pd.DataFrame,
    regression_metrics: dict[str, tuple[Any, bool, float]],
    scope: str,
    versions: dict[str, str],
) -> dg.AssetCheckResult:
    """Record, compare, alert; returns the ``no_regression`` check result with the numbers."""
    history = MetricHistory(settings.store_url)
    run = context.instance.get_run_record_by_id(context.run.run_id)
    started = datetime.fromtimestamp(run.start_time, UTC) if run is not None and run.start_time else None
    current, comparisons = tracking.track(
        history,
        suite,
        model,
        metrics,
        items,
        regression_metrics,
        scope=scope,
        versions=versions,
        predecessor=settings.model(model).predecessor,
        dagster_run_id=context.run.run_id,
        run_started_at=started,
    )
    rows = [{"against": c.against, **r.as_dict()} for c in comparisons for r in c.results]
    regressed = [row for row in rows if row["regressed"]]
    partition = context.partition_key if context.has_partition_key else None
    delivered: list[str] = []
    # An evaluation another run recorded (the same answers, evaluated at once) was alerted on by that run.
    if regressed and current.dagster_run_id == context.run.run_id:
        worst = max(regressed, key=lambda r: r["effect"])
        alert = alerts.Alert(
            kind="regression",
            title=f"{suite}: {model} regressed on {', '.join(sorted({r['metric'] for r in regressed}))}",
            summary=f"{model} vs {worst['against']} ({scope or 'default scope'}): {worst['metric']} "
            f"{worst['before']:.4g} → {worst['after']:.4g} over {worst['items']} items, p = {worst['p_value']:.3g}.",
            model=model,
            suite=suite,
            url=alerts.asset_url(settings.alerts.ui_url, asset_key, str(partition) if partition else None),
            numbers={k: worst[k] for k in ("metric", "before", "after", "effect", "p_value", "min_effect", "items")},
        )
        delivered = alerts.deliver(alert, settings.alerts)
    return dg.AssetCheckResult(
        check_name="no_regression",
        passed=not regressed,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "evaluation_id": current.evaluation_id,
            "recorded_by_run": current.dagster_run_id,
            "compared_with": ", ".join(sorted({r["against"] for r in rows}))
            or (
                f"unchanged: the same per-item values as evaluation {current.evaluation_id} (nothing new recorded)"
                if current.reused and current.dagster_run_id != context.run.run_id
                else "nothing yet (first run)"
            ),
            "comparisons": dg.MetadataValue.json(rows),
            "regressions": len(regressed),
            "alert": ", ".join(delivered) or "none (no regression)",
        },
    )


@dg.run_failure_sensor(
    name="alert_on_run_failure", minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING
)
def alert_on_run_failure(context: dg.RunFailureSensorContext) -> None:
    """A failed run pages the same channels as a regression, with the run's link and error."""
    from geomon.config import load_settings

    settings = load_settings()
    run = context.dagster_run
    error = context.failure_event.message if context.failure_event else "unknown error"
    alerts.send(
        alerts.Alert(
            kind="run_failed",
            title=f"run of {run.job_name} failed",
            summary=error[:500],
            url=f"{settings.alerts.ui_url.rstrip('/')}/runs/{run.run_id}",
            numbers={"run_id": run.run_id, "partition": run.tags.get("dagster/partition", "")},
        ),
        settings.alerts,
    )
