"""`make ui`'s command (`dg dev`: the webserver and the daemon) on a fresh instance: the monitoring loop the
README describes is running without a click, read back from the running UI's GraphQL API."""

from __future__ import annotations

import time

import pytest
import requests

from geomon.report.browser import dagster_ui
from geomon_tests.conftest import write_settings

REPO_WORKSPACE = ["-w", "workspace.yaml"]
STATUS_QUERY = """
{
  instance { daemonHealth { allDaemonStatuses { daemonType healthy required } } }
  repositoriesOrError {
    ... on RepositoryConnection {
      nodes {
        location { name }
        sensors { name sensorState { status } }
        schedules { name scheduleState { status } }
      }
    }
  }
}
"""
MONITORING_LOOP = {
    "sensors": {
        "geomon_automation",
        "model_registry_sensor",
        "dispute_revision_sensor",
        "alert_on_run_failure",
        "blocked_automation_sensor",
    },
    "schedules": {"observe_sources_hourly", "drift_probe_schedule", "run_retention_job_schedule"},
}


@pytest.mark.slow
def test_a_fresh_instance_runs_the_monitoring_loop(tmp_path, wdi_snapshot_dir, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.setenv("GEOMON_CONFIG", str(write_settings(tmp_path, wdi_snapshot_dir)))
    with dagster_ui(home, REPO_WORKSPACE, with_daemon=True) as url:
        deadline = time.monotonic() + 300  # a guard for a loaded machine, not a timing assertion
        while True:
            data = requests.post(f"{url}/graphql", json={"query": STATUS_QUERY}, timeout=60).json()["data"]
            daemons = {d["daemonType"]: d["healthy"] for d in data["instance"]["daemonHealth"]["allDaemonStatuses"]}
            if (daemons.get("SENSOR") and daemons.get("SCHEDULER")) or time.monotonic() > deadline:
                break
            time.sleep(2)
    (repository,) = [r for r in data["repositoriesOrError"]["nodes"] if r["location"]["name"] == "geomon"]
    sensors = {s["name"]: s["sensorState"]["status"] for s in repository["sensors"]}
    schedules = {s["name"]: s["scheduleState"]["status"] for s in repository["schedules"]}
    assert daemons["SENSOR"] and daemons["SCHEDULER"], daemons  # the daemon is up and evaluating them
    assert MONITORING_LOOP["sensors"] <= set(sensors) and MONITORING_LOOP["schedules"] <= set(schedules)
    assert {name: status for name, status in {**sensors, **schedules}.items() if status != "RUNNING"} == {}
