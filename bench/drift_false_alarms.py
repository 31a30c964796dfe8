"""Drift probes against an unchanged model: how often would geomon wrongly call drift?

Serves a bundled model through llama-server as if it were an API endpoint (a name, a URL, no hash of
its weights), runs the probe cycle N times (each a fresh cache epoch, the noise floor calibrated from
the first calibration probes), counts false alarms, then swaps the other bundled model in behind the
same name and URL and probes once more. Prints the figures the README reports.

    .venv/bin/python bench/drift_false_alarms.py --cycles 20 --questions 40
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from geomon.engine.local import free_port, running_server
from geomon.engine.registry import ModelSpec, bundled_model_path, bundled_specs
from geomon.engine.runner import EngineOptions
from geomon.engine.store import ResponseStore
from geomon.monitor import drift
from geomon.sources.worldbank import read_snapshot
from geomon.suites import worldbench

SNAPSHOT = Path(__file__).resolve().parents[2] / "shared" / "snapshots" / "worldbank" / "wdi-2023-12"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--calibration", type=int, default=3)
    parser.add_argument("--tolerance", type=float, default=0.10)
    parser.add_argument("--slots", type=int, default=2)
    args = parser.parse_args()

    smollm2, gemma = bundled_specs()
    snapshot = read_snapshot(SNAPSHOT)
    prompts = worldbench.build_prompts(snapshot)
    probes = drift.probe_set(prompts, args.questions)
    port = free_port()
    spec = ModelSpec(
        "provider-model",
        "chat",
        base_url=f"http://127.0.0.1:{port}/v1",
        model_id="provider",
        params={"temperature": 0.0},
    )
    requests = worldbench.requests_for(probes, spec)
    settings = drift.DriftSettings(calibration_probes=args.calibration, tolerance=args.tolerance)
    options = EngineOptions(concurrency=args.slots * 2)
    with tempfile.TemporaryDirectory() as tmp:
        store = ResponseStore(f"sqlite:///{tmp}/store.sqlite")
        verdicts = []
        with running_server(bundled_model_path(smollm2.bundled), alias="provider", slots=args.slots, port=port):
            started = time.monotonic()
            for cycle in range(args.cycles):
                verdict, _ = drift.probe(spec, requests, store, settings, f"cycle-{cycle}", options)
                verdicts.append(verdict)
                print(
                    f"cycle {cycle + 1:2d}: changed {verdict.change_rate:.3f}  noise floor {verdict.noise_floor:.3f}"
                    f"  threshold {verdict.threshold:.3f}  drift={verdict.drifted}",
                    flush=True,
                )
            seconds = time.monotonic() - started
        with running_server(bundled_model_path(gemma.bundled), alias="provider", slots=args.slots, port=port):
            swapped, _ = drift.probe(spec, requests, store, settings, "after-swap", options)
    rates = [v.change_rate for v in verdicts]
    print(
        f"\n{args.cycles} cycles of {args.questions} probes on unchanged SmolLM2 ({seconds:.0f} s): "
        f"noise floor {verdicts[0].noise_floor:.3f}, change rate min {min(rates):.3f} / max {max(rates):.3f}, "
        f"false alarms {sum(v.drifted for v in verdicts)} of {args.cycles}"
    )
    print(
        f"after swapping Gemma in behind the same name and URL: changed {swapped.change_rate:.3f} "
        f"(threshold {swapped.threshold:.3f}) → drift={swapped.drifted}"
    )


if __name__ == "__main__":
    main()
