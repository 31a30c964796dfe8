"""Materializing a suite's graph the way the UI's backfills do: sources and prompts once, then each
model's partition, then the cross-model leaderboard. Each suite's order lives in ``defs/<suite>/runs.py``
(``materialize`` for tests, ``run_from_options`` for ``geomon run``); this module holds what they share
and finds them through the suite registry."""

import importlib
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import dagster as dg

from geomon.defs.resources import models_partitions

Runner = Callable[..., dg.ExecuteInProcessResult]


def suite_runs(name: str) -> ModuleType:
    """``geomon.defs.<name>.runs`` of a registered suite (its Dagster half, by convention)."""
    from geomon.suites.registry import module

    module(name)  # an unknown suite is an error that lists the known ones
    return importlib.import_module(f"geomon.defs.{name}.runs")


def register_models(instance: dg.DagsterInstance, names: Sequence[str]) -> list[str]:
    """Add models not yet known as dynamic partitions; returns the new ones."""
    new = [n for n in names if not instance.has_dynamic_partition(models_partitions.name, n)]
    if new:
        instance.add_dynamic_partitions(models_partitions.name, new)
    return new


def _quiet(log_level: str) -> dict[str, Any]:
    return {"loggers": {"console": {"config": {"log_level": log_level}}}}


def runner(defs: dg.Definitions, instance: dg.DagsterInstance, resources: dict[str, Any] | None, log_level: str):
    """A function that materializes a selection (one partition, with op config) of ``defs``."""
    # The defs folder's autoloader lists an object once per module that imports it: keep each once.
    everything = list({id(d): d for d in [*(defs.assets or []), *(defs.asset_checks or [])]}.values())
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


def failed_checks(results: Sequence[dg.ExecuteInProcessResult]) -> list[dg.AssetCheckEvaluation]:
    return [c for r in results for c in r.get_asset_check_evaluations() if not c.passed]
