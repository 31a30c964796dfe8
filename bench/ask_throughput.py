"""geomon's own cost in front of a fast server: `ask()` against a bare `openai.AsyncOpenAI` loop.

A loopback OpenAI-compatible server (its own process: uvicorn, raw ASGI) answers every chat request
after a fixed latency. For each store (SQLite, PostgreSQL), concurrency and latency, the same process
sends N distinct requests twice: once through a bare AsyncOpenAI loop (a semaphore, nothing stored),
once through `ask()` (keys, store lookups, the batched writer thread, the adaptive gate). Then a server
that serves R requests a second and answers 429 with `retry-after-ms` beyond: the rate `ask()` reaches,
with and without the limit configured, and whether any request was lost or answered twice.

    .venv/bin/python bench/ask_throughput.py                  # the README's table (about 3 minutes)
    .venv/bin/python bench/ask_throughput.py --requests 1000 --concurrency 64 --latency-ms 50
    make bench-ask

PostgreSQL: a scratch database is created and dropped on GEOMON_BENCH_POSTGRES_URL's server
(default postgresql://postgres@127.0.0.1:5432/test, the test server). Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import openai

from geomon.engine.client import GenerationRequest, RateLimit
from geomon.engine.registry import ModelSpec
from geomon.engine.runner import EngineOptions, ask
from geomon.engine.store import ResponseStore

POSTGRES_URL = os.environ.get("GEOMON_BENCH_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/test")


# --- the server (run in its own process by --serve) -------------------------------------------------


async def send_bytes(send, status: int, payload: bytes, headers: list | None = None) -> None:
    """A JSON response on a raw ASGI ``send``."""
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": head + (headers or [])})
    await send({"type": "http.response.body", "body": payload})


async def read_request(scope, receive, send) -> bytes | None:
    """The request body; None for the server's lifespan messages (answered here)."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            else:
                await send({"type": "lifespan.shutdown.complete"})
                return None
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


def make_app(latency_s: float, per_second: float) -> object:
    """A raw ASGI OpenAI-compatible chat endpoint: answers after ``latency_s``; with ``per_second`` a token
    bucket (one second's burst) and 429 + retry-after-ms for the rest. GET /stats counts both."""
    counts = {"served": 0, "refused": 0, "served_ids": []}
    bucket = {"level": per_second, "updated": time.monotonic()}

    async def send_json(send, status: int, body: dict, headers: list | None = None) -> None:
        await send_bytes(send, status, json.dumps(body).encode(), headers)

    async def app(scope, receive, send) -> None:
        body = await read_request(scope, receive, send)
        if body is None:
            return
        if scope["method"] == "GET":
            await send_json(
                send,
                200,
                {"served": counts["served"], "refused": counts["refused"], "distinct": len(set(counts["served_ids"]))},
            )
            return
        request = json.loads(body)
        if per_second:
            now = time.monotonic()
            bucket["level"] = min(per_second, bucket["level"] + (now - bucket["updated"]) * per_second)
            bucket["updated"] = now
            if bucket["level"] < 1:
                counts["refused"] += 1
                wait_ms = (1 - bucket["level"]) / per_second * 1000
                await send_json(
                    send, 429, {"error": {"message": "rate limited"}}, [(b"retry-after-ms", f"{wait_ms:.0f}".encode())]
                )
                return
            bucket["level"] -= 1
        if latency_s:
            await asyncio.sleep(latency_s)
        counts["served"] += 1
        counts["served_ids"].append(request["messages"][-1]["content"])
        await send_json(
            send,
            200,
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": request["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "42"}}],
                "usage": {"prompt_tokens": 20, "completion_tokens": 1, "total_tokens": 21},
            },
        )

    return app


def serve(port: int, latency_s: float, per_second: float) -> None:
    import uvicorn

    uvicorn.run(
        make_app(latency_s, per_second),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        backlog=4096,
        timeout_keep_alive=60,
    )


@contextmanager
def server(latency_s: float, per_second: float = 0.0) -> Iterator[str]:
    with server_process(__file__, str(latency_s), str(per_second)) as url:
        yield url


@contextmanager
def server_process(script: str, *args: str) -> Iterator[str]:
    """``script --serve PORT *args`` on a free loopback port in its own process; yields its /v1 URL once
    its /stats answers, and stops it afterwards."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, script, "--serve", str(port), *args])
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(400):
            try:
                httpx.get(f"{url}/stats", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


# --- the client side --------------------------------------------------------------------------------


def requests_for(tag: str, n: int) -> list[GenerationRequest]:
    return [
        GenerationRequest(
            "chat",
            messages=({"role": "user", "content": f"{tag} question {i}"},),
            params={"temperature": 0, "max_tokens": 5},
        )
        for i in range(n)
    ]


def bare_rate(url: str, requests: list[GenerationRequest], concurrency: int, model: str = "m") -> float:
    async def run() -> float:
        client = openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0, timeout=120)
        gate = asyncio.Semaphore(concurrency)

        async def one(request: GenerationRequest) -> None:
            async with gate:
                await client.chat.completions.create(model=model, messages=list(request.messages), **request.params)

        started = time.perf_counter()
        await asyncio.gather(*(one(r) for r in requests))
        elapsed = time.perf_counter() - started
        await client.close()
        return len(requests) / elapsed

    return asyncio.run(run())


def ask_rate(
    url: str,
    requests: list[GenerationRequest],
    store: ResponseStore,
    concurrency: int,
    rate_limit: RateLimit | None = None,
    model: str = "m",
) -> tuple[float, dict]:
    spec = ModelSpec(name="bench", kind="chat", base_url=url, model_id=model, rate_limit=rate_limit)
    started = time.perf_counter()
    frame, stats = ask(spec, requests, store, options=EngineOptions(concurrency=concurrency))
    elapsed = time.perf_counter() - started
    assert frame["text"].notna().all(), "a request was lost"
    return len(requests) / elapsed, stats.as_dict()


@contextmanager
def stores(backends: list[str]) -> Iterator[dict[str, ResponseStore]]:
    import sqlalchemy as sa

    out: dict[str, ResponseStore] = {}
    name = f"geomon_bench_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT") if "postgresql" in backends else None
    with tempfile.TemporaryDirectory() as tmp:
        if "sqlite" in backends:
            out["SQLite"] = ResponseStore(f"sqlite:///{Path(tmp) / 'bench.sqlite'}")
        if admin is not None:
            with admin.connect() as conn:
                conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
            out["PostgreSQL"] = ResponseStore(POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}")
        try:
            yield out
        finally:
            for store in out.values():
                store.dispose()
            if admin is not None:
                with admin.connect() as conn:
                    conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[0.0, 50.0])
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgresql"], choices=["sqlite", "postgresql"])
    parser.add_argument("--limit-per-second", type=float, default=200.0, help="the rate-limited server's R")
    parser.add_argument("--limit-requests", type=int, default=3000)
    args = parser.parse_args()

    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
        f"{args.requests} requests per cell; the server is a separate process"
    )
    print("| store | concurrency | latency | bare client | geomon ask() | share |")
    print("| --- | --- | --- | --- | --- | --- |")
    with stores(args.stores) as by_name:
        for latency_ms in args.latency_ms:
            with server(latency_ms / 1000) as url:
                bare_rate(url, requests_for("warm-up", 200), 64)
                for name, store in by_name.items():
                    for concurrency in args.concurrency:
                        tag = uuid.uuid4().hex[:8]
                        bare = bare_rate(url, requests_for(f"bare-{tag}", args.requests), concurrency)
                        geomon, _ = ask_rate(url, requests_for(f"ask-{tag}", args.requests), store, concurrency)
                        print(
                            f"| {name} | {concurrency} | {latency_ms:.0f} ms | {bare:.0f} req/s | "
                            f"{geomon:.0f} req/s | {geomon / bare:.0%} |",
                            flush=True,
                        )

        print(
            f"\nA server that serves {args.limit_per_second:.0f} req/s and answers 429 + retry-after-ms beyond "
            f"({args.limit_requests} requests, concurrency 64, SQLite):"
        )
        print(
            "| limit in geomon.yaml | rate reached | share of the limit | 429s | lowest concurrency | "
            "answered | lost | served twice |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        store = next(iter(by_name.values()))
        for configured in (None, RateLimit(requests_per_minute=args.limit_per_second * 60)):
            with server(0.0, args.limit_per_second) as url:
                time.sleep(1.1)  # let the server's one-second bucket fill
                rate, stats = ask_rate(
                    url, requests_for(uuid.uuid4().hex[:8], args.limit_requests), store, 64, configured
                )
                counts = httpx.get(f"{url}/stats").json()
                label = "none (adapts to 429s)" if configured is None else f"{configured.requests_per_minute:.0f}/min"
                print(
                    f"| {label} | {rate:.1f} req/s | {rate / args.limit_per_second:.0%} | {counts['refused']} | "
                    f"{stats.get('lowest_concurrency', '')} | {stats['answered']} | "
                    f"{args.limit_requests - counts['distinct']} | {counts['served'] - counts['distinct']} |",
                    flush=True,
                )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve(int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]))
    else:
        main()
