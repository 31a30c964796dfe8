"""Sensors that notice new models and new revisions of a suite's source (Wikipedia's disputes table), and a model
left on an old sample.

They only register partitions: the automation sensor (geomon.defs.automation) then requests exactly
the newly missing partitions — a new model's runs for that model only, a new revision's table, prompts
and per-model scores — so nothing already answered is asked again.
"""

from datetime import UTC, datetime
from typing import Any

import dagster as dg
from dagster._core.storage.tags import PARTITION_NAME_TAG

from geomon.defs.automation import LAUNCHED_BY, SUITE_TAG
from geomon.defs.resources import GeomonResource, api_models_partitions, models_partitions, revisions_partitions
from geomon.defs.versions import SAMPLE
from geomon.suites.pipeline import Revisions


@dg.sensor(
    minimum_interval_seconds=300,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Models new in geomon.yaml or served by a configured endpoint become partitions (never removed).",
)
def model_registry_sensor(context: dg.SensorEvaluationContext, geomon: GeomonResource) -> dg.SensorResult:
    """Models in geomon.yaml or served by a configured endpoint (``GET /v1/models``) not seen before
    become partitions of ``models``.

    Models that disappear (removed from the registry, no longer served) keep their partition and every
    result: nothing is deleted silently. A renamed model is a new model; its old name's history stays.
    """
    models, unreachable = geomon.settings().all_models()
    for endpoint, error in unreachable.items():
        context.log.warning("endpoint %s could not be asked for its models: %s", endpoint, error)
    known = set(context.instance.get_dynamic_partitions(models_partitions.name))
    names = [s.name for s in models]
    new = [n for n in names if n not in known]
    # Models that can drift (served by an endpoint) are also partitions of the drift probe.
    probed = set(context.instance.get_dynamic_partitions(api_models_partitions.name))
    new_api = [s.name for s in models if s.bundled is None and s.name not in probed]
    gone = sorted(known - set(names))
    if gone:
        context.log.info("partitions without a registered or served model (results kept): %s", ", ".join(gone))
    requests = [models_partitions.build_add_request(new)] if new else []
    requests += [api_models_partitions.build_add_request(new_api)] if new_api else []
    return dg.SensorResult(
        dynamic_partitions_requests=requests,
        skip_reason=None if requests else f"no new models ({len(names)} known; not served any more: {len(gone)})",
    )


def revisions_sensor(suite: str, revisions: Revisions) -> dg.SensorDefinition:
    """``<suite>_revisions_sensor``: the revisions a suite with ``Revisions`` wants now (BorderLines: the
    configured dated versions of "List of territorial disputes" and, at its cadence, the latest) become
    partitions of the suite's own ``revisions.partitions``; the suite's ``watch`` keeps its cursor."""
    partitions = revisions_partitions(revisions.partitions)

    @dg.sensor(
        name=f"{suite}_revisions_sensor",
        minimum_interval_seconds=revisions.watch_every_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=f"New revisions of {suite}'s source become partitions of {revisions.partitions}.",
    )
    def sensor(context: dg.SensorEvaluationContext, geomon: GeomonResource) -> dg.SensorResult:
        keys, cursor = revisions.wanted(geomon.settings(), context.cursor)
        known = set(context.instance.get_dynamic_partitions(partitions.name))
        new = [k for k in keys if k not in known]
        return dg.SensorResult(
            dynamic_partitions_requests=[partitions.build_add_request(new)] if new else [],
            cursor=cursor,
            skip_reason=None if new else f"no new revisions of {suite} ({len(known)} known)",
        )

    return sensor


RECENT_PARTITIONS = 50  # a partitioned asset's most recent materializations whose blocking checks are read


def blocked_by_checks(instance: dg.DagsterInstance, asset_graph: Any) -> dict[str, str]:
    """Assets (and partitions: a model, a table revision) whose latest materialization has a blocking check
    that did not pass: not run on it (materialized without its checks), failed, or still running. Automation
    waits on these silently; this says which check, which partition and why."""
    blocking = [key for key in asset_graph.asset_check_keys if asset_graph.get_check_spec(key).blocking]
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(blocking)
    reasons: dict[str, str] = {}
    for key in blocking:
        name = f"{key.asset_key.to_user_string()}:{key.name}"
        if not asset_graph.get(key.asset_key).is_partitioned:
            records = instance.fetch_materializations(key.asset_key, limit=1).records
            if records:  # never materialized: nothing waits on it yet
                _why(instance, reasons, name, records[0], latest.get(key))
            continue
        # The check's recent executions by the materialization they checked (an in-asset check of a partitioned
        # asset may be stored without its partition).
        executions = instance.event_log_storage.get_asset_check_execution_history(key, limit=4 * RECENT_PARTITIONS)
        by_target: dict[int, Any] = {}
        for execution in executions:
            evaluation = execution.event.dagster_event.event_specific_data if execution.event else None
            target = getattr(evaluation, "target_materialization_data", None)
            if target is not None:
                by_target.setdefault(target.storage_id, execution)
        seen: set[str] = set()
        for materialization in instance.fetch_materializations(key.asset_key, limit=RECENT_PARTITIONS).records:
            partition = materialization.partition_key
            if partition is None or partition in seen:
                continue  # an older materialization of a partition already read
            seen.add(partition)
            _why(instance, reasons, f"{name} [{partition}]", materialization, by_target.get(materialization.storage_id))
    return reasons


def _why(instance: dg.DagsterInstance, reasons: dict[str, str], name: str, materialization: Any, record: Any) -> None:
    """Why the check ``record`` (its latest execution) does not clear ``materialization``, if it does not."""
    evaluation = record.event.dagster_event.event_specific_data if record and record.event else None
    target = getattr(evaluation, "target_materialization_data", None)
    if record is None or (target is not None and target.storage_id != materialization.storage_id):
        reasons[name] = "not run on the latest materialization (run it from the asset's Checks tab)"
    elif record.status.value == "PLANNED":
        run = instance.get_run_by_id(record.run_id)
        if run is None or not run.is_finished:
            reasons[name] = f"still running in run {record.run_id[:8]}"
        else:  # Dagster reads the check as Skipped or Execution failed, which holds automation as a failure would
            reasons[name] = (
                f"never ran: run {record.run_id[:8]} ended {run.status.value.lower()} before it (materialize the "
                "asset again, or run the check from its Checks tab)"
            )
    elif evaluation is not None and not evaluation.passed:
        reasons[name] = f"failed in run {record.run_id[:8]}: {evaluation.description or 'see its metadata'}"


@dg.sensor(
    minimum_interval_seconds=300,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Says which blocking check holds automation back, and why, in its tick message; requests nothing.",
)
def blocked_automation_sensor(context: dg.SensorEvaluationContext) -> dg.SkipReason:
    """Says why automation stopped: every blocking check that holds its downstream assets back, and why, as
    the tick's message (Automation → this sensor) and a warning in its log. Requests nothing itself."""
    reasons = blocked_by_checks(context.instance, context.repository_def.asset_graph)
    if not reasons:
        return dg.SkipReason("no blocking check holds automation back")
    message = "automation waits on: " + "; ".join(f"{check} {why}" for check, why in sorted(reasons.items()))
    context.log.warning(message)
    return dg.SkipReason(message)


def stale_sample_sensor(suite: str, prompts: dg.AssetKey, reader: dg.AssetKey, job: str) -> dg.SensorDefinition:
    """``<suite>_sample_sensor``: a model left on an old sample — its run on the current prompts was terminated
    or failed, so automation, having handled that change, would leave it there — is re-run once on the current
    sample (its ``<suite>_per_model`` job). A model with no such run yet is automation's (and waits, as it does,
    on a failed blocking check); one whose re-run failed too stays, named by the leaderboard's ``sample_note``."""

    @dg.sensor(
        name=f"{suite}_sample_sensor",
        minimum_interval_seconds=300,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=f"Re-runs, once, each {suite} model whose run on the current sample ended without answering it.",
    )
    def sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        requests = [
            dg.RunRequest(
                job_name=job,
                partition_key=model,
                run_key=f"{model}:{sample}",  # once per model and sample: a second failure is not retried
                tags={SUITE_TAG: suite, LAUNCHED_BY: "automation"},
            )
            for model, sample in left_on_old_sample(context.instance, prompts, reader, job)
        ]
        return dg.SensorResult(
            run_requests=requests,
            skip_reason=None if requests else f"no {suite} model left on an old sample after a run ended",
        )

    return sensor


def left_on_old_sample(
    instance: dg.DagsterInstance, prompts: dg.AssetKey, reader: dg.AssetKey, job: str
) -> list[tuple[str, str]]:
    """(model, current sample) for each model whose answers (``reader``'s latest materialization of its partition)
    are on another sample than the prompts' latest, and whose runs of ``reader`` (or of its whole ``job``) since
    those prompts have all ended without success (at least one, none in progress)."""
    latest = instance.fetch_materializations(prompts, limit=1).records
    current = latest[0].asset_materialization.metadata.get(SAMPLE) if latest else None
    if current is None:
        return []
    since = datetime.fromtimestamp(latest[0].timestamp, tz=UTC)
    left = []
    for model in instance.get_dynamic_partitions(models_partitions.name):
        answered = instance.fetch_materializations(dg.AssetRecordsFilter(reader, asset_partitions=[model]), limit=1)
        if not answered.records or answered.records[0].asset_materialization.metadata.get(SAMPLE) == current:
            continue  # never answered (automation's newly missing partition), or on the current sample
        runs = [
            r.dagster_run
            for r in instance.get_run_records(dg.RunsFilter(tags={PARTITION_NAME_TAG: model}, created_after=since))
            if reader in (r.dagster_run.asset_selection or ())
            or (r.dagster_run.asset_selection is None and r.dagster_run.job_name == job)
        ]
        if runs and all(run.is_finished and run.status != dg.DagsterRunStatus.SUCCESS for run in runs):
            left.append((model, str(current.value).split(" ")[0]))
    return left
