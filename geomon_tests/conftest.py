"""Shared fixtures: the real World Bank snapshot, a real bundled model server, real PostgreSQL."""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# Model-calling steps retry after 30 s, doubling, for a server that restarts; a test that fails a step on
# purpose would sleep through minutes of it. Set before any Dagster definitions are imported.
os.environ.setdefault("GEOMON_STEP_RETRY_DELAY_S", "0")

RAM_TMP = Path("/dev/shm")
RAM_TMP_MIN_FREE = 4 * 2**30


def _temporary_files_in_memory() -> Path | None:
    """Every temporary file of the run — each test's ``tmp_path``, Dagster's test instances, the stores, the
    processes the tests start (TMPDIR) — on the RAM file system where there is one with room (4 GiB free) and
    TMPDIR is not set already. A Dagster run commits each event to SQLite, and each commit waits for the disk
    (fsync): on this 2-core machine's disk that made the World Bank checks' runs a third slower. Nothing a test
    proves rests on fsync (a SIGKILLed run's answers are in the page cache either way). GEOMON_TEST_TMPDIR=disk
    keeps the default."""
    if os.environ.get("TMPDIR") or os.environ.get("GEOMON_TEST_TMPDIR") == "disk":
        return None
    try:
        free = os.statvfs(RAM_TMP)
    except OSError:
        return None
    if free.f_bavail * free.f_frsize < RAM_TMP_MIN_FREE or not os.access(RAM_TMP, os.W_OK | os.X_OK):
        return None
    root = RAM_TMP / f"geomon-tests-{os.getuid()}"
    root.mkdir(mode=0o700, exist_ok=True)
    os.environ["TMPDIR"] = str(root)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    return root


_temporary_files_in_memory()  # before geomon.engine.local fixes its log folder under the temporary directory

from geomon.engine.local import running_server  # noqa: E402
from geomon.engine.registry import ModelSpec, bundled_model_path, bundled_specs  # noqa: E402
from geomon.engine.store import ResponseStore  # noqa: E402

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
WDI_SNAPSHOT = SHARED / "snapshots" / "worldbank" / "wdi-2023-12"
POSTGRES_ADMIN_URL = os.environ.get("GEOMON_TEST_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/test")


# Markers applied from what a test uses, so a tier can leave them out (`make test-fast`): `llama` (a bundled
# model's llama-server: the fixtures that give one or its spec), `postgres` (a fresh database on the real
# server), `dagster` (the Dagster layer's tests: real instances and runs), `browser` (headless Chromium).
FIXTURE_MARKERS = {
    "smollm2_server": "llama",
    "smollm2": "llama",
    "gemma": "llama",
    "postgres_url": "postgres",
}
MODULE_MARKERS = {
    "defs": "dagster",
    "test_browser.py": "browser",
    "test_ui.py": "browser",
    "test_ui_regressions.py": "browser",
    "test_ui_refusal.py": "browser",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            if fixture in FIXTURE_MARKERS:
                item.add_marker(FIXTURE_MARKERS[fixture])
        for part in Path(str(item.fspath)).parts[-2:]:
            if part in MODULE_MARKERS:
                item.add_marker(MODULE_MARKERS[part])


# What the CLI sets in its own process for the runs it starts (``cmd_run``: the settings file, the cache epoch;
# ``_dagster_home``; the prebuilt engine's command): a test calling ``main`` in-process must not leave them to the
# next test, or a later subprocess (``geomon serve-local``) would read another test's deleted settings.
CLI_ENVIRONMENT = ("GEOMON_CONFIG", "GEOMON_CACHE_EPOCH", "DAGSTER_HOME", "GEOMON_LLAMA_SERVER")


@pytest.fixture(autouse=True)
def _cli_environment_restored() -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in CLI_ENVIRONMENT}
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def wdi_snapshot_dir() -> Path:
    if not WDI_SNAPSHOT.is_dir():
        pytest.fail(f"the World Bank snapshot is missing at {WDI_SNAPSHOT}: CI needs ../shared beside the checkout")
    return WDI_SNAPSHOT


@pytest.fixture(scope="session")
def snapshot(wdi_snapshot_dir: Path):
    from geomon.sources.worldbank import read_snapshot

    return read_snapshot(wdi_snapshot_dir)


@pytest.fixture(scope="session")
def smollm2() -> ModelSpec:
    return bundled_specs()[0]


@pytest.fixture(scope="session")
def gemma() -> ModelSpec:
    return bundled_specs()[1]


@pytest.fixture(scope="session")
def smollm2_server(smollm2: ModelSpec) -> Iterator[str]:
    """A real llama-server with SmolLM2-135M-Instruct on 127.0.0.1; yields its /v1 base URL. One thread: with a
    thread per core each token waits at a barrier for both, and the wait spins while the other test worker runs
    (a 40-question test on it took 9 s alone and 117 s beside the other worker on two threads)."""
    with running_server(bundled_model_path(smollm2.bundled), alias=smollm2.name, slots=4, threads=1) as url:
        yield url


@pytest.fixture
def sqlite_store(tmp_path: Path) -> ResponseStore:
    return ResponseStore(f"sqlite:///{tmp_path / 'store.sqlite'}")


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh database on the real PostgreSQL server, dropped afterwards."""
    import sqlalchemy as sa

    name = f"geomon_test_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _declared_sections() -> dict[str, dict[str, str]]:
    """Every suite-declared section's paths (snapshots, reference folders) as the repository's geomon.yaml
    sets them, made absolute: a new suite's offline data reaches the tests without naming it here."""
    from dataclasses import fields

    from geomon.config import load_settings

    settings = load_settings(Path(__file__).resolve().parents[1] / "geomon.yaml")
    return {
        name: {
            f.name: str(getattr(section, f.name)) for f in fields(section) if isinstance(getattr(section, f.name), Path)
        }
        for name, section in settings.suite_sections.items()
    }


def offline_sections() -> dict[str, dict[str, str]]:
    """Every registered suite with a real copy in ../shared/snapshots/<suite> reads it (its section's
    ``snapshot``; a suite added later needs no edit here); QUENCH shows the paper's scores too."""
    from geomon.suites import registry

    sections = {
        name: {"snapshot": str(SHARED / "snapshots" / name)}
        for name in registry.suites()
        if (SHARED / "snapshots" / name).is_dir()
    }
    sections["quench"]["paper_results"] = str(SHARED / "reference" / "quench" / "Results")
    return sections


def write_settings(tmp_path: Path, wdi_snapshot_dir: Path, models: list[dict] | None = None, **extra) -> Path:
    """A geomon.yaml for a test: its own store and results under ``tmp_path``, the snapshots in ../shared,
    ``models`` added to the bundled ones; ``extra`` replaces top-level sections."""
    import yaml

    path = tmp_path / "geomon.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "store_url": f"sqlite:///{tmp_path / 'store.sqlite'}",
                "results_dir": str(tmp_path / "results"),
                "worldbank": {"snapshot": str(wdi_snapshot_dir)},
                **offline_sections(),
                "engine": {"slots": 4},
                "models": models or [],
                **extra,
            }
        )
    )
    return path


GAPMINDER_PUBLISHED = SHARED / "reference" / "gapminder"
GAPMINDER_ENTITIES = SHARED / "snapshots" / "gapminder" / "ddf" / "ddf--entities--model_configuration.csv"


def published_gapminder(folder: Path, configs: list[str], answer_files: tuple[str, ...] = ()) -> Path:
    """Gapminder's published folder as the import reads it, holding only ``configs``' per-question rates (the real
    rows) and the real per-answer files named in ``answer_files``: a few real release lines, read in a second."""
    import shutil

    import pandas as pd

    from geomon.suites.gapminder import published

    (folder / "results").mkdir(parents=True, exist_ok=True)
    for rate in published.RATES:
        name = f"ddf--datapoints--{rate}_rate--by--question--model_configuration.csv"
        rows = pd.read_csv(GAPMINDER_PUBLISHED / name, dtype=str, keep_default_na=False)
        rows[rows["model_configuration"].isin(configs)].to_csv(folder / name, index=False)
    for name in answer_files:
        shutil.copy(GAPMINDER_PUBLISHED / "results" / name, folder / "results" / name)
    return folder


def materialize_worldbench_sources(instance, settings: Path, countries: int):
    """The World Bank chain and WorldBench's prompts for ``countries`` countries, on ``instance``."""
    import dagster as dg

    from geomon.definitions import defs
    from geomon.defs.resources import GeomonResource

    return dg.materialize(
        [*defs.assets, *defs.asset_checks],
        instance=instance,
        selection=dg.AssetSelection.assets(
            ["worldbank", "economies"], ["worldbank", "indicators"], ["worldbench", "prompts"]
        ),
        resources={"geomon": GeomonResource(config_path=str(settings))},
        run_config={"ops": {"worldbench__prompts": {"config": {"sample_countries": countries}}}},
    )


def automation_tick(defs: Any, instance: Any, **options: Any) -> Any:
    """``dg.evaluate_automation_conditions`` (``options``: its ``asset_selection``, ``cursor``) with each dynamic
    partitions set read once per tick, as the daemon's tick reads them (through its caching queryer). Dagster's test
    helper writes the next cursor with the bare instance as its partitions store: one SQLite query per partitioned
    subset it serializes, about 9,000 a tick on the code location (6 s). Nothing adds a partition during a tick,
    so the reads kept are the instance's own."""
    import functools

    import dagster as dg

    read = functools.cache(instance.get_dynamic_partitions)
    instance.get_dynamic_partitions = read
    instance.has_dynamic_partition = lambda partitions_def_name, partition_key: (
        partition_key in read(partitions_def_name)
    )
    try:
        return dg.evaluate_automation_conditions(defs=defs, instance=instance, **options)
    finally:
        del instance.get_dynamic_partitions, instance.has_dynamic_partition


def assert_readable_report(path: Path) -> None:
    """What a person reads in a report: no Python repr (a dict, an empty dict in brackets), no "nan" — a
    missing number is a dash, and where a number cannot be given the report says why — and at least one
    chart."""
    import re

    text = path.read_text()
    assert "<img" in text or "<svg" in text, f"{path}: no chart"
    readable = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", text)
    readable = re.sub(r"<svg.*?</svg>", "", readable, flags=re.S)
    for repr_text in ("{'", "({})", "{}"):
        assert repr_text not in readable, f"{path}: a Python repr {repr_text!r} in the report"
    found = re.search(r".{0,60}\bnan\b.{0,60}", readable, re.I)
    assert found is None, f"{path}: 'nan' in the report: {found.group(0) if found else ''}"


def step_output(instance: Any, result: Any, node: str) -> Any:
    """The asset value a run of ``geomon run`` stored (``node``: ``suite__stage``), read back through the
    definitions' IO manager from ``instance``'s storage, for the run's partition."""
    import dagster as dg

    from geomon.definitions import defs

    key = dg.AssetKey(node.split("__"))
    partition = result.dagster_run.tags.get("dagster/partition")
    partitions = defs.resolve_asset_graph().get(key).partitions_def
    if isinstance(partitions, dg.MultiPartitionsDefinition) and partition is not None:
        partition = partitions.get_partition_key_from_str(partition)
    return defs.load_asset_value(key, instance=instance, partition_key=partition)


def board_after_run(suite: str, models: list[str], options: dict[str, Any], settings: Path) -> Any:
    """Suite ``suite`` materialized for ``models`` on a fresh instance (every run must succeed), and its
    leaderboard by model."""
    import dagster as dg

    from geomon.defs.factory import suite_runs
    from geomon.defs.resources import GeomonResource

    resources = {"geomon": GeomonResource(config_path=str(settings))}
    with dg.instance_for_test() as instance:
        results = suite_runs(suite).materialize(instance, models, options, resources=resources)
        assert all(r.success for r in results)
        return step_output(instance, results[-1], f"{suite}__leaderboard").set_index("model")


@pytest.fixture
def suite_folder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path], Path]]:
    """``suite_folder(path)`` names ``path`` in GEOMON_SUITE_DIRS, so the registry and a code location built
    afterwards (``geomon.definitions`` is dropped) find its suites; after the test, the suites loaded from it
    and that code location are dropped, so later tests see the bundled suites only."""
    from geomon.defs.factory import declared

    used: list[Path] = []

    def point(folder: Path) -> Path:
        monkeypatch.setenv("GEOMON_SUITE_DIRS", str(folder))
        sys.modules.pop("geomon.definitions", None)
        used.append(Path(folder).resolve())
        return folder

    yield point
    for name, module in list(sys.modules.items()):
        source = getattr(module, "__file__", None)
        if name.startswith("geomon.suites.") and source and Path(source).resolve().parent in used:
            del sys.modules[name]
    sys.modules.pop("geomon.definitions", None)
    declared.cache_clear()
