"""The Definitions object that workspace.yaml loads."""

import dagster as dg

from geomon.defs import sensors, worldbench
from geomon.defs.resources import GeomonResource

defs = dg.Definitions(
    assets=worldbench.ASSETS,
    asset_checks=worldbench.CHECKS,
    jobs=[sensors.worldbench_per_model_job],
    sensors=[sensors.model_registry_sensor],
    resources={"geomon": GeomonResource()},
)
