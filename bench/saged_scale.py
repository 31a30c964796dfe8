"""SAGED's diagnosis at scale: scored responses generated here (models × items, 21 concepts, one role),
diagnosed one process per core with every statistic the suite reports — per-country means, selection
rates, KL divergence and precision, range, impact ratio, max Z-score, Dixon's Q, bootstrap intervals
(1,000 resamples within concepts) and a permutation p-value (999 relabellings) — for sentiment
(calibrated and not) and distance. Prints wall time and peak memory, and how the time grows with models
and items.

    .venv/bin/python bench/saged_scale.py                  # 100 models × 10,000 items = 1,000,000 responses
    .venv/bin/python bench/saged_scale.py --models 10 --items 1000
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd

from geomon.suites import saged

CONCEPTS = ("IdeaCoun", *saged.G20)


def responses(model: int, items: int, seed: int) -> pd.DataFrame:
    """One model's scored responses: items spread over the concepts, a small bias against two of them."""
    rng = np.random.default_rng(seed + model)
    concept = np.array(CONCEPTS)[np.arange(items) % len(CONCEPTS)]
    shift = np.where(np.isin(concept, ("Russia", "China")), -0.08, 0.0)
    baseline = np.clip(rng.normal(0.6, 0.1, items), 0, 1)
    value = np.clip(baseline + shift + rng.normal(0, 0.1, items), 0, 1)
    distance = np.abs(rng.normal(0.7, 0.1, items))
    return pd.DataFrame(
        {
            "model": f"m{model:03d}",
            "role": "none",
            "prompt_id": [f"r{i // len(CONCEPTS):05d}|{c}" for i, c in enumerate(concept)],
            "concept": concept,
            "status": "answered",
            "sentiment": value,
            "baseline_sentiment": baseline,
            "sentiment_calibrated": value - baseline,
            "distance": distance,
            "baseline_distance": 0.0,
            "distance_calibrated": distance,
        }
    )


def diagnose_one(model: int, items: int, seed: int) -> int:
    result = saged.diagnose(responses(model, items, seed))
    return len(result["disparity"])


def run(models: int, items: int, workers: int, seed: int = 0) -> float:
    """Diagnose every model (each model is its own Dagster partition in production: independent work)."""
    started = time.perf_counter()
    if workers <= 1:
        for model in range(models):
            diagnose_one(model, items, seed)
    else:
        with ProcessPoolExecutor(workers) as pool:
            list(pool.map(diagnose_one, range(models), [items] * models, [seed] * models))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes (default: the cores)")
    args = parser.parse_args()
    for models, items in ((4, args.items // 10), (4, args.items), (args.models // 10 or 1, args.items)):
        seconds = run(models, items, args.workers)
        print(f"{models:4d} models × {items:6d} items: {seconds:7.1f} s ({seconds / models:.2f} s per model)")
    seconds = run(args.models, args.items, args.workers)
    peak = (
        max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        / 1024**2
    )  # the largest single process; workers run side by side
    total = args.models * args.items
    print(f"{args.models} models × {args.items:,} items = {total:,} responses: {seconds:.1f} s, peak {peak:.2f} GiB")


if __name__ == "__main__":
    main()
