"""Evaluations made elsewhere, as Dagster assets: the published results folder is an observable source
(its data version is the files the import reads: names and contents), and the import is an asset downstream
of it, so the UI shows when the history was imported, and a changed or added file re-imports (the runs already
recorded are recognised: nothing is recorded twice). Each imported model is a partition of
``history/gapminder_evaluations``: an import, from the UI or ``geomon import``, reports each new or re-decided
evaluation there as a runless materialization and its ``no_regression`` check result, so the catalog shows every
imported model's latest evaluation and a regression fails that model's check without a click on Materialize."""

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from geomon.defs.automation import EAGER
from geomon.defs.monitoring import comparisons_table, regression_spec
from geomon.defs.resources import GeomonResource
from geomon.defs.versions import source_version
from geomon.monitor import announce, imports, tracking
from geomon.monitor.history import Evaluation, MetricHistory
from geomon.stats import verdicts
from geomon.stats.declared import TrackedMetric

IMPORT_KEY = ["history", "gapminder_import"]
EVALUATIONS_KEY = ["history", "gapminder_evaluations"]
imported_models_partitions = dg.DynamicPartitionsDefinition(name="gapminder_models")


RESULTS_KEY = ["history", "gapminder_results"]


def results_version(folder: Path | None) -> tuple[str, dict[str, Any]]:
    """Gapminder's published folder's data version (a digest of the files the import reads) and what its
    observation shows."""
    if folder is None or not folder.is_dir():
        return "none", {"folder": str(folder or "not configured")}
    digest = hashlib.sha256()
    files = [path for path in imports.gapminder_files(folder) if path.is_file()]
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16], {"folder": str(folder), "files": len(files)}


@dg.observable_source_asset(key=RESULTS_KEY, group_name="history", required_resource_keys={"geomon"})
def gapminder_results(context: dg.AssetExecutionContext) -> dg.ObserveResult:
    """Gapminder's published folder (``gapminder_results`` in geomon.yaml): a new data version when a file the
    import reads (its per-question rates, its per-answer files) is added, removed or changed."""
    version, metadata = results_version(context.resources.geomon.settings().gapminder_results)
    return dg.ObserveResult(data_version=dg.DataVersion(version), metadata=metadata)


observe_history_job = dg.define_asset_job(
    "observe_history", selection=dg.AssetSelection.assets(["history", "gapminder_results"])
)
observe_history_schedule = dg.ScheduleDefinition(
    name="observe_history_hourly",
    job=observe_history_job,
    cron_schedule="15 * * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Looks for new published Gapminder results every hour; new files trigger the history import.",
)


def import_metadata(recorded: Sequence[imports.Recorded]) -> dict[str, Any]:
    """What an import of Gapminder's history did, for the import asset's materialization (from a run or from
    ``geomon import``): how many configurations, how many new, and each open regression in a phrase."""
    regressions = [
        tracking.verdict_phrase(r.run.model, v, {m.name: m.bounds for m in r.run.tracked}.get(v["metric"]))
        for r in recorded
        for v in r.tracked.regressions
    ]
    return {
        "runs": len(recorded),
        "new_evaluations": sum(not r.tracked.evaluation.reused for r in recorded),
        "answers": sum(r.run.answers for r in recorded),
        "rates_only": dg.MetadataValue.md(
            "\n".join(f"- {r.run.model}: {r.run.note}" for r in recorded if r.run.note) or "none"
        ),
        "regressions": dg.MetadataValue.md("\n".join(f"- {line}" for line in regressions) or "none"),
        "alerts": dg.MetadataValue.json({e: told for r in recorded for e, told in r.tracked.told.items() if told}),
    }


def _decision(history: MetricHistory, evaluation: Evaluation, tracked: Sequence[TrackedMetric]) -> dict[str, Any]:
    """An imported evaluation as its partition's materialization metadata and ``no_regression`` check result."""
    now = tracking.stored(history, evaluation)
    failing = tracking.failing(history, evaluation)
    series = history.series(suite=evaluation.suite, model=evaluation.model)
    mine = series[(series["evaluation_id"] == evaluation.evaluation_id) & (series["breakdown"] == "")]
    headline = {m.name for m in tracked}
    figures = {
        r.metric: round(float(r.value), 3) for r in mine.itertuples() if r.metric in headline and r.value == r.value
    }
    key = repr(
        (
            evaluation.evaluation_id,
            sorted((v["metric"], v["breakdown"], v["verdict"], v["against_evaluation_id"]) for v in now.verdicts),
            sorted((v["metric"], v["breakdown"]) for v in failing),
        )
    )
    shared = {
        "evaluation_id": evaluation.evaluation_id,
        "baseline": tracking.baseline_model(now.against) if now.against else "nothing: the first of its release line",
        "verdicts": verdicts.summary(now.verdicts) if now.verdicts else "nothing compared",
        "comparisons": comparisons_table(now.verdicts, tracked),
    }
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]  # what was decided: unchanged, nothing to report
    return {
        "passed": not failing,
        "decision": digest,
        "materialization": {
            **shared,
            "evaluated_at": f"{evaluation.when:%Y-%m-%d}",
            "origin": evaluation.origin,
            **figures,
            "decision": digest,
        },
        "check": {**shared, "regressions": len(failing), "acknowledged": len(now.regressions) - len(failing)},
    }


def report_evaluations(
    instance: dg.DagsterInstance, history: MetricHistory, recorded: Sequence[imports.Recorded]
) -> int:
    """Each imported model's latest evaluation as a runless materialization of its partition of
    ``history/gapminder_evaluations`` and its ``no_regression`` check result, where it is new or was decided
    again since it was last reported (a re-import reports nothing); returns how many were reported."""
    latest: dict[str, imports.Recorded] = {}
    for r in sorted(recorded, key=lambda r: tracking.release_order(r.tracked.evaluation)):
        latest[r.run.model] = r
    known = set(instance.get_dynamic_partitions(imported_models_partitions.name))
    instance.add_dynamic_partitions(imported_models_partitions.name, sorted(set(latest) - known))
    key = dg.AssetKey(EVALUATIONS_KEY)
    reported = 0
    for model, r in sorted(latest.items()):
        decision = _decision(history, r.tracked.evaluation, r.run.tracked)
        before = instance.fetch_materializations(dg.AssetRecordsFilter(key, asset_partitions=[model]), limit=1)
        last = before.records[0].asset_materialization if before.records else None
        if last is not None and getattr(last.metadata.get("decision"), "value", None) == decision["decision"]:
            continue
        instance.report_runless_asset_event(
            dg.AssetMaterialization(key, partition=model, metadata=decision["materialization"])
        )
        instance.report_runless_asset_event(
            dg.AssetCheckEvaluation(
                asset_key=key,
                check_name="no_regression",
                passed=decision["passed"],
                severity=dg.AssetCheckSeverity.ERROR,
                partition=model,
                metadata=decision["check"],
            )
        )
        reported += 1
    return reported


def gapminder_import_runs(geomon: GeomonResource) -> list[imports.ImportedRun]:
    """The published folder that ``gapminder_results`` names, read with the snapshot's question bank."""
    from geomon.sources import gapminder as source

    settings = geomon.settings()
    snapshot = settings.gapminder.snapshot
    if snapshot is None:
        raise imports.ImportError_("gapminder_results: the model configurations come from gapminder.snapshot")
    entities = snapshot / "ddf" / "ddf--entities--model_configuration.csv"
    return imports.gapminder_runs(settings.gapminder_results, entities, source.read_snapshot(snapshot))


@dg.asset(
    key=IMPORT_KEY,
    group_name="history",
    deps=[gapminder_results],
    automation_condition=EAGER,
    code_version=source_version(imports),
)
def gapminder_import(context: dg.AssetExecutionContext, geomon: GeomonResource) -> dg.MaterializeResult:
    """Gapminder's published history recorded in the metric history (``geomon import gapminder-results``): one
    evaluation per model configuration, dated, compared with the vendor's previous release; each reported in
    ``history/gapminder_evaluations``."""
    settings = geomon.settings()
    if settings.gapminder_results is None:
        return dg.MaterializeResult(metadata={"imported": "nothing: gapminder_results is not configured"})
    history = MetricHistory(settings.store_url)
    recorded = imports.record_runs(
        history,
        gapminder_import_runs(geomon),
        settings.verdicts,
        settings.lineage(),
        announcer=announce.announcer(settings.alerts),  # alerts exactly as `geomon import` and `geomon run` do
    )
    reported = report_evaluations(context.instance, history, recorded)
    return dg.MaterializeResult(metadata={**import_metadata(recorded), "reported": reported})


@dg.asset(
    key=EVALUATIONS_KEY,
    group_name="history",
    partitions_def=imported_models_partitions,
    check_specs=[regression_spec(EVALUATIONS_KEY, imported_models_partitions)],
    code_version=source_version(imports),
)
def gapminder_evaluations(context: dg.AssetExecutionContext, geomon: GeomonResource) -> dg.MaterializeResult:
    """Each model Gapminder published (a partition): its latest imported evaluation, its headline figures and its
    verdicts against its baseline, and the ``no_regression`` check. The import reports these as it records them;
    materializing a partition reads them again from the metric history."""
    from geomon.suites import registry

    model = context.partition_key
    history = MetricHistory(geomon.settings().store_url)
    evaluation = history.latest("gapminder", model, imports.GAPMINDER_SCOPE)
    if evaluation is None:
        raise imports.ImportError_(f"{model}: no imported Gapminder evaluation in the history (geomon import)")
    decision = _decision(history, evaluation, registry.module("gapminder").TRACKED)
    return dg.MaterializeResult(
        metadata=decision["materialization"],
        check_results=[
            dg.AssetCheckResult(
                check_name="no_regression",
                passed=decision["passed"],
                severity=dg.AssetCheckSeverity.ERROR,
                metadata=decision["check"],
            )
        ],
    )
