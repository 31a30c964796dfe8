"""Sensors that notice new models and new Wikipedia revisions.

They only register partitions: the automation sensor (geomon.defs.automation) then requests exactly
the newly missing partitions — a new model's runs for that model only, a new revision's table, prompts
and per-model scores — so nothing already answered is asked again.
"""

from datetime import UTC, datetime, timedelta

import dagster as dg

from geomon.defs.resources import GeomonResource, api_models_partitions, models_partitions, revisions_partitions
from geomon.sources import wikipedia


@dg.sensor(minimum_interval_seconds=300, default_status=dg.DefaultSensorStatus.RUNNING)
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


@dg.sensor(minimum_interval_seconds=3600, default_status=dg.DefaultSensorStatus.RUNNING)
def dispute_revision_sensor(context: dg.SensorEvaluationContext, geomon: GeomonResource) -> dg.SensorResult:
    """The configured dated versions of "List of territorial disputes" and, at most every
    ``borderlines.latest_every_days``, its latest revision become partitions of ``dispute_revisions``.

    The page is edited often; evaluating every edit would re-ask every model, so "latest" is taken at
    a configurable cadence (the cursor remembers when).
    """
    settings = geomon.settings().borderlines
    client = settings.mediawiki()
    wanted = list(settings.revisions)
    now = datetime.now(UTC)
    last_latest = datetime.fromisoformat(context.cursor) if context.cursor else None
    take_latest = "latest" in wanted and (
        last_latest is None or now - last_latest >= timedelta(days=settings.latest_every_days)
    )
    if not take_latest:
        wanted = [w for w in wanted if w != "latest"]
    keys = [wikipedia.revision_key(r) for r in wikipedia.resolve_revisions(wanted, client)]
    known = set(context.instance.get_dynamic_partitions(revisions_partitions.name))
    new = [k for k in keys if k not in known]
    return dg.SensorResult(
        dynamic_partitions_requests=[revisions_partitions.build_add_request(new)] if new else [],
        cursor=now.isoformat() if take_latest else context.cursor,
        skip_reason=None if new else "no new revisions",
    )
