"""Run profiles, one meaning everywhere: the UI's default materialization and automation (no run config)
ask exactly what ``geomon run --profile`` asks for the automation profile, and never the full benchmark
unless the profile says so."""

from __future__ import annotations

import re

import dagster as dg
import pytest

from geomon.config import ConfigError, load_settings
from geomon.definitions import defs
from geomon.defs.factory import profile_config
from geomon.defs.resources import GeomonResource
from geomon.suites import registry
from geomon_tests.conftest import write_settings

PROMPTS = dg.AssetKey(["worldbench", "prompts"])


def _prompts_without_config(instance, settings) -> int:
    """What a click on Materialize in the UI (or an automation run) asks: no run config at all."""
    result = dg.materialize(
        [*defs.assets, *defs.asset_checks],
        instance=instance,
        selection=dg.AssetSelection.assets(["worldbank", "economies"], ["worldbank", "indicators"], PROMPTS.path),
        resources={"geomon": GeomonResource(config_path=str(settings))},
    )
    plan = result.asset_materializations_for_node("worldbench__prompts")[0].metadata["plan"].value
    # The prompts asset shows what they will ask each registered model, before anyone asks.
    asks = len(result.output_for_node("worldbench__prompts"))
    plain = plan.replace("\\", "")  # Markdown escapes
    assert "smollm2-135m-instruct" in plain and "gemma3-270m" in plain
    assert len(re.findall(rf"\|\s+{asks}\s+\|", plain)) >= 2  # prompts and asks, for each model
    assert "mean_error" in plain
    return len(result.output_for_node("worldbench__prompts"))


@pytest.mark.parametrize("profile", ["quick", "default"])
def test_the_ui_default_and_automation_ask_what_geomon_run_asks(tmp_path, wdi_snapshot_dir, profile):
    from geomon.sources.worldbank import read_snapshot
    from geomon.suites import worldbench

    path = write_settings(tmp_path, wdi_snapshot_dir, automation_profile=profile)
    settings = load_settings(path)
    info = registry.suites()["worldbench"]
    _, config = profile_config(info, {}, settings, profile)  # geomon run --profile P, no flags
    assert config["sample_countries"] == info.profiles[profile]["sample_countries"]  # never 0 = every country
    snapshot = read_snapshot(wdi_snapshot_dir)
    cli = worldbench.build_prompts(
        snapshot, countries=worldbench.sample_countries(snapshot, config["sample_countries"])
    )
    with dg.instance_for_test() as instance:
        assert _prompts_without_config(instance, path) == len(cli)
        # Automation requests the same assets with no run config either: the prompts it would build are these.
        tick = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert not tick.get_requested_partitions(PROMPTS)  # already up to date: nothing re-asked


def test_profiles_in_geomon_yaml_override_and_are_checked(tmp_path, wdi_snapshot_dir):
    path = write_settings(
        tmp_path,
        wdi_snapshot_dir,
        profiles={"weekly": {"blend": {"sample_questions": 30}}},
        automation_profile="weekly",
    )
    settings = load_settings(path)
    assert settings.run_options("blend")["sample_questions"] == 30
    assert settings.run_options("blend", "paper")["sample_questions"] == 0  # the paper's full size
    assert settings.run_options("gapminder", "weekly") == settings.run_options("gapminder", "paper")
    with pytest.raises(ConfigError, match="unknown run profile 'nightly'"):
        settings.run_options("blend", "nightly")
    bad = write_settings(tmp_path, wdi_snapshot_dir, profiles={"weekly": {"blend": {"sample_countries": 3}}})
    with pytest.raises(ConfigError, match=r"profiles\.weekly\.blend: unknown option\(s\) \['sample_countries'\]"):
        load_settings(bad)
