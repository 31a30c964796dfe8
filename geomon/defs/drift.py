"""Drift probes of API-served models: an asset per model partition and the schedule that asks them."""

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg

from geomon.defs.automation import ANY_INPUT_UPDATED
from geomon.defs.execution import model_call_options
from geomon.defs.monitoring import PUBLISHED
from geomon.defs.resources import GeomonResource, api_models_partitions, cron_from_settings
from geomon.monitor import alerts, drift, results
from geomon.monitor.history import MetricHistory
from geomon.report import charts
from geomon.stats.values import EvaluationRun, MetricValue
from geomon.suites import registry
from geomon.suites.registry import suites

# The questions re-asked: the bank of the one suite that declares them (``Pipeline.drift_probe``), read from its source.
PROBE = registry.drift_probe()

DRIFT_SPEC = dg.AssetCheckSpec(
    "no_drift",
    asset=dg.AssetKey(["monitor", "drift_probe"]),
    description="Answers to the fixed probe set changed more than the model's noise floor + tolerance.",
)


@dg.asset(
    key=["monitor", "drift_probe"],
    **model_call_options(),
    group_name="monitor",
    partitions_def=api_models_partitions,
    check_specs=[DRIFT_SPEC],
    ins={"bank": dg.AssetIn(key=dg.AssetKey.from_user_string(PROBE.source))},
)
def drift_probe(context: dg.AssetExecutionContext, geomon: GeomonResource, bank: Any):
    """Re-ask the fixed probe set (chosen once per baseline from the whole question bank of the suite that declares
    the probe's questions, stored, never the current run's sample) under a fresh cache epoch and compare with the
    model's baseline."""
    settings = geomon.settings()
    spec = settings.model(context.partition_key)
    if spec.bundled is not None:
        yield dg.Output({"skipped": "bundled"}, metadata={"probed": False, "reason": "bundled: fixed, hashed weights"})
        yield dg.AssetCheckResult(check_name=DRIFT_SPEC.name, passed=True, metadata={"probed": False})
        return
    stored = settings.results_dir / "drift" / f"probe-set-baseline-{settings.drift.baseline}.txt"
    probes = drift.fixed_probe_set(PROBE.questions(bank), settings.drift.probe_questions, stored)
    requests = PROBE.requests(probes, spec)
    cycle = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    verdict, cost = drift.probe(spec, requests, settings.store(), settings.drift, cycle, settings.engine)
    numbers: dict[str, Any] = {
        "change_rate": verdict.change_rate,
        "noise_floor": verdict.noise_floor,
        "threshold": verdict.threshold,
    }
    MetricHistory(settings.store_url).record(
        EvaluationRun(
            "drift",
            spec.name,
            scope=f"baseline-{settings.drift.baseline}",
            versions={"data": cycle},
            dagster_run_id=context.run.run_id,
        ),
        [MetricValue(k, v, n=verdict.probes) for k, v in numbers.items()],
    )
    delivered = "none"
    if verdict.drifted:
        failures = alerts.send(
            alerts.Alert(
                kind="drift",
                title=f"drift: {spec.name} answers changed",
                summary=f"{verdict.change_rate:.0%} of {verdict.probes} probe answers differ from the baseline; "
                f"the noise floor of repeated probes is {verdict.noise_floor:.0%} (threshold {verdict.threshold:.0%}).",
                model=spec.name,
                suite="drift",
                url=alerts.asset_url(settings.alerts.ui_url, ["monitor", "drift_probe"], spec.name),
                numbers={**numbers, "probes": verdict.probes},
            ),
            settings.alerts,
        )
        delivered = ", ".join(failures) or "sent"
    yield dg.Output(
        verdict.as_dict(),
        metadata={**numbers, "drifted": verdict.drifted, **cost, "cycle": cycle, "probe_set": str(stored)},
    )
    yield dg.AssetCheckResult(
        check_name=DRIFT_SPEC.name,
        passed=not verdict.drifted,
        metadata={**numbers, "changed_examples": dg.MetadataValue.json(verdict.changed_examples), "alert": delivered},
    )


drift_probe_job = dg.define_asset_job(
    "drift_probe", selection=dg.AssetSelection.assets(drift_probe), partitions_def=api_models_partitions
)


@dg.schedule(
    job=drift_probe_job,
    cron_schedule=cron_from_settings(lambda s: s.drift.schedule, drift.DriftSettings().schedule),
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Probes every API-served model for drift (drift.schedule in geomon.yaml; bundled models never drift).",
)
def drift_probe_schedule(context: dg.ScheduleEvaluationContext, geomon: GeomonResource) -> list[dg.RunRequest]:
    """Probe every API-served model the registry sensor has made a partition of ``api_models`` (bundled
    models have fixed weights and are never partitions there)."""
    models, _ = geomon.settings().all_models()
    known = set(context.instance.get_dynamic_partitions(api_models_partitions.name))
    stamp = context.scheduled_execution_time.isoformat()
    return [
        dg.RunRequest(partition_key=s.name, run_key=f"drift-{s.name}-{stamp}")
        for s in models
        if s.bundled is None and s.name in known
    ]


TRENDS_KEY = ["monitor", "trends"]


@dg.asset(
    key=TRENDS_KEY,
    group_name="monitor",
    automation_condition=ANY_INPUT_UPDATED,
    # Downstream of every suite's leaderboard and the imported history: a new evaluation of any suite, or an
    # import, redraws the trends.
    deps=[*([name, "leaderboard"] for name in suites()), drift_probe, *(h.evaluations_key for h in PUBLISHED)],
)
def trends_report(geomon: GeomonResource) -> dg.MaterializeResult:
    """Every headline metric of every model over time, and knowledge recency (best-matching data year),
    from the metric history; written to <results_dir>/trends/report.html (``geomon run`` records it too)."""
    return dg.MaterializeResult(metadata=trends_metadata(geomon.settings()))


def trends_metadata(settings: Any) -> dict[str, Any]:
    """The trends report written from the whole history, and what its materialization shows."""
    page, series, table = results.write_trends(
        settings.results_dir, settings.store_url, changes=settings.serving_changes()
    )
    latest = table.groupby(["suite", "metric", "model", "scope"]).tail(1)
    return {
        "evaluations": int(series["evaluation_id"].nunique()) if len(series) else 0,
        "models": int(table["model"].nunique()) if len(table) else 0,
        "latest": dg.MetadataValue.md(charts.markdown_table(latest) if len(latest) else "no history yet"),
        "report": dg.MetadataValue.path(str(page)),
        "index": dg.MetadataValue.path(str(settings.results_dir / "index.html")),
    }


def record_trends(instance: dg.DagsterInstance, settings: Any) -> Path:
    """The trends report written after ``geomon run``'s suites, and recorded as a materialization of
    ``monitor/trends``: the catalog shows it drawn from the evaluations just made (not "Never materialized"), and
    automation does not draw it again for them. Returns the page."""
    metadata = trends_metadata(settings)
    instance.report_runless_asset_event(dg.AssetMaterialization(TRENDS_KEY, metadata=metadata))
    return Path(metadata["report"].value)
