"""Scale on paper, measured where it can be: many fake endpoints on loopback, several worker processes.

Each endpoint is its own process (bench/ask_throughput.py's server) that answers after a fixed latency and
serves at most R requests a second (429 + retry-after beyond). Each worker process plays a Celery worker
running one model's response step: `ask()` for its model, whose endpoint is worker % E, with the endpoint's
limit split between the workers that share it (rate_limit in geomon.yaml), answers written to one shared
store (PostgreSQL, as in production, or one SQLite file). Printed: requests per second together, against the
ceiling the configured limits allow (R for each endpoint some worker asks), for each (endpoints, workers).

    .venv/bin/python bench/scale_out.py                               # the README's table (about 3 minutes)
    .venv/bin/python bench/scale_out.py --endpoints 1 2 4 --workers 1 2 4 8 --per-second 100

On this 2-core machine the endpoints and workers share the cores; where the table stops following the ceiling,
the machine (not geomon) is the limit. Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ask_throughput import ask_rate, requests_for, server, stores

from geomon.engine.client import RateLimit
from geomon.engine.store import ResponseStore


def _worker(url: str, store_url: str, count: int, per_second: float, concurrency: int) -> tuple[int, float, int]:
    """One worker: its model's requests through ask(); (answered, seconds, 429s seen)."""
    store = ResponseStore(store_url)
    limit = RateLimit(requests_per_minute=per_second * 60) if per_second else None
    started = time.perf_counter()
    _, stats = ask_rate(url, requests_for(uuid.uuid4().hex[:8], count), store, concurrency, limit)
    elapsed = time.perf_counter() - started
    store.dispose()
    return stats["answered"], elapsed, stats.get("rate_limited", 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--endpoints", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--per-second", type=float, default=100.0, help="each endpoint's limit R")
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--seconds", type=float, default=8.0, help="work per cell at the ceiling, roughly")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--store", choices=["postgresql", "sqlite"], default="postgresql")
    args = parser.parse_args()
    print(
        f"{os.cpu_count()} cores; endpoints answer after {args.latency_ms:.0f} ms and serve {args.per_second:.0f} "
        f"req/s each; every worker's model has its share of its endpoint's limit configured; store: {args.store}"
    )
    print("| endpoints | workers | requests | req/s together | ceiling | share | 429s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with stores([args.store]) as by_name:
        # One store that every worker writes to: the production shape (SQLite: one file, shared too).
        store_url = next(iter(by_name.values())).url
        for endpoints in args.endpoints:
            with ExitStack() as stack:
                urls = [stack.enter_context(server(args.latency_ms / 1000, args.per_second)) for _ in range(endpoints)]
                time.sleep(1.1)  # the servers' one-second buckets fill
                for workers in args.workers:
                    # Endpoints that some worker asks (a worker asks one): the most the limits allow.
                    ceiling = min(endpoints, workers) * args.per_second
                    sharing = [sum(1 for w in range(workers) if w % endpoints == e) for e in range(endpoints)]
                    count = max(50, int(args.seconds * ceiling / workers))
                    jobs = []
                    with ProcessPoolExecutor(workers) as pool:
                        started = time.perf_counter()
                        for w in range(workers):
                            endpoint = w % endpoints
                            share = args.per_second / sharing[endpoint]
                            jobs.append(pool.submit(_worker, urls[endpoint], store_url, count, share, args.concurrency))
                        results = [j.result() for j in jobs]
                        elapsed = time.perf_counter() - started
                    total = sum(r[0] for r in results)
                    rate = total / elapsed
                    print(
                        f"| {endpoints} | {workers} | {total} | {rate:.0f} | {ceiling:.0f} | {rate / ceiling:.0%} | "
                        f"{sum(r[2] for r in results)} |",
                        flush=True,
                    )
                    time.sleep(1.1)


if __name__ == "__main__":
    main()
