"""The model registry (``engine/registry.py``): which models geomon asks and where they live. An entry is
validated with a message naming the field; no secret is ever read from the file (keys come from the environment,
and a field named like a secret, at any depth, or credentials in a URL are refused without repeating them); a
file adds to the bundled models, found in the installed packages; a weights file's digest is computed once and
cached whole."""

from __future__ import annotations

import pytest
import yaml

from geomon.engine.registry import RegistryError, bundled_model_path, load_registry, spec_from_dict


def _write(tmp_path, doc) -> str:
    path = tmp_path / "geomon.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"name": "m", "kind": "instruct", "bundled": "gemma3-270m"}, "kind must be"),
        ({"name": "m", "kind": "chat"}, "exactly one of base_url or bundled"),
        ({"name": "m", "kind": "chat", "base_url": "http://x/v1"}, "needs model_id"),
        ({"name": "bad name!", "kind": "chat", "bundled": "gemma3-270m"}, "letters, digits"),
        ({"name": "m", "kind": "chat", "bundled": "gpt-5"}, "bundled must be one of"),
        ({"name": "m", "kind": "chat", "bundled": "gemma3-270m", "release_date": "last year"}, "ISO date"),
        ({"name": "m", "kind": "chat", "bundled": "gemma3-270m", "colour": "red"}, "unknown field"),
        ({"name": "m", "kind": "chat", "bundled": "gemma3-270m", "rate_limit": 500}, "rate_limit: a mapping"),
        (
            {"name": "m", "kind": "chat", "bundled": "gemma3-270m", "rate_limit": {"requests_per_minute": -1}},
            "requests_per_minute: a positive number",
        ),
        (
            {"name": "m", "kind": "chat", "bundled": "gemma3-270m", "rate_limit": {"rpm": 5}},
            "rate_limit: .*unexpected keyword",
        ),
        # Secrets anywhere in an entry are refused, and the message never repeats them.
        ({"name": "m", "kind": "chat", "bundled": "gemma3-270m", "api_key": "sk-123"}, r"models\[0\]\.api_key: never"),
        (
            {"name": "m", "kind": "chat", "bundled": "gemma3-270m", "params": {"api_key": "sk-123"}},
            r"params\.api_key: never write secrets",
        ),
        (
            {
                "name": "m",
                "kind": "chat",
                "bundled": "gemma3-270m",
                "params": {"extra_headers": {"Authorization": "Bearer sk-123"}},
            },
            r"params\.extra_headers\.Authorization: never",
        ),
        (
            {"name": "m", "kind": "chat", "base_url": "https://user:sk-123@api.example/v1", "model_id": "x"},
            r"https://\*\*\*@api\.example/v1 carries credentials",
        ),
    ],
)
def test_registry_entries_are_validated(entry, message):
    with pytest.raises(RegistryError, match=message) as caught:
        spec_from_dict(entry, "geomon.yaml: models[0]")
    assert "sk-123" not in str(caught.value)


def test_sampling_parameters_named_like_tokens_are_not_secrets():
    spec = spec_from_dict(
        {
            "name": "m",
            "kind": "chat",
            "bundled": "gemma3-270m",
            "api_key_env": "KEY",
            "params": {"max_tokens": 5, "max_completion_tokens": 5},
            "rate_limit": {"tokens_per_minute": 1000},
        },
        "geomon.yaml: models[0]",
    )
    assert spec.params["max_tokens"] == 5


def test_rate_limit_reaches_the_client():
    from geomon.engine.client import RateLimit
    from geomon.engine.runner import open_client

    limits = {"requests_per_minute": 3000, "tokens_per_minute": 90000}
    spec = spec_from_dict(
        {"name": "api", "kind": "chat", "base_url": "http://127.0.0.1:9/v1", "model_id": "x", "rate_limit": limits},
        "geomon.yaml: models[0]",
    )
    assert spec.rate_limit == RateLimit(3000, 90000) and spec.describe()["rate_limit"] == limits
    with open_client(spec) as client:
        assert client.rate_limit == RateLimit(3000, 90000)


def test_registry_file_adds_to_the_bundled_models_and_keys_come_from_the_environment(tmp_path, monkeypatch):
    path = _write(
        tmp_path,
        {
            "models": [
                {
                    "name": "api",
                    "kind": "chat",
                    "base_url": "http://x/v1",
                    "model_id": "m",
                    "api_key_env": "GEOMON_TEST_KEY",
                    "release_date": "2025-01-02",
                }
            ]
        },
    )
    specs = {s.name: s for s in load_registry(path)}
    assert set(specs) == {"smollm2-135m-instruct", "gemma3-270m", "api"}
    assert specs["api"].describe()["api_key_env"] == "GEOMON_TEST_KEY"
    with pytest.raises(RegistryError, match="GEOMON_TEST_KEY is not set"):
        _ = specs["api"].api_key
    monkeypatch.setenv("GEOMON_TEST_KEY", "sk-test")
    assert specs["api"].api_key == "sk-test"
    assert "sk-test" not in str(specs["api"].describe())


def test_bundled_models_are_found_in_installed_packages():
    smol = bundled_model_path("smollm2-135m-instruct")
    gemma = bundled_model_path("gemma3-270m")
    assert smol.suffix == ".gguf" and smol.stat().st_size > 50_000_000
    assert gemma.suffix == ".gguf" and gemma.stat().st_size > 200_000_000


def test_a_weights_files_digest_is_cached_whole_until_the_file_changes(tmp_path, monkeypatch):
    """The digest that names a bundled model's weights in the store's keys is computed once and cached as a whole
    file (written aside, then renamed: a second process, such as another test worker, never reads half of one);
    weights of another size or date are hashed again."""
    import hashlib

    from geomon.engine.registry import file_sha256

    monkeypatch.setenv("GEOMON_CACHE_DIR", str(tmp_path / "cache"))
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"w" * 3_000_000)
    assert file_sha256(weights) == hashlib.sha256(weights.read_bytes()).hexdigest()
    (cached,) = (tmp_path / "cache" / "sha256").iterdir()  # nothing partial left beside it
    assert cached.read_text() == file_sha256(weights)
    weights.write_bytes(b"v")
    assert file_sha256(weights) == hashlib.sha256(b"v").hexdigest()


def test_a_file_entry_replaces_a_bundled_model_of_its_name_and_names_are_unique(tmp_path):
    """An entry named like a bundled model is that model, re-registered (one of each name, the file's);
    ``include_bundled: false`` leaves the bundled models out; a variant named like a model is refused naming it, and
    an unknown name's error lists the known ones."""
    from geomon.engine.registry import find_model

    endpoint = {"kind": "chat", "base_url": "http://127.0.0.1:9/v1", "model_id": "x"}
    specs = load_registry(_write(tmp_path, {"models": [{"name": "gemma3-270m", **endpoint}]}))
    assert [s.name for s in specs] == ["smollm2-135m-instruct", "gemma3-270m"]
    assert find_model(specs, "gemma3-270m").bundled is None  # the file's, an endpoint
    alone = load_registry(_write(tmp_path, {"include_bundled": False, "models": [{"name": "api", **endpoint}]}))
    assert [s.name for s in alone] == ["api"]
    with pytest.raises(RegistryError, match=r"no model named 'nosuch' in the registry; known: api$"):
        find_model(alone, "nosuch")
    twice = {
        "include_bundled": False,
        "models": [{"name": "api", **endpoint}],
        "variants": [{"name": "api", "of": "api", "params": {"temperature": 0.5}}],
    }
    with pytest.raises(RegistryError, match=r"duplicate model names \['api'\]"):
        load_registry(_write(tmp_path, twice))
