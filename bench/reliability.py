"""Reliability under faults, kills and concurrent runs: does geomon keep every answer exactly once?

A loopback OpenAI-compatible server (its own process: uvicorn, raw ASGI) answers WorldBench's real prompts
and fails a share of requests on purpose, by kind: HTTP 500, 429 with Retry-After, malformed JSON, a reply
without choices, and a reply slower than the client's timeout. It counts every fault it injected and every
answer it served, per question. For each store (SQLite, PostgreSQL) three scenarios run through `ask()`:

- faults: one run over the prompts with the fault share injected;
- kill and resume: a run in its own process is killed (SIGKILL) once half the answers were served, then a
  second run resumes on the same store;
- concurrent: two runs in their own processes ask the same prompts at the same time on the same store.

Then, with a bundled model: a run that has started its llama-server is killed (SIGKILL); the llama-server
processes it started must die with it (orphaned processes).

Printed per scenario: faults injected by kind, model calls (requests the server received), retries (faults
that were retried), permanent failures (requests that failed every attempt), answers stored,
duplicate answers (a question answered by the model more than once, apart from the answers a kill caught in
flight, reported on their own), lost answers (served by the model and not stored, or stored under the wrong
question), orphaned processes. Not a test: it prints figures.

    .venv/bin/python bench/reliability.py              # the README's table (about 2 minutes)
    .venv/bin/python bench/reliability.py --questions 1000 --fault-share 0.3 --stores sqlite
    make bench-reliability
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ask_throughput import read_request, send_bytes, server_process, stores

from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.engine.runner import EngineOptions, FailedRequests, ask
from geomon.engine.store import ResponseStore, responses

FAULT_KINDS = ("http_500", "http_429_retry_after", "malformed_json", "no_choices", "slower_than_timeout")
CLIENT_TIMEOUT_S = 1.0
SNAPSHOT = Path(__file__).resolve().parents[2] / "shared" / "snapshots" / "worldbank" / "wdi-2023-12"


def answer_for(question: str) -> str:
    """The server's answer to a question, so a stored answer can be matched to the question it belongs to."""
    return f"{sum(map(ord, question)) % 100_000}"


# --- the faulty server (run in its own process by --serve) ------------------------------------------


def make_app(fault_share: float, latency_s: float, seed: int) -> object:
    rng = random.Random(seed)
    faults: Counter[str] = Counter()
    served: Counter[str] = Counter()

    async def app(scope, receive, send) -> None:
        body = await read_request(scope, receive, send)
        if body is None:
            return
        if scope["method"] == "GET":
            stats = {"faults": dict(faults), "served": dict(served)}
            return await send_bytes(send, 200, json.dumps(stats).encode())
        try:
            request = json.loads(body)
        except ValueError:  # a request cut short by the kill: its sender is gone
            return await send_bytes(send, 400, b'{"error": {"message": "unreadable request"}}')
        question = request["messages"][-1]["content"]
        await asyncio.sleep(latency_s)
        if rng.random() < fault_share:
            kind = rng.choice(FAULT_KINDS)
            faults[kind] += 1
            if kind == "http_500":
                return await send_bytes(send, 500, b'{"error": {"message": "injected"}}')
            if kind == "http_429_retry_after":
                return await send_bytes(send, 429, b'{"error": {"message": "slow down"}}', [(b"retry-after", b"1")])
            if kind == "malformed_json":
                return await send_bytes(send, 200, b'{"id": "x", "choices": [')
            if kind == "no_choices":
                return await send_bytes(
                    send, 200, json.dumps({"id": "x", "object": "chat.completion", "choices": []}).encode()
                )
            await asyncio.sleep(CLIENT_TIMEOUT_S * 2)  # the client has given up: this reply is never read
            return await send_bytes(send, 200, b'{"choices": []}')
        served[question] += 1
        reply = {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": request["model"],
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer_for(question)}}
            ],
            "usage": {"prompt_tokens": 20, "completion_tokens": 2, "total_tokens": 22},
        }
        await send_bytes(send, 200, json.dumps(reply).encode())

    return app


def serve(port: int, fault_share: float, latency_s: float, seed: int) -> None:
    import uvicorn

    uvicorn.run(make_app(fault_share, latency_s, seed), host="127.0.0.1", port=port, log_level="error", backlog=2048)


@contextmanager
def faulty_server(fault_share: float, latency_s: float, seed: int = 7) -> Iterator[str]:
    with server_process(__file__, str(fault_share), str(latency_s), str(seed)) as url:
        yield url


def server_stats(url: str) -> dict:
    return httpx.get(f"{url}/stats", timeout=10).json()


# --- the runs -----------------------------------------------------------------------------------------


def worldbench_requests(n: int) -> list[GenerationRequest]:
    """The first ``n`` of WorldBench's real chat prompts on the bundled World Bank snapshot."""
    from geomon.sources.worldbank import read_snapshot
    from geomon.suites import worldbench

    prompts = worldbench.build_prompts(read_snapshot(SNAPSHOT))
    return [
        GenerationRequest("chat", messages=tuple(m), params={"temperature": 0, "max_tokens": 16})
        for m in prompts["messages"].head(n)
    ]


def options() -> EngineOptions:
    # Up to 5 attempts a request: with a 20 % fault share about 1 in 3,000 requests still fails for good.
    return EngineOptions(concurrency=16, timeout_s=CLIENT_TIMEOUT_S, max_retries=4, max_failed_share=1.0)


def spec(url: str) -> ModelSpec:
    return ModelSpec(name="faulty", kind="chat", base_url=url, model_id="faulty")


def run_once(url: str, store_url: str, n: int, out: str | None = None) -> dict:
    logging.getLogger("geomon").setLevel(logging.ERROR)  # every retry is logged; the table counts them
    store = ResponseStore(store_url)
    try:
        frame, stats = ask(spec(url), worldbench_requests(n), store, options=options())
        result = {"answered": int(frame["text"].notna().sum()), **stats.as_dict()}
    except FailedRequests as exc:
        result = {"error": str(exc)}
    store.dispose()
    if out:
        Path(out).write_text(json.dumps(result))
    return result


def store_audit(store: ResponseStore, requests: list[GenerationRequest], served: dict[str, int]) -> dict[str, int]:
    """What the store holds against what the server served: answers, duplicates, lost or misplaced ones."""
    import sqlalchemy as sa

    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(responses.c.key, responses.c.request, responses.c.text)).all()
    keys = [row.key for row in rows]
    by_question = {json.loads(row.request)["messages"][-1]["content"]: row.text for row in rows}
    questions = {r.messages[-1]["content"] for r in requests}
    misplaced = sum(text != answer_for(q) for q, text in by_question.items())
    lost = sum(1 for q in questions if served.get(q) and q not in by_question)
    return {
        "stored": len(set(keys)),
        "duplicate_rows": len(keys) - len(set(keys)),
        "lost": lost + misplaced,
        "questions_answered_twice": sum(1 for q in questions if served.get(q, 0) > 1),
    }


def clear(store: ResponseStore) -> None:
    import sqlalchemy as sa

    from geomon.engine.store import claims, errors

    with store.engine.begin() as conn:
        for table in (responses, errors, claims):
            conn.execute(sa.delete(table))


def scenario_faults(url_args: tuple[float, float], store: ResponseStore, n: int) -> dict:
    with faulty_server(*url_args) as url:
        result = run_once(url, store.url, n)
        stats = server_stats(url)
    audit = store_audit(store, worldbench_requests(n), stats["served"])
    return {**stats, "run": result, **audit, "in_flight_at_kill": 0}


def scenario_kill_and_resume(url_args: tuple[float, float], store: ResponseStore, n: int) -> dict:
    ctx = multiprocessing.get_context("spawn")
    with faulty_server(*url_args) as url:
        victim = ctx.Process(target=run_once, args=(url, store.url, n))
        victim.start()
        while sum(server_stats(url)["served"].values()) < n // 2 and victim.is_alive():
            time.sleep(0.02)
        os.kill(victim.pid, signal.SIGKILL)
        victim.join()
        stored_at_kill = store.count()
        result = run_once(url, store.url, n)
        stats = server_stats(url)
    audit = store_audit(store, worldbench_requests(n), stats["served"])
    # A kill loses the requests in flight and the writer's last window: those are asked again by the resume.
    in_flight = audit.pop("questions_answered_twice")
    return {
        **stats,
        "run": result,
        **audit,
        "questions_answered_twice": 0,
        "in_flight_at_kill": in_flight,
        "stored_at_kill": stored_at_kill,
    }


def scenario_concurrent(url_args: tuple[float, float], store: ResponseStore, n: int, tmp: Path) -> dict:
    ctx = multiprocessing.get_context("spawn")
    with faulty_server(*url_args) as url:
        outs = [str(tmp / f"run{i}.json") for i in range(2)]
        procs = [ctx.Process(target=run_once, args=(url, store.url, n, out)) for out in outs]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join()
        stats = server_stats(url)
    runs = [json.loads(Path(out).read_text()) for out in outs]
    merged = {k: sum(r.get(k, 0) for r in runs) for k in ("model_calls", "asked", "failed", "from_other_runs")}
    audit = store_audit(store, worldbench_requests(n), stats["served"])
    return {**stats, "run": merged, **audit, "in_flight_at_kill": 0}


def _llama_servers_of(marker: str) -> list[int]:
    """llama-server processes whose environment carries ``marker`` (started by the run under test)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if b"llama-server" not in (entry / "cmdline").read_bytes():
                continue
            if marker.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def scenario_orphans() -> dict:
    """Kill a run that has started its llama-server; count the llama-server processes left behind."""
    import tempfile
    import uuid

    marker = f"orphan-check-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GEOMON_BENCH_MARKER": marker}
        victim = subprocess.Popen(
            [sys.executable, __file__, "--ask-bundled", marker, f"sqlite:///{tmp}/store.sqlite"], env=env
        )
        started = time.monotonic()
        while not _llama_servers_of(marker) and time.monotonic() - started < 120:
            time.sleep(0.2)
        servers = len(_llama_servers_of(marker))
        time.sleep(2)  # let it start answering
        victim.kill()
        victim.wait()
        deadline = time.monotonic() + 10
        while _llama_servers_of(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _llama_servers_of(marker)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    return {"llama_servers_started": servers, "orphaned": len(left)}


def ask_bundled(marker: str, store_url: str) -> None:
    from geomon.engine.registry import bundled_specs

    ask(bundled_specs()[0], worldbench_requests(500), ResponseStore(store_url))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=600)
    parser.add_argument("--fault-share", type=float, default=0.2)
    parser.add_argument("--latency-ms", type=float, default=10.0)
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgresql"], choices=["sqlite", "postgresql"])
    parser.add_argument("--skip-orphans", action="store_true", help="skip the bundled-model kill")
    args = parser.parse_args()
    server_args = (args.fault_share, args.latency_ms / 1000)
    print(
        f"{os.cpu_count()} cores; {args.questions} WorldBench prompts; {args.fault_share:.0%} of requests fail on "
        f"purpose ({', '.join(FAULT_KINDS)}); client timeout {CLIENT_TIMEOUT_S:.0f} s, 5 attempts"
    )
    print(
        "| scenario | store | faults injected | model calls | retries | permanent failures | answers stored "
        "| duplicate answers | lost answers | asked again after the kill |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    import tempfile

    with stores(args.stores) as by_name, tempfile.TemporaryDirectory() as tmp:
        for name, store in by_name.items():
            for label, run in (
                ("20 % faults", lambda s: scenario_faults(server_args, s, args.questions)),
                ("kill + resume", lambda s: scenario_kill_and_resume(server_args, s, args.questions)),
                ("two runs at once", lambda s: scenario_concurrent(server_args, s, args.questions, Path(tmp))),
            ):
                clear(store)
                out = run(store)
                faults = out["faults"]
                failed = out["run"].get("failed", 0)
                # Counted at the server: every request it received, whichever run (or killed run) sent it.
                calls = sum(out["served"].values()) + sum(faults.values())
                print(
                    f"| {label} | {name} | {sum(faults.values())} ("
                    + ", ".join(f"{k} {v}" for k, v in sorted(faults.items()))
                    + f") | {calls} | {sum(faults.values()) - failed} | {failed} | {out['stored']} | "
                    f"{out['questions_answered_twice'] + out['duplicate_rows']} | {out['lost']} "
                    f"| {out['in_flight_at_kill']} |"
                )
    if not args.skip_orphans:
        orphans = scenario_orphans()
        print(
            f"\nbundled model killed with SIGKILL mid-run: {orphans['llama_servers_started']} llama-server process(es) "
            f"started, {orphans['orphaned']} orphaned"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]))
    elif sys.argv[1:2] == ["--ask-bundled"]:
        ask_bundled(sys.argv[2], sys.argv[3])
    else:
        main()
