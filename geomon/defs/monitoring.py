"""Wiring the monitor into the suites' assets: every evaluation goes into the metric history, is compared
with the model's previous run (or, for a new model, with its predecessor), and a regression raises an
alert. Also the alert on failed runs. Any suite plugs in with ``track_evaluation``."""

from datetime import UTC, datetime
from typing import Any

import dagster as dg
import pandas as pd

from geomon.config import Settings
from geomon.defs.resources import check_spec
from geomon.monitor import alerts, tracking
from geomon.monitor.history import MetricHistory, MetricValue


def _insufficient(suite: str, metrics: list[MetricValue]) -> dict[str, str]:
    """The overall figures of this evaluation that their sample cannot support (``stats.sufficiency``)."""
    from geomon.stats import sufficiency
    from geomon.suites.registry import suites

    info = suites().get(suite)
    bounds = {h.metric: h.bounds for h in info.headlines} if info is not None else {}
    return {
        m.metric: why
        for m in metrics
        if not m.breakdown and (why := sufficiency.reasons(m.value, m.ci_low, m.ci_high, m.n, bounds.get(m.metric)))
    }


def regression_spec(key: list[str], partitions_def: Any = None) -> dg.AssetCheckSpec:
    """The ``no_regression`` check of a suite's tracked asset (partitioned like it: the UI names the model)."""
    return check_spec(
        "no_regression",
        key,
        partitions_def,
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
    # A regression on a figure its sample cannot support is shown, never alerted on.
    weak = _insufficient(suite, metrics)
    for row in rows:
        row["insufficient_sample"] = weak.get(row["metric"], "")
    regressed = [row for row in rows if row["regressed"] and not row["insufficient_sample"]]
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


def failed_run_subject(run: dg.DagsterRun) -> tuple[str, str]:
    """(suite, partition) of a run: its ``geomon/suite`` tag, else the first asset key it materializes (a
    run launched from the UI carries no geomon tag), else its job's name."""
    suite = run.tags.get("geomon/suite", "")
    if not suite and run.asset_selection:
        suite = sorted(run.asset_selection, key=lambda k: k.to_user_string())[0].path[0]
    return suite or run.job_name, run.tags.get("dagster/partition", "")


@dg.run_failure_sensor(
    name="alert_on_run_failure", minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING
)
def alert_on_run_failure(context: dg.RunFailureSensorContext) -> None:
    """A failed run pages the same channels as a regression, with the run's link and error."""
    from geomon.config import load_settings

    settings = load_settings()
    run = context.dagster_run
    error = context.failure_event.message if context.failure_event else "unknown error"
    suite, partition = failed_run_subject(run)
    alerts.send(
        alerts.Alert(
            kind="run_failed",
            title=f"{suite}: run for {partition} failed" if partition else f"{suite}: run {run.job_name} failed",
            summary=error[:500],
            model=partition,
            suite=suite,
            url=f"{settings.alerts.ui_url.rstrip('/')}/runs/{run.run_id}",
            numbers={"run_id": run.run_id, "job": run.job_name, "partition": partition},
        ),
        settings.alerts,
    )
