"""Dagster resources: geomon's settings, registry, store and engine, handed to assets."""

import os
from typing import Any

import dagster as dg

from geomon.config import Settings, load_settings

# Every model is a partition; the sensor and `geomon run` add them from the registry.
models_partitions = dg.DynamicPartitionsDefinition(name="models")
# Models that can drift: those served by an endpoint (a bundled GGUF file's weights never change), the
# partitions of the drift probe; the registry sensor adds them beside `models`.
api_models_partitions = dg.DynamicPartitionsDefinition(name="api_models")
# Every evaluated revision of Wikipedia's disputes page (``2023-05-15-r1154894956``).
revisions_partitions = dg.DynamicPartitionsDefinition(name="dispute_revisions")
# BorderLines runs per model and per table version.
model_revision_partitions = dg.MultiPartitionsDefinition({"model": models_partitions, "revision": revisions_partitions})


def by_partition(context: dg.AssetExecutionContext, name: str, value: Any) -> dict[str, Any]:
    """An all-partitions input as {partition key: value}; Dagster hands over a lone partition unwrapped."""
    keys = context.asset_partition_keys_for_input(name)
    return {keys[0]: value} if len(keys) == 1 else value


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
