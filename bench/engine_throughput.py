"""Throughput of geomon's engine against the seed papers' loop and the engine's own best.

For the same N WorldBench prompts and the same bundled model (SmolLM2-135M-Instruct, greedy, 20 new
tokens), prints:
  1. the seed papers' way: transformers `generate`, one prompt at a time (the GGUF dequantized);
  2. the chosen engine's best without geomon: llama-server with parallel slots, raw async HTTP;
  3. geomon: `ask()` end to end (store lookups and writes, engine start included);
  4. an immediate re-run through geomon: time and model calls.
Run with `make bench` (installs the `bench` extra: CPU torch + transformers). Not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path

import httpx

from geomon.engine.local import running_servers
from geomon.engine.registry import bundled_model_path, bundled_specs
from geomon.engine.runner import EngineOptions, ask
from geomon.engine.store import ResponseStore
from geomon.sources.worldbank import read_snapshot
from geomon.suites import worldbench

MAX_NEW_TOKENS = 20


def prompts(snapshot_dir: Path, n: int) -> list[tuple[dict[str, str], ...]]:
    """n prompts spread over the 11 indicators, in the order a WorldBench run sends them."""
    frame = worldbench.build_prompts(read_snapshot(snapshot_dir))
    per_indicator = -(-n // frame["indicator"].nunique())
    return list(frame.groupby("indicator", sort=False).head(per_indicator).head(n)["messages"])


def seed_loop(messages: list[tuple[dict[str, str], ...]], model_path: Path) -> dict[str, float]:
    """The seed papers' code path: transformers, one prompt at a time."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(2)
    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(model_path.parent, gguf_file=model_path.name)
    model = AutoModelForCausalLM.from_pretrained(model_path.parent, gguf_file=model_path.name)
    model.eval()
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    for conversation in messages:
        ids = tokenizer.apply_chat_template(
            list(conversation), add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        with torch.no_grad():
            model.generate(**ids, max_new_tokens=MAX_NEW_TOKENS, do_sample=False, pad_token_id=tokenizer.eos_token_id)
    seconds = time.perf_counter() - started
    return {"load_s": load_s, "seconds": seconds, "req_per_s": len(messages) / seconds}


def engine_best(
    messages: list[tuple[dict[str, str], ...]], model_path: Path, options: EngineOptions
) -> dict[str, float]:
    """llama-server alone in geomon's configuration (servers × slots), raw async HTTP, servers already loaded:
    one worker per slot, each keeping to its server and taking the next prompt in order."""
    servers = options.servers or os.cpu_count() or 1
    with running_servers(
        model_path, "bench", servers=servers, slots=options.slots, threads=options.threads, ubatch=options.ubatch
    ) as urls:

        async def run() -> float:
            queue = iter(messages)
            async with httpx.AsyncClient(timeout=300) as client:

                async def worker(url: str) -> None:
                    for conversation in queue:
                        response = await client.post(
                            f"{url}/chat/completions",
                            json={
                                "model": "bench",
                                "messages": list(conversation),
                                "temperature": 0,
                                "max_tokens": MAX_NEW_TOKENS,
                            },
                        )
                        response.raise_for_status()

                started = time.perf_counter()
                await asyncio.gather(*(worker(urls[w % servers]) for w in range(servers * options.slots)))
                return time.perf_counter() - started

        seconds = asyncio.run(run())
    return {"seconds": seconds, "req_per_s": len(messages) / seconds}


def geomon_run(messages: list[tuple[dict[str, str], ...]], options: EngineOptions) -> dict[str, float]:
    spec = bundled_specs()[0]
    from geomon.engine.client import GenerationRequest

    requests = [
        GenerationRequest("chat", messages=m, params={"temperature": 0, "max_tokens": MAX_NEW_TOKENS}) for m in messages
    ]
    with tempfile.TemporaryDirectory() as tmp:
        store = ResponseStore(f"sqlite:///{tmp}/bench.sqlite")
        started = time.perf_counter()
        _, first = ask(spec, requests, store, options=options)
        seconds = time.perf_counter() - started
        started = time.perf_counter()
        _, again = ask(spec, requests, store, options=options)
        rerun_s = time.perf_counter() - started
    return {
        "seconds": seconds,
        "req_per_s": len(messages) / seconds,
        "model_calls": first.model_calls,
        "rerun_seconds": rerun_s,
        "rerun_model_calls": again.model_calls,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--servers", type=int, default=None, help="llama-server processes (default: one per core)")
    parser.add_argument("--threads", type=int, default=1, help="threads per process")
    parser.add_argument("--slots", type=int, default=1, help="slots per process")
    parser.add_argument("--ubatch", type=int, default=64, help="llama.cpp micro-batch (-ub)")
    parser.add_argument(
        "--snapshot", type=Path, default=Path(__file__).resolve().parents[2] / "shared/snapshots/worldbank/wdi-2023-12"
    )
    parser.add_argument("--skip-seed-loop", action="store_true", help="skip the (slow) transformers loop")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    messages = prompts(args.snapshot, args.n)
    model_path = bundled_model_path("smollm2-135m-instruct")
    figures: dict[str, dict[str, float]] = {}
    options = EngineOptions(servers=args.servers, threads=args.threads, slots=args.slots, ubatch=args.ubatch)
    figures["engine_best"] = engine_best(messages, model_path, options)
    figures["geomon"] = geomon_run(messages, options)
    if not args.skip_seed_loop:
        figures["seed_loop"] = seed_loop(messages, model_path)

    print(
        f"\n{args.n} WorldBench prompts, SmolLM2-135M-Instruct, greedy, {MAX_NEW_TOKENS} new tokens, "
        f"{options.servers or os.cpu_count()} servers × ({args.threads} threads, {args.slots} slots, -ub {args.ubatch})"
    )
    print(f"{'path':48s} {'seconds':>8s} {'req/s':>7s}")
    if "seed_loop" in figures:
        seed = figures["seed_loop"]
        print(
            f"{'seed papers: transformers generate, 1 at a time':48s} {seed['seconds']:8.1f} "
            f"{seed['req_per_s']:7.2f}   (+{seed['load_s']:.1f}s load)"
        )
    best, ours = figures["engine_best"], figures["geomon"]
    print(f"{'llama-server alone (raw HTTP, loaded)':48s} {best['seconds']:8.1f} {best['req_per_s']:7.2f}")
    print(f"{'geomon ask() end to end (start + store)':48s} {ours['seconds']:8.1f} {ours['req_per_s']:7.2f}")
    print(f"{'geomon immediate re-run':48s} {ours['rerun_seconds']:8.2f}    calls: {ours['rerun_model_calls']}")
    print(f"\ngeomon / engine best: {ours['req_per_s'] / best['req_per_s']:.1%}")
    if "seed_loop" in figures:
        print(f"geomon / seed loop:   {ours['req_per_s'] / figures['seed_loop']['req_per_s']:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
