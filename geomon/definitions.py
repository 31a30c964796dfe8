"""The Definitions object that workspace.yaml loads."""

import dagster as dg

from geomon.defs import borderlines, sensors, worldbench
from geomon.defs.resources import GeomonResource

defs = dg.Definitions(
    assets=[*worldbench.ASSETS, *borderlines.ASSETS],
    asset_checks=worldbench.CHECKS,
    jobs=[sensors.worldbench_per_model_job],
    sensors=[sensors.model_registry_sensor],
    resources={"geomon": GeomonResource()},
)
