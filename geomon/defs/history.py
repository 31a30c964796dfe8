"""Evaluations made elsewhere, as Dagster assets: the published results folder is an observable source
(its data version is the files the import reads: names and contents), and the import is an asset downstream
of it, so the UI shows when the history was imported, and a changed or added file re-imports (the runs already
recorded are recognised: nothing is recorded twice). Each imported model is a partition of
``history/gapminder_evaluations``: an import, from the UI or ``geomon import``, reports each new or re-decided
evaluation there as a runless materialization and its ``no_regression`` check result, so the catalog shows every
imported model's latest evaluation and a regression fails that model's check without a click on Materialize."""

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg

from geomon.defs.automation import EAGER
from geomon.defs.monitoring import (
    IMPORT_KEY,
    Context,
    check_line,
    comparisons_table,
    none_open_evaluation,
    none_open_result,
    none_open_spec,
    regression_spec,
    report_check,
    report_open_regressions,
)
from geomon.defs.monitoring import IMPORTED_EVALUATIONS_KEY as EVALUATIONS_KEY
from geomon.defs.resources import GeomonResource, shown_path
from geomon.defs.versions import source_version
from geomon.monitor import announce, imports, release, views
from geomon.monitor.history import Evaluation, MetricHistory
from geomon.stats import verdicts
from geomon.stats.declarations import TrackedMetric
from geomon.stats.verdicts import Comparison
from geomon.suites import registry

imported_models_partitions = dg.DynamicPartitionsDefinition(name="gapminder_models")
# A partition's metadata entry: what was decided (verdicts, failures, evaluation), hashed; an import reports a model
# again only when it changes. Named for what it is where the partition's page shows it.
FINGERPRINT = "decision_fingerprint"


RESULTS_KEY = ["history", "gapminder_results"]


def import_version() -> str:
    """The import's code version: ``monitor/imports.py`` and the suite's reader of its published results (a
    broken gapminder suite breaks only itself: its import says why when it runs)."""
    try:
        return source_version(imports, registry.suite("gapminder").published)
    except registry.SuiteError:
        return source_version(imports)


def results_version(folder: Path | None) -> tuple[str, dict[str, Any]]:
    """Gapminder's published folder's data version (a digest of the files the import reads) and what its
    observation shows."""
    if folder is None or not folder.is_dir():
        return "none", {"folder": shown_path(folder) if folder else "not configured (gapminder_results in geomon.yaml)"}
    digest = hashlib.sha256()
    files = [path for path in registry.suite("gapminder").published.files(folder) if path.is_file()]
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16], {"folder": shown_path(folder), "files": len(files)}


@dg.observable_source_asset(
    key=RESULTS_KEY,
    group_name="history",
    required_resource_keys={"geomon"},
    description="Gapminder's published folder (gapminder_results in geomon.yaml), observed hourly: a new data "
    "version when a file the import reads (its per-question rates, its per-answer files) is added, removed or "
    "changed, which re-imports the history (history/gapminder_import).",
)
def gapminder_results(context: dg.AssetExecutionContext) -> dg.ObserveResult:
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
        views.verdict_phrase(r.run.model, v, {m.name: m.bounds for m in r.run.tracked}.get(v.metric))
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
        "alerts": dg.MetadataValue.md(announce.told_summary([r.tracked for r in recorded])),
    }


def _decision(history: MetricHistory, evaluation: Evaluation, tracked: Sequence[TrackedMetric]) -> dict[str, Any]:
    """An imported evaluation as its partition's materialization metadata and ``no_regression`` check result."""
    now = release.stored(history, evaluation)
    decided = now.verdicts
    failing = release.failing(history, evaluation)
    series = history.series(suite=evaluation.suite, model=evaluation.model)
    mine = series[(series["evaluation_id"] == evaluation.evaluation_id) & (series["breakdown"] == "")]
    # Each headline figure named with its unit (a percentage's key says %): a bare "correct_rate 73.688" reads as
    # any number. Numbers stay numbers, so the Plots tab draws them.
    named = {m.name: m.name + (" (%)" if m.bounds is not None and tuple(m.bounds) == (0, 100) else "") for m in tracked}
    figures = {
        named[r.metric]: round(float(r.value), 3) for r in mine.itertuples() if r.metric in named and r.value == r.value
    }
    key = repr(
        (
            "tied to its materialization",  # checks reported before they were tied (uncounted) are reported again
            evaluation.evaluation_id,
            sorted((v.metric, v.breakdown, v.verdict, v.against_evaluation_id) for v in decided),
            sorted((v.metric, v.breakdown) for v in failing),
        )
    )
    shared = {
        "evaluation_id": evaluation.evaluation_id,
        "baseline": views.baseline_model(now.against) if now.against else "nothing: the first of its release line",
        "verdicts": verdicts.summary(decided, explained=True) if decided else "nothing compared",
        "comparisons": comparisons_table(decided, tracked),
    }
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]  # what was decided: unchanged, nothing to report
    return {
        "passed": not failing,
        "failing": failing,
        "verdicts": decided,
        "decision": digest,
        "materialization": {
            # First on the partition's page (where every open_regressions link lands): its check's verdict in words
            "no_regression": ("failed: " if failing else "passed: ") + check_line(failing, decided, tracked),
            **shared,
            "evaluated_at": f"{evaluation.when:%Y-%m-%d}",
            "origin": evaluation.origin,
            **figures,
            FINGERPRINT: digest,
        },
        "check": {**shared, "regressions": len(failing), "acknowledged": len(now.regressions) - len(failing)},
    }


@dataclass
class Pending:
    """What an import has to report: every imported model's decision, and the models whose decision is new."""

    decisions: dict[str, tuple[dict[str, Any], imports.Recorded]]
    changed: list[str]  # passes first, the most regressions last (see report_evaluations)


def pending_reports(
    instance: dg.DagsterInstance, history: MetricHistory, recorded: Sequence[imports.Recorded]
) -> Pending:
    """Each imported model's latest evaluation decided, and the models new or decided again since they were last
    reported (a re-import has none); their partitions are added to ``gapminder_models``."""
    latest: dict[str, imports.Recorded] = {}
    for r in sorted(recorded, key=lambda r: r.tracked.evaluation.release_order):
        latest[r.run.model] = r
    known = set(instance.get_dynamic_partitions(imported_models_partitions.name))
    instance.add_dynamic_partitions(imported_models_partitions.name, sorted(set(latest) - known))
    key = dg.AssetKey(EVALUATIONS_KEY)
    decisions = {model: (_decision(history, r.tracked.evaluation, r.run.tracked), r) for model, r in latest.items()}
    changed = []
    for model, (decision, _) in decisions.items():
        before = instance.fetch_materializations(dg.AssetRecordsFilter(key, asset_partitions=[model]), limit=1)
        last = before.records[0].asset_materialization if before.records else None
        if last is None or getattr(last.metadata.get(FINGERPRINT), "value", None) != decision["decision"]:
            changed.append(model)
    # The asset's latest check result is the last one reported, whichever partition: passes first, the most
    # regressions last, so the check reads as the worst open state and not as whichever model sorts last.
    changed.sort(key=lambda model: (len(decisions[model][0]["failing"]), model))
    return Pending(decisions, changed)


def report_evaluations(context: Context, history: MetricHistory, pending: Pending) -> None:
    """The ``pending`` models' evaluations as materializations of their partitions of
    ``history/gapminder_evaluations`` with their ``no_regression`` check results, and ``monitor/open_regressions``
    where what is open changed, logged by the import's run (``context``) after the import's own materialization:
    logged first, they would be older than the import that feeds them, and the UI would call them unsynced."""
    key = dg.AssetKey(EVALUATIONS_KEY)
    decisions, changed = pending.decisions, pending.changed

    def worst(model: str) -> tuple[int, str]:
        return len(decisions[model][0]["failing"]), model

    def check(model: str) -> None:
        decision, r = decisions[model]
        report_check(
            context,
            EVALUATIONS_KEY,
            model,
            decision["failing"],
            decision["verdicts"],
            r.run.tracked,
            decision["check"],
            subject=model,
        )

    for model in changed:
        decision, r = decisions[model]
        context.log_event(
            dg.AssetMaterialization(
                key,
                partition=model,
                description=f"{model}: " + check_line(decision["failing"], decision["verdicts"], r.run.tracked),
                metadata=decision["materialization"],
            )
        )
        check(model)
    failing = sorted((m for m, (d, _) in decisions.items() if d["failing"]), key=worst)
    if failing and changed and not decisions[changed[-1]][0]["failing"]:  # this import fixed one, others still fail
        check(failing[-1])
    if changed:  # the whole asset's check, on the materializations just logged
        context.log_event(none_open_evaluation(EVALUATIONS_KEY, imported_open(history)))
    report_open_regressions(context, history)


def imported_open(history: MetricHistory) -> list[tuple[str, str, Comparison]]:
    """The open regressions of Gapminder's imported history: what ``history/gapminder_evaluations``' ``none_open``
    counts."""
    return views.open_regressions(history, suite="gapminder", imported_only=True)


def report_import(instance: dg.DagsterInstance, history: MetricHistory, recorded: Sequence[imports.Recorded]) -> int:
    """``geomon import``'s evaluations in the Dagster catalog (``report_evaluations``), and the import itself as a
    materialization of ``history/gapminder_import`` when it reported anything, logged by an in-process run of
    its own (``geomon_import``, in the UI's run list); returns how many models were reported."""
    reported: list[int] = []

    @dg.op(name="report_import")
    def report(context: dg.OpExecutionContext) -> None:
        pending = pending_reports(context.instance, history, recorded)
        if pending.changed:
            metadata = {**import_metadata(recorded), "reported": len(pending.changed)}
            context.log_event(dg.AssetMaterialization(dg.AssetKey(IMPORT_KEY), metadata=metadata))
        report_evaluations(context, history, pending)
        reported.append(len(pending.changed))

    @dg.job(name="geomon_import", tags={"geomon/suite": "gapminder"})
    def geomon_import() -> None:
        report()

    geomon_import.execute_in_process(instance=instance)
    return reported[0]


def gapminder_import_runs(geomon: GeomonResource) -> list[imports.ImportedRun]:
    """The published folder that ``gapminder_results`` names, read with the snapshot's question bank."""
    from geomon.suites.gapminder import source

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
    code_version=import_version(),
)
def gapminder_import(context: dg.AssetExecutionContext, geomon: GeomonResource) -> Iterator[dg.MaterializeResult]:
    """Gapminder's published history recorded in the metric history (``geomon import gapminder-results``): one
    evaluation per model configuration, dated, compared with the vendor's previous release; each reported in
    ``history/gapminder_evaluations``."""
    settings = geomon.settings()
    if settings.gapminder_results is None:
        yield dg.MaterializeResult(metadata={"imported": "nothing: gapminder_results is not configured"})
        return
    history = MetricHistory(settings.store_url)
    recorded = imports.record_runs(
        history,
        gapminder_import_runs(geomon),
        settings.verdicts,
        settings.lineage(),
        announcer=announce.announcer(settings.alerts),  # alerts exactly as `geomon import` and `geomon run` do
        published_history=True,
    )
    pending = pending_reports(context.instance, history, recorded)
    yield dg.MaterializeResult(metadata={**import_metadata(recorded), "reported": len(pending.changed)})
    report_evaluations(context, history, pending)


@dg.asset(
    key=EVALUATIONS_KEY,
    group_name="history",
    deps=[IMPORT_KEY],  # the lineage shows where the evaluations come from: the import reports them
    partitions_def=imported_models_partitions,
    check_specs=[
        regression_spec(EVALUATIONS_KEY, imported_models_partitions),
        none_open_spec(EVALUATIONS_KEY, "imported Gapminder"),
    ],
    code_version=import_version(),
)
def gapminder_evaluations(context: dg.AssetExecutionContext, geomon: GeomonResource) -> dg.MaterializeResult:
    """Each model Gapminder published (a partition): its latest imported evaluation, its headline figures and its
    verdicts against its baseline, and the ``no_regression`` check. The import reports these as it records them;
    materializing a partition reads them again from the metric history."""
    model = context.partition_key
    history = MetricHistory(geomon.settings().store_url)
    evaluation = history.latest("gapminder", model, imports.GAPMINDER_SCOPE)
    if evaluation is None:
        raise imports.ImportError_(f"{model}: no imported Gapminder evaluation in the history (geomon import)")
    tracked = registry.suite("gapminder").tracked
    decision = _decision(history, evaluation, tracked)
    return dg.MaterializeResult(
        metadata=decision["materialization"],
        check_results=[
            dg.AssetCheckResult(
                check_name="no_regression",
                passed=decision["passed"],
                severity=dg.AssetCheckSeverity.ERROR,
                description=f"{model}: " + check_line(decision["failing"], decision["verdicts"], tracked),
                metadata=decision["check"],
            ),
            none_open_result(imported_open(history)),
        ],
    )
