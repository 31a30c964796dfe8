"""Models found by asking endpoints what they serve (``engine/discovery.py``): each served id a model named
``<endpoint>-<id as a slug>`` with the endpoint's kind, key variable, parameters and limits; an endpoint that is
down is named with its error and hides no other; an endpoint's entry holds no secret."""

from __future__ import annotations

import pytest

from geomon.engine.discovery import Endpoint, discover, endpoints_from_doc
from geomon.engine.registry import RegistryError
from geomon_tests.loopback import ScriptedModel, serve


def test_each_served_model_is_a_model_of_its_endpoint_and_a_dead_endpoint_hides_no_other(monkeypatch):
    monkeypatch.setenv("GEOMON_TEST_LAB_KEY", "sk-lab")
    with serve(ScriptedModel, {"models": ["Qwen/Qwen2.5-7B-Instruct", "llama 3:8b"]}) as url:
        endpoints = endpoints_from_doc(
            [
                {"name": "down", "base_url": "http://127.0.0.1:9/v1"},
                {
                    "name": "lab",
                    "base_url": f"{url}/v1",
                    "kind": "base",
                    "api_key_env": "GEOMON_TEST_LAB_KEY",
                    "params": {"temperature": 0.2},
                    "rate_limit": {"requests_per_minute": 60},
                },
            ],
            "geomon.yaml",
        )
        specs, errors = discover(endpoints)
    assert [s.name for s in specs] == ["lab-Qwen-Qwen2.5-7B-Instruct", "lab-llama-3-8b"]
    assert [s.model_id for s in specs] == ["Qwen/Qwen2.5-7B-Instruct", "llama 3:8b"]
    for spec in specs:
        assert (spec.kind, spec.base_url, spec.api_key_env) == ("base", f"{url}/v1", "GEOMON_TEST_LAB_KEY")
        assert spec.params["temperature"] == 0.2 and spec.rate_limit.requests_per_minute == 60
        assert spec.api_key == "sk-lab"
    assert list(errors) == ["down"] and errors["down"]


def test_an_endpoint_whose_key_is_not_set_is_named_not_asked(monkeypatch):
    monkeypatch.delenv("GEOMON_TEST_NO_KEY", raising=False)
    specs, errors = discover([Endpoint("api", "http://127.0.0.1:9/v1", api_key_env="GEOMON_TEST_NO_KEY")])
    assert specs == [] and "GEOMON_TEST_NO_KEY is not set" in errors["api"]


def test_an_endpoint_entry_that_is_not_one_is_refused_naming_it():
    with pytest.raises(RegistryError, match=r"f: endpoints\[0\]: .*unexpected keyword argument 'colour'"):
        endpoints_from_doc([{"name": "lab", "base_url": "http://gpu/v1", "colour": "red"}], "f")
    with pytest.raises(RegistryError, match=r"f: 'endpoints' must be a list"):
        endpoints_from_doc({"name": "lab"}, "f")


def test_endpoints_refuse_secrets_too():
    with pytest.raises(RegistryError, match=r"endpoints\[0\]\.params\.extra_headers\.X-Api-Key: never"):
        endpoints_from_doc(
            [{"name": "lab", "base_url": "http://gpu/v1", "params": {"extra_headers": {"X-Api-Key": "k"}}}], "f"
        )
