"""The one client geomon uses to talk to any OpenAI-compatible endpoint.

OpenAI, a vLLM server and llama.cpp's servers all speak this protocol, so the local engine, a GPU
host and a hosted API differ only in base URL. Bounded concurrency that adapts to 429s (halved on a
rate-limit answer, grown back by one per window of successes), the endpoint's published limits as token
buckets (requests and tokens per minute), Retry-After honoured for every request to the endpoint,
timeouts, retries with exponential backoff on 429/5xx/timeouts/connection errors and malformed replies, a
circuit breaker that stops asking a dead endpoint, usage and latency per response, chat and completion
modes, optional log-probabilities, and rank classification (a given continuation's log-probability) on
llama.cpp (forced token ids) and vLLM (prompt log-probabilities).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import openai


log = logging.getLogger(__name__)

Mode = Literal["chat", "completion"]
# The server software behind an endpoint, where it matters (rank classification); "auto" asks the server.
ServerKind = Literal["auto", "llama.cpp", "vllm"]
SERVER_KINDS = ("auto", "llama.cpp", "vllm")
# How an endpoint is made to reply with one of a request's ``choices``: a GBNF grammar (llama.cpp), vLLM's
# structured outputs, OpenAI's JSON-schema response format, or nothing (the reply is read leniently).
CONSTRAINTS = ("auto", "grammar", "choice", "json_schema", "none")


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
    # The reply must be one of these (a judge's verdict): the server enforces it where it can.
    choices: tuple[str, ...] = ()

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
        if self.choices:  # a constrained reply is another answer: the store keys on the constraint too
            body["choices"] = list(self.choices)
        return body

    def sent_params(self) -> dict[str, Any]:
        """The sampling parameters as sent. A declared ``seed`` is a seed for the whole evaluation: each request is
        seeded with its own, derived from it and everything else the request asks (its payload), so the answers
        stay reproducible while no two requests share one random stream — one stream for every answer moves a
        whole release at once, a shock no per-cluster test can tell from a change (docs/monitoring.md)."""
        if "seed" not in self.params:
            return dict(self.params)
        digest = hashlib.sha256(json.dumps(self.payload(), sort_keys=True, ensure_ascii=False).encode()).digest()
        return {**self.params, "seed": int.from_bytes(digest[:4], "big") & 0x7FFFFFFF}


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


class MalformedReply(Exception):
    """The endpoint answered 200 with no usable choice (empty ``choices``, no message)."""


class EndpointUnavailable(Exception):
    """The circuit breaker is open: the endpoint failed too many requests in a row."""


def _is_retryable(exc: BaseException) -> bool:
    import openai  # imported where used: ~0.5 s that the Dagster code location should not pay at load

    if isinstance(exc, openai.APITimeoutError | openai.APIConnectionError | openai.RateLimitError):
        return True
    if isinstance(exc, MalformedReply | json.JSONDecodeError | openai.APIResponseValidationError):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


def _is_rate_limit(exc: BaseException) -> bool:
    import openai

    return isinstance(exc, openai.RateLimitError) or (isinstance(exc, openai.APIStatusError) and exc.status_code == 429)


def retry_after_s(exc: BaseException, now: float | None = None) -> float | None:
    """The wait an error response asks for: ``retry-after-ms``, or ``Retry-After`` in seconds or as an HTTP
    date; None when it asks for none (or the value cannot be read)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        if headers.get("retry-after-ms"):
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        value = headers.get("retry-after")
        if not value:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            return max(0.0, parsedate_to_datetime(value).timestamp() - (now if now is not None else time.time()))
    except (TypeError, ValueError, OverflowError):
        return None


@dataclass(frozen=True)
class RateLimit:
    """An endpoint's published limits (``rate_limit`` in geomon.yaml); None means not limited."""

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None

    def __post_init__(self) -> None:
        for name in ("requests_per_minute", "tokens_per_minute"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int | float) and value > 0):
                raise ValueError(f"rate_limit.{name}: a positive number per minute, not {value!r}")


class _TokenBucket:
    """``per_minute`` units refilled continuously, at most one second's worth (or one unit) banked."""

    def __init__(self, per_minute: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self.updated = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
        self.updated = now

    async def take(self, amount: float) -> None:
        # An amount above the capacity is let through once the bucket is full and leaves it in debt.
        need = min(amount, self.capacity)
        self._refill()
        while self.level < need:
            await asyncio.sleep((need - self.level) / self.rate)
            self._refill()
        self.level -= amount

    def settle(self, estimated: float, actual: float) -> None:
        """Correct an estimate taken before the request with what it really used."""
        self.level = min(self.capacity, self.level + estimated - actual)


class _AdaptiveGate:
    """At most ``limit`` requests in flight; the limit halves on a rate-limit answer (at most once per
    ``cooldown_s``) and grows by one per ``limit`` successes, up to the configured concurrency (AIMD)."""

    def __init__(self, concurrency: int, cooldown_s: float = 1.0) -> None:
        self.ceiling = max(1, concurrency)
        self.limit = float(self.ceiling)
        self.in_flight = 0
        self.cooldown_s = cooldown_s
        self._last_cut = float("-inf")
        self._changed = asyncio.Condition()

    async def __aenter__(self) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self.in_flight < int(self.limit))
            self.in_flight += 1

    async def __aexit__(self, *_: object) -> None:
        async with self._changed:
            self.in_flight -= 1
            self._changed.notify_all()

    def throttled(self) -> None:
        now = time.monotonic()
        if now - self._last_cut >= self.cooldown_s:
            self.limit = max(1.0, self.limit / 2)
            self._last_cut = now

    def succeeded(self) -> None:
        self.limit = min(float(self.ceiling), self.limit + 1.0 / self.limit)


def _json_verdict(text: str) -> str:
    """The ``verdict`` of a JSON-schema-constrained reply; the reply as it came when it is not that JSON."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return str(value["verdict"]) if isinstance(value, dict) and "verdict" in value else text


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


def _prompt_logprobs(choice: Any, start: int, prompt: list[int]) -> list[dict[str, Any]]:
    """vLLM's ``prompt_logprobs`` (one ``{token id: {logprob, decoded_token}}`` per prompt token, ``None``
    first) → the log-probability of each prompt token from ``start`` on, in ``_token_logprobs``' shape."""
    extra = getattr(choice, "model_extra", None) or {}
    entries = extra.get("prompt_logprobs")
    if not isinstance(entries, list) or len(entries) != len(prompt):
        raise MalformedReply(f"prompt_logprobs: expected {len(prompt)} entries, got {type(entries).__name__}")
    out = []
    for position in range(start, len(prompt)):
        entry = entries[position] or {}
        scored = entry.get(str(prompt[position]))
        if not isinstance(scored, dict) or not isinstance(scored.get("logprob"), int | float):
            raise MalformedReply(f"prompt_logprobs[{position}] has no log-probability for token {prompt[position]}")
        out.append({"token": str(scored.get("decoded_token", "")), "logprob": float(scored["logprob"]), "top": {}})
    return out


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
        rate_limit: RateLimit | None = None,
        max_rate_limited: int = 20,
        max_retry_after_s: float = 300.0,
        breaker_after: int = 5,
        replicas: Sequence[str] = (),
        server: ServerKind = "auto",
        constrain: str = "auto",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        # Other servers of the same model (the local engine's processes): each worker keeps to one of them.
        self.base_urls = [self.base_url, *(url.rstrip("/") for url in replicas)]
        self.model_id = model_id
        if server not in SERVER_KINDS:
            raise ValueError(f"server must be one of {SERVER_KINDS}, not {server!r}")
        self.server: ServerKind = server
        if constrain not in CONSTRAINTS:
            raise ValueError(f"constrain must be one of {CONSTRAINTS}, not {constrain!r}")
        self.constrain = constrain
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.timeout_s = timeout_s
        self.rate_limit = rate_limit or RateLimit()
        self.max_rate_limited = max_rate_limited  # 429s are "come back later", not faults: a budget of their own
        self.max_retry_after_s = max_retry_after_s
        self.breaker_after = breaker_after  # requests failing in a row (after their retries) that open the breaker
        self.calls = 0  # HTTP requests sent, retries included
        self.rate_limited = 0  # 429 answers received
        self.lowest_concurrency = concurrency  # how far the adaptive limit fell
        self._failures_in_a_row = 0
        self._open_reason: str | None = None
        self._paused_until = 0.0  # monotonic time before which no request is sent (Retry-After)
        self._api_key = api_key
        self._loop: asyncio.AbstractEventLoop | None = None
        self._async_clients: dict[str, openai.AsyncOpenAI] = {}
        self._tokens: dict[str, list[int]] = {}
        self._limits_loop: asyncio.AbstractEventLoop | None = None
        self._gate_state: _AdaptiveGate | None = None
        self._requests: _TokenBucket | None = None
        self._token_budget: _TokenBucket | None = None

    @property
    def _gate(self) -> _AdaptiveGate:
        """The concurrency gate and rate buckets of the running event loop (asyncio primitives cannot be
        shared between loops; ``ask`` runs one loop per batch): what the limit learned lasts a batch."""
        loop = asyncio.get_running_loop()
        if self._gate_state is None or self._limits_loop is not loop:
            self._gate_state = _AdaptiveGate(self.concurrency)
            limit = self.rate_limit
            self._requests = _TokenBucket(limit.requests_per_minute) if limit.requests_per_minute else None
            self._token_budget = _TokenBucket(limit.tokens_per_minute) if limit.tokens_per_minute else None
            self._limits_loop = loop
        return self._gate_state

    @property
    def _client(self) -> openai.AsyncOpenAI:
        """The AsyncOpenAI of the first server (the endpoint itself when there is one)."""
        return self._client_for(0)

    def _client_for(self, replica: int) -> openai.AsyncOpenAI:
        """An AsyncOpenAI for server ``replica`` bound to the running event loop (its connection pool cannot
        outlive a loop)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._async_clients, self._loop = {}, loop
        url = self.base_urls[replica % len(self.base_urls)]
        if url not in self._async_clients:
            import openai

            # openai's own retries are off: ours count attempts and cover every engine the same way.
            self._async_clients[url] = openai.AsyncOpenAI(
                base_url=url, api_key=self._api_key, timeout=self.timeout_s, max_retries=0
            )
        return self._async_clients[url]

    async def list_models(self) -> list[str]:
        """The model ids the endpoint serves (``GET /models``)."""
        page = await self._client.models.list()
        return [m.id for m in page.data]

    async def server_kind(self) -> ServerKind:
        """llama.cpp or vLLM, as configured or, for "auto", as the server says: vLLM answers ``GET /version``
        with its version; a server that does not is taken for llama.cpp."""
        if self.server == "auto":
            root = self.base_url.removesuffix("/v1")
            http = self._client._client
            with contextlib.suppress(Exception):
                reply = await http.get(f"{root}/version", timeout=self.timeout_s)
                if reply.status_code == 200 and "version" in reply.json():
                    self.server = "vllm"
            if self.server == "auto":
                self.server = "llama.cpp"
        return self.server

    async def tokenize(self, text: str, special: bool = False) -> list[int]:
        """Token ids of ``text`` as the served model splits it (``POST /tokenize`` of llama.cpp or vLLM);
        ``special`` adds the tokens the server puts before a prompt (BOS)."""
        cache_key = f"{int(special)}{text}"
        if cache_key not in self._tokens:
            root = self.base_url.removesuffix("/v1")
            if await self.server_kind() == "vllm":
                body = {"model": self.model_id, "prompt": text, "add_special_tokens": special}
            else:
                body = {"content": text, "add_special": special}
            response = await self._client._client.post(f"{root}/tokenize", json=body, timeout=self.timeout_s)
            response.raise_for_status()
            self._tokens[cache_key] = [int(t) for t in response.json()["tokens"]]
        return self._tokens[cache_key]

    async def continuation_tokens(self, prompt: str, continuation: str) -> list[int]:
        """The tokens ``continuation`` is after ``prompt``: the whole text's tokens past the prompt's, where the
        prompt's are their prefix (as lm-evaluation-harness splits context and continuation), so a tokenizer
        that marks a word's leading space itself (SentencePiece's "▁") reads " Crimea" as it would in the whole
        text; the continuation's own tokens where the two merge across the boundary."""
        context = await self.tokenize(prompt, special=True)
        whole = await self.tokenize(prompt + continuation, special=True)
        if len(whole) > len(context) and whole[: len(context)] == context:
            return whole[len(context) :]
        return await self.tokenize(continuation)

    async def _score_continuation(
        self, request: GenerationRequest, sent: dict[str, Any]
    ) -> tuple[dict[str, Any], list[int] | None]:
        """``sent`` (the request's parameters as sent) made to score the continuation's own tokens, and on vLLM the
        prompt as token ids.

        llama.cpp: a token-id grammar forces the continuation's tokens; the server reports probabilities
        from the model's logits before the grammar constrains sampling, so the numbers are the model's.
        vLLM: the prompt's tokens followed by the continuation's, with ``prompt_logprobs``: the model's
        log-probability of every prompt token, of which the continuation's are the last. Either way the
        continuation keeps its canonical tokenization (a character grammar lets greedy decoding split a
        name into improbable pieces) and the prompt is tokenized as the server tokenizes a prompt.
        """
        ids = await self.continuation_tokens(request.prompt or "", request.continuation or "")
        params = {k: v for k, v in sent.items() if k not in ("max_tokens", "stop", "logprobs")}
        if await self.server_kind() == "vllm":
            prompt_ids = await self.tokenize(request.prompt, special=True)
            extra = {**params.get("extra_body", {}), "prompt_logprobs": 0}
            return {**params, "max_tokens": 1, "extra_body": extra}, [*prompt_ids, *ids]
        grammar = "root ::= " + " ".join(f"<[{i}]>" for i in ids)
        extra = {**params.get("extra_body", {}), "grammar": grammar}
        return {**params, "max_tokens": len(ids), "logprobs": 1, "extra_body": extra}, None

    async def constraint(self) -> str:
        """How this endpoint is made to reply with one of the choices: as configured, or for "auto" by what
        serves it (OpenAI's API: a JSON schema; vLLM: structured outputs; llama.cpp: a grammar)."""
        if self.constrain != "auto":
            return self.constrain
        if "api.openai.com" in self.base_url:
            return "json_schema"
        return "choice" if await self.server_kind() == "vllm" else "grammar"

    async def _constrained(self, request: GenerationRequest, params: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """``params`` with the server's way of allowing only ``request.choices``, and that way's name."""
        method = await self.constraint()
        extra = dict(params.get("extra_body") or {})
        if method == "grammar":
            alternatives = " | ".join(json.dumps(choice, ensure_ascii=False) for choice in request.choices)
            extra["grammar"] = f"root ::= {alternatives}"
        elif method == "choice":
            extra["structured_outputs"] = {"choice": list(request.choices)}
        elif method == "json_schema":
            schema = {
                "type": "object",
                "properties": {"verdict": {"type": "string", "enum": list(request.choices)}},
                "required": ["verdict"],
                "additionalProperties": False,
            }
            params = {
                **params,
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "verdict", "schema": schema, "strict": True},
                },
            }
        return ({**params, "extra_body": extra} if extra else params), method

    def _estimated_tokens(self, request: GenerationRequest) -> float:
        """Tokens a request may use, before it is sent: about four characters a prompt token, plus the
        answer's limit."""
        text = request.prompt or "".join(m.get("content") or "" for m in request.messages)
        return len(text) / 4 + float(request.params.get("max_tokens") or 256)

    async def _once(self, request: GenerationRequest, replica: int = 0) -> GenerationResult:
        client = self._client_for(replica)
        params = request.sent_params()
        prompt: str | list[int] = request.prompt
        if request.continuation is not None:
            params, token_prompt = await self._score_continuation(request, params)
            prompt = token_prompt or prompt
        method = "none"
        if request.choices:
            params, method = await self._constrained(request, params)
        want_logprobs = params.pop("logprobs", None)
        pause = self._paused_until - time.monotonic()
        if pause > 0:
            await asyncio.sleep(pause)
        if self._requests is not None:
            await self._requests.take(1)
        estimate = self._estimated_tokens(request)
        if self._token_budget is not None:
            await self._token_budget.take(estimate)
        self.calls += 1
        started = time.perf_counter()
        if request.mode == "chat":
            extra = {}
            if want_logprobs:
                extra = {"logprobs": True, "top_logprobs": int(want_logprobs)}
            resp = await client.chat.completions.create(
                model=self.model_id, messages=list(request.messages), **params, **extra
            )
            if not resp.choices or resp.choices[0].message is None:
                raise MalformedReply("the reply has no choice with a message")
            choice = resp.choices[0]
            text = choice.message.content or ""
            logprobs = _token_logprobs(choice.logprobs)
        else:
            extra = {"logprobs": int(want_logprobs)} if want_logprobs else {}
            resp = await client.completions.create(model=self.model_id, prompt=prompt, **params, **extra)
            if not resp.choices:
                raise MalformedReply("the reply has no choice")
            choice = resp.choices[0]
            text = choice.text or ""
            logprobs = _token_logprobs(choice.logprobs)
            if isinstance(prompt, list):
                text = request.continuation or ""
                scored = await self.continuation_tokens(request.prompt or "", text)
                logprobs = _prompt_logprobs(choice, len(prompt) - len(scored), prompt)
        if method == "json_schema":
            text = _json_verdict(text)
        usage = resp.usage
        if self._token_budget is not None and usage is not None:
            used = (getattr(usage, "prompt_tokens", 0) or 0) + (getattr(usage, "completion_tokens", 0) or 0)
            self._token_budget.settle(estimate, used)
        return GenerationResult(
            text=text,
            finish_reason=choice.finish_reason,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            latency_s=time.perf_counter() - started,
            logprobs=logprobs,
        )

    async def generate_one(self, request: GenerationRequest, replica: int = 0) -> GenerationResult:
        """One answer, retried on 429/5xx/timeouts/connection errors/malformed replies; other errors are
        returned, not raised. A 429 waits as long as its Retry-After asks (every request to the endpoint
        waits with it) and halves the requests in flight."""
        started = time.perf_counter()
        faults = throttles = 0
        while True:
            if self._open_reason is not None:
                return self._failed(started, faults + throttles + 1, EndpointUnavailable(self._open_reason))
            try:
                async with self._gate:
                    result = await self._once(request, replica)
                self._gate.succeeded()
                self._failures_in_a_row = 0
                result.attempts = faults + throttles + 1
                result.latency_s = time.perf_counter() - started
                return result
            except Exception as exc:  # every failure becomes a retry or a recorded error, never a crash
                asked_wait = retry_after_s(exc)
                if _is_rate_limit(exc):
                    throttles += 1
                    self.rate_limited += 1
                    self._gate.throttled()
                    self.lowest_concurrency = min(self.lowest_concurrency, int(self._gate.limit))
                    retry = throttles <= self.max_rate_limited
                else:
                    faults += 1
                    retry = _is_retryable(exc) and faults <= self.max_retries
                if not retry:
                    self._count_failure(exc)
                    return self._failed(started, faults + throttles, exc)
                if asked_wait is not None:
                    delay = min(asked_wait, self.max_retry_after_s)
                    self._paused_until = max(self._paused_until, time.monotonic() + delay)
                else:
                    delay = min(self.max_backoff_s, self.backoff_s * 2 ** (faults + throttles - 1))
                    delay *= 0.5 + random.random()  # jitter spreads retries of concurrent requests
                # A 429 is the endpoint pacing us, counted in ``rate_limited``; only faults are worth a warning.
                log.log(
                    logging.DEBUG if _is_rate_limit(exc) else logging.WARNING,
                    "%s: attempt %d failed (%s); retrying in %.2fs",
                    self.model_id,
                    faults + throttles,
                    type(exc).__name__,
                    delay,
                )
                await asyncio.sleep(delay)

    def _count_failure(self, exc: BaseException) -> None:
        """Requests that failed for the endpoint's sake (not a 4xx about the request itself), in a row,
        open the circuit breaker: the rest of the batch fails at once instead of waiting out every retry."""
        if not (_is_retryable(exc) or _is_rate_limit(exc)):
            return
        self._failures_in_a_row += 1
        if self._failures_in_a_row >= self.breaker_after and self._open_reason is None:
            self._open_reason = (
                f"{self.base_url} failed {self._failures_in_a_row} requests in a row, each after its retries "
                f"(last: {type(exc).__name__}); not asking it again in this run"
            )
            log.error("%s: %s", self.model_id, self._open_reason)

    @staticmethod
    def _failed(started: float, attempts: int, exc: BaseException) -> GenerationResult:
        return GenerationResult(
            text=None,
            latency_s=time.perf_counter() - started,
            attempts=attempts,
            error=f"{type(exc).__name__}: {exc}",
        )

    async def generate(
        self,
        requests: Sequence[GenerationRequest],
        on_result: Callable[[int, GenerationResult], None] | None = None,
    ) -> list[GenerationResult]:
        """Answers in request order; ``on_result(i, result)`` is called as each one arrives. At most
        ``concurrency`` requests are in flight, fewer while the endpoint answers 429."""
        # Workers pull the next request: a task per worker, not one per request, keeps a long batch cheap.
        queue = iter(enumerate(requests))
        results: list[GenerationResult | None] = [None] * len(requests)

        async def worker(replica: int) -> None:
            for i, request in queue:
                result = await self.generate_one(request, replica)
                results[i] = result
                if on_result is not None:
                    on_result(i, result)

        # Worker w keeps to server w mod n: requests stay in order on each server, so consecutive prompts that
        # share a prefix (a suite's instruction and example) find it in that server's cache.
        await asyncio.gather(*(worker(w) for w in range(min(self.concurrency, len(requests)))))
        return [r for r in results if r is not None]

    async def aclose(self) -> None:
        if self._loop is asyncio.get_running_loop():
            for client in self._async_clients.values():
                await client.close()
        self._async_clients = {}
