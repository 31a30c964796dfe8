"""Materializing the WorldBench graph the way the UI's backfills do: sources and prompts once,
then each model's partition, then the cross-model leaderboard. Used by `geomon run` and the tests."""

from collections.abc import Sequence
from typing import Any

import dagster as dg

from geomon.defs.resources import models_partitions

SOURCES_AND_PROMPTS = dg.AssetSelection.assets(
    ["worldbank", "economies"], ["worldbank", "indicators"], ["worldbench", "prompts"]
)
PER_MODEL = dg.AssetSelection.assets(["worldbench", "responses"], ["worldbench", "scores"], ["worldbench", "disparity"])
LEADERBOARD = dg.AssetSelection.assets(["worldbench", "leaderboard"])


def register_models(instance: dg.DagsterInstance, names: Sequence[str]) -> list[str]:
    """Add models not yet known as dynamic partitions; returns the new ones."""
    new = [n for n in names if not instance.has_dynamic_partition(models_partitions.name, n)]
    if new:
        instance.add_dynamic_partitions(models_partitions.name, new)
    return new


def materialize_worldbench(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    models: Sequence[str],
    prompt_config: dict[str, Any] | None = None,
    log_level: str = "WARNING",
    resources: dict[str, Any] | None = None,
) -> list[dg.ExecuteInProcessResult]:
    """Run the whole WorldBench graph for ``models``; failed checks are in the returned results."""
    register_models(instance, models)
    quiet = {"loggers": {"console": {"config": {"log_level": log_level}}}}
    everything = [*(defs.assets or []), *(defs.asset_checks or [])]
    resources = resources or dict(defs.resources or {})

    def run(
        selection: dg.AssetSelection, partition_key: str | None = None, config: dict[str, Any] | None = None
    ) -> dg.ExecuteInProcessResult:
        return dg.materialize(
            everything,
            instance=instance,
            resources=resources,
            selection=selection,
            partition_key=partition_key,
            run_config={**quiet, **(config or {})},
        )

    results = [run(SOURCES_AND_PROMPTS, config={"ops": {"worldbench__prompts": {"config": prompt_config or {}}}})]
    results += [run(PER_MODEL, partition_key=name) for name in models]
    results.append(run(LEADERBOARD))
    return results


def failed_checks(results: Sequence[dg.ExecuteInProcessResult]) -> list[dg.AssetCheckEvaluation]:
    return [c for r in results for c in r.get_asset_check_evaluations() if not c.passed]
