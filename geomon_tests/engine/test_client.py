"""The client against a loopback OpenAI-compatible server that fails on purpose, and a real llama-server."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator

import pytest

from geomon.engine.client import GenerationRequest, OpenAICompatibleClient
from geomon_tests.loopback import JSONHandler, serve


class FlakyHandler(JSONHandler):
    """Answers like an OpenAI server after failing the first ``fail_first`` requests with ``fail_status``."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length))
        plan = self.state
        with plan["lock"]:
            plan["seen"] += 1
            seen = plan["seen"]
        if seen <= plan["fail_first"]:
            self.send_json({"error": {"message": "try again"}}, status=plan["fail_status"])
            return
        content = f"echo: {body['messages'][-1]['content']}"
        self.send_json(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
            }
        )


@pytest.fixture
def flaky_server() -> Iterator[tuple[str, dict]]:
    plan = {"seen": 0, "fail_first": 0, "fail_status": 503, "lock": threading.Lock()}
    with serve(FlakyHandler, plan) as url:
        yield f"{url}/v1", plan


def _chat(text: str) -> GenerationRequest:
    return GenerationRequest("chat", messages=({"role": "user", "content": text},), params={"max_tokens": 5})


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retries_with_backoff_then_answers(flaky_server, status):
    url, plan = flaky_server
    plan.update(fail_first=2, fail_status=status)
    client = OpenAICompatibleClient(url, "m", backoff_s=0.01, max_retries=3)
    result = asyncio.run(client.generate_one(_chat("hi")))
    assert result.ok and result.text == "echo: hi"
    assert result.attempts == 3 and client.calls == 3
    assert result.prompt_tokens == 5 and result.completion_tokens == 3 and result.latency_s > 0


def test_gives_up_after_max_retries_and_reports_the_error(flaky_server):
    url, plan = flaky_server
    plan.update(fail_first=100, fail_status=503)
    client = OpenAICompatibleClient(url, "m", backoff_s=0.01, max_retries=2)
    result = asyncio.run(client.generate_one(_chat("hi")))
    assert not result.ok and result.text is None
    assert result.attempts == 3 and "503" in result.error


def test_client_errors_are_not_retried(flaky_server):
    url, plan = flaky_server
    plan.update(fail_first=1, fail_status=400)
    client = OpenAICompatibleClient(url, "m", backoff_s=0.01, max_retries=3)
    result = asyncio.run(client.generate_one(_chat("hi")))
    assert not result.ok and result.attempts == 1 and "400" in result.error


def test_timeouts_are_retried():
    # A socket that accepts and never answers: every attempt times out.
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        client = OpenAICompatibleClient(
            f"http://127.0.0.1:{sock.getsockname()[1]}/v1", "m", timeout_s=0.3, backoff_s=0.01, max_retries=1
        )
        result = asyncio.run(client.generate_one(_chat("hi")))
        assert not result.ok and result.attempts == 2 and "Timeout" in result.error
    finally:
        sock.close()


def test_results_keep_request_order_under_concurrency(flaky_server):
    url, _ = flaky_server
    client = OpenAICompatibleClient(url, "m", concurrency=4)
    seen = []
    results = asyncio.run(client.generate([_chat(str(i)) for i in range(20)], on_result=lambda i, r: seen.append(i)))
    assert [r.text for r in results] == [f"echo: {i}" for i in range(20)]
    assert sorted(seen) == list(range(20))


def test_a_declared_seed_seeds_each_request_with_its_own():
    """A variant's ``seed`` reaches the server as one seed per request, derived from it and the request: two
    questions never share one random stream (a shared stream moves a whole sampled release at once), the same
    question is seeded the same way again (reproducible), another declared seed gives other seeds, and the store
    still keys on the declared seed."""

    def ask(seed: int, *texts: str) -> list[int]:
        state = {"bodies": []}
        params = {"temperature": 0.8, "seed": seed}
        requests = [GenerationRequest("chat", messages=({"role": "user", "content": t},), params=params) for t in texts]
        with serve(ConstraintRecorder, state) as url:
            asyncio.run(OpenAICompatibleClient(f"{url}/v1", "m", concurrency=1).generate(requests))
        return [body["seed"] for body in state["bodies"]]

    first, second, again = ask(7, "Who owns Crimea?", "Who owns Kosovo?", "Who owns Crimea?")
    assert first != second and first == again
    assert ask(8, "Who owns Crimea?") != [first]
    request = GenerationRequest("chat", messages=({"role": "user", "content": "x"},), params={"seed": 7})
    assert request.payload()["params"] == {"seed": 7}


@pytest.mark.slow
def test_real_llama_server_chat_and_models(smollm2_server):
    client = OpenAICompatibleClient(smollm2_server, "smollm2-135m-instruct")
    assert "smollm2-135m-instruct" in asyncio.run(client.list_models())
    result = asyncio.run(
        client.generate_one(
            GenerationRequest(
                "chat",
                messages=({"role": "user", "content": "What is the capital of France?"},),
                params={"temperature": 0, "max_tokens": 8, "logprobs": 3},
            )
        )
    )
    assert result.ok and result.text.strip()
    assert result.completion_tokens and result.completion_tokens <= 8
    assert result.logprobs and {"token", "logprob", "top"} <= set(result.logprobs[0])


@pytest.mark.slow
def test_scoring_a_continuation_forces_its_canonical_tokens(gemma):
    """Rank classification's primitive on the real base model: the continuation's own tokens, each with
    the model's log-probability (from the logits before the grammar), whatever greedy decoding prefers."""
    from geomon.engine.local import running_server
    from geomon.engine.registry import bundled_model_path

    prompt = "Is Abyei a territory of A) South Sudan or B) Sudan?\n"
    with running_server(bundled_model_path(gemma.bundled), alias=gemma.name, slots=1) as url:
        client = OpenAICompatibleClient(url, gemma.name)

        async def score() -> list:
            requests = [
                GenerationRequest("completion", prompt=prompt, params={"temperature": 0}, continuation=c)
                for c in ("South Sudan", "Sudan", "Судан")
            ]
            free = GenerationRequest(
                "completion", prompt=prompt, params={"temperature": 0, "max_tokens": 1, "logprobs": 5}
            )
            return await client.generate([*requests, free])

        south, sudan, cyrillic, free = asyncio.run(score())
    for result, text in ((south, "South Sudan"), (sudan, "Sudan"), (cyrillic, "Судан")):
        assert result.ok and result.text == text
        assert "".join(t["token"] for t in result.logprobs) == text  # exactly the forced tokens, no extra
        assert all(t["logprob"] < 0 for t in result.logprobs)
    # The first forced token's log-probability is the model's own, as the unconstrained top list reports it.
    first = south.logprobs[0]
    if first["token"] in free.logprobs[0]["top"]:
        assert first["logprob"] == pytest.approx(free.logprobs[0]["top"][first["token"]], abs=1e-3)
    with pytest.raises(ValueError, match="continuation"):
        GenerationRequest("chat", messages=({"role": "user", "content": "x"},), continuation="y")


BOS = 1


def _toy_ids(text: str) -> list[int]:
    return [ord(c) + 10 for c in text]


def _toy_logprob(token: int, position: int) -> float:
    return -(((token * 7 + position) % 13) + 1) / 4


class VLLMHandler(JSONHandler):
    """vLLM's OpenAI server in its wire format, with a toy model: one token per character, BOS first, and
    a known log-probability for every (token, position). ``/version`` says it is vLLM."""

    def do_GET(self) -> None:
        if self.path == "/version":
            self.send_json({"version": "0.24.0"})
        else:
            self.send_json({"error": "not found"}, status=404)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.state.setdefault("bodies", []).append((self.path, body))
        if self.path == "/tokenize":
            ids = ([BOS] if body.get("add_special_tokens", True) else []) + _toy_ids(body["prompt"])
            self.send_json({"tokens": ids, "count": len(ids), "max_model_len": 2048})
            return
        prompt = body["prompt"]
        entries = [None] + [
            {str(t): {"logprob": _toy_logprob(t, i), "rank": 1, "decoded_token": chr(t - 10)}}
            for i, t in enumerate(prompt)
            if i > 0
        ]
        if self.state.get("malformed"):
            entries = entries[:-1]
        choice = {"index": 0, "text": "x", "logprobs": None, "finish_reason": "length", "stop_reason": None}
        if body.get("prompt_logprobs") is not None:
            choice["prompt_logprobs"] = entries
        self.send_json(
            {
                "id": "cmpl-1",
                "object": "text_completion",
                "created": 0,
                "model": body["model"],
                "choices": [choice],
                "usage": {"prompt_tokens": len(prompt), "completion_tokens": 1, "total_tokens": len(prompt) + 1},
            }
        )


@pytest.mark.parametrize("server", ["auto", "vllm"])
def test_scoring_a_continuation_on_vllm_reads_prompt_logprobs(server):
    """Rank classification on vLLM: the prompt's tokens (BOS included, as vLLM tokenizes a prompt) then the
    continuation's own, sent as token ids with ``prompt_logprobs``; the score is the continuation's."""
    prompt, continuation = "Abyei belongs to", " Sudan"
    state: dict = {}
    with serve(VLLMHandler, state) as url:
        client = OpenAICompatibleClient(f"{url}/v1", "toy", server=server)
        request = GenerationRequest("completion", prompt=prompt, params={"temperature": 0}, continuation=continuation)
        (result,) = asyncio.run(client.generate([request]))
        assert client.server == "vllm"
        state["malformed"] = True
        client.max_retries = 1
        (broken,) = asyncio.run(client.generate([GenerationRequest("completion", prompt="x", continuation="y")]))
    ids = [BOS, *_toy_ids(prompt), *_toy_ids(continuation)]
    expected = [_toy_logprob(t, i) for i, t in enumerate(ids)][-len(continuation) :]
    assert result.ok and result.text == continuation
    assert [t["logprob"] for t in result.logprobs] == expected
    assert "".join(t["token"] for t in result.logprobs) == continuation
    completion = next(b for path, b in state["bodies"] if path == "/v1/completions")
    assert completion["prompt"] == ids and completion["prompt_logprobs"] == 0 and completion["max_tokens"] == 1
    # A reply whose prompt_logprobs do not cover the prompt is an error on that item, never a crash.
    assert not broken.ok and "prompt_logprobs" in broken.error


class SentencePieceHandler(VLLMHandler):
    """The toy vLLM whose tokenizer marks word starts itself, as SentencePiece with ``add_space_prefix`` (Llama 2,
    Mistral): a text is read as "▁" + the text with "▁" for each space, so " Sudan" alone is "▁▁Sudan"."""

    def do_POST(self) -> None:
        if self.path == "/tokenize":
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            self.state.setdefault("bodies", []).append((self.path, body))
            ids = ([BOS] if body.get("add_special_tokens", True) else []) + _toy_ids(_pieces(body["prompt"]))
            self.send_json({"tokens": ids, "count": len(ids), "max_model_len": 2048})
            return
        super().do_POST()


def _pieces(text: str) -> str:
    return "\u2581" + text.replace(" ", "\u2581")


def test_a_continuation_is_scored_as_the_tokens_it_is_after_its_prompt():
    """A claimant after "Answer:" is scored as its tokens in the whole text ("▁Sudan"), not as the text tokenized
    alone, which a tokenizer that adds its own word-start mark reads with a stray lone space ("▁▁Sudan") the model
    never writes there. Mutation caught: the continuation tokenized on its own."""
    prompt, continuation = "Abyei belongs to Answer:", " Sudan"
    state: dict = {}
    with serve(SentencePieceHandler, state) as url:
        client = OpenAICompatibleClient(f"{url}/v1", "toy", server="vllm")
        request = GenerationRequest("completion", prompt=prompt, params={"temperature": 0}, continuation=continuation)
        (result,) = asyncio.run(client.generate([request]))
    sent = next(b for path, b in state["bodies"] if path == "/v1/completions")["prompt"]
    assert sent == [BOS, *_toy_ids(_pieces(prompt + continuation))]  # the whole text, as the model reads it
    assert result.ok and len(result.logprobs) == len("\u2581Sudan")


class RateLimitedHandler(JSONHandler):
    """An endpoint that serves ``per_second`` requests a second (a token bucket) and answers 429 with
    Retry-After beyond; ``malformed_first`` 200 replies with no choices or broken JSON come first."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        plan = self.state
        with plan["lock"]:
            plan["seen"] += 1
            if plan["malformed"]:
                kind = plan["malformed"].pop(0)
                payload = b'{"choices": [' if kind == "broken" else json.dumps({"choices": []}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            if plan.get("retry_after_first") and plan["seen"] == 1:
                self._refuse(plan["retry_after_first"])
                return
            if plan.get("per_second"):
                now = time.monotonic()
                plan["level"] = min(plan["per_second"], plan["level"] + (now - plan["updated"]) * plan["per_second"])
                plan["updated"] = now
                if plan["level"] < 1:
                    plan["refused"] += 1
                    self._refuse("1")
                    return
                plan["level"] -= 1
            plan["served"].append(body["messages"][-1]["content"])
        self.send_json(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
            }
        )

    def _refuse(self, retry_after: str) -> None:
        payload = json.dumps({"error": {"message": "slow down"}}).encode()
        self.send_response(429)
        self.send_header("Content-Type", "application/json")
        self.send_header("Retry-After", retry_after)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def limited_server() -> Iterator[tuple[str, dict]]:
    plan = {
        "seen": 0,
        "malformed": [],
        "served": [],
        "refused": 0,
        "level": 0.0,
        "updated": time.monotonic(),
        "lock": threading.Lock(),
    }
    with serve(RateLimitedHandler, plan) as url:
        yield f"{url}/v1", plan


def test_retry_after_is_honoured(limited_server):
    """The server asks for 1 s: the retry is not sent sooner (a lower bound on the client's own clock,
    which a sleep cannot undercut however loaded the machine is)."""
    url, plan = limited_server
    plan["retry_after_first"] = "1"
    client = OpenAICompatibleClient(url, "m", backoff_s=0.001, max_retries=0)  # 429s have their own budget
    result = asyncio.run(client.generate_one(_chat("hi")))
    assert result.ok and result.attempts == 2 and client.rate_limited == 1
    assert result.latency_s >= 1.0


def test_retry_after_formats():
    import email.utils
    from types import SimpleNamespace

    from geomon.engine.client import retry_after_s

    def error(headers: dict) -> SimpleNamespace:
        return SimpleNamespace(response=SimpleNamespace(headers=headers))

    assert retry_after_s(error({"retry-after": "3"})) == 3.0
    assert retry_after_s(error({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    now = 1_800_000_000.0  # a fixed clock: the HTTP date is ten seconds after it
    in_ten = email.utils.formatdate(now + 10, usegmt=True)
    assert retry_after_s(error({"retry-after": in_ten}), now=now) == 10.0
    assert retry_after_s(error({"retry-after": "soon"})) is None
    assert retry_after_s(error({})) is None and retry_after_s(ValueError("no response")) is None


def test_malformed_replies_are_retried_a_bounded_number_of_times(limited_server):
    url, plan = limited_server
    plan["malformed"] = ["empty", "broken"]
    client = OpenAICompatibleClient(url, "m", backoff_s=0.001, max_retries=3)
    result = asyncio.run(client.generate_one(_chat("hi")))
    assert result.ok and result.attempts == 3
    plan["malformed"] = ["empty"] * 10
    result = asyncio.run(OpenAICompatibleClient(url, "m", backoff_s=0.001, max_retries=2).generate_one(_chat("x")))
    assert not result.ok and result.attempts == 3 and "MalformedReply" in result.error


def test_a_dead_endpoint_opens_the_circuit_breaker():
    """Connection refused on every request: after five requests fail (each after its retries) the rest of
    the batch fails at once with a message that says why, instead of each waiting out its retries."""
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens on this port any more
    client = OpenAICompatibleClient(f"http://127.0.0.1:{port}/v1", "m", concurrency=1, backoff_s=0.001, max_retries=1)
    results = asyncio.run(client.generate([_chat(str(i)) for i in range(50)]))
    assert len(results) == 50 and not any(r.ok for r in results)
    assert client.calls == 5 * 2  # five requests × (one try + one retry), then the breaker
    assert "EndpointUnavailable" in results[-1].error and "5 requests in a row" in results[-1].error


def test_a_rate_limited_endpoint_loses_no_request(limited_server):
    """A server that serves 40 requests a second and refuses the rest with 429 + Retry-After: every request
    is answered exactly once; the client halved its concurrency on the 429s."""
    url, plan = limited_server
    plan["per_second"] = 40
    client = OpenAICompatibleClient(url, "m", concurrency=32, backoff_s=0.001)
    results = asyncio.run(client.generate([_chat(str(i)) for i in range(120)]))
    assert all(r.ok for r in results)
    assert sorted(plan["served"], key=int) == [str(i) for i in range(120)]  # each served once
    assert client.rate_limited == plan["refused"] > 0 and client.lowest_concurrency < 32


def test_configured_rate_limit_is_a_token_bucket(limited_server):
    """requests_per_minute from geomon.yaml: the client spaces its requests itself."""
    from geomon.engine.client import RateLimit

    url, plan = limited_server
    client = OpenAICompatibleClient(url, "m", concurrency=16, rate_limit=RateLimit(requests_per_minute=1200))
    started = time.monotonic()
    results = asyncio.run(client.generate([_chat(str(i)) for i in range(30)]))
    elapsed = time.monotonic() - started
    assert all(r.ok for r in results) and len(plan["served"]) == 30
    # 20 requests banked at most, then 20 a second: the batch cannot finish sooner (a lower bound).
    assert elapsed >= (30 - 20) / 20
    with pytest.raises(ValueError, match="requests_per_minute"):
        RateLimit(requests_per_minute=0)


class ConstraintRecorder(JSONHandler):
    """Records each request body; replies with the first allowed choice in the shape the constraint asks."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.state["bodies"].append(body)
        schema = (body.get("response_format") or {}).get("json_schema")
        if schema:
            content = json.dumps({"verdict": schema["schema"]["properties"]["verdict"]["enum"][1]})
        else:
            content = "Let me think. The answer is B."
        message = {"role": "assistant", "content": content}
        self.send_json(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
            }
        )


@pytest.mark.parametrize(
    ("constrain", "server", "expected"),
    [
        ("auto", "llama.cpp", {"grammar": 'root ::= "A" | "B" | "C"'}),
        ("auto", "vllm", {"structured_outputs": {"choice": ["A", "B", "C"]}}),
        ("json_schema", "auto", {}),
        ("none", "auto", {}),
    ],
)
def test_judge_replies_are_held_to_their_choices_per_endpoint(constrain, server, expected):
    """llama.cpp gets a GBNF grammar, vLLM its structured outputs, OpenAI-style endpoints a JSON schema (its
    verdict is read out of the JSON); ``none`` sends the plain request."""
    state = {"bodies": []}
    request = GenerationRequest("chat", messages=({"role": "user", "content": "A, B or C?"},), choices=("A", "B", "C"))
    with serve(ConstraintRecorder, state) as url:
        client = OpenAICompatibleClient(f"{url}/v1", "judge", server=server, constrain=constrain)
        (result,) = asyncio.run(client.generate([request]))
    body = state["bodies"][0]
    for key, value in expected.items():
        assert body[key] == value
    if constrain == "json_schema":
        assert body["response_format"]["json_schema"]["schema"]["properties"]["verdict"]["enum"] == ["A", "B", "C"]
        assert result.text == "B"  # the verdict, out of the JSON
    if constrain == "none":
        assert not {"grammar", "structured_outputs", "response_format"} & set(body)
    # The constraint is part of what the store keys on: a held reply is not the free one.
    assert request.payload() != GenerationRequest("chat", messages=request.messages).payload()


@pytest.mark.slow
def test_a_bundled_judge_always_answers_a_letter(smollm2_server):
    """The real llama-server, a grammar of the verdict letters: every reply is one of them."""
    client = OpenAICompatibleClient(smollm2_server, "smollm2-135m-instruct", server="llama.cpp")
    prompts = ["Is water wet? Reply A for yes, B for no.", "Write a poem about the sea.", "¿Cuál es la capital?"]
    requests = [
        GenerationRequest(
            "chat", messages=({"role": "user", "content": p},), params={"max_tokens": 8}, choices=tuple("ABCD")
        )
        for p in prompts
    ]
    results = asyncio.run(client.generate(requests))
    assert [r.error for r in results] == [None] * 3 and all(r.text in {"A", "B", "C", "D"} for r in results)
