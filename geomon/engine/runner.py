"""Asking a model a batch of questions through the store: cached answers first, the rest once.

Every answer is written the moment it arrives, so a run killed half-way keeps what it got and a
rerun asks only for what is missing. The engine (a local llama-server for a bundled model, or
the endpoint's client) is started only when something is missing: an immediate rerun makes zero
model calls and starts nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pandas as pd

from geomon.engine.client import GenerationRequest, GenerationResult, OpenAICompatibleClient
from geomon.engine.local import kept_servers
from geomon.engine.registry import ModelSpec, file_sha256, made_weights, model_weights
from geomon.engine.store import ClaimLease, ResponseStore, StoredAnswer, StoreWriter, response_key

log = logging.getLogger(__name__)


@dataclass
class RunStats:
    requested: int = 0
    cached: int = 0
    asked: int = 0
    answered: int = 0
    failed: int = 0
    model_calls: int = 0  # HTTP requests sent to the model, retries included
    rate_limited: int = 0  # 429 answers received (each retried after the wait the endpoint asked for)
    lowest_concurrency: int = 0  # how far the adaptive limit on requests in flight fell (0: nothing asked)
    from_other_runs: int = 0  # answers another run on the same store was asking when this one looked
    seconds: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return dict(self.__dict__)


@dataclass
class EngineOptions:
    # The local engine for a bundled model: ``servers`` llama-server processes (None: one per core), each
    # with ``threads`` threads and ``slots`` sequences, micro-batch ``ubatch``. Measured on 2 cores
    # (bench/cpu_engine_configs.py, README): one single-threaded process per core with one slot and -ub 64
    # serves WorldBench fastest and steadiest — a second thread in one process mostly waits on the first.
    servers: int | None = None
    slots: int = 1
    threads: int = 1
    ubatch: int | None = 64
    concurrency: int = 8  # requests in flight to an endpoint (raise to 64-256 for a vLLM server)
    ctx_per_slot: int = 1024
    timeout_s: float = 120.0
    max_retries: int = 4
    # An evaluation with more failed requests than this share is not scored: the run fails saying how many
    # and why, and the next run asks only those (failed requests are never stored as answers).
    max_failed_share: float = 0.05
    # Two runs on one store share the work: each asks only the requests it claimed, renewing its claims while
    # it runs; a killed run's claims lapse after ``claim_lease_s`` and another run takes them over.
    claim_lease_s: float = 60.0
    claim_poll_s: float = 1.0


def model_identity(spec: ModelSpec, make: bool = True) -> str:
    """What the store's key says about the model: the weights themselves where geomon has them (a variant's file
    is another file, so another identity), and a variant's system prompt and engine flags, which the suites'
    requests do not carry (its sampling parameters are in the requests' own). ``make=False``: a re-quantized
    variant whose file is not made yet is ``unmade:<name>``, under which nothing is stored."""
    weights = (model_weights(spec) if make else made_weights(spec)) if spec.bundled else None
    if spec.bundled and weights is None:
        identity = f"unmade:{spec.name}"
    elif weights is not None:
        identity = f"gguf-sha256:{file_sha256(weights)}"
    else:
        identity = f"endpoint:{spec.name}|{spec.base_url}|{spec.model_id}"
    if spec.change is not None and spec.change.system_prompt is not None:
        identity += f"|system-sha256:{hashlib.sha256(spec.change.system_prompt.encode()).hexdigest()}"
    if spec.change is not None and spec.change.engine_flags:
        identity += f"|engine-flags:{' '.join(spec.change.engine_flags)}"
    return identity


def engine_name(spec: ModelSpec) -> str:
    return "llama-server" if spec.bundled else f"openai-compatible:{spec.base_url}"


@contextlib.contextmanager
def open_client(spec: ModelSpec, options: EngineOptions | None = None) -> Iterator[OpenAICompatibleClient]:
    """A client for the model: a local llama-server for bundled files (kept for the process's next asks), else
    the endpoint itself."""
    options = options or EngineOptions()
    if spec.bundled:
        servers = options.servers or os.cpu_count() or 1
        urls = kept_servers(
            model_weights(spec),
            spec.name,
            servers=servers,
            slots=options.slots,
            threads=options.threads,
            ctx_per_slot=options.ctx_per_slot,
            ubatch=options.ubatch,
            flags=spec.change.engine_flags if spec.change is not None else (),
        )
        yield OpenAICompatibleClient(
            urls[0],
            spec.name,
            concurrency=servers * options.slots,
            timeout_s=options.timeout_s,
            max_retries=options.max_retries,
            replicas=urls[1:],
            server="llama.cpp",
            constrain=spec.constrain,
        )
    else:
        yield OpenAICompatibleClient(
            spec.base_url or "",
            spec.model_id or "",
            spec.api_key,
            concurrency=options.concurrency,
            timeout_s=options.timeout_s,
            max_retries=options.max_retries,
            rate_limit=spec.rate_limit,
            server=spec.server,
            constrain=spec.constrain,
        )


_RESULT_COLUMNS = ("finish_reason", "latency_s", "prompt_tokens", "completion_tokens")


class FailedRequests(RuntimeError):
    """Too many of a batch's requests failed for its answers to be scored as an evaluation."""


@dataclass(frozen=True)
class ProgressReport:
    """Where a generation stands: asks done of the total (answers and errors counted apart), the rate and
    the time left at that rate."""

    label: str
    done: int
    total: int
    answered: int
    failed: int
    rate: float  # asks per second so far
    seconds_left: float | None  # None until a rate is known

    def line(self) -> str:
        left = "unknown" if self.seconds_left is None else f"{self.seconds_left:.0f}s"
        return (
            f"{self.label}: {self.done}/{self.total} done: {self.answered} answered, {self.failed} failed "
            f"({self.rate:.2f} req/s, eta {left})"
        )


ProgressListener = Callable[[ProgressReport], None]


class _Progress:
    """What a person follows during a long generation, answers and errors counted apart: on a terminal, one
    live line per suite and model (tqdm: done / total, rate, time left); elsewhere (CI) a plain log line.
    A report (log line, ``listener``: the Dagster step's logs and metadata) goes out at each tenth of the
    total, at least every ``every_s`` seconds between, and at the end; a terminal's log keeps every sixth."""

    def __init__(self, label: str, total: int, every_s: float = 15.0, listener: ProgressListener | None = None) -> None:
        self.label, self.total, self.every_s, self.listener = label, total, every_s, listener
        self.answered = self.failed = 0
        self.started = self.last = self.last_logged = time.monotonic()
        self.tenths = 0  # tenths of the total reported so far
        terminal = (
            sys.__stderr__ is not None and sys.__stderr__.isatty() and os.environ.get("GEOMON_PROGRESS", "1") != "0"
        )
        self.bar = None
        if terminal:
            from tqdm import tqdm

            # The process's own stderr: a Dagster step's captured stderr is not the terminal.
            self.bar = tqdm(total=total, desc=label, unit="ask", file=sys.__stderr__, dynamic_ncols=True, leave=True)

    def tick(self, ok: bool) -> None:
        if ok:
            self.answered += 1
        else:
            self.failed += 1
        done = self.answered + self.failed
        if self.bar is not None:
            self.bar.update(1)
            if self.failed:
                self.bar.set_postfix(failed=self.failed, refresh=False)
            if done == self.total:
                self.bar.close()
        now = time.monotonic()
        tenths = done * 10 // max(self.total, 1)
        if not (done == self.total or tenths > self.tenths or now - self.last >= self.every_s):
            return
        self.tenths, self.last = tenths, now
        rate = done / max(now - self.started, 1e-9)
        report = ProgressReport(
            self.label, done, self.total, self.answered, self.failed, rate, (self.total - done) / rate if rate else None
        )
        if self.listener is not None:
            self.listener(report)
        if self.bar is None or done == self.total or now - self.last_logged >= 6 * self.every_s:
            log.info("%s", report.line())
            self.last_logged = now


def ask(
    spec: ModelSpec,
    requests: Sequence[GenerationRequest],
    store: ResponseStore,
    *,
    epoch: str = "",
    options: EngineOptions | None = None,
    client: OpenAICompatibleClient | None = None,
    label: str = "",
    on_progress: ProgressListener | None = None,
) -> tuple[pd.DataFrame, RunStats]:
    """Answers to ``requests`` in order (columns key, text, error, cached, ...), and what it cost; ``label``
        names the work in the progress line (``worldbench/responses gemma3-270m``), and ``on_progress`` is handed
    each progress report while the model is asked (done / total, rate, time left).

        ``epoch`` names a cache generation: a new epoch re-asks everything on purpose (drift probes),
        while the answers of earlier epochs stay stored. ``client`` reuses an already open client.
    """
    started = time.monotonic()
    options = options or EngineOptions()
    identity = model_identity(spec)
    keys = [response_key(identity, r, epoch) for r in requests]
    stored = store.get_many(keys)
    stats = RunStats(requested=len(requests), cached=sum(k in stored for k in set(keys)))
    # Duplicate requests in one batch are asked once.
    first_index = {k: i for i, k in reversed(list(enumerate(keys)))}
    missing = {k: i for k, i in first_index.items() if k not in stored}
    asked_keys: set[str] = set()
    errors: dict[str, str] = {}
    engine = engine_name(spec)

    def ask_now(indices: list[int]) -> None:
        """Ask the model these requests (claimed by this run), writing each answer as it arrives."""
        stats.asked += len(indices)
        asked_keys.update(keys[i] for i in indices)
        progress = _Progress(f"{label} {spec.name}".strip(), len(indices), listener=on_progress)
        writer = StoreWriter(store)

        def keep(j: int, result: GenerationResult) -> None:
            i = indices[j]
            # Queued, not written here: the event loop goes straight back to sending requests.
            writer.put(StoredAnswer(keys[i], spec.name, identity, epoch, requests[i], result, engine))
            if result.ok:
                stats.answered += 1
            else:
                stats.failed += 1
                errors[keys[i]] = result.error or "unknown error"
            progress.tick(result.ok)

        change = spec.change
        pending = [requests[i] if change is None else change.serve(requests[i]) for i in indices]
        owned = client is None
        try:
            with open_client(spec, options) if owned else contextlib.nullcontext(client) as active:

                async def run() -> None:
                    try:
                        await active.generate(pending, on_result=keep)
                    finally:
                        if owned:
                            await active.aclose()

                calls_before, limited_before = active.calls, active.rate_limited
                asyncio.run(run())
                stats.model_calls += active.calls - calls_before
                stats.rate_limited += active.rate_limited - limited_before
                lowest = active.lowest_concurrency
                stats.lowest_concurrency = min(stats.lowest_concurrency or lowest, lowest)
        finally:
            writer.close()  # every answer received is written (or the run fails saying so), even on Ctrl-C
        stored.update(store.get_many([keys[i] for i in indices]))

    if missing:
        log.info("%s: %d of %d requests not in the store", spec.name, len(missing), len(requests))
        with ClaimLease(store, options.claim_lease_s) as lease:
            waiting = dict(missing)
            while waiting:
                held = lease.claim(waiting)
                # Answered by another run between the lookup and the claim: its answer is stored by now.
                stored.update(store.get_many(sorted(held)))
                mine = sorted(waiting[k] for k in held if k not in stored)
                if mine:
                    ask_now(mine)
                waiting = {k: i for k, i in waiting.items() if k not in stored and k not in held}
                if waiting:
                    # Another run is asking these: wait for its answers (or for its claims to lapse).
                    log.info("%s: %d requests are being asked by another run; waiting", spec.name, len(waiting))
                    time.sleep(options.claim_poll_s)
                    before = len(stored)
                    stored.update(store.get_many(sorted(waiting)))
                    stats.from_other_runs += len(stored) - before
                    waiting = {k: i for k, i in waiting.items() if k not in stored}
    failed_share = stats.failed / max(len(first_index), 1)
    if stats.failed and failed_share > options.max_failed_share:
        reasons = pd.Series(list(errors.values())).str.split(":").str[0].value_counts()
        raise FailedRequests(
            f"{spec.name}: {stats.failed} of {len(first_index)} requests failed ({failed_share:.0%}, more than the "
            f"{options.max_failed_share:.0%} allowed: engine.max_failed_share): "
            + ", ".join(f"{n} × {reason}" for reason, n in reasons.items())
            + f"; first: {next(iter(errors.values()))[:200]}. Nothing was scored; the {stats.answered} answers "
            f"received are stored and the next run asks only the {stats.failed} that failed."
        )
    rows = []
    for key in keys:
        row = stored.get(key, {})
        rows.append(
            {
                "key": key,
                "text": row.get("text"),
                "error": None if row else errors.get(key, "not answered"),
                "cached": bool(row) and key not in asked_keys,
                **{column: row.get(column) for column in _RESULT_COLUMNS},
                "logprobs": json.loads(row["logprobs"]) if row.get("logprobs") else None,
            }
        )
    stats.seconds = time.monotonic() - started
    return pd.DataFrame(rows), stats
