"""Wiring the monitor into the suites' assets: every evaluation goes into the metric history, is compared
with its baseline in release order and decided with its family (``geomon.monitor.release``), and a
regression verdict raises an alert and fails ``no_regression`` until it is superseded or acknowledged.
Also the alert on failed runs. Any suite plugs in with ``track_evaluation``."""

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg
import pandas as pd

# Not exported by dagster's top level, but the documented field of AssetCheckEvaluation that ties a runless check
# evaluation to the materialization it judged (see report_check).
from dagster._core.definitions.asset_checks.asset_check_evaluation import AssetCheckEvaluationTargetMaterializationData

from geomon.config import Settings
from geomon.defs.resources import check_spec, models_partitions
from geomon.defs.verdict_tables import comparisons_table
from geomon.monitor import alerts, announce, release, states, views
from geomon.monitor.history import Evaluation, EvaluationRun, MetricHistory
from geomon.report.charts import markdown_table
from geomon.stats import verdicts
from geomon.stats.declarations import TrackedMetric
from geomon.stats.values import MetricValue
from geomon.stats.verdicts import Comparison
from geomon.suites import registry
from geomon.suites.registry import Importer


def regression_spec(key: list[str], partitions_def: Any = None) -> dg.AssetCheckSpec:
    """The ``no_regression`` check of a suite's tracked asset (partitioned like it: the UI names the model)."""
    return check_spec(
        "no_regression",
        key,
        partitions_def,
        description="The stored verdicts of this evaluation against its baseline (the model's previous run or its "
        "predecessor): one-sided paired sign-flip tests on shared items, decided together by Holm at the "
        "look's α (docs/monitoring.md#one-release-one-decision); fails on an unacknowledged regression until a "
        "newer evaluation changes it or someone acknowledges it (geomon alerts ack).",
    )


NONE_OPEN = "none_open"  # the asset-level check that is red while any regression is open


def none_open_spec(key: list[str], scope: str, named: str = "which models") -> dg.AssetCheckSpec:
    """``none_open``: one check for the whole asset (not per partition), failed while any regression of ``scope``
    is open, so the asset's page, its lineage node and the checks list are red from the first look, not only the
    regressed model's partition; its description names how many and ``named``."""
    return check_spec(
        NONE_OPEN,
        key,
        description=f"Fails while any {scope} regression is open (unacknowledged, what the gates read); its "
        f"description names how many and {named}. Passes once each is superseded or acknowledged.",
    )


def open_summary(found: Sequence[tuple[str, str, Comparison]]) -> str:
    """``42 open regressions in 5 models: o3-mini-2025-01-31 (18), …`` (the most first), or "no open regression"."""
    per_model = pd.Series([model for _, model, _ in found], dtype=object).value_counts(sort=True)
    if per_model.empty:
        return "no open regression"
    return (
        f"{len(found)} open regression{'s' * (len(found) != 1)} in {len(per_model)} model"
        f"{'s' * (len(per_model) != 1)}: " + ", ".join(f"{m} ({n})" for m, n in per_model.items())
    )


def _none_open(found: Sequence[tuple[str, str, Comparison]]) -> dict[str, Any]:
    return {
        "passed": not found,
        "severity": dg.AssetCheckSeverity.ERROR,
        "description": open_summary(found),
        "metadata": {"open": len(found), "models": ", ".join(dict.fromkeys(m for _, m, _ in found)) or "none"},
    }


def none_open_evaluation(key: list[str], found: Sequence[tuple[str, str, Comparison]]) -> dg.AssetCheckEvaluation:
    """``none_open``'s result for the open regressions ``found`` (``views.open_regressions``), logged by the run
    that changed what is open, after the asset's materialization in that run (which it then judges)."""
    return dg.AssetCheckEvaluation(asset_key=dg.AssetKey(key), check_name=NONE_OPEN, **_none_open(found))


def none_open_result(found: Sequence[tuple[str, str, Comparison]]) -> dg.AssetCheckResult:
    """``none_open``'s result yielded by the asset's own materialization."""
    return dg.AssetCheckResult(check_name=NONE_OPEN, **_none_open(found))


def track_evaluation(
    context: dg.AssetExecutionContext,
    settings: Settings,
    asset_key: list[str],
    suite: str,
    model: str,
    figures: list[MetricValue],
    items: pd.DataFrame,
    tracked: Sequence[TrackedMetric],
    scope: str,
    versions: dict[str, str],
    replies: pd.DataFrame | None = None,
) -> dg.AssetCheckResult:
    """Record, decide, tell (``release.track`` with ``announce``: the same path as ``geomon import``) the
    evaluation of ``items`` with its ``figures`` (the factory's declared ones); returns the ``no_regression``
    check result with the stored verdicts and what was sent."""
    history = MetricHistory(settings.store_url)
    partition = str(context.partition_key) if context.has_partition_key else None

    def link(evaluation: Evaluation) -> str:
        here = partition if evaluation.model == model else evaluation.model
        return alerts.asset_url(settings.alerts.ui_url, asset_key, here)

    run = EvaluationRun(
        suite,
        model,
        scope=scope,
        versions=versions,
        predecessor=settings.lineage().get(model) or "",
        dagster_run_id=context.run.run_id,
    )
    result = release.track(
        history,
        run,
        figures,
        items,
        tracked,
        settings.verdicts,
        announcer=announce.announcer(settings.alerts, link, settings.serving_changes()),
        replies=replies,
    )
    current = result.evaluation
    decided = result.verdicts
    open_regressions = release.failing(history, current)
    told = result.told.get(current.evaluation_id, [])
    for evaluation in result.redecided:  # a late baseline re-decided later releases: their checks say so now
        for line in result.told.get(evaluation.evaluation_id, []):
            context.log.info(f"{suite}: {evaluation.model} decided again against {model}'s evaluation: {line}")
        redecided_check(
            context, history, asset_key, evaluation, model, result.told.get(evaluation.evaluation_id, []), tracked
        )
    acked = len(result.regressions) - len(open_regressions)
    report_open_regressions(context, history)
    return dg.AssetCheckResult(
        check_name="no_regression",
        passed=not open_regressions,
        severity=dg.AssetCheckSeverity.ERROR,
        description=check_line(open_regressions, decided, tracked),
        metadata={
            "evaluation_id": current.evaluation_id,
            "recorded_by_run": current.dagster_run_id,
            "compared_with": compared_with(result.against, current),
            "verdicts": verdicts.summary(decided, explained=True) if decided else "nothing compared",
            "decidable": f"{len(views.decidable(decided))} of {len(decided)}",
            "comparisons": comparisons_table(decided, tracked),
            "alpha": decided_at(decided),
            "regressions": len(open_regressions),
            "acknowledged": acked,
            "alert": ", ".join(told) or "none (no regression)",
            "redecided": ", ".join(e.model for e in result.redecided) or "none",
        },
    )


def compared_with(against: str, evaluation: Evaluation) -> str:
    """The no_regression check's ``compared_with``: the baseline, or why there is none. An unchanged re-run gets
    the evaluation already stored (its ``evaluation_id`` is the check's), so that one is named by when and by which
    run it was recorded, never as a comparison with itself."""
    if against:
        return against
    if not evaluation.reused:
        return "nothing: no earlier evaluation of this model or its predecessor in this scope"
    by_run = f" by run {evaluation.dagster_run_id}" if evaluation.dagster_run_id else ""
    return (
        f"unchanged: identical to the stored evaluation recorded {evaluation.recorded_at:%Y-%m-%d %H:%M} UTC"
        f"{by_run} (the same per-item values); nothing new to compare"
    )


def decided_at(rows: Sequence[Comparison]) -> str:
    """The α the evaluation's comparisons were decided at, and why where it is 0 (nothing pages: said, not only
    shown as ``watch``)."""
    if not rows:
        return "nothing decided"
    alpha = max(float(r.alpha or 0) for r in rows)
    if alpha > 0:
        return f"{alpha:.4g}"
    notes = [note for note in map(views.unpaged, rows) if note]
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
    now = release.stored(history, evaluation)
    decided = now.verdicts
    failing = release.failing(history, evaluation)
    report_check(
        context,
        asset_key,
        partition,
        failing,
        decided,
        tracked,
        {
            "evaluation_id": evaluation.evaluation_id,
            "compared_with": now.against,
            "decided_again_because": f"{because}'s evaluation arrived and became its baseline",
            "verdicts": verdicts.summary(decided, explained=True) if decided else "nothing compared",
            "comparisons": comparisons_table(decided, tracked),
            "regressions": len(failing),
            "alert": ", ".join(told) or "none (no regression)",
        },
    )


def check_line(failing: Sequence[Comparison], decided: Sequence[Comparison], tracked: Sequence[TrackedMetric]) -> str:
    """A ``no_regression`` result in one line, the check's Description in the UI: ``18 regressions vs o1
    (predecessor): correct_rate −17.2 pts, …``, worst first, or what passed."""
    if not failing:
        if not decided:
            return "no open regression"
        # Silence from comparisons that cannot decide is no evidence: the line says how many could.
        could = views.decidable(decided)
        return (
            f"no open regression; {len(could)} of {len(decided)} comparisons decidable"
            f"{'' if could else ' (none could see a regression of its minimum effect)'} "
            f"({verdicts.summary(list(decided))})"
        )
    table = views.verdict_table(list(failing), {m.name: m.bounds for m in tracked})
    changes = [f"{row.metric} {row.change}" for row in table.itertuples()]
    shown = ", ".join(changes[:3]) + (", …" if len(changes) > 3 else "")
    plural = "s" if len(failing) > 1 else ""
    return f"{len(failing)} regression{plural} vs {table['baseline'].iloc[0]}: {shown}"


Context = dg.OpExecutionContext | dg.AssetExecutionContext


def report_check(
    context: Context,
    asset_key: list[str],
    partition: str | None,
    failing: Sequence[Comparison],
    decided: Sequence[Comparison],
    tracked: Sequence[TrackedMetric],
    metadata: dict[str, Any],
    subject: str = "",
) -> None:
    """A ``no_regression`` evaluation of one partition, logged by the run ``context`` decides it in (another
    model's partition, an import's), tied to that partition's latest materialization (the evaluation it judged)
    and described in one line (``check_line``). Dagster counts a partition's check result only when it targets
    the partition's latest materialization: untied, the Partitions tab calls every partition missing and the
    history shows "-" as its target. Logged in a run, not reported runless: Dagster stores one runless result per
    partition, and a second one (the model decided again) fails on its unique index. ``subject`` (a model)
    opens the line."""
    key = dg.AssetKey(asset_key)
    context.log_event(
        dg.AssetCheckEvaluation(
            asset_key=key,
            check_name="no_regression",
            passed=not failing,
            severity=dg.AssetCheckSeverity.ERROR,
            partition=partition,
            target_materialization_data=latest_target(context.instance, key, partition),
            description=f"{subject}: " * bool(subject) + check_line(failing, decided, tracked),
            metadata=metadata,
        )
    )


def latest_target(
    instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None = None
) -> AssetCheckEvaluationTargetMaterializationData | None:
    """The latest materialization of ``key`` (of its ``partition``) as a check evaluation's target (see
    ``report_check``); None where it was never materialized."""
    latest = instance.fetch_materializations(
        dg.AssetRecordsFilter(key, asset_partitions=[partition] if partition is not None else None), limit=1
    ).records
    if not latest:
        return None
    return AssetCheckEvaluationTargetMaterializationData(
        storage_id=latest[0].storage_id, run_id=latest[0].run_id, timestamp=latest[0].timestamp
    )


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


OPEN_REGRESSIONS_KEY = ["monitor", "open_regressions"]


@dataclass(frozen=True)
class PublishedHistory:
    """A suite's published results in the Dagster catalog: its importer's folder observed (``results_key``), the
    import (``import_key``) and each imported model's latest evaluation, a partition of ``evaluations_key``. Its keys
    are named here once for the Dagster layer, from the suite's name (defs/history.py builds the assets)."""

    suite: str
    importer: Importer

    @property
    def results_key(self) -> list[str]:
        return ["history", f"{self.suite}_results"]

    @property
    def import_key(self) -> list[str]:
        return ["history", f"{self.suite}_import"]

    @property
    def evaluations_key(self) -> list[str]:
        """Where an imported model's comparisons are."""
        return ["history", f"{self.suite}_evaluations"]

    @functools.cached_property
    def partitions(self) -> dg.DynamicPartitionsDefinition:
        """The imported models, a partition each."""
        return dg.DynamicPartitionsDefinition(name=f"{self.suite}_models")


def published_histories() -> list[PublishedHistory]:
    """Every suite importer whose folder geomon.yaml may name (``Importer.setting``), as its published history: the
    Dagster layer builds their assets from what the suites expose and names none of them."""
    return [PublishedHistory(suite, importer) for suite, importer in registry.importers().values() if importer.setting]


def published_history(kind: str) -> PublishedHistory:
    """The published history of the importer of kind ``kind``."""
    return next(h for h in published_histories() if h.importer.kind == kind)


PUBLISHED = published_histories()  # built once, when the code location loads


# The open regressions' table as its dialog shows it, fitting at 1440 px: when and where from (evaluated, source)
# are on each row's linked comparisons page and on the model's own entry.
IN_DIALOG = [c for c in views.OPEN_REGRESSION_COLUMNS if c not in ("source", "evaluated")]


def open_regressions_metadata(
    history: MetricHistory, found: Sequence[tuple[str, str, Comparison]] | None = None
) -> tuple[str, dict[str, Any]]:
    """The open regressions (``views.open_regressions``: every regression the gate of a model's latest
    evaluation reads, run or imported, unacknowledged) as a one-line summary (how many, which models) and the
    ``monitor/open_regressions`` metadata: a table of suite, model, baseline, metric, group, change with its
    interval, minimum effect, MDE, power at the minimum effect and adjusted p, each row linked to the model's
    comparisons table (one click), where when it was evaluated and where it came from are."""
    found = views.open_regressions(history) if found is None else found
    frame = views.open_regressions_frame(history, found=found)
    rows = frame.to_dict("records")
    links = [_comparisons_url(suite, model, row.origin) for suite, model, row in found]
    # the most open regressions first
    per_model = (
        frame.groupby("model", sort=False).size().sort_values(ascending=False, kind="stable")
        if rows
        else pd.Series(dtype=int)
    )
    summary = open_summary(found)
    link = dict(zip(frame.get("model", []), links, strict=True))
    return summary, {
        "summary": summary,
        "by_model": dg.MetadataValue.md(_by_model(per_model, link) if rows else summary),
        "open": len(rows),
        "models": ", ".join(per_model.index) or "none",
        "open_regressions": dg.MetadataValue.md(_linked(markdown_table(frame[IN_DIALOG]), links) if rows else summary),
        "digest": hashlib.sha256(repr(rows).encode()).hexdigest()[:16],  # unchanged: not reported again
    }


def _comparisons_url(suite: str, model: str, origin: str) -> str:
    """Where the comparisons of an evaluation from ``origin`` are: a published model's partition of its suite's
    published history (``history/gapminder_evaluations``), a geomon run's partition of its suite's tracked stage
    (the asset in a suite with revisions, whose partitions are model × revision), else the imported history's
    asset."""
    for published in PUBLISHED:
        if origin.startswith(f"import:{published.importer.kind}:"):
            return alerts.asset_url("", published.evaluations_key, model)
    if origin.startswith("import:") or suite not in registry.suites():
        return alerts.asset_url("", PUBLISHED[0].evaluations_key if PUBLISHED else OPEN_REGRESSIONS_KEY)
    pipeline = registry.suite(suite).pipeline
    key = [suite, pipeline.tracked.name]
    return alerts.asset_url("", key, None if pipeline.revisions is not None else model)


SHOWN_INLINE = 1000  # the UI shows a shorter Markdown entry in place; a longer one behind "Show Markdown"


def _by_model(per_model: pd.Series, link: dict[str, str]) -> str:
    """Each model with open regressions, linked to its partition's view (its comparisons table, its check):
    short enough for the UI to show in place on the asset's page, the rest counted."""
    lines: list[str] = []
    for model, count in per_model.items():
        text = str(model).replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]").replace("<", "&lt;")
        line = f"- [{text}]({link[model]}): {count} open regression{'s' * (count != 1)}"
        if sum(len(x) + 1 for x in [*lines, line]) > SHOWN_INLINE - 60:
            lines.append(f"- and {len(per_model) - len(lines)} more models: see open_regressions")
            break
        lines.append(line)
    return "\n".join(lines)


def _linked(table: str, links: Sequence[str]) -> str:
    """A Markdown table with a last column of links (the UI's own paths, so the link works on any host)."""
    head, rule, *rows = table.splitlines()
    return "\n".join(
        [
            head + " comparisons |",
            rule + ":---|",
            *(f"{row} [table]({link}) |" for row, link in zip(rows, links, strict=True)),
        ]
    )


MODELS_GROUP = "models"  # each model's own catalog entry, named after it: models/<name> (defs/models.py)


def model_key(model: str) -> dg.AssetKey:
    """``models/<model>``, the model's own catalog entry."""
    return dg.AssetKey([MODELS_GROUP, model])


def model_check(model: str, rows: pd.DataFrame) -> dict[str, Any]:
    """``models/<model>``'s ``none_open`` result from its latest evaluations (``states.latest_by_model``'s rows of
    it): failed while any of its regressions is open; its description says how many, in which suites."""
    counted = rows[rows["open"] > 0]
    total = int(counted["open"].sum())
    if total:
        per_suite = ", ".join(f"{r.suite} ({r.open})" for r in counted.itertuples())
        line = f"{total} open regression{'s' * (total != 1)}: {per_suite}"
    else:
        line = "no open regression" if len(rows) else "not evaluated yet"
    return {
        "passed": not total,
        "severity": dg.AssetCheckSeverity.ERROR,
        "description": f"{model}: {line}",
        "metadata": {"open": total, "suites": ", ".join(counted["suite"]) or "none"},
    }


def model_state(model: str, rows: pd.DataFrame) -> dg.AssetMaterialization:
    """``models/<model>``'s state from its latest evaluation in each suite (``states.latest_by_model``'s rows of
    it, newest first): its open regressions, when it was last evaluated, and a row per suite linked to that
    evaluation's comparisons and check, which give its id (what `geomon alerts ack` takes)."""
    latest = rows.iloc[0]
    total = int(rows["open"].sum())
    table = rows[["suite", "evaluated", "source", "open"]].rename(columns={"open": "open regressions"})
    links = [_comparisons_url(r.suite, model, r.origin) for r in rows.itertuples()]
    last = f"{latest.evaluated} ({latest.suite}, {latest.source})"
    return dg.AssetMaterialization(
        model_key(model),
        description=f"{model_check(model, rows)['description']}; last evaluated {last}",
        metadata={
            "open_regressions": dg.MetadataValue.int(total),
            "last_evaluated": dg.MetadataValue.text(last),
            "evaluations": dg.MetadataValue.md(_linked(markdown_table(table), links)),
        },
    )


def report_models(context: Context, history: MetricHistory, found: Sequence[tuple[str, str, Comparison]]) -> None:
    """Each model's own catalog entry (``models/<name>``) brought up to date where its state changed, logged by
    the run that changed it (an evaluation, an import, a re-decision; an acknowledgement at the next of these):
    a materialization with its latest evaluation per suite and its open regressions (``found``), and its
    ``none_open`` check, tied to it, failed while any is open, so the catalog reads it red. Only the models with
    a partition here (registered, or imported from published results) are the code location's entries; a model
    another import brought into the history has none."""
    instance = context.instance
    known = {
        *instance.get_dynamic_partitions(models_partitions.name),
        *(m for published in PUBLISHED for m in instance.get_dynamic_partitions(published.partitions.name)),
    }
    latest = states.latest_by_model(history, found)
    latest = latest[latest["model"].isin(known)]
    before = instance.get_latest_materialization_events([model_key(m) for m in latest["model"].unique()])
    for model, rows in latest.groupby("model", sort=True):
        state = model_state(str(model), rows)
        last = before.get(state.asset_key)
        if last is not None and last.asset_materialization.metadata == state.metadata:
            continue  # unchanged: not reported again
        context.log_event(state)
        context.log_event(
            dg.AssetCheckEvaluation(
                asset_key=state.asset_key,
                check_name=NONE_OPEN,
                target_materialization_data=latest_target(instance, state.asset_key),
                **model_check(str(model), rows),
            )
        )


def report_open_regressions(context: Context, history: MetricHistory) -> None:
    """``monitor/open_regressions`` and each model's own entry (``report_models``) brought up to date, logged by
    the run that changed what is open (an import, a suite's decision), so the catalog shows them without
    materializing anything."""
    instance = context.instance
    found = views.open_regressions(history)
    report_models(context, history, found)
    summary, metadata = open_regressions_metadata(history, found)
    key = dg.AssetKey(OPEN_REGRESSIONS_KEY)
    before = instance.fetch_materializations(key, limit=1).records
    last = before[0].asset_materialization if before else None
    if last is not None and getattr(last.metadata.get("digest"), "value", None) == metadata["digest"]:
        return
    context.log_event(dg.AssetMaterialization(key, description=summary, metadata=metadata))
    context.log_event(none_open_evaluation(OPEN_REGRESSIONS_KEY, found))


@dg.asset(
    key=OPEN_REGRESSIONS_KEY,
    group_name="monitor",
    # Where the imported verdicts come from (lineage only: imports and suite runs log this asset themselves when
    # what is open changes, after the import's own materialization, so it is never older than its upstream).
    deps=[dg.AssetKey(published.import_key) for published in PUBLISHED],
    check_specs=[none_open_spec(OPEN_REGRESSIONS_KEY, "run or imported")],
    required_resource_keys={"geomon"},
)
def open_regressions(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    """Every open regression, run or imported (what the gates read: unacknowledged, a model's latest evaluation's
    and its release's against the predecessor): how many, which models; its metadata's table names suite, model,
    baseline, metric, group, change with its 95 % interval, minimum effect, MDE and power at the minimum effect,
    each row linked to that model's comparisons. Kept up to date by imports and runs."""
    history = MetricHistory(context.resources.geomon.settings().store_url)
    found = views.open_regressions(history)
    report_models(context, history, found)  # an acknowledgement since the last run shows here too
    summary, metadata = open_regressions_metadata(history, found)
    context.log.info(summary)
    return dg.MaterializeResult(metadata=metadata, check_results=[none_open_result(found)])
