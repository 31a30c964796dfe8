"""Settings: a user's file, environment overrides, clear errors (the model registry's own entries:
``engine/test_registry.py``)."""

from __future__ import annotations

import pytest
import yaml

from geomon.config import ConfigError, load_settings


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


def test_borderlines_alerts_drift_and_endpoints_sections(tmp_path, monkeypatch):
    path = _write(
        tmp_path,
        {
            "borderlines": {"snapshot": "bl", "revisions": ["2021-08-31", "latest"], "latest_every_days": 7},
            "mediawiki": {"user_agent": "geomon-at-acme (ops@acme.example)", "min_interval_s": 2.0},
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
    # BorderLines decides each configured revision in a release: its share of α is split between the two.
    assert settings.verdicts.scopes == {"borderlines": 2}
    assert (settings.mediawiki.user_agent, settings.mediawiki.min_interval_s) == (
        "geomon-at-acme (ops@acme.example)",
        2.0,
    )
    assert settings.drift.tolerance == 0.2 and settings.endpoints[0].kind == "base"
    monkeypatch.setenv("GEOMON_BORDERLINES_SNAPSHOT", "none")
    monkeypatch.setenv("GEOMON_WIKIPEDIA_API_URL", "http://mirror.local/w/api.php")
    settings = load_settings(path)
    assert settings.borderlines.snapshot is None
    assert settings.mediawiki.api_url == "http://mirror.local/w/api.php"
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


def test_a_suites_importer_names_its_folders_key_and_a_broken_one_breaks_only_itself(tmp_path, monkeypatch):
    """``gapminder_results`` is the key Gapminder's importer declares (``GEOMON_GAPMINDER_RESULTS`` overrides it); a
    suite whose importers cannot be loaded leaves its key unread and its kind out, and the settings still load."""
    from geomon.suites import info, registry

    path = _write(tmp_path, {"gapminder_results": "published"})
    assert load_settings(path).published == {"gapminder-results": tmp_path / "published"}
    monkeypatch.setenv("GEOMON_GAPMINDER_RESULTS", "none")
    assert load_settings(path).published == {}
    monkeypatch.delenv("GEOMON_GAPMINDER_RESULTS")
    typo = tmp_path / "typo"
    typo.mkdir()
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['gapminder_resutls'\]"):
        load_settings(_write(typo, {"gapminder_resutls": "published"}))  # a typo is still an error

    def broken(suite: info.Suite) -> dict:
        if suite.name == "gapminder":
            raise RuntimeError("published.py is broken")
        return {}

    monkeypatch.setattr(info.Suite, "importers", property(broken))
    assert registry.importers() == {}
    assert registry.broken_importers() == {
        "gapminder": "suite gapminder: its importers cannot be loaded: RuntimeError: published.py is broken"
    }
    assert load_settings(path).published == {}
