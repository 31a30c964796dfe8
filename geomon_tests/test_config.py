"""Settings and the model registry: a user's file, environment overrides, clear errors."""

from __future__ import annotations

import pytest
import yaml

from geomon.config import ConfigError, load_settings
from geomon.engine.registry import RegistryError, bundled_model_path, load_registry, spec_from_dict


def _write(tmp_path, doc) -> str:
    path = tmp_path / "geomon.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_relative_paths_resolve_against_the_file_and_env_overrides(tmp_path, monkeypatch):
    path = _write(
        tmp_path,
        {
            "store_url": "sqlite:///var/x.sqlite",
            "worldbank": {"snapshot": "snap"},
            "results_dir": "out",
            "engine": {"slots": 3},
        },
    )
    settings = load_settings(path)
    assert settings.store_url == f"sqlite:///{tmp_path / 'var' / 'x.sqlite'}"
    assert settings.worldbank_snapshot == tmp_path / "snap" and settings.results_dir == tmp_path / "out"
    assert settings.engine.slots == 3 and settings.cache_epoch == ""
    monkeypatch.setenv("GEOMON_STORE_URL", "postgresql://u@h/db")
    monkeypatch.setenv("GEOMON_WORLDBANK_SNAPSHOT", "none")
    monkeypatch.setenv("GEOMON_CACHE_EPOCH", "probe-1")
    settings = load_settings(path)
    assert settings.store_url == "postgresql://u@h/db" and settings.worldbank_snapshot is None
    assert settings.cache_epoch == "probe-1"


def test_a_models_predecessor_is_the_settings_one_over_the_registrys(tmp_path):
    """``predecessors:`` names a model's predecessor for every path that compares releases (`geomon run` read only
    the registry's ``predecessor`` and compared nothing, until the release test through it caught it)."""
    entry = {"kind": "chat", "base_url": "http://127.0.0.1:1/v1", "model_id": "x"}
    models = [{"name": "a", **entry}, {"name": "b", **entry, "predecessor": "a"}, {"name": "c", **entry}]
    doc = {"models": models, "include_bundled": False, "predecessors": {"c": "b", "b": "c"}}
    assert load_settings(_write(tmp_path, doc)).lineage() == {"b": "c", "c": "b"}
    assert load_settings(_write(tmp_path, {**doc, "predecessors": {}})).lineage() == {"b": "a"}


def test_bad_settings_name_the_problem(tmp_path):
    with pytest.raises(ConfigError, match="unknown key"):
        load_settings(_write(tmp_path, {"stor_url": "x"}))
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="never write secrets"):
        load_settings(
            _write(
                tmp_path,
                {
                    "models": [
                        {
                            "name": "m",
                            "kind": "chat",
                            "base_url": "http://x/v1",
                            "model_id": "m",
                            "api_key": "sk-secret",
                        }
                    ]
                },
            )
        )


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


def test_endpoints_refuse_secrets_too():
    from geomon.engine.discovery import endpoints_from_doc

    with pytest.raises(RegistryError, match=r"endpoints\[0\]\.params\.extra_headers\.X-Api-Key: never"):
        endpoints_from_doc(
            [{"name": "lab", "base_url": "http://gpu/v1", "params": {"extra_headers": {"X-Api-Key": "k"}}}], "f"
        )


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


def test_borderlines_alerts_drift_and_endpoints_sections(tmp_path, monkeypatch):
    path = _write(
        tmp_path,
        {
            "borderlines": {"snapshot": "bl", "revisions": ["2021-08-31", "latest"], "latest_every_days": 7},
            "alerts": {"webhook_url_env": "HOOK", "email_to": ["a@example.org"]},
            "drift": {"tolerance": 0.2},
            "endpoints": [{"name": "lab", "base_url": "http://127.0.0.1:9/v1", "kind": "base"}],
        },
    )
    settings = load_settings(path)
    assert settings.borderlines.snapshot == tmp_path / "bl" and settings.borderlines.revisions == (
        "2021-08-31",
        "latest",
    )
    assert settings.borderlines.latest_every_days == 7 and settings.alerts.email_to == ["a@example.org"]
    assert settings.drift.tolerance == 0.2 and settings.endpoints[0].kind == "base"
    monkeypatch.setenv("GEOMON_BORDERLINES_SNAPSHOT", "none")
    monkeypatch.setenv("GEOMON_WIKIPEDIA_API_URL", "http://mirror.local/w/api.php")
    settings = load_settings(path)
    assert settings.borderlines.snapshot is None
    assert settings.borderlines.wikipedia_api_url == "http://mirror.local/w/api.php"
    # An endpoint that is down does not hide the registry's models; it is reported.
    models, unreachable = settings.all_models()
    assert [m.name for m in models] == ["smollm2-135m-instruct", "gemma3-270m"] and list(unreachable) == ["lab"]


def test_secrets_in_alert_settings_are_refused(tmp_path):
    path = _write(tmp_path, {"alerts": {"smtp_password": "hunter2"}})
    with pytest.raises(ConfigError, match="secrets come from environment variables"):
        load_settings(path)
    path = _write(tmp_path, {"endpoints": [{"name": "x", "base_url": "http://h/v1", "api_key": "sk-1"}]})
    with pytest.raises(ConfigError, match=r"endpoints\[0\]\.api_key: never write secrets"):
        load_settings(path)


def test_the_budget_of_asks_is_read_checked_and_overridden(tmp_path, monkeypatch):
    """``budget.asks_per_suite``: 20,000 by default, from the file, from ``GEOMON_BUDGET_ASKS_PER_SUITE``; a value
    that is not a whole number ≥ 1, or an unknown key, is an error naming the file and the key."""
    assert load_settings(_write(tmp_path, {})).budget.asks_per_suite == 20_000
    path = _write(tmp_path, {"budget": {"asks_per_suite": 5000}})
    assert load_settings(path).budget.asks_per_suite == 5000
    monkeypatch.setenv("GEOMON_BUDGET_ASKS_PER_SUITE", "750")
    assert load_settings(path).budget.asks_per_suite == 750
    monkeypatch.setenv("GEOMON_BUDGET_ASKS_PER_SUITE", "lots")
    with pytest.raises(ConfigError, match="GEOMON_BUDGET_ASKS_PER_SUITE: 'lots' is not a whole number"):
        load_settings(path)
    monkeypatch.delenv("GEOMON_BUDGET_ASKS_PER_SUITE")
    for bad in (0, -3, 2.5, "many", True):
        path = _write(tmp_path, {"budget": {"asks_per_suite": bad}})
        with pytest.raises(ConfigError, match=r"settings file .*geomon.yaml: budget.asks_per_suite: .* ≥ 1"):
            load_settings(path)
    with pytest.raises(ConfigError, match=r"budget: unknown key\(s\) \['asks'\]"):
        load_settings(_write(tmp_path, {"budget": {"asks": 10}}))
    with pytest.raises(ConfigError, match="budget: expected a mapping"):
        load_settings(_write(tmp_path, {"budget": 10}))


def test_geomon_yaml_names_every_verdict_setting_once_and_points_at_the_one_description():
    """geomon.yaml's ``verdicts:`` comment lists every ``VerdictSettings`` field with one line each, and no other:
    a new field fails here until it has its line. The scheme itself is described once (verdicts.py's docstring and
    docs/monitoring.md), and the comment points there instead of describing it again."""
    import dataclasses
    import re
    from pathlib import Path

    from geomon.stats.verdicts import VerdictSettings

    lines = (Path(__file__).resolve().parents[1] / "geomon.yaml").read_text(encoding="utf-8").splitlines()
    end = lines.index("verdicts:")
    start = end
    while start > 0 and lines[start - 1].startswith("#"):
        start -= 1
    comment = lines[start:end]
    listed = [m.group(1) for line in comment if (m := re.match(r"#   ([a-z_]+)\s{2,}\S", line))]
    assert sorted(listed) == sorted(f.name for f in dataclasses.fields(VerdictSettings))
    assert len(listed) == len(set(listed))
    text = " ".join(comment)
    assert "geomon/stats/verdicts.py" in text and "docs/monitoring.md" in text
