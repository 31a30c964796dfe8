"""The Definitions object that workspace.yaml loads."""

import dagster as dg

from geomon.defs import automation, borderlines, drift, monitoring, sensors, worldbench
from geomon.defs.resources import GeomonResource

defs = dg.Definitions(
    assets=[automation.wdi_release, *worldbench.ASSETS, *borderlines.ASSETS, drift.drift_probe, drift.trends_report],
    asset_checks=worldbench.CHECKS,
    jobs=[
        sensors.worldbench_per_model_job,
        sensors.borderlines_per_model_job,
        automation.observe_sources_job,
        drift.drift_probe_job,
    ],
    schedules=[automation.observe_sources_schedule, drift.drift_probe_schedule],
    sensors=[
        sensors.model_registry_sensor,
        sensors.dispute_revision_sensor,
        automation.automation_sensor,
        monitoring.alert_on_run_failure,
    ],
    resources={"geomon": GeomonResource()},
)
