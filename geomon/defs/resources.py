"""Dagster resources: geomon's settings, registry, store and engine, handed to assets."""

import os
import warnings
from collections.abc import Callable
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import dagster as dg

from geomon.config import ConfigError, Settings, load_settings

# Every model is a partition; the sensor and `geomon run` add them from the registry.
models_partitions = dg.DynamicPartitionsDefinition(name="models")
# Models that can drift: those served by an endpoint (a bundled GGUF file's weights never change), the
# partitions of the drift probe; the registry sensor adds them beside `models`.
api_models_partitions = dg.DynamicPartitionsDefinition(name="api_models")


@cache
def revisions_partitions(name: str) -> dg.DynamicPartitionsDefinition:
    """A suite's revisions (``Revisions.partitions``; BorderLines': ``dispute_revisions``, every evaluated
    revision of Wikipedia's disputes page, ``2023-05-15-r1154894956``)."""
    return dg.DynamicPartitionsDefinition(name=name)


@cache
def model_revision_partitions(name: str) -> dg.MultiPartitionsDefinition:
    """A suite with revisions runs per model × revision of its own."""
    return dg.MultiPartitionsDefinition({"model": models_partitions, "revision": revisions_partitions(name)})


def settings_at_load() -> Settings | None:
    """The settings as the code location loads them (None: the file is broken; a run reports its error), read
    once per version of the file and of the ``GEOMON_*`` environment: building the definitions asks often."""
    path = Path(os.environ.get("GEOMON_CONFIG") or "geomon.yaml").resolve()
    stamp = path.stat().st_mtime_ns if path.is_file() else None
    environment = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("GEOMON_")))
    return _settings_at_load(Path.cwd(), path, stamp, environment)


@lru_cache(maxsize=4)
def _settings_at_load(
    cwd: Path, path: Path, stamp: int | None, environment: tuple[tuple[str, str], ...]
) -> Settings | None:
    try:
        return load_settings()
    except ConfigError:
        return None


def cron_from_settings(pick: Callable[[Settings], str], default: str) -> str:
    """A schedule's cron expression from ``geomon.yaml``, read when the code location loads. A broken file
    gives ``default``, so the code location still loads; the scheduled run reports the file's error."""
    settings = settings_at_load()
    return pick(settings) if settings is not None else default


def profile_sizes(suite: str) -> dict[str, Any]:
    """Suite ``suite``'s prompts options under the automation profile (``geomon.yaml``'s, read when the code
    location loads), what its prompts job's launchpad proposes. A broken file (or profile) gives the suite's
    ``default`` profile, so the code location still loads; a run reports the file's error."""
    from geomon.suites.registry import profile_options

    settings = settings_at_load()
    try:
        return settings.run_options(suite) if settings is not None else profile_options(suite, "default", {})
    except ConfigError:
        return profile_options(suite, "default", {})


def by_partition(context: dg.AssetExecutionContext, name: str, value: Any) -> dict[str, Any]:
    """An all-partitions input as {partition key: value}; Dagster hands over a lone partition unwrapped."""
    keys = context.asset_partition_keys_for_input(name)
    return {keys[0]: value} if len(keys) == 1 else value


def shown_path(path: Path | str) -> str:
    """A configured path as a person reads it in the UI: relative to the working directory (the checkout that
    ``make`` runs in) where it is inside it or beside it (``../shared/…``), else as it is."""
    full = Path(path).resolve()
    relative = os.path.relpath(full, Path.cwd().resolve())
    return relative if not relative.startswith(os.path.join(os.pardir, os.pardir)) else str(full)


def check_spec(name: str, asset: list[str], partitions_def: Any = None, **kwargs: Any) -> dg.AssetCheckSpec:
    """An asset check spec; partitioned like its asset where it has partitions, so the UI says which model a
    result is for. Dagster marks partitioned checks a preview and warns on each: geomon opts in deliberately."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return dg.AssetCheckSpec(name, asset=dg.AssetKey(asset), partitions_def=partitions_def, **kwargs)


def partition_label(key: str, partition: str) -> str:
    """A partitioned asset's numeric metadata key for one partition (``keyed_by_partition``)."""
    return f"{key} · {partition}"


def keyed_by_partition(metadata: dict[str, Any], partition: str) -> dict[str, Any]:
    """A partitioned asset's numbers under per-partition keys (``mean_error · gemma3-270m``): Dagster's Plots tab
    draws each numeric key over the materializations of every partition, so a plain key would join one model's
    values to another's. Text, tables and JSON keep their keys; floats are rounded to four decimals."""

    def numeric(value: Any) -> bool:
        if isinstance(value, dg.MetadataValue):
            return isinstance(value, dg.FloatMetadataValue | dg.IntMetadataValue)
        return isinstance(value, int | float) and not isinstance(value, bool)

    def rounded(value: Any) -> Any:  # four decimals are enough to compare runs; 16 digits are noise
        if isinstance(value, dg.FloatMetadataValue) and value.value is not None:
            return dg.MetadataValue.float(round(value.value, 4))
        return round(value, 4) if isinstance(value, float) else value

    return {(partition_label(key, partition) if numeric(v) else key): rounded(v) for key, v in metadata.items()}


OPTIONS_KEY = "options"  # the prompt options a materialization used, in its metadata


def previous_options(context: dg.AssetExecutionContext) -> dict[str, Any]:
    """The options the asset's previous materialization used (its ``options`` metadata; this partition's
    for a partitioned asset), or {} the first time."""
    # A partitioned asset (BorderLines' prompts per table revision) keeps each partition's own options. An
    # unpartitioned one (a suite's shared prompts) run beside one model's partition is not that model's: the
    # run's partition key must not pick its previous materialization, or none is found and the sample changes.
    partitioned = context.assets_def.partitions_def is not None and context.has_partition_key
    partitions = [context.partition_key] if partitioned else None
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=context.asset_key, asset_partitions=partitions), limit=1
    ).records
    event = records[0].asset_materialization if records else None
    entry = event.metadata.get(OPTIONS_KEY) if event is not None else None
    return entry.value if entry is not None and isinstance(entry.value, dict) else {}


def options_metadata_values(options: dict[str, Any]) -> dict[str, Any]:
    """The ``options`` metadata entry of options given as a mapping (a declared suite's stage options)."""
    return {OPTIONS_KEY: dg.MetadataValue.json(options)}


class GeomonResource(dg.ConfigurableResource):
    """Settings file (``geomon.yaml``) with environment overrides; see geomon.config."""

    config_path: str | None = None

    def settings(self) -> Settings:
        return load_settings(self.config_path)


# Where step outputs are kept between steps: the instance's storage folder by default (enough for
# Celery workers on one host), or any fsspec URL (s3://bucket/geomon, gs://…) when workers run on
# several hosts (the filesystem's fsspec package, e.g. s3fs, installed beside geomon).
IO_BASE_DIR_ENV = "GEOMON_IO_BASE_DIR"


@dg.definitions
def resources() -> dg.Definitions:
    """The resources every asset of the defs folder uses."""
    found: dict[str, Any] = {"geomon": GeomonResource()}
    if os.environ.get(IO_BASE_DIR_ENV):
        found["io_manager"] = dg.FilesystemIOManager(base_dir=os.environ[IO_BASE_DIR_ENV])
    return dg.Definitions(resources=found)
