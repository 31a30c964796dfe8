"""Asking through the store with real bundled models: batch engine, local server, kill and resume."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from geomon.engine.client import GenerationRequest, OpenAICompatibleClient
from geomon.engine.registry import ModelSpec
from geomon.engine.runner import EngineOptions, ask
from geomon.engine.store import ResponseStore

pytestmark = pytest.mark.slow


def _questions(n: int, max_tokens: int = 12) -> list[GenerationRequest]:
    return [
        GenerationRequest(
            "chat",
            messages=({"role": "user", "content": f"Name a number bigger than {i}."},),
            params={"temperature": 0, "max_tokens": max_tokens},
        )
        for i in range(n)
    ]


def _endpoint(url: str) -> ModelSpec:
    return ModelSpec(name="smollm2-endpoint", kind="chat", base_url=url, model_id="smollm2-135m-instruct")


def test_batch_engine_answers_then_store_answers_with_zero_calls(smollm2, gemma, sqlite_store, caplog):
    caplog.set_level("INFO")
    requests = _questions(6)
    frame, stats = ask(smollm2, requests, sqlite_store, options=EngineOptions(slots=4))
    assert stats.asked == 6 and stats.answered == 6 and stats.model_calls == 6
    assert frame["text"].str.len().gt(0).all() and not frame["cached"].any()
    assert any("answered" in r.message for r in caplog.records)  # progress is visible

    again, stats2 = ask(smollm2, requests, sqlite_store)
    assert stats2.model_calls == 0 and stats2.cached == 6 and again["cached"].all()
    assert again["text"].tolist() == frame["text"].tolist()

    # The bundled base model: a completion prompt with token log-probabilities.
    prompt = GenerationRequest(
        "completion",
        prompt="Question: What is the capital of France?\nAnswer:",
        params={"temperature": 0, "max_tokens": 4, "logprobs": 5, "stop": ["\n"]},
    )
    base, stats3 = ask(gemma, [prompt], sqlite_store)
    assert stats3.model_calls == 1
    assert base["logprobs"][0][0]["top"]  # alternatives with their log-probabilities


def test_epoch_reasks_on_purpose_and_keeps_the_old_answers(smollm2_server, sqlite_store):
    spec = _endpoint(smollm2_server)
    requests = _questions(3)
    ask(spec, requests, sqlite_store)
    _, stats = ask(spec, requests, sqlite_store, epoch="probe-2026-11-21")
    assert stats.model_calls == 3
    assert sqlite_store.count() == 6


def test_duplicate_requests_in_a_batch_are_asked_once(smollm2_server, sqlite_store):
    requests = _questions(2) * 3
    frame, stats = ask(_endpoint(smollm2_server), requests, sqlite_store)
    assert stats.model_calls == 2 and len(frame) == 6


def test_killed_run_resumes_without_asking_twice(smollm2_server, tmp_path):
    url = f"sqlite:///{tmp_path / 'resume.sqlite'}"
    n = 40
    script = textwrap.dedent(f"""
        from geomon.engine.runner import ask, EngineOptions
        from geomon.engine.store import ResponseStore
        from geomon_tests.engine.test_runner import _endpoint, _questions
        ask(_endpoint("{smollm2_server}"), _questions({n}), ResponseStore("{url}"), options=EngineOptions(slots=2))
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    store = ResponseStore(url)
    deadline = time.monotonic() + 120
    while store.count() < 8:
        assert proc.poll() is None, "the generating process ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    stored_before = store.count()
    assert 8 <= stored_before < n
    kept = {row["key"]: row["text"] for row in store.get_many(_all_keys(url)).values()}

    client = OpenAICompatibleClient(smollm2_server, "smollm2-135m-instruct", concurrency=4)
    frame, stats = ask(_endpoint(smollm2_server), _questions(n), store, client=client)
    assert stats.cached == stored_before
    assert stats.model_calls == n - stored_before  # nothing answered before is asked again
    assert store.count() == n and frame["text"].notna().all()
    assert all(frame.set_index("key").loc[k, "text"] == text for k, text in kept.items())  # nothing lost


def _all_keys(url: str) -> list[str]:
    import sqlalchemy as sa

    from geomon.engine.store import responses

    with ResponseStore(url).engine.connect() as conn:
        return [r[0] for r in conn.execute(sa.select(responses.c.key))]


def test_serve_local_cli_serves_the_openai_api(tmp_path):
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "geomon.cli",
            "serve-local",
            "smollm2-135m-instruct",
            "--port",
            str(port),
            "--slots",
            "2",
            "--threads",
            "1",  # a second thread would spin at a barrier while the other test worker runs
        ],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        line = proc.stdout.readline()
        assert f"127.0.0.1:{port}/v1" in line
        client = OpenAICompatibleClient(f"http://127.0.0.1:{port}/v1", "smollm2-135m-instruct")
        result = asyncio.run(client.generate_one(_questions(1)[0]))
        assert result.ok and result.text
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the CLI stops its llama-server and exits
        try:
            proc.wait(120)  # generous: a loaded machine is slow, not broken (one CI run needed more than 30 s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # never leave a server behind, then fail
            raise


def _free_port() -> int:
    from geomon.engine.local import free_port

    return free_port()


def _server_pids(port: int) -> list[int]:
    """llama-server processes listening on ``port`` (read from /proc): the built binary, or the prebuilt engine's
    Python module started with llama-server's own arguments (a CPU without AVX-512)."""
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        server = bool(args) and (args[0].endswith(b"llama-server") or b"geomon.engine.prebuilt_server" in args)
        if server and b"--port" in args and str(port).encode() in args:
            pids.append(int(cmdline.parent.name))
    return pids


def test_a_killed_parent_takes_its_llama_server_and_log_with_it(tmp_path):
    """SIGKILL of the process that started llama-server (no chance to clean up): the server dies too (a
    parent-death signal), and the next start removes the log the killed process left."""
    from geomon.engine.local import LOG_DIR

    port = _free_port()
    script = textwrap.dedent(f"""
        import time
        from geomon.engine.local import running_server
        from geomon.engine.registry import bundled_model_path
        with running_server(bundled_model_path("smollm2-135m-instruct"), "m", slots=1, port={port}):
            print("up", flush=True)
            time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert parent.stdout.readline().strip() == "up"
    assert _server_pids(port), "the server did not start"
    log = next(LOG_DIR.glob(f"llama-server-{parent.pid}-*.log"))
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 60  # a guard, not a measurement: the server goes as soon as it is signalled
    while _server_pids(port) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _server_pids(port), "llama-server outlived the process that started it"
    assert log.exists()  # nobody could remove it …
    from geomon.engine.local import running_server
    from geomon.engine.registry import bundled_model_path

    with running_server(bundled_model_path("smollm2-135m-instruct"), "m", slots=1):
        assert not log.exists()  # … until the next start swept it


def test_progress_is_a_live_line_on_a_terminal_and_plain_lines_elsewhere(monkeypatch, caplog):
    """On a terminal: one tqdm line (done / total, rate) on the process's own stderr; elsewhere (the Dagster
    UI's step logs, CI): plain log lines with the same counts."""
    import io
    import logging
    import sys

    from geomon.engine.runner import _Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "__stderr__", terminal)
    with caplog.at_level(logging.INFO, logger="geomon"):
        live = _Progress("worldbench/responses smollm2", 3, every_s=3600)
        for ok in (True, False, True):
            live.tick(ok)
    assert "worldbench/responses smollm2" in terminal.getvalue() and "3/3" in terminal.getvalue()
    assert "3/3 done: 2 answered, 1 failed" in caplog.text  # the final count is logged too
    monkeypatch.setattr(sys, "__stderr__", io.StringIO())  # not a terminal
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="geomon"):
        plain = _Progress("blend/responses gemma3-270m", 2, every_s=0)
        plain.tick(True)
        plain.tick(True)
    assert plain.bar is None and "1/2 done" in caplog.text and "2/2 done" in caplog.text
