"""Production execution for real on this machine: two Celery workers (RabbitMQ broker), the Dagster daemon
and webserver on PostgreSQL (deploy/dagster.yaml, deploy/celery.yaml), a run of each model's WorldBench
partition launched through the webserver and the queued run coordinator."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
import requests
import yaml

from geomon.defs import execution
from geomon.defs.runs import register_models
from geomon.engine.store import ResponseStore
from geomon_tests.conftest import materialize_worldbench_sources, write_settings
from geomon_tests.loopback import ScriptedModel, serve

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
BROKER = "pyamqp://guest:guest@127.0.0.1:5672//"
MODELS = ("alpha", "beta")
# Generous upper bounds on waiting (never asserted as durations): a loaded CI machine is slow.
STARTUP_S = 180
RUN_S = 900


class Rendezvous(ScriptedModel):
    """Holds each model's requests until the other model's requests arrive too.

    Each worker runs one step at a time, so both models' response steps can only be answered while two
    workers run them at once: the runs below succeed only if their partitions ran in parallel on two
    workers.
    """

    def do_POST(self) -> None:
        state = self.state
        length = int(self.headers["Content-Length"])
        body = self.rfile.read(length)
        model = yaml.safe_load(body)["model"]
        with state["lock"]:
            state["seen"].add(model)
            if state["seen"] >= set(MODELS):
                state["both"].set()
        state["overlapped"] = state["both"].wait(timeout=RUN_S) or state.get("overlapped", False)
        # Hand the body back to ScriptedModel's reader.
        self.rfile = _Replay(body)
        super().do_POST()


class _Replay:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def read(self, n: int) -> bytes:
        return self.body[:n]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _processes(tmp_path: Path, env: dict[str, str]) -> Iterator[callable]:
    """Starts commands in their own process groups, logging to files; stops them all afterwards."""
    started: list[tuple[subprocess.Popen, Path]] = []

    def start(name: str, *args: str) -> subprocess.Popen:
        log = tmp_path / f"{name}.log"
        proc = subprocess.Popen(
            args, cwd=REPO, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True
        )
        started.append((proc, log))
        return proc

    try:
        yield start
    finally:
        for proc, _ in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc, _ in started:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        _kill_leftovers(env["DAGSTER_HOME"])


def _kill_leftovers(dagster_home: str) -> None:
    """Processes the daemon and webserver started in sessions of their own (code servers, run workers),
    found by this test's DAGSTER_HOME in their environment: stopped too, even if a run never finished."""
    marker = f"DAGSTER_HOME={dagster_home}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if marker in (proc / "environ").read_bytes().split(b"\0"):
                os.kill(int(proc.name), signal.SIGKILL)


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def _wait_for(what: str, ready, timeout: float, logs: list[Path]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(1)
    pytest.fail(f"{what} not ready; logs:\n" + "\n".join(f"--- {p.name}\n{_tail(p)}" for p in logs))


def _delete_queues(names: list[str]) -> None:
    from kombu import Connection

    with Connection(BROKER) as conn:
        channel = conn.default_channel
        for name in names:
            with contextlib.suppress(Exception):
                channel.queue_delete(name)


@pytest.mark.slow
@pytest.mark.celery
def test_celery_workers_run_model_partitions_in_parallel(postgres_url, tmp_path, wdi_snapshot_dir):
    tag = uuid.uuid4().hex[:8]
    model_queue, scoring_queue = f"geomon-test-{tag}-models", f"geomon-test-{tag}-scoring"
    # deploy/celery.yaml as shipped, with this test's own queues (the broker is shared).
    celery_doc = yaml.safe_load((REPO / "deploy" / "celery.yaml").read_text())
    celery_doc["execution"]["config"]["config_source"]["task_default_queue"] = scoring_queue
    celery_doc["geomon"]["model_queue"] = model_queue
    celery_yaml = tmp_path / "celery.yaml"
    celery_yaml.write_text(yaml.safe_dump(celery_doc))
    # deploy/dagster.yaml as shipped; the asset daemon is off so that only this test's runs happen.
    home = tmp_path / "dagster_home"
    home.mkdir()
    instance_doc = yaml.safe_load((REPO / "deploy" / "dagster.yaml").read_text())
    instance_doc["auto_materialize"] = {"enabled": False, "use_sensors": False}
    (home / "dagster.yaml").write_text(yaml.safe_dump(instance_doc))
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(
        yaml.safe_dump(
            {
                "load_from": [
                    {
                        "python_module": {
                            "module_name": "geomon.definitions",
                            "attribute": "defs",
                            "working_directory": str(REPO),
                            "location_name": "geomon",
                        }
                    }
                ]
            }
        )
    )
    state = {"answer": lambda messages: "About 42.", "models": list(MODELS), "lock": threading.Lock()}
    state.update(seen=set(), both=threading.Event())
    with serve(Rendezvous, state) as url:
        models = [{"name": m, "kind": "chat", "base_url": f"{url}/v1", "model_id": m} for m in MODELS]
        settings = write_settings(
            tmp_path,
            wdi_snapshot_dir,
            models=models,
            include_bundled=False,
            store_url=postgres_url,
            engine={"timeout_s": RUN_S, "concurrency": 4},
            drift={"schedule": "0 0 1 1 *"},
            retention={"run_days": None, "schedule": "0 0 1 1 *"},
        )
        env = {
            **os.environ,
            "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
            "DAGSTER_HOME": str(home),
            "GEOMON_CONFIG": str(settings),
            execution.CELERY_CONFIG_ENV: str(celery_yaml),
            "GEOMON_CELERY_BROKER": BROKER,
            "GEOMON_PG_HOST": "127.0.0.1",
            "GEOMON_PG_USER": "postgres",
            "GEOMON_PG_PASSWORD": "",
            "GEOMON_PG_DB": postgres_url.rsplit("/", 1)[1],
        }
        old_env = {k: os.environ.get(k) for k in env if k != "PATH"}
        os.environ.update({k: v for k, v in env.items() if k != "PATH"})
        execution.celery_config.cache_clear()
        try:
            _run_through_celery(
                tmp_path, env, home, workspace, celery_yaml, settings, (model_queue, scoring_queue), state
            )
        finally:
            for key, value in old_env.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            execution.celery_config.cache_clear()
            _delete_queues([model_queue, scoring_queue])


def _run_through_celery(tmp_path, env, home, workspace, celery_yaml, settings, queues, state) -> None:
    from dagster_graphql import DagsterGraphQLClient

    model_queue, scoring_queue = queues
    port = _free_port()
    with dg.DagsterInstance.from_config(str(home)) as instance, _processes(tmp_path, env) as start:
        # Sources and prompts once, in this process, on the same PostgreSQL instance and IO storage.
        assert materialize_worldbench_sources(instance, settings, countries=2).success
        register_models(instance, list(MODELS))
        for n in (1, 2):
            start(
                f"worker{n}",
                str(BIN / "dagster-celery"),
                "worker",
                "start",
                "-A",
                "dagster_celery.app",
                "-y",
                str(celery_yaml),
                # One -q with both queues: dagster-celery turns each -q into a -Q, and Celery keeps the last.
                "-q",
                f"{model_queue},{scoring_queue}",
                "-n",
                f"geomon-test-{n}",
                "--",
                "--concurrency=1",
            )
        start("daemon", str(BIN / "dagster-daemon"), "run", "-w", str(workspace))
        start("webserver", str(BIN / "dagster-webserver"), "-w", str(workspace), "-h", "127.0.0.1", "-p", str(port))
        logs = [tmp_path / f"{n}.log" for n in ("worker1", "worker2", "daemon", "webserver")]

        def webserver_up() -> bool:
            with contextlib.suppress(requests.RequestException):
                return requests.get(f"http://127.0.0.1:{port}/server_info", timeout=5).ok
            return False

        _wait_for("dagster-webserver", webserver_up, STARTUP_S, logs)
        client = DagsterGraphQLClient("127.0.0.1", port_number=port)
        run_ids = {
            model: client.submit_job_execution(
                "worldbench_per_model",
                repository_location_name="geomon",
                tags={"dagster/partition": model, "geomon/endpoint": "loopback"},
            )
            for model in MODELS
        }
        for run_id in run_ids.values():
            # Launched through the queued run coordinator: queued first, started by the daemon.
            assert instance.get_run_by_id(run_id).status in (
                dg.DagsterRunStatus.QUEUED,
                dg.DagsterRunStatus.STARTING,
                dg.DagsterRunStatus.STARTED,
            )

        def finished() -> bool:
            return all(instance.get_run_by_id(r).is_finished for r in run_ids.values())

        _wait_for("both runs", finished, RUN_S, logs)
        failures = {
            m: [e.message for e in instance.all_logs(r) if e.dagster_event and e.dagster_event.is_failure]
            for m, r in run_ids.items()
            if instance.get_run_by_id(r).status != dg.DagsterRunStatus.SUCCESS
        }
        assert not failures, f"{failures}\n" + "\n".join(f"--- {p.name}\n{_tail(p)}" for p in logs)

    # Everything read back from PostgreSQL by a fresh instance: runs, materializations, where steps ran.
    with dg.DagsterInstance.from_config(str(home)) as instance:
        workers_by_step: dict[tuple[str, str], str] = {}
        for model, run_id in run_ids.items():
            assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.SUCCESS
            for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
                data = entry.dagster_event.event_specific_data
                worker = (data.metadata or {}).get("Celery worker") if data else None
                if worker is not None:
                    for step in data.metadata["step_keys"].value.split(","):
                        workers_by_step[(model, step.strip())] = worker.value
            messages = [e.message for e in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT)]
            assert any(f'"worldbench__responses" to queue "{model_queue}"' in m for m in messages), messages
        for key in (["worldbench", "responses"], ["worldbench", "scores"], ["worldbench", "disparity"]):
            records = instance.fetch_materializations(dg.AssetKey(key), limit=10).records
            assert sorted(r.partition_key for r in records) == sorted(MODELS), key
        responders = {workers_by_step[(m, "worldbench__responses")] for m in MODELS}
        assert len(responders) == 2, workers_by_step  # the two models' response steps, on two workers at once
        assert all(name.startswith("geomon-test-") for name in responders)
        prompts = instance.get_latest_materialization_event(dg.AssetKey(["worldbench", "prompts"]))
        questions = prompts.asset_materialization.metadata["questions"].value
    assert state["overlapped"]
    # geomon's own response store is on the same PostgreSQL server: every question answered once per model.
    store = ResponseStore(yaml.safe_load(settings.read_text())["store_url"])
    try:
        counts = {m: store.count(m) for m in MODELS}
    finally:
        store.dispose()
    assert counts == dict.fromkeys(MODELS, questions)
