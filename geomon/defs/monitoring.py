"""Wiring the monitor into the suites' assets: every evaluation goes into the metric history, is compared
with its baseline in release order and decided with its family (``geomon.monitor.release``), and a
regression verdict raises an alert and fails ``no_regression`` until it is superseded or acknowledged.
Also the alert on failed runs. Any suite plugs in with ``track_evaluation``."""

import hashlib
from collections.abc import Sequence
from typing import Any

import dagster as dg
import pandas as pd

# Not exported by dagster's top level, but the documented field of AssetCheckEvaluation that ties a runless check
# evaluation to the materialization it judged (see report_check).
from dagster._core.definitions.asset_checks.asset_check_evaluation import AssetCheckEvaluationTargetMaterializationData

from geomon.config import Settings
from geomon.defs.resources import check_spec
from geomon.monitor import alerts, announce, release, views
from geomon.monitor.history import Evaluation, EvaluationRun, MetricHistory
from geomon.report.charts import markdown_table
from geomon.stats import verdicts
from geomon.stats.declarations import TrackedMetric
from geomon.stats.values import MetricValue
from geomon.stats.verdicts import Comparison


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


def none_open_spec(key: list[str], scope: str) -> dg.AssetCheckSpec:
    """``none_open``: one check for the whole asset (not per partition), failed while any regression of ``scope``
    is open, so the asset's page, its lineage node and the checks list are red from the first look, not only the
    regressed model's partition."""
    return check_spec(
        NONE_OPEN,
        key,
        description=f"Fails while any {scope} regression is open (unacknowledged, what the gates read); its "
        "description names how many and which models. Passes once each is superseded or acknowledged.",
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
    instance = context.instance
    key = dg.AssetKey(asset_key)
    latest = instance.fetch_materializations(
        dg.AssetRecordsFilter(key, asset_partitions=[partition] if partition is not None else None), limit=1
    ).records
    target = (
        AssetCheckEvaluationTargetMaterializationData(
            storage_id=latest[0].storage_id, run_id=latest[0].run_id, timestamp=latest[0].timestamp
        )
        if latest
        else None
    )
    context.log_event(
        dg.AssetCheckEvaluation(
            asset_key=key,
            check_name="no_regression",
            passed=not failing,
            severity=dg.AssetCheckSeverity.ERROR,
            partition=partition,
            target_materialization_data=target,
            description=f"{subject}: " * bool(subject) + check_line(failing, decided, tracked),
            metadata=metadata,
        )
    )


READING = (
    "**change**: the model's value minus its baseline's, in the metric's units, with its 95 % interval; **MDE**: "
    "the smallest change this sample detects with 80 % power at its level; **power**: the chance of detecting the "
    "metric's minimum effect; **adjusted p**: the one-sided p after Holm over the comparisons decided together — a "
    "regression is a worsening past the minimum effect whose adjusted p is below the look's α (`alpha`); "
    "**reason**: why a verdict is what it is; **look**: which of the scope's α it was decided at; a **verdict** of "
    "`watch` is a worsening significant at the false-discovery rate `q` but not after Holm (worth a look, never "
    "paged), `undefined` one whose statistic cannot be computed on a side (no p-value) (docs/monitoring.md)."
)


def comparisons_table(rows: Sequence[Comparison], tracked: Sequence[TrackedMetric]) -> dg.MetadataValue:
    """An evaluation's stored verdicts as the UI shows them, worst first (``views.verdict_table``'s figures): one
    sentence saying how to read it, then metric, verdict, change with its interval, MDE, power, adjusted p, the
    reason and the look — the baseline above the table where it is one, a column where they differ."""
    if not rows:
        return dg.MetadataValue.md("nothing compared")
    table = views.verdict_table(rows, {m.name: m.bounds for m in tracked})
    compact = pd.DataFrame(
        {
            "metric": table["metric"],
            "verdict": table["verdict"],
            "change (95 % interval)": table["change"] + " " + table["95 % interval"],
            "MDE": table["MDE"],
            "power": table[views.POWER],
            "adjusted p": table["adjusted p"],
            "reason": table["note"].replace("", "—"),
            "look": table["look"],
        }
    )
    baselines = list(dict.fromkeys(table["baseline"]))
    if len(baselines) > 1:
        compact.insert(1, "baseline", table["baseline"])
    against = f"Against {baselines[0]}. " if len(baselines) == 1 else ""
    return dg.MetadataValue.md(f"{against}{READING}\n\n{markdown_table(compact)}")


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
# The imported published history (``geomon import gapminder-results``) is Gapminder's: its suite and its assets'
# keys, named here once for the Dagster layer (defs/history.py builds the assets).
PUBLISHED_SUITE = "gapminder"
IMPORT_KEY = ["history", f"{PUBLISHED_SUITE}_import"]
IMPORTED_EVALUATIONS_KEY = ["history", f"{PUBLISHED_SUITE}_evaluations"]  # where an imported model's comparisons are


def open_regressions_metadata(
    history: MetricHistory, found: Sequence[tuple[str, str, Comparison]] | None = None
) -> tuple[str, dict[str, Any]]:
    """The open regressions (``views.open_regressions``: every regression the gate of a model's latest
    evaluation reads, run or imported, unacknowledged) as a one-line summary (how many, which models) and the
    ``monitor/open_regressions`` metadata: a table of suite, model, source, baseline, metric, group, change with
    its interval, minimum effect, MDE and power at the minimum effect, each row linked to the model's
    comparisons table (one click)."""
    found = views.open_regressions(history) if found is None else found
    frame = views.open_regressions_frame(history, found=found)
    rows = frame.to_dict("records")
    links = [_comparisons_url(suite, model, row) for suite, model, row in found]
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
        "open_regressions": dg.MetadataValue.md(_linked(markdown_table(frame), links) if rows else summary),
        "digest": hashlib.sha256(repr(rows).encode()).hexdigest()[:16],  # unchanged: not reported again
    }


def _comparisons_url(suite: str, model: str, row: Comparison) -> str:
    """Where a regression's comparisons table is: a published Gapminder configuration's partition of
    ``history/gapminder_evaluations``, a geomon run's partition of its suite's tracked stage (the asset in a suite
    with revisions, whose partitions are model × revision), else the imported history's asset."""
    from geomon.suites import registry

    if row.origin.startswith("import:gapminder-results"):
        return alerts.asset_url("", IMPORTED_EVALUATIONS_KEY, model)
    if row.origin.startswith("import:") or suite not in registry.suites():
        return alerts.asset_url("", IMPORTED_EVALUATIONS_KEY)
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


def report_open_regressions(context: Context, history: MetricHistory) -> None:
    """``monitor/open_regressions`` brought up to date, logged by the run that changed what is open (an import,
    a suite's decision), so the catalog shows them without materializing it."""
    instance = context.instance
    found = views.open_regressions(history)
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
    deps=[dg.AssetKey(IMPORT_KEY)],
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
    summary, metadata = open_regressions_metadata(history, found)
    context.log.info(summary)
    return dg.MaterializeResult(metadata=metadata, check_results=[none_open_result(found)])
