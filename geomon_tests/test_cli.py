"""The `geomon` command as a person meets it: an expected failure is one `geomon:` line, not a traceback."""

from __future__ import annotations

import socket

from geomon.cli import describe_failure, main
from geomon_tests.conftest import write_settings


def test_a_dead_endpoint_ends_the_run_with_one_line(tmp_path, monkeypatch, capsys, wdi_snapshot_dir):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once the socket is closed
    settings = write_settings(
        tmp_path,
        wdi_snapshot_dir,
        models=[{"name": "dead", "kind": "chat", "base_url": f"http://127.0.0.1:{port}/v1", "model_id": "x"}],
        engine={"max_retries": 0},
    )
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    monkeypatch.setenv("GEOMON_CONFIG", str(settings))  # what the Dagster steps read
    code = main(["--config", str(settings), "run", "--suite", "worldbench", "--sample", "2", "--models", "dead"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("geomon:")]
    assert code == 1 and len(lines) == 1, err
    assert "dead:" in lines[0] and "requests failed" in lines[0] and "EndpointUnavailable" in lines[0]
    assert "Traceback" not in err


def test_unexpected_errors_say_so_and_point_to_the_traceback():
    try:
        try:
            {}["missing"]
        except KeyError as inner:
            raise RuntimeError("step failed") from inner
    except RuntimeError as exc:
        line = describe_failure(exc)
    assert line.startswith("unexpected KeyError") and "-v" in line
