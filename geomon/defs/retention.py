"""Run retention: Dagster keeps every run's event log forever, so a scheduled job deletes old runs.

geomon's metric history (its own store) is the long-term record and is never touched. A run is deleted
only when it finished more than ``retention.run_days`` ago and holds no asset partition's latest
materialization or observation: deleting that one would make the partition look missing (and the
automation conditions would materialize it again) or a source look unobserved.
"""

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import dagster as dg

from geomon.config import RetentionSettings
from geomon.defs.resources import GeomonResource, cron_from_settings

FINISHED = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]
PAGE = 1000


def _latest_per_partition(fetch, key: dg.AssetKey) -> Iterator[str]:
    """Run ids of the newest event (of ``fetch``'s kind) of each partition of ``key``."""
    seen: set[str | None] = set()
    cursor = None
    while True:
        page = fetch(key, limit=PAGE, cursor=cursor, ascending=False)
        for record in page.records:
            if record.partition_key not in seen:
                seen.add(record.partition_key)
                yield record.run_id
        if not page.has_more:
            return
        cursor = page.cursor


def protected_runs(instance: dg.DagsterInstance) -> set[str]:
    """Runs that hold some asset partition's latest materialization or observation."""
    runs: set[str] = set()
    for key in instance.get_asset_keys():
        runs.update(_latest_per_partition(instance.fetch_materializations, key))
        runs.update(_latest_per_partition(instance.fetch_observations, key))
    return runs


def purge_runs(instance: dg.DagsterInstance, run_days: int, now: datetime | None = None) -> dict[str, int]:
    """Delete finished runs older than ``run_days`` (with their event logs) that hold no latest event;
    returns how many were deleted, kept because they hold a latest event, and looked at."""
    cutoff = (now or datetime.now(UTC)) - timedelta(days=run_days)
    old = instance.get_run_records(dg.RunsFilter(statuses=FINISHED, updated_before=cutoff))
    keep = protected_runs(instance) if old else set()
    deleted = 0
    for record in old:
        if record.dagster_run.run_id not in keep:
            instance.delete_run(record.dagster_run.run_id)
            deleted += 1
    return {"deleted": deleted, "kept_latest": len(old) - deleted, "older_than_cutoff": len(old)}


@dg.op
def purge_old_runs(context: dg.OpExecutionContext, geomon: GeomonResource) -> dg.Output[dict]:
    """Delete old runs' event logs (``retention.run_days`` in geomon.yaml; null keeps everything)."""
    days = geomon.settings().retention.run_days
    if days is None:
        context.log.info("retention.run_days is null: every run is kept")
        return dg.Output({}, metadata={"run_days": "null (keep every run)"})
    counts = purge_runs(context.instance, days)
    context.log.info(
        f"deleted {counts['deleted']} runs finished over {days} days ago; kept {counts['kept_latest']} that hold "
        "an asset partition's latest materialization or observation"
    )
    return dg.Output(counts, metadata={**counts, "run_days": days})


@dg.job(description="Deletes runs (and their event logs) older than retention.run_days; metric history stays.")
def run_retention_job() -> None:
    purge_old_runs()


run_retention_schedule = dg.ScheduleDefinition(
    job=run_retention_job,
    cron_schedule=cron_from_settings(lambda s: s.retention.schedule, RetentionSettings().schedule),
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Deletes runs older than retention.run_days (retention.schedule in geomon.yaml); history stays.",
)
