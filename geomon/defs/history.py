"""Evaluations made elsewhere, as Dagster assets: the published results folder is an observable source
(its data version is the folder's files, names, sizes and contents), and the import is an asset downstream of
it, so the UI shows when the history was imported, and a changed or added file re-imports (the runs already
recorded are recognised: nothing is recorded twice)."""

import hashlib

import dagster as dg

from geomon.defs.automation import EAGER
from geomon.defs.resources import GeomonResource
from geomon.defs.versions import source_version
from geomon.monitor import announce, imports
from geomon.monitor.history import MetricHistory


@dg.observable_source_asset(
    key=["history", "gapminder_results"], group_name="history", required_resource_keys={"geomon"}
)
def gapminder_results(context: dg.AssetExecutionContext) -> dg.ObserveResult:
    """Gapminder's published results folder (``gapminder_results`` in geomon.yaml): a new data version when a
    file is added, removed or changed."""
    folder = context.resources.geomon.settings().gapminder_results
    if folder is None or not folder.is_dir():
        return dg.ObserveResult(
            data_version=dg.DataVersion("none"), metadata={"folder": str(folder or "not configured")}
        )
    digest = hashlib.sha256()
    files = sorted(folder.glob("*.csv"))
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return dg.ObserveResult(
        data_version=dg.DataVersion(digest.hexdigest()[:16]),
        metadata={"folder": str(folder), "files": len(files)},
    )


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


@dg.asset(
    key=["history", "gapminder_import"],
    group_name="history",
    deps=[gapminder_results],
    automation_condition=EAGER,
    code_version=source_version(imports),
)
def gapminder_import(geomon: GeomonResource) -> dg.MaterializeResult:
    """Gapminder's published runs recorded in the metric history (``geomon import gapminder-results``): one
    evaluation per model configuration, dated, compared with the vendor's previous release."""
    from geomon.sources import gapminder as source

    settings = geomon.settings()
    if settings.gapminder_results is None:
        return dg.MaterializeResult(metadata={"imported": "nothing: gapminder_results is not configured"})
    snapshot = settings.gapminder.snapshot
    bank = source.read_snapshot(snapshot) if snapshot is not None else None
    entities = snapshot / "ddf" / "ddf--entities--model_configuration.csv" if snapshot is not None else None
    if entities is None:
        raise imports.ImportError_("gapminder_results: the model configurations come from gapminder.snapshot")
    runs = imports.gapminder_runs(settings.gapminder_results, entities, bank)
    history = MetricHistory(settings.store_url)
    registered = {s.name: s.predecessor for s in settings.models if s.predecessor}
    recorded = imports.record_runs(
        history,
        runs,
        settings.verdicts,
        {**registered, **settings.predecessors},
        announcer=announce.announcer(settings.alerts),  # alerts exactly as `geomon import` and `geomon run` do
    )
    verdicts = [
        {
            "model": r.run.model,
            "against": r.tracked.against,
            "metric": v["metric"],
            "breakdown": v["breakdown"],
            "change": v["change"],
            "verdict": v["verdict"],
        }
        for r in recorded
        for v in r.tracked.verdicts
    ]
    return dg.MaterializeResult(
        metadata={
            "runs": len(recorded),
            "new_evaluations": sum(not r.tracked.evaluation.reused for r in recorded),
            "answers": sum(r.run.answers for r in recorded),
            "verdicts": dg.MetadataValue.json(verdicts),
            "alerts": dg.MetadataValue.json({e: told for r in recorded for e, told in r.tracked.told.items() if told}),
        }
    )
