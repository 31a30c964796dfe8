"""`make ui`'s command (`dg dev`: the webserver and the daemon) on a fresh instance: the monitoring loop the
README describes is running without a click, read back from the running UI's GraphQL API."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from geomon.report.browser import dagster_ui
from geomon_tests import snapshot
from geomon_tests.conftest import write_settings

REPO_WORKSPACE = ["-w", "workspace.yaml"]
REPO = Path(__file__).resolve().parents[2]
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
        # each suite with revisions has its own sensor (BorderLines'), as the reviewed snapshot records
        *(s for s in snapshot.expected()["sensors"] if s.endswith("_revisions_sensor")),
        "alert_on_run_failure",
        "blocked_automation_sensor",
    },
    "schedules": {"observe_sources_hourly", "drift_probe_schedule", "run_retention_job_schedule"},
}


@dataclass
class RunningUI:
    proc: subprocess.Popen
    url: str
    dg_pid: int  # `dg dev`'s process, the leader of the group of the webserver, the daemon and the code servers
    said: str  # what geomon ui printed before the UI's address


@pytest.fixture(scope="module")
def geomon_ui(tmp_path_factory, wdi_snapshot_dir) -> Iterator[RunningUI]:
    """`make ui`'s command, `geomon ui`, on a fresh instance, once for the module (its webserver, daemon and code
    servers take 10-20 s of both cores to come up): the monitoring loop's test reads it, then the SIGTERM test
    stops it. Whatever is left afterwards is killed, whichever test failed."""
    tmp_path = tmp_path_factory.mktemp("ui")
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {**os.environ, "DAGSTER_HOME": str(home), "GEOMON_CONFIG": str(write_settings(tmp_path, wdi_snapshot_dir))}
    with _started_ui(env) as ui:
        yield ui


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def _started_ui(env: dict[str, str]) -> Iterator[RunningUI]:
    """`geomon ui` as `make ui` starts it, once its webserver answers; whatever is left afterwards is killed."""
    port = _free_port()
    geomon = Path(sys.executable).with_name("geomon")
    proc = subprocess.Popen(
        [str(geomon), "ui", "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    dg_pid = None
    try:
        line, said = "", []
        while "Dagster UI on" not in line:  # a warning may come first (alerts go nowhere)
            line = proc.stdout.readline()
            assert line, "geomon ui ended before starting the UI"
            said.append(line)
        dg_pid = int(line.split("pid ")[1].split(")")[0])
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 300  # a guard for a loaded machine, not a timing assertion
        while True:
            try:
                urllib.request.urlopen(f"{url}/server_info", timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "the UI did not start"
                time.sleep(1)
        yield RunningUI(proc, url, dg_pid, "".join(said))
    finally:  # never leave a UI behind, whatever failed
        for pgid in (proc.pid, dg_pid):
            if pgid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pgid, signal.SIGKILL)
        proc.wait()


@pytest.mark.slow
def test_a_fresh_instance_runs_the_monitoring_loop(geomon_ui):
    deadline = time.monotonic() + 300  # a guard for a loaded machine, not a timing assertion
    while True:
        data = requests.post(f"{geomon_ui.url}/graphql", json={"query": STATUS_QUERY}, timeout=60).json()["data"]
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


def _group_alive(pgid: int) -> bool:
    """Whether any process of the group still exists (every process is looked at: the group's leader may be
    gone while its children run on)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == pgid:
                    return True
            except (ProcessLookupError, PermissionError):
                continue
    return False


@pytest.mark.slow
def test_geomon_ui_stops_with_every_child_on_sigterm(geomon_ui):
    """`make ui` (geomon ui): dg dev and its webserver, daemon and code servers all stop on SIGTERM, as on
    Ctrl-C — started in the background, dg dev alone would ignore both."""
    os.kill(geomon_ui.proc.pid, signal.SIGTERM)
    assert geomon_ui.proc.wait(120) == 0
    deadline = time.monotonic() + 60
    while _group_alive(geomon_ui.dg_pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _group_alive(geomon_ui.dg_pid), "a dg dev process outlived geomon ui"


@pytest.mark.slow
def test_a_ui_left_running_is_stopped_by_the_next_and_a_closed_terminal_stops_it(tmp_path, wdi_snapshot_dir):
    """A `geomon ui` killed outright leaves its dg dev group running, daemon and all; the next `geomon ui` on the
    same DAGSTER_HOME stops it before starting its own (two daemons on one instance both run the sensors and log
    "Another … daemon is still sending heartbeats"), and a closed terminal (SIGHUP) stops the UI with every child.
    Mutations caught: SIGHUP not handled (the group outlives geomon ui); no stop of the UI left behind."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {**os.environ, "DAGSTER_HOME": str(home), "GEOMON_CONFIG": str(write_settings(tmp_path, wdi_snapshot_dir))}
    with _started_ui(env) as first:
        first.proc.kill()  # geomon ui only: its dg dev, in a session of its own, runs on
        first.proc.wait()
        assert _group_alive(first.dg_pid)
        with _started_ui(env) as second:
            assert "an earlier geomon ui left running here" in second.said
            assert not _group_alive(first.dg_pid)
            os.kill(second.proc.pid, signal.SIGHUP)
            assert second.proc.wait(120) == 0
            deadline = time.monotonic() + 60  # a guard for a loaded machine, as in the SIGTERM test
            while _group_alive(second.dg_pid) and time.monotonic() < deadline:
                time.sleep(0.5)
            assert not _group_alive(second.dg_pid), "a dg dev process outlived geomon ui"
            assert not (home / "geomon-ui.pid").exists()


RUNS_QUERY = """
{
  runsOrError(filter: {tags: [{key: "geomon/suite", value: "borderlines"}]}) {
    ... on Runs { results { runId jobName status repositoryOrigin { repositoryLocationName repositoryName } } }
  }
}
"""
REEXECUTE = """
mutation($parent: String!) {
  launchRunReexecution(reexecutionParams: {parentRunId: $parent, strategy: ALL_STEPS}) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
  }
}
"""
STATUS = "query($id: ID!) { runOrError(runId: $id) { ... on Run { status jobName } } }"
FAILURES = """
query($id: ID!) {
  logsForRun(runId: $id) {
    ... on EventConnection {
      events { __typename ... on MessageEvent { message } ... on ErrorEvent { error { message cause { message } } } }
    }
  }
}
"""


@pytest.mark.slow
def test_geomon_run_launches_runs_of_the_code_location_that_the_ui_re_executes(tmp_path, wdi_snapshot_dir, monkeypatch):
    """`geomon run`'s runs carry the `geomon` code location's origin: the UI lists them under the location's
    jobs and re-executes one like its own (a real webserver and daemon on the same instance)."""
    from geomon_tests.conftest import SHARED
    from geomon_tests.loopback import ScriptedModel, serve

    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with serve(ScriptedModel, {"answer": lambda messages: "A", "models": ["table"]}) as model_url:
        entry = {"name": "table", "kind": "chat", "base_url": f"{model_url}/v1", "model_id": "table"}
        borderlines = {"snapshot": str(SHARED / "snapshots" / "borderlines"), "revisions": ["2023-05-15"]}
        settings = write_settings(
            tmp_path, wdi_snapshot_dir, models=[entry], include_bundled=False, borderlines=borderlines
        )
        monkeypatch.setenv("GEOMON_CONFIG", str(settings))  # for the UI's sensors too
        env = {**os.environ, "DAGSTER_HOME": str(home)}
        command = ["run", "--suite", "borderlines", "--models", "table", "--territories", "2", "--personas", "vanilla"]
        geomon = Path(sys.executable).with_name("geomon")
        done = subprocess.run([str(geomon), *command], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
    with dagster_ui(home, REPO_WORKSPACE, with_daemon=True) as url:

        def graphql(query: str, **variables: str) -> dict:
            answer = requests.post(f"{url}/graphql", json={"query": query, "variables": variables}, timeout=60)
            return answer.json()["data"]

        runs = graphql(RUNS_QUERY)["runsOrError"]["results"]
        assert sorted(r["jobName"] for r in runs) == [
            "borderlines_leaderboard",
            "borderlines_per_model",
            "borderlines_prompts",
            "borderlines_release",
        ]
        assert {
            (r["repositoryOrigin"]["repositoryLocationName"], r["repositoryOrigin"]["repositoryName"]) for r in runs
        } == {("geomon", "__repository__")}
        (board,) = [r for r in runs if r["jobName"] == "borderlines_leaderboard"]
        launched = graphql(REEXECUTE, parent=board["runId"])["launchRunReexecution"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        run_id = launched["run"]["runId"]
        deadline = time.monotonic() + 300  # a guard for a loaded machine, not a timing assertion
        while (status := graphql(STATUS, id=run_id)["runOrError"]["status"]) not in {"SUCCESS", "FAILURE", "CANCELED"}:
            assert time.monotonic() < deadline, f"the re-executed run is still {status}"
            time.sleep(2)
        events = graphql(FAILURES, id=run_id)["logsForRun"]["events"]
    errors = [e.get("error") or e["message"] for e in events if "Failure" in e["__typename"]]
    assert status == "SUCCESS", errors


def test_geomon_ui_names_the_view_that_shows_the_open_regressions_first(tmp_path, wdi_snapshot_dir):
    """Dagster's landing page opens the Overview's Timeline (runs only) until another view was opened in that
    browser: `geomon ui` prints the Assets view's address first, and the open regressions counted (with none, says
    so). The browser test (`test_ui_regressions.py`) opens what it prints and finds the failed checks counted."""
    from geomon.cli.ui import where_to_look
    from geomon.config import load_settings

    first, counted = where_to_look("http://ui.test", load_settings(write_settings(tmp_path, wdi_snapshot_dir))).split(
        "\n"
    )
    assert first.startswith(
        "Open first: http://ui.test/overview/activity/assets (each asset group with its failed checks in red"
    )
    assert counted == "no open regression: http://ui.test/assets/monitor/open_regressions"
