"""vLLM on a GPU host, through geomon's one client: throughput next to a bare AsyncOpenAI loop, and rank
classification from vLLM's prompt log-probabilities checked against the same weights in transformers.

Two steps, because the GPU host has no ../shared:

    # here: WorldBench chat prompts and BorderLines rank-classification items, written to a JSON file
    .venv/bin/python bench/vllm_gpu.py export --out var/vllm_prompts.json
    # on the GPU host, with `vllm serve MODEL --served-model-name NAME ...` running (bench/vllm_gpu.sh):
    python bench/vllm_gpu.py measure --url http://127.0.0.1:8000/v1 --model NAME --prompts vllm_prompts.json \\
        --reference MODEL

`measure` prints, per concurrency, requests per second of the bare loop and of `ask()` (SQLite store,
every request new to it), then, for each BorderLines item, geomon's continuation
log-probabilities (vLLM) beside transformers' on the same checkpoint (float32 arithmetic): the largest difference
and how often both pick the same claimant. Not a test: it prints figures; it never runs in CI.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ask_throughput import ask_rate, bare_rate

from geomon.engine.client import GenerationRequest, OpenAICompatibleClient
from geomon.engine.store import ResponseStore


def export(out: Path, territories: int) -> None:
    """Chat requests of every WorldBench question and the rank-classification items of ``territories``
    disputed territories, as the suites build them for the bundled models."""
    from geomon.config import load_settings
    from geomon.sources import worldbank
    from geomon.suites import worldbench
    from geomon.suites.borderlines import prompts as borderlines
    from geomon.suites.borderlines import source as release

    settings = load_settings()
    chat = settings.model("smollm2-135m-instruct")
    base = settings.model("gemma3-270m")
    snapshot = worldbank.read_snapshot(settings.worldbank_snapshot)
    wb = worldbench.requests_for(worldbench.build_prompts(snapshot), chat)
    data = release.read_snapshot(settings.borderlines.snapshot)
    prompts = borderlines.build_prompts(data).head(territories)
    scored, owners = borderlines.requests_for(prompts, base)
    items: dict[int, dict] = {}
    for request, (row, _) in zip(scored, owners, strict=True):
        items.setdefault(row, {"prompt": request.prompt, "choices": []})["choices"].append(request.continuation)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "chat": [{"messages": list(r.messages), "params": r.params} for r in wb],
                "rank": list(items.values()),
            }
        )
    )
    print(f"{out}: {len(wb)} chat requests, {len(items)} rank-classification items")


def throughput(url: str, model: str, chat: list[dict], concurrencies: list[int], repeats: int) -> None:
    print("| concurrency | bare AsyncOpenAI req/s | geomon ask() req/s | share | requests |")
    print("| --- | --- | --- | --- | --- |")
    for concurrency in concurrencies:
        for repeat in range(repeats):
            # Distinct requests per measurement (sample_index), so the store never answers from cache.
            requests = [
                GenerationRequest(
                    "chat",
                    messages=tuple(c["messages"]),
                    params=c["params"],
                    sample_index=concurrency * 100 + repeat,
                )
                for c in chat
            ]
            bare = bare_rate(url, requests, concurrency, model=model)
            with tempfile.TemporaryDirectory() as tmp:
                store = ResponseStore(f"sqlite:///{tmp}/store.sqlite")
                geomon_rate, _ = ask_rate(url, requests, store, concurrency, model=model)
                store.dispose()
            print(f"| {concurrency} | {bare:.0f} | {geomon_rate:.0f} | {geomon_rate / bare:.0%} | {len(requests)} |")


def _ask_share(url: str, model: str, chat: list[dict], tag: int, concurrency: int) -> tuple[int, float]:
    """One process's share: ``ask()`` with its own SQLite store; (answers, seconds)."""
    requests = [
        GenerationRequest("chat", messages=tuple(c["messages"]), params=c["params"], sample_index=tag) for c in chat
    ]
    with tempfile.TemporaryDirectory() as tmp:
        store = ResponseStore(f"sqlite:///{tmp}/store.sqlite")
        started = time.perf_counter()
        ask_rate(url, requests, store, concurrency, model=model)
        elapsed = time.perf_counter() - started
        store.dispose()
    return len(requests), elapsed


def scale_out(url: str, model: str, chat: list[dict], processes: list[int], concurrency: int) -> None:
    """Several processes asking at once, as several Celery workers do: where one client process stops
    being the limit and the server becomes it."""
    from concurrent.futures import ProcessPoolExecutor

    print(f"\n| processes (each ask() at concurrency {concurrency}) | requests | req/s together |")
    print("| --- | --- | --- |")
    for n in processes:
        with ProcessPoolExecutor(n) as pool:
            started = time.perf_counter()
            done = list(
                pool.map(
                    _ask_share, [url] * n, [model] * n, [chat] * n, range(10_000 * n, 10_000 * n + n), [concurrency] * n
                )
            )
            elapsed = time.perf_counter() - started
        total = sum(count for count, _ in done)
        print(f"| {n} | {total} | {total / elapsed:.0f} |")


def rank_classification(url: str, model: str, items: list[dict], reference: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    client = OpenAICompatibleClient(url, model, concurrency=64)
    requests = [
        GenerationRequest("completion", prompt=item["prompt"], params={"temperature": 0}, continuation=choice)
        for item in items
        for choice in item["choices"]
    ]
    started = time.perf_counter()
    results = asyncio.run(client.generate(requests))
    elapsed = time.perf_counter() - started
    failed = [r.error for r in results if not r.ok]
    print(
        f"\nrank classification on vLLM (server detected: {client.server}): {len(requests)} continuations in "
        f"{elapsed:.1f} s, {len(failed)} failed {failed[:2]}"
    )
    # The checkpoint vLLM serves, in transformers with float32 arithmetic, on the GPU.
    tokenizer = AutoTokenizer.from_pretrained(reference)
    weights = AutoModelForCausalLM.from_pretrained(reference, dtype=torch.float32).cuda().eval()
    diffs, same_pick, position = [], 0, 0
    for item in items:
        geomon_scores, hf_scores = [], []
        for choice in item["choices"]:
            result = results[position]
            position += 1
            prompt_ids = tokenizer(item["prompt"])["input_ids"]
            choice_ids = tokenizer(choice, add_special_tokens=False)["input_ids"]
            ids = torch.tensor([prompt_ids + choice_ids]).cuda()
            with torch.no_grad():
                logits = weights(ids).logits.float().log_softmax(-1)[0]
            positions = range(len(prompt_ids), len(prompt_ids) + len(choice_ids))
            hf = sum(float(logits[p - 1, ids[0, p]]) for p in positions)
            ours = sum(t["logprob"] for t in result.logprobs or []) if result.ok else float("nan")
            geomon_scores.append(ours)
            hf_scores.append(hf)
            if result.ok:
                diffs.append(abs(ours - hf))
        same_pick += max(range(len(hf_scores)), key=hf_scores.__getitem__) == max(
            range(len(geomon_scores)), key=geomon_scores.__getitem__
        )
    diffs.sort()
    if not diffs:
        print("no continuation was scored")
        return
    print(
        f"continuation log-probability, vLLM via geomon vs transformers float32 on the same weights: "
        f"median |diff| {diffs[len(diffs) // 2]:.4f}, max {diffs[-1]:.4f}; same claimant picked on "
        f"{same_pick}/{len(items)} items"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export")
    ex.add_argument("--out", type=Path, default=Path("var/vllm_prompts.json"))
    ex.add_argument("--territories", type=int, default=60)
    me = sub.add_parser("measure")
    me.add_argument("--url", default="http://127.0.0.1:8000/v1")
    me.add_argument("--model", required=True)
    me.add_argument("--prompts", type=Path, required=True)
    me.add_argument("--reference", type=Path, required=True, help="the checkpoint vLLM serves")
    me.add_argument("--concurrency", default="64,256")
    me.add_argument("--repeats", type=int, default=2)
    me.add_argument("--processes", default="1,2,4,8", help="scale-out: processes asking at once")
    args = parser.parse_args()
    if args.command == "export":
        export(args.out, args.territories)
        return
    doc = json.loads(args.prompts.read_text())
    throughput(args.url, args.model, doc["chat"], [int(c) for c in args.concurrency.split(",")], args.repeats)
    rank_classification(args.url, args.model, doc["rank"], args.reference)
    scale_out(args.url, args.model, doc["chat"], [int(p) for p in args.processes.split(",")], 64)


if __name__ == "__main__":
    main()
