"""Materializing the suites' graphs the way the UI's backfills do: sources and prompts once, then each
model's partition, then the cross-model leaderboard. Used by `geomon run` and the tests."""

from collections.abc import Sequence
from typing import Any

import dagster as dg

from geomon.defs.resources import models_partitions, revisions_partitions

SOURCES_AND_PROMPTS = dg.AssetSelection.assets(
    ["worldbank", "economies"], ["worldbank", "indicators"], ["worldbench", "prompts"]
)
PER_MODEL = dg.AssetSelection.assets(["worldbench", "responses"], ["worldbench", "scores"], ["worldbench", "disparity"])
LEADERBOARD = dg.AssetSelection.assets(["worldbench", "leaderboard"])
BORDERLINES_RELEASE = dg.AssetSelection.assets(["borderlines", "release"])
BORDERLINES_PER_REVISION = dg.AssetSelection.assets(["wikipedia", "dispute_revisions"], ["borderlines", "prompts"])
BORDERLINES_PER_MODEL = dg.AssetSelection.assets(
    ["borderlines", "responses"], ["borderlines", "scores"], ["borderlines", "concurrence"]
)
BORDERLINES_LEADERBOARD = dg.AssetSelection.assets(["borderlines", "leaderboard"])


def register_models(instance: dg.DagsterInstance, names: Sequence[str]) -> list[str]:
    """Add models not yet known as dynamic partitions; returns the new ones."""
    new = [n for n in names if not instance.has_dynamic_partition(models_partitions.name, n)]
    if new:
        instance.add_dynamic_partitions(models_partitions.name, new)
    return new


def _quiet(log_level: str) -> dict[str, Any]:
    return {"loggers": {"console": {"config": {"log_level": log_level}}}}


def _runner(defs: dg.Definitions, instance: dg.DagsterInstance, resources: dict[str, Any] | None, log_level: str):
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
            run_config={**_quiet(log_level), **(config or {})},
        )

    return run


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
    run = _runner(defs, instance, resources, log_level)
    results = [run(SOURCES_AND_PROMPTS, config={"ops": {"worldbench__prompts": {"config": prompt_config or {}}}})]
    results += [run(PER_MODEL, partition_key=name) for name in models]
    results.append(run(LEADERBOARD))
    return results


def materialize_borderlines(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    models: Sequence[str],
    revisions: Sequence[str],
    prompt_configs: dict[str, dict[str, Any]] | None = None,
    log_level: str = "WARNING",
    resources: dict[str, Any] | None = None,
) -> list[dg.ExecuteInProcessResult]:
    """The BorderLines graph: the release, each revision's table and prompts (``prompt_configs`` per
    revision key, e.g. fewer personas for an older table), each model × revision, the leaderboard."""
    register_models(instance, models)
    new = [r for r in revisions if not instance.has_dynamic_partition(revisions_partitions.name, r)]
    if new:
        instance.add_dynamic_partitions(revisions_partitions.name, new)
    run = _runner(defs, instance, resources, log_level)
    results = [run(BORDERLINES_RELEASE)]
    for revision in revisions:
        config = (prompt_configs or {}).get(revision, {})
        results.append(
            run(
                BORDERLINES_PER_REVISION,
                partition_key=revision,
                config={"ops": {"borderlines__prompts": {"config": config}}},
            )
        )
    for revision in revisions:
        for model in models:
            results.append(
                run(BORDERLINES_PER_MODEL, partition_key=dg.MultiPartitionKey({"model": model, "revision": revision}))
            )
    results.append(run(BORDERLINES_LEADERBOARD))
    return results


def failed_checks(results: Sequence[dg.ExecuteInProcessResult]) -> list[dg.AssetCheckEvaluation]:
    return [c for r in results for c in r.get_asset_check_evaluations() if not c.passed]
