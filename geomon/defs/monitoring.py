"""Wiring the monitor into the suites' assets: every evaluation goes into the metric history, is compared
with its baseline in release order and decided with its family (``geomon.monitor.tracking``), and a
regression verdict raises an alert and fails ``no_regression`` until it is superseded or acknowledged.
Also the alert on failed runs. Any suite plugs in with ``track_evaluation``."""

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import dagster as dg
import pandas as pd

from geomon.config import Settings
from geomon.defs.resources import check_spec
from geomon.monitor import alerts, announce, tracking
from geomon.monitor.history import Evaluation, MetricHistory
from geomon.report.charts import markdown_table
from geomon.stats import verdicts
from geomon.stats.declared import TrackedMetric
from geomon.stats.values import MetricValue


def regression_spec(key: list[str], partitions_def: Any = None) -> dg.AssetCheckSpec:
    """The ``no_regression`` check of a suite's tracked asset (partitioned like it: the UI names the model)."""
    return check_spec(
        "no_regression",
        key,
        partitions_def,
        description="The stored verdicts of this evaluation against its baseline (the model's previous run or its "
        "predecessor): one-sided paired sign-flip tests on shared items, decided together by Holm at the "
        "suite's share of the release's α; fails on an unacknowledged regression until a newer evaluation "
        "changes it or someone acknowledges it (geomon alerts ack).",
    )


def track_evaluation(
    context: dg.AssetExecutionContext,
    settings: Settings,
    asset_key: list[str],
    suite: str,
    model: str,
    metrics: list[MetricValue],
    items: pd.DataFrame,
    tracked: Sequence[TrackedMetric],
    scope: str,
    versions: dict[str, str],
    replies: pd.DataFrame | None = None,
) -> dg.AssetCheckResult:
    """Record, decide, tell (``tracking.track`` with ``announce``: the same path as ``geomon import``); returns
    the ``no_regression`` check result with the stored verdicts and what was sent."""
    history = MetricHistory(settings.store_url)
    run = context.instance.get_run_record_by_id(context.run.run_id)
    started = datetime.fromtimestamp(run.start_time, UTC) if run is not None and run.start_time else None
    partition = str(context.partition_key) if context.has_partition_key else None

    def link(evaluation: Evaluation) -> str:
        here = partition if evaluation.model == model else evaluation.model
        return alerts.asset_url(settings.alerts.ui_url, asset_key, here)

    result = tracking.track(
        history,
        suite,
        model,
        metrics,
        items,
        tracked,
        settings.verdicts,
        scope=scope,
        versions=versions,
        predecessor=settings.lineage().get(model),
        dagster_run_id=context.run.run_id,
        run_started_at=started,
        figures_declared=True,  # the factory made them, for the leaderboard's summary
        announcer=announce.announcer(settings.alerts, link),
        replies=replies,
    )
    current = result.evaluation
    open_regressions = tracking.failing(history, current)
    told = result.told.get(current.evaluation_id, [])
    for evaluation in result.redecided:  # a late baseline re-decided later releases: their checks say so now
        for line in result.told.get(evaluation.evaluation_id, []):
            context.log.info(f"{suite}: {evaluation.model} decided again against {model}'s evaluation: {line}")
        redecided_check(
            context, history, asset_key, evaluation, model, result.told.get(evaluation.evaluation_id, []), tracked
        )
    acked = len(result.regressions) - len(open_regressions)
    return dg.AssetCheckResult(
        check_name="no_regression",
        passed=not open_regressions,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "evaluation_id": current.evaluation_id,
            "recorded_by_run": current.dagster_run_id,
            "compared_with": result.against
            or (
                "nothing: no earlier evaluation of this model or its predecessor in this scope"
                if not current.reused
                else f"unchanged: the same per-item values as evaluation {current.evaluation_id}"
            ),
            "verdicts": verdicts.summary(result.verdicts) if result.verdicts else "nothing compared",
            "comparisons": comparisons_table(result.verdicts, tracked),
            "alpha": decided_at(result.verdicts),
            "regressions": len(open_regressions),
            "acknowledged": acked,
            "alert": ", ".join(told) or "none (no regression)",
            "redecided": ", ".join(e.model for e in result.redecided) or "none",
        },
    )


def decided_at(rows: list[dict]) -> str:
    """The α the evaluation's comparisons were decided at, and why where it is 0 (nothing pages: said, not only
    shown as ``watch``)."""
    if not rows:
        return "nothing decided"
    alpha = max(float(r["alpha"] or 0) for r in rows)
    if alpha > 0:
        return f"{alpha:.4g}"
    notes = [p for r in rows for p in str(r["note"]).split("; ") if p.endswith(tracking.NEVER_PAGED)]
    return f"0: {notes[0] if notes else 'no α'}"


def redecided_check(
    context: dg.AssetExecutionContext,
    history: MetricHistory,
    asset_key: list[str],
    evaluation: Evaluation,
    because: str,
    told: list[str],
    tracked: Sequence[TrackedMetric],
) -> None:
    """The ``no_regression`` check of another model's partition, decided again because this run's evaluation became
    its baseline: reported as a runless check evaluation, so that partition's check in the UI fails (or passes)
    now, not at its next materialization."""
    key = context.partition_key if context.has_partition_key else None
    if isinstance(key, dg.MultiPartitionKey):
        partition: str | None = dg.MultiPartitionKey({**key.keys_by_dimension, "model": evaluation.model})
    else:
        partition = evaluation.model if key is not None else None
    now = tracking.stored(history, evaluation)
    failing = tracking.failing(history, evaluation)
    context.instance.report_runless_asset_event(
        dg.AssetCheckEvaluation(
            asset_key=dg.AssetKey(asset_key),
            check_name="no_regression",
            passed=not failing,
            severity=dg.AssetCheckSeverity.ERROR,
            partition=partition,
            metadata={
                "evaluation_id": evaluation.evaluation_id,
                "compared_with": now.against,
                "decided_again_because": f"{because}'s evaluation arrived and became its baseline",
                "verdicts": verdicts.summary(now.verdicts) if now.verdicts else "nothing compared",
                "comparisons": comparisons_table(now.verdicts, tracked),
                "regressions": len(failing),
                "alert": ", ".join(told) or "none (no regression)",
            },
        )
    )


def comparisons_table(rows: list[dict[str, Any]], tracked: Sequence[TrackedMetric]) -> dg.MetadataValue:
    """An evaluation's stored verdicts as a Markdown table (``tracking.verdict_table``: the change in the metric's
    units with its interval, p, adjusted p, MDE and the baseline), worst first."""
    if not rows:
        return dg.MetadataValue.md("nothing compared")
    table = tracking.verdict_table(rows, {m.name: m.bounds for m in tracked})
    return dg.MetadataValue.md(markdown_table(table))


def failed_run_subject(run: dg.DagsterRun) -> tuple[str, str]:
    """(suite, partition) of a run: its ``geomon/suite`` tag, else the first asset key it materializes (a
    run launched from the UI carries no geomon tag), else its job's name."""
    suite = run.tags.get("geomon/suite", "")
    if not suite and run.asset_selection:
        suite = sorted(run.asset_selection, key=lambda k: k.to_user_string())[0].path[0]
    return suite or run.job_name, run.tags.get("dagster/partition", "")


@dg.run_failure_sensor(
    name="alert_on_run_failure",
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="A failed run pages the alert channels (webhook, e-mail) with its suite, model, link and error.",
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
