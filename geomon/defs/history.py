"""Evaluations made elsewhere, as Dagster assets, for each suite whose importer's folder geomon.yaml may name
(``defs.monitoring.published_histories``: Gapminder's, ``history/gapminder_*``): the published results folder is an
observable source (its data version is the files the import reads: names and contents), and the import is an asset
downstream of it, so the UI shows when the history was imported, and a changed or added file re-imports (the runs
already recorded are recognised: nothing is recorded twice). Each imported model is a partition of
``history/<suite>_evaluations``: an import, from the UI or ``geomon import``, reports each new or re-decided
evaluation there as a runless materialization and its ``no_regression`` check result, so the catalog shows every
imported model's latest evaluation and a regression fails that model's check without a click on Materialize."""

import hashlib
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg

from geomon.defs.automation import EAGER
from geomon.defs.monitoring import (
    PUBLISHED,
    Context,
    PublishedHistory,
    check_line,
    none_open_evaluation,
    none_open_result,
    none_open_spec,
    regression_spec,
    report_check,
    report_open_regressions,
)
from geomon.defs.resources import GeomonResource, shown_path
from geomon.defs.verdict_tables import comparisons_table
from geomon.defs.versions import source_version
from geomon.monitor import announce, imports, release, views
from geomon.monitor.history import Evaluation, MetricHistory
from geomon.stats import verdicts
from geomon.stats.declarations import TrackedMetric
from geomon.stats.verdicts import Comparison
from geomon.suites import registry

# A partition's metadata entry: what was decided (verdicts, failures, evaluation), hashed; an import reports a model
# again only when it changes. Named for what it is where the partition's page shows it.
FINGERPRINT = "decision_fingerprint"


def import_version(published: PublishedHistory) -> str:
    """The import's code version: ``monitor/imports.py`` and the suite's reader of its published results."""
    return source_version(imports, sys.modules[published.importer.read.__module__])


def results_version(published: PublishedHistory, folder: Path | None) -> tuple[str, dict[str, Any]]:
    """The published folder's data version (a digest of the files the import reads) and what its observation
    shows."""
    if folder is None or not folder.is_dir():
        unset = f"not configured ({published.importer.setting} in geomon.yaml)"
        return "none", {"folder": shown_path(folder) if folder else unset}
    digest = hashlib.sha256()
    files = [path for path in published.importer.files(folder) if path.is_file()]
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16], {"folder": shown_path(folder), "files": len(files)}


def import_metadata(recorded: Sequence[imports.Recorded]) -> dict[str, Any]:
    """What an import of a suite's published history did, for the import asset's materialization (from a run or from
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
    instance: dg.DagsterInstance,
    history: MetricHistory,
    recorded: Sequence[imports.Recorded],
    published: PublishedHistory,
) -> Pending:
    """Each imported model's latest evaluation decided, and the models new or decided again since they were last
    reported (a re-import has none); their partitions are added to the published history's (``gapminder_models``)."""
    latest: dict[str, imports.Recorded] = {}
    for r in sorted(recorded, key=lambda r: r.tracked.evaluation.release_order):
        latest[r.run.model] = r
    known = set(instance.get_dynamic_partitions(published.partitions.name))
    instance.add_dynamic_partitions(published.partitions.name, sorted(set(latest) - known))
    key = dg.AssetKey(published.evaluations_key)
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


def report_evaluations(context: Context, history: MetricHistory, pending: Pending, published: PublishedHistory) -> None:
    """The ``pending`` models' evaluations as materializations of their partitions of the published history's
    evaluations (``history/gapminder_evaluations``) with their ``no_regression`` check results, and
    ``monitor/open_regressions`` where what is open changed, logged by the import's run (``context``) after the
    import's own materialization: logged first, they would be older than the import that feeds them, and the UI
    would call them unsynced."""
    key = dg.AssetKey(published.evaluations_key)
    decisions, changed = pending.decisions, pending.changed

    def worst(model: str) -> tuple[int, str]:
        return len(decisions[model][0]["failing"]), model

    def check(model: str) -> None:
        decision, r = decisions[model]
        report_check(
            context,
            published.evaluations_key,
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
        context.log_event(none_open_evaluation(published.evaluations_key, imported_open(history, published)))
    report_open_regressions(context, history)


def imported_open(history: MetricHistory, published: PublishedHistory) -> list[tuple[str, str, Comparison]]:
    """The open regressions of a suite's imported history: what its evaluations asset's ``none_open`` counts."""
    return views.open_regressions(history, suite=published.suite, imported_only=True)


def report_import(
    instance: dg.DagsterInstance,
    history: MetricHistory,
    recorded: Sequence[imports.Recorded],
    published: PublishedHistory,
) -> int:
    """``geomon import``'s evaluations in the Dagster catalog (``report_evaluations``), and the import itself as a
    materialization of the published history's import asset (``history/gapminder_import``) when it reported
    anything, logged by an in-process run of its own (``geomon_import``, in the UI's run list); returns how many
    models were reported."""
    reported: list[int] = []

    @dg.op(name="report_import")
    def report(context: dg.OpExecutionContext) -> None:
        pending = pending_reports(context.instance, history, recorded, published)
        if pending.changed:
            metadata = {**import_metadata(recorded), "reported": len(pending.changed)}
            context.log_event(dg.AssetMaterialization(dg.AssetKey(published.import_key), metadata=metadata))
        report_evaluations(context, history, pending, published)
        reported.append(len(pending.changed))

    @dg.job(name="geomon_import", tags={"geomon/suite": published.suite})
    def geomon_import() -> None:
        report()

    geomon_import.execute_in_process(instance=instance)
    return reported[0]


def published_assets(published: PublishedHistory) -> list[Any]:
    """A suite's published history as Dagster definitions: the folder observed, the import, the imported
    evaluations (a partition per model) and their checks."""
    importer, version = published.importer, import_version(published)

    @dg.observable_source_asset(
        key=published.results_key,
        group_name="history",
        required_resource_keys={"geomon"},
        description=f"The folder of the results {published.suite}'s authors published ({importer.setting} in "
        "geomon.yaml), observed hourly: a new data version when a file the import reads is added, removed or "
        f"changed, which re-imports the history ({'/'.join(published.import_key)}).",
    )
    def results(context: dg.AssetExecutionContext) -> dg.ObserveResult:
        folder = context.resources.geomon.settings().published.get(importer.kind)
        observed, metadata = results_version(published, folder)
        return dg.ObserveResult(data_version=dg.DataVersion(observed), metadata=metadata)

    @dg.asset(
        key=published.import_key,
        group_name="history",
        deps=[results],
        automation_condition=EAGER,
        code_version=version,
        description=f"{published.suite}'s published history recorded in the metric history (``geomon import "
        f"{importer.kind}``): one evaluation per published model, dated, compared with the vendor's previous "
        f"release; each reported in {'/'.join(published.evaluations_key)}.",
    )
    def imported(context: dg.AssetExecutionContext, geomon: GeomonResource) -> Iterator[dg.MaterializeResult]:
        settings = geomon.settings()
        folder = settings.published.get(importer.kind)
        if folder is None:
            yield dg.MaterializeResult(metadata={"imported": f"nothing: {importer.setting} is not configured"})
            return
        history = MetricHistory(settings.store_url)
        recorded = imports.record_runs(
            history,
            imports.read_published(importer.kind, folder, settings),
            settings.verdicts,
            settings.lineage(),
            announcer=announce.announcer(settings.alerts),  # alerts exactly as `geomon import` and `geomon run` do
            published_history=True,  # a publisher's whole record: its release order takes the first look
        )
        pending = pending_reports(context.instance, history, recorded, published)
        yield dg.MaterializeResult(metadata={**import_metadata(recorded), "reported": len(pending.changed)})
        report_evaluations(context, history, pending, published)

    @dg.asset(
        key=published.evaluations_key,
        group_name="history",
        deps=[published.import_key],  # the lineage shows where the evaluations come from: the import reports them
        partitions_def=published.partitions,
        check_specs=[
            regression_spec(published.evaluations_key, published.partitions),
            none_open_spec(published.evaluations_key, f"imported {published.suite}"),
        ],
        code_version=version,
        description=f"Each model whose results {published.suite}'s authors published (a partition): its latest "
        "imported evaluation, its headline figures and its verdicts against its baseline, and the no_regression "
        "check. The import reports these as it records them; materializing a partition reads them again from the "
        "metric history.",
    )
    def evaluations(context: dg.AssetExecutionContext, geomon: GeomonResource) -> dg.MaterializeResult:
        model = context.partition_key
        history = MetricHistory(geomon.settings().store_url)
        evaluation = history.latest(published.suite, model, importer.scope)
        if evaluation is None:
            raise imports.ImportError_(
                f"{model}: no imported {published.suite} evaluation in the history (geomon import)"
            )
        tracked = registry.suite(published.suite).tracked
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
                none_open_result(imported_open(history, published)),
            ],
        )

    return [results, imported, evaluations]


@dg.definitions
def published_history_defs() -> dg.Definitions:
    """Every suite's published history (``PUBLISHED``), and the hourly observation of their folders."""
    if not PUBLISHED:
        return dg.Definitions()
    observe = dg.define_asset_job(
        "observe_history", selection=dg.AssetSelection.assets(*(published.results_key for published in PUBLISHED))
    )
    schedule = dg.ScheduleDefinition(
        name="observe_history_hourly",
        job=observe,
        cron_schedule="15 * * * *",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="Looks for new published results every hour; new files trigger the history import.",
    )
    return dg.Definitions(
        assets=[asset for published in PUBLISHED for asset in published_assets(published)],
        jobs=[observe],
        schedules=[schedule],
    )
