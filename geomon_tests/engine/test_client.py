"""The client against a loopback OpenAI-compatible server that fails on purpose, and a real llama-server."""

from __future__ import annotations

import asyncio
import json
import threading
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
