"""What geomon stores, at scale: are the everyday reads still interactive (< 2 s)?

Fills a response store with MODELS × ITEMS answers (generated here, no model calls, written through
`ResponseStore.put_many` as `ask()` writes them) and the metric history with MODELS × 5 suites ×
EVALUATIONS evaluations (each with its per-item values and about 40 metrics), then times:

- a full cache lookup for one model's run (`ask()`'s `get_many` of ITEMS keys);
- `geomon store list` (answers and errors per model and epoch);
- the regression check's lookup of a model's previous evaluation, items included (`MetricHistory.latest`);
- `geomon trends` (the history's headline series and the trends report): the first time, when nothing
  changed (charts are kept by a hash of their data), and after one new evaluation.

    .venv/bin/python bench/store_scale.py                       # 100 models × 10,000 items, SQLite
    .venv/bin/python bench/store_scale.py --store-url postgresql://postgres@127.0.0.1:5432/scratch
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import sqlalchemy as sa

from geomon.engine.client import GenerationRequest, GenerationResult
from geomon.engine.store import ResponseStore, StoredAnswer, response_key
from geomon.monitor import history
from geomon.monitor.history import MetricHistory
from geomon.report import trends
from geomon.stats.values import EvaluationRun, MetricValue
from geomon.suites import registry
from geomon.suites.registry import suites


def request(i: int) -> GenerationRequest:
    return GenerationRequest(
        "chat",
        messages=({"role": "user", "content": f"What was the population of country {i} in 2022?"},),
        params={"temperature": 0, "max_tokens": 32},
    )


def fill_store(store: ResponseStore, models: int, items: int) -> list[str]:
    """Every model answers the same ITEMS requests; returns model 0's keys (one run's cache lookup)."""
    requests = [request(i) for i in range(items)]
    first_keys = []
    for m in range(models):
        identity = f"endpoint:model-{m:03d}|http://gpu/v1|m{m}"
        keys = [response_key(identity, r) for r in requests]
        if m == 0:
            first_keys = keys
        answers = [
            StoredAnswer(
                k,
                f"model-{m:03d}",
                identity,
                "",
                r,
                GenerationResult(
                    text=f"About {i * 1000 + m} people.",
                    finish_reason="stop",
                    prompt_tokens=20,
                    completion_tokens=6,
                    latency_s=0.2,
                ),
                "bench",
            )
            for i, (k, r) in enumerate(zip(keys, requests, strict=True))
        ]
        for start in range(0, items, 1000):
            store.put_many(answers[start : start + 1000])
    return first_keys


def fill_history(hist: MetricHistory, models: int, items: int, evaluations: int) -> None:
    """Per model and suite, ``evaluations`` weekly evaluations, each with ITEMS / 5 per-item values and the
    suite's headline metrics plus filler metrics (about 40 values an evaluation)."""
    rng = np.random.default_rng(0)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    per_suite = max(1, items // 5)
    rows_e, rows_v = [], []
    for info in suites().values():
        metric_names = [h.metric for h in info.headlines] + [f"figure_{j}" for j in range(40 - len(info.headlines))]
        for m in range(models):
            for e in range(evaluations):
                eid = f"{info.name}-{m:03d}-{e:02d}"
                when = start + timedelta(days=7 * e)
                frame = pd.DataFrame({"item": np.arange(per_suite), "value": rng.random(per_suite).round(4)})
                rows_e.append(
                    {
                        "evaluation_id": eid,
                        "suite": info.name,
                        "model": f"model-{m:03d}",
                        "scope": "",
                        "recorded_at": when,
                        "data_version": "d",
                        "prompt_version": "p",
                        "code_version": "c",
                        "dagster_run_id": "",
                        "items": frame.to_json(orient="records"),
                    }
                )
                breakdowns = {h.metric: h.breakdown for h in info.headlines}
                rows_v += [
                    {
                        "evaluation_id": eid,
                        "suite": info.name,
                        "model": f"model-{m:03d}",
                        "metric": name,
                        "breakdown": breakdowns.get(name, ""),
                        "value": float(rng.random()),
                        "ci_low": None,
                        "ci_high": None,
                        "n": per_suite,
                        "recorded_at": when,
                    }
                    for name in metric_names
                ]
    with hist.engine.begin() as conn:
        for start_row in range(0, len(rows_e), 500):
            conn.execute(history.evaluations.insert(), rows_e[start_row : start_row + 500])
        for start_row in range(0, len(rows_v), 5000):
            conn.execute(history.values.insert(), rows_v[start_row : start_row + 5000])


def timed(label: str, action) -> float:
    started = time.perf_counter()
    action()
    elapsed = time.perf_counter() - started
    print(f"  {label:<58} {elapsed:6.2f} s  {'interactive' if elapsed < 2 else 'SLOW'}", flush=True)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--evaluations", type=int, default=4, help="per model and suite")
    parser.add_argument("--store-url", default="", help="default: a SQLite file in a temporary directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.store_url or f"sqlite:///{Path(tmp) / 'geomon.sqlite'}"
        store, hist = ResponseStore(url), MetricHistory(url)
        started = time.perf_counter()
        keys = fill_store(store, args.models, args.items)
        filled_store = time.perf_counter() - started
        fill_history(hist, args.models, args.items, args.evaluations)
        filled = time.perf_counter() - started
        with store.engine.connect() as conn:
            answers = conn.execute(sa.select(sa.func.count()).select_from(sa.table("responses"))).scalar_one()
            values = conn.execute(sa.select(sa.func.count()).select_from(history.values)).scalar_one()
        print(
            f"store: {answers:,} answers ({args.models} models × {args.items:,} items) written in "
            f"{filled_store:.0f} s; history: {values:,} metric values in "
            f"{args.models * len(suites()) * args.evaluations:,} evaluations; {filled:.0f} s to fill; {store.safe_url}"
        )
        timed(f"cache lookup for one model's run ({args.items:,} keys)", lambda: store.get_many(keys))
        timed("geomon store list (answers per model and epoch)", store.summary)
        suite = next(iter(suites()))
        timed(f"previous evaluation with its items ({suite}, one model)", lambda: hist.latest(suite, "model-050"))

        def report() -> None:
            catalog = registry.headline_catalog()
            series = hist.series(only=trends.headline_keys(catalog))
            trends.write_report(Path(tmp) / "trends", series, catalog=catalog)

        timed("geomon trends, first time (every chart drawn)", report)
        timed("geomon trends again, history unchanged (charts kept)", report)
        headlines = suites()[suite].headlines
        hist.record(EvaluationRun(suite, "model-050"), [MetricValue(h.metric, 0.5, h.breakdown) for h in headlines])
        timed(f"geomon trends after a new {suite} evaluation (its charts redrawn)", report)
        print(f"peak memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024:.2f} GiB")


if __name__ == "__main__":
    main()
