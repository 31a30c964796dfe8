"""Dagster resources: geomon's settings, registry, store and engine, handed to assets."""

import dagster as dg

from geomon.config import Settings, load_settings

# Every model is a partition; the sensor and `geomon run` add them from the registry.
models_partitions = dg.DynamicPartitionsDefinition(name="models")


class GeomonResource(dg.ConfigurableResource):
    """Settings file (``geomon.yaml``) with environment overrides; see geomon.config."""

    config_path: str | None = None

    def settings(self) -> Settings:
        return load_settings(self.config_path)
