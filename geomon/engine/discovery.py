"""Models found by asking endpoints what they serve (``GET /v1/models``).

An *endpoint* in geomon.yaml (a vLLM server, a llama.cpp server, an API) stands for every model it
serves: each served id becomes a model named ``<endpoint>-<id as a slug>`` with the endpoint's kind,
key variable and parameters. The registry's explicit models always win over discovered ones.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any

from geomon.engine.client import OpenAICompatibleClient
from geomon.engine.registry import ModelKind, ModelSpec, RegistryError, read_api_key, refuse_secrets, spec_from_dict


@dataclass(frozen=True)
class Endpoint:
    name: str
    base_url: str
    kind: ModelKind = "chat"
    api_key_env: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    supports_logprobs: bool = False
    rate_limit: dict[str, float] | None = None  # requests_per_minute / tokens_per_minute, for each served model
    server: str = "auto"  # llama.cpp | vllm | auto (the endpoint is asked)


def endpoints_from_doc(entries: Any, where: str) -> list[Endpoint]:
    if not entries:
        return []
    if not isinstance(entries, list):
        raise RegistryError(f"{where}: 'endpoints' must be a list")
    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise RegistryError(f"{where}: endpoints[{i}] must be a mapping")
        refuse_secrets(entry, f"{where}: endpoints[{i}]")
        try:
            out.append(Endpoint(**entry))
        except TypeError as exc:
            raise RegistryError(f"{where}: endpoints[{i}]: {exc}") from exc
    return out


def model_name(endpoint: Endpoint, model_id: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model_id).strip("-.")
    return f"{endpoint.name}-{slug}"


async def _served(endpoint: Endpoint) -> list[str]:
    key = read_api_key(endpoint.api_key_env, f"endpoint {endpoint.name!r}")
    client = OpenAICompatibleClient(endpoint.base_url, "", key, max_retries=1, timeout_s=15)
    try:
        return await client.list_models()
    finally:
        await client.aclose()


def discover(endpoints: list[Endpoint]) -> tuple[list[ModelSpec], dict[str, str]]:
    """Models every endpoint serves now, and the endpoints that could not be asked (name → error)."""
    specs: list[ModelSpec] = []
    errors: dict[str, str] = {}
    for endpoint in endpoints:
        try:
            served = asyncio.run(_served(endpoint))
        except Exception as exc:  # an endpoint that is down must not hide the others
            errors[endpoint.name] = f"{type(exc).__name__}: {exc}"
            continue
        for model_id in served:
            entry = {
                "name": model_name(endpoint, model_id),
                "kind": endpoint.kind,
                "base_url": endpoint.base_url,
                "model_id": model_id,
                "api_key_env": endpoint.api_key_env,
                "params": endpoint.params,
                "supports_logprobs": endpoint.supports_logprobs,
                "rate_limit": endpoint.rate_limit,
                "server": endpoint.server,
            }
            specs.append(spec_from_dict(entry, f"endpoint {endpoint.name}"))
    return specs, errors
