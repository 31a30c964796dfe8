"""How long importing Gapminder's published history takes: 37 model configurations from their per-question rates
(and every prompt family's correct rate from the 19 complete per-answer files, 467,200 judged answers), read,
with bootstrap intervals, and recorded with their paired tests; then the same import again, which records
nothing new.

    .venv/bin/python bench/import_history.py [--store-url sqlite:///…|postgresql://…]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from geomon.monitor import imports
from geomon.monitor.history import MetricHistory
from geomon.suites.gapminder import published, source

SHARED = Path(__file__).resolve().parents[2] / "shared"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store-url", help="default: a fresh SQLite file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.store_url or f"sqlite:///{tmp}/history.sqlite"
        history = MetricHistory(url)
        started = time.perf_counter()
        bank = source.read_snapshot(SHARED / "snapshots" / "gapminder")
        runs = imports.published_runs(
            "gapminder-results",
            published.evaluations(
                SHARED / "reference" / "gapminder",
                SHARED / "snapshots" / "gapminder" / "ddf" / "ddf--entities--model_configuration.csv",
                bank,
            ),
        )
        read = time.perf_counter() - started
        recorded = imports.record_runs(history, runs)
        total = time.perf_counter() - started
        again_started = time.perf_counter()
        again = imports.record_runs(history, runs)
        again_s = time.perf_counter() - again_started
    answers = sum(r.answers for r in runs)
    compared = sum(bool(r.tracked.verdicts) for r in recorded)
    print(
        f"{len(runs)} configurations ({answers:,} answers of complete per-answer files): read in {read:.1f} s, "
        f"recorded in {total - read:.1f} s"
    )
    print(
        f"total {total:.1f} s ({compared} compared with a predecessor); importing again: "
        f"{sum(not r.tracked.evaluation.reused for r in again)} new in {again_s:.1f} s"
    )


if __name__ == "__main__":
    main()
