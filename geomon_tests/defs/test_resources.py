"""The Dagster layer's resources (``defs/resources.py``): the settings as the code location reads them, once per
version of the file and of the ``GEOMON_*`` environment, and a broken file that still lets the location load (its
schedules and launchpad fall back to the defaults; a run reports the error); a partition's numbers keyed by it;
step outputs where ``GEOMON_IO_BASE_DIR`` says."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import yaml

from geomon.defs.resources import cron_from_settings, keyed_by_partition, profile_sizes, resources, settings_at_load
from geomon.monitor.drift import DriftSettings
from geomon.suites.registry import profile_options


def _write(path: Path, doc: dict, tick: int) -> None:
    """``doc`` as the settings file, stamped ``tick`` seconds after the epoch (a new version of the file)."""
    path.write_text(yaml.safe_dump(doc))
    os.utime(path, ns=(tick * 10**9, tick * 10**9))


def _drift(settings) -> str:
    return settings.drift.schedule


def test_the_settings_are_read_once_per_version_of_the_file_and_environment(tmp_path, monkeypatch):
    """Building the definitions asks for the settings many times: one file version gives one read (the same
    object); a changed file or ``GEOMON_*`` variable is read again. Mutation caught: a cache that ignores the
    file's stamp or the environment (a schedule changed in geomon.yaml never reaching the UI)."""
    path = tmp_path / "geomon.yaml"
    monkeypatch.setenv("GEOMON_CONFIG", str(path))
    monkeypatch.delenv("GEOMON_STORE_URL", raising=False)
    _write(path, {"drift": {"schedule": "0 5 * * *"}}, tick=1_000)
    first = settings_at_load()
    assert first is not None and settings_at_load() is first
    assert cron_from_settings(_drift, "default") == "0 5 * * *"
    _write(path, {"drift": {"schedule": "0 6 * * *"}}, tick=2_000)
    assert cron_from_settings(_drift, "default") == "0 6 * * *"
    monkeypatch.setenv("GEOMON_STORE_URL", f"sqlite:///{tmp_path / 'other.sqlite'}")
    assert settings_at_load().store_url.endswith("other.sqlite")


def test_a_broken_settings_file_leaves_the_location_loading_on_the_defaults(tmp_path, monkeypatch):
    """An unknown key (or profile) is not a code location that fails to load: the schedules get their defaults and
    each suite's launchpad its default profile's sizes."""
    path = tmp_path / "geomon.yaml"
    monkeypatch.setenv("GEOMON_CONFIG", str(path))
    default_sizes = profile_options("worldbench", "default", {})
    _write(path, {"automation_profile": "quick"}, tick=1_000)
    assert profile_sizes("worldbench") == profile_options("worldbench", "quick", {}) != default_sizes
    _write(path, {"stor_url": "x", "drift": {"schedule": "0 5 * * *"}}, tick=2_000)
    assert settings_at_load() is None
    assert cron_from_settings(_drift, DriftSettings().schedule) == DriftSettings().schedule
    assert profile_sizes("worldbench") == default_sizes
    _write(path, {"automation_profile": "nosuch"}, tick=3_000)
    assert profile_sizes("worldbench") == default_sizes


def test_a_partitions_numbers_are_keyed_by_it_and_rounded():
    """Plots never joins two models: a per-model asset's numbers carry the model in their key; text stays."""
    keyed = keyed_by_partition(
        {"mean_error": 0.123456789, "calls": dg.MetadataValue.int(3), "method": "parsed", "ok": True}, "m1"
    )
    assert keyed["mean_error · m1"] == 0.1235 and keyed["calls · m1"].value == 3
    assert keyed["method"] == "parsed" and keyed["ok"] is True


def test_step_outputs_go_where_geomon_io_base_dir_says(tmp_path, monkeypatch):
    """Workers on several hosts share step outputs through ``GEOMON_IO_BASE_DIR``; without it Dagster's default
    (the instance's storage) is left in place."""
    monkeypatch.delenv("GEOMON_IO_BASE_DIR", raising=False)
    assert set(resources().resources) == {"geomon"}
    monkeypatch.setenv("GEOMON_IO_BASE_DIR", str(tmp_path / "io"))
    manager = resources().resources["io_manager"]
    assert isinstance(manager, dg.FilesystemIOManager) and manager.base_dir == str(tmp_path / "io")
