"""The one client geomon uses to talk to any OpenAI-compatible endpoint.

OpenAI, a vLLM server and llama.cpp's servers all speak this protocol, so the local engine, a GPU
host and a hosted API differ only in base URL. Bounded concurrency, timeouts, retries with
exponential backoff on 429/5xx/timeouts, usage and latency per response, chat and completion
modes, optional log-probabilities.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import openai

log = logging.getLogger(__name__)

Mode = Literal["chat", "completion"]


@dataclass(frozen=True)
class GenerationRequest:
    """One thing to ask a model: chat messages or a completion prompt, with sampling parameters."""

    mode: Mode
    messages: tuple[dict[str, str], ...] = ()
    prompt: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    sample_index: int = 0
    # Score this text as the continuation of ``prompt`` instead of generating (rank classification):
    # the answer is the continuation itself, with the model's log-probability of each of its tokens.
    continuation: str | None = None

    def __post_init__(self) -> None:
        if self.mode == "chat" and not self.messages:
            raise ValueError("a chat request needs messages")
        if self.mode == "completion" and not self.prompt:
            raise ValueError("a completion request needs a prompt")
        if self.continuation is not None and (self.mode != "completion" or not self.continuation):
            raise ValueError("a continuation is scored after a completion prompt and cannot be empty")

    def payload(self) -> dict[str, Any]:
        """Everything that determines the answer (the store's key hashes this)."""
        body: dict[str, Any] = {"mode": self.mode, "params": self.params, "sample_index": self.sample_index}
        if self.mode == "chat":
            body["messages"] = [dict(m) for m in self.messages]
        else:
            body["prompt"] = self.prompt
        if self.continuation is not None:
            body["continuation"] = self.continuation
        return body


@dataclass
class GenerationResult:
    """A model's answer, or the error that stood in its way (never both)."""

    text: str | None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    attempts: int = 1
    logprobs: list[dict[str, Any]] | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class RetryableError(Exception):
    pass


def _is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, openai.APITimeoutError | openai.APIConnectionError | openai.RateLimitError):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


def _token_logprobs(raw: Any) -> list[dict[str, Any]] | None:
    """Token log-probabilities in one shape, whichever of the two shapes a server returns.

    OpenAI's completions API gives ``tokens``/``token_logprobs``/``top_logprobs``; llama.cpp's
    server gives the chat-style ``content[]`` on both endpoints (the openai client then keeps it
    in ``model_extra``).
    """
    if raw is None:
        return None
    data = raw if isinstance(raw, dict) else raw.model_dump()
    if data.get("content"):
        return [
            {
                "token": item["token"],
                "logprob": item["logprob"],
                "top": {t["token"]: t["logprob"] for t in item.get("top_logprobs") or []},
            }
            for item in data["content"]
        ]
    if data.get("tokens"):
        tops = data.get("top_logprobs") or [None] * len(data["tokens"])
        return [
            {"token": tok, "logprob": lp, "top": dict(top or {})}
            for tok, lp, top in zip(data["tokens"], data["token_logprobs"], tops, strict=False)
        ]
    return None


class OpenAICompatibleClient:
    """Async client for one model behind an OpenAI-compatible endpoint."""

    def __init__(
        self,
        base_url: str,
        model_id: str,
        api_key: str = "not-needed",
        *,
        concurrency: int = 8,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model_id = model_id
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.timeout_s = timeout_s
        self.calls = 0  # HTTP requests sent, retries included
        self._api_key = api_key
        self._loop: asyncio.AbstractEventLoop | None = None
        self._async_client: openai.AsyncOpenAI | None = None
        self._tokens: dict[str, list[int]] = {}

    @property
    def _client(self) -> openai.AsyncOpenAI:
        """An AsyncOpenAI bound to the running event loop (its connection pool cannot outlive a loop)."""
        loop = asyncio.get_running_loop()
        if self._async_client is None or self._loop is not loop:
            # openai's own retries are off: ours count attempts and cover every engine the same way.
            self._async_client = openai.AsyncOpenAI(
                base_url=self.base_url, api_key=self._api_key, timeout=self.timeout_s, max_retries=0
            )
            self._loop = loop
        return self._async_client

    async def list_models(self) -> list[str]:
        """The model ids the endpoint serves (``GET /models``)."""
        page = await self._client.models.list()
        return [m.id for m in page.data]

    async def tokenize(self, text: str) -> list[int]:
        """Token ids of ``text`` as the served model splits it (llama.cpp's ``POST /tokenize``)."""
        if text not in self._tokens:
            root = self.base_url.removesuffix("/v1")
            response = await self._client._client.post(
                f"{root}/tokenize", json={"content": text, "add_special": False}, timeout=self.timeout_s
            )
            response.raise_for_status()
            self._tokens[text] = [int(t) for t in response.json()["tokens"]]
        return self._tokens[text]

    async def _score_continuation(self, request: GenerationRequest) -> dict[str, Any]:
        """Force the continuation's own tokens (a token-id grammar) and read each one's log-probability.

        The server reports probabilities from the model's logits before the grammar constrains sampling,
        so the numbers are the model's, and forcing exact token ids keeps the canonical tokenization
        (a character grammar lets greedy decoding split a name into improbable pieces).
        """
        ids = await self.tokenize(request.continuation or "")
        grammar = "root ::= " + " ".join(f"<[{i}]>" for i in ids)
        params = {k: v for k, v in request.params.items() if k not in ("max_tokens", "stop", "logprobs")}
        return {
            **params,
            "max_tokens": len(ids),
            "logprobs": 1,
            "extra_body": {**params.get("extra_body", {}), "grammar": grammar},
        }

    async def _once(self, request: GenerationRequest) -> GenerationResult:
        params = dict(request.params)
        if request.continuation is not None:
            params = await self._score_continuation(request)
        want_logprobs = params.pop("logprobs", None)
        self.calls += 1
        started = time.perf_counter()
        if request.mode == "chat":
            extra = {}
            if want_logprobs:
                extra = {"logprobs": True, "top_logprobs": int(want_logprobs)}
            resp = await self._client.chat.completions.create(
                model=self.model_id, messages=list(request.messages), **params, **extra
            )
            choice = resp.choices[0]
            text = choice.message.content or ""
            logprobs = _token_logprobs(choice.logprobs)
        else:
            extra = {"logprobs": int(want_logprobs)} if want_logprobs else {}
            resp = await self._client.completions.create(model=self.model_id, prompt=request.prompt, **params, **extra)
            choice = resp.choices[0]
            text = choice.text or ""
            logprobs = _token_logprobs(choice.logprobs)
        usage = resp.usage
        return GenerationResult(
            text=text,
            finish_reason=choice.finish_reason,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            latency_s=time.perf_counter() - started,
            logprobs=logprobs,
        )

    async def generate_one(self, request: GenerationRequest) -> GenerationResult:
        """One answer, retried on 429/5xx/timeouts/connection errors; other errors are returned, not raised."""
        started = time.perf_counter()
        for attempt in range(1, self.max_retries + 2):
            try:
                result = await self._once(request)
                result.attempts = attempt
                result.latency_s = time.perf_counter() - started
                return result
            except Exception as exc:  # every failure becomes a retry or a recorded error, never a crash
                if _is_retryable(exc) and attempt <= self.max_retries:
                    delay = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
                    delay *= 0.5 + random.random()  # jitter spreads retries of concurrent requests
                    log.warning(
                        "%s: attempt %d failed (%s); retrying in %.2fs",
                        self.model_id,
                        attempt,
                        type(exc).__name__,
                        delay,
                    )
                    await asyncio.sleep(delay)
                    continue
                return GenerationResult(
                    text=None,
                    latency_s=time.perf_counter() - started,
                    attempts=attempt,
                    error=f"{type(exc).__name__}: {exc}",
                )
        raise AssertionError("unreachable")

    async def generate(
        self,
        requests: Sequence[GenerationRequest],
        on_result: Callable[[int, GenerationResult], None] | None = None,
    ) -> list[GenerationResult]:
        """Answers in request order; ``on_result(i, result)`` is called as each one arrives."""
        semaphore = asyncio.Semaphore(self.concurrency)

        async def run(i: int, request: GenerationRequest) -> GenerationResult:
            async with semaphore:
                result = await self.generate_one(request)
            if on_result is not None:
                on_result(i, result)
            return result

        return list(await asyncio.gather(*(run(i, r) for i, r in enumerate(requests))))

    async def aclose(self) -> None:
        if self._async_client is not None and self._loop is asyncio.get_running_loop():
            await self._async_client.close()
        self._async_client = None
