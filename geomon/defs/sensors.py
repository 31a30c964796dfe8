"""Sensors: models added to the registry become partitions and get their runs."""

import dagster as dg

from geomon.defs.resources import GeomonResource, models_partitions
from geomon.defs.runs import PER_MODEL

worldbench_per_model_job = dg.define_asset_job(
    "worldbench_per_model",
    selection=PER_MODEL,
    partitions_def=models_partitions,
    description="Responses, scores and disparity of one model (a partition of `models`).",
)


@dg.sensor(job=worldbench_per_model_job, minimum_interval_seconds=60)
def model_registry_sensor(context: dg.SensorEvaluationContext, geomon: GeomonResource) -> dg.SensorResult:
    """A model in geomon.yaml not seen before becomes a partition; only its own runs are requested.

    Models removed from the registry keep their partition and results (nothing is deleted silently);
    the sensor says which ones are no longer registered.
    """
    registered = [s.name for s in geomon.settings().models]
    known = set(context.instance.get_dynamic_partitions(models_partitions.name))
    new = [n for n in registered if n not in known]
    gone = sorted(known - set(registered))
    if gone:
        context.log.info("partitions without a registry entry (results kept): %s", ", ".join(gone))
    return dg.SensorResult(
        run_requests=[dg.RunRequest(partition_key=n, run_key=f"new-model-{n}") for n in new],
        dynamic_partitions_requests=[models_partitions.build_add_request(new)] if new else [],
        skip_reason=None if new else "no new models in the registry",
    )
