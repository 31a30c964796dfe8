"""Dagster resources: geomon's settings, registry, store and engine, handed to assets."""

import dagster as dg

from geomon.config import Settings, load_settings

# Every model is a partition; the sensor and `geomon run` add them from the registry.
models_partitions = dg.DynamicPartitionsDefinition(name="models")
# Every evaluated revision of Wikipedia's disputes page (``2023-05-15-r1154894956``).
revisions_partitions = dg.DynamicPartitionsDefinition(name="dispute_revisions")
# BorderLines runs per model and per table version.
model_revision_partitions = dg.MultiPartitionsDefinition({"model": models_partitions, "revision": revisions_partitions})


class GeomonResource(dg.ConfigurableResource):
    """Settings file (``geomon.yaml``) with environment overrides; see geomon.config."""

    config_path: str | None = None

    def settings(self) -> Settings:
        return load_settings(self.config_path)
