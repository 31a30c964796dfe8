"""Materializing a suite's graph the way the UI's backfills do: sources and prompts once, then each
model's partition, then the cross-model leaderboard. Each suite's order lives in ``defs/<suite>/runs.py``
(``materialize`` for tests, ``run_from_options`` for ``geomon run``); this module holds what they share
and finds them through the suite registry."""

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from geomon.defs.resources import models_partitions

Runner = Callable[..., dg.ExecuteInProcessResult]
# Run tags of `geomon run`'s runs (and automation's): who launched them, which suite, with which options.
from geomon.defs.automation import LAUNCHED_BY, SUITE_TAG  # noqa: E402

OPTIONS_TAG = "geomon/options"


def suite_runs(name: str) -> Any:
    """How ``geomon run`` materializes a registered suite: the factory's plan for a suite declared by a
    Pipeline, else ``geomon.defs.<name>.runs`` (its own Dagster folder)."""
    from geomon.suites.registry import pipeline

    if pipeline(name) is not None:  # an unknown suite is an error that lists the known ones
        from geomon.defs.factory import declared

        return declared(name)
    return importlib.import_module(f"geomon.defs.{name}.runs")


def register_models(instance: dg.DagsterInstance, names: Sequence[str]) -> list[str]:
    """Add models not yet known as dynamic partitions; returns the new ones."""
    new = [n for n in names if not instance.has_dynamic_partition(models_partitions.name, n)]
    if new:
        instance.add_dynamic_partitions(models_partitions.name, new)
    return new


def _quiet(log_level: str) -> dict[str, Any]:
    return {"loggers": {"console": {"config": {"log_level": log_level}}}}


def runner(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    resources: dict[str, Any] | None,
    log_level: str,
    tags: dict[str, str] | None = None,
):
    """A function that materializes a selection (one partition, with op config) of ``defs``: through the
    named ``job`` when one is given, so the runs page tells suites and stages apart, and with ``tags``."""
    # The defs folder's autoloader lists an object once per module that imports it: keep each once.
    everything = list({id(d): d for d in [*(defs.assets or []), *(defs.asset_checks or [])]}.values())
    resources = resources or dict(defs.resources or {})
    base_tags = {LAUNCHED_BY: "geomon run", **(tags or {})}

    def run(
        selection: dg.AssetSelection,
        partition_key: str | None = None,
        config: dict[str, Any] | None = None,
        job: str | None = None,
    ) -> dg.ExecuteInProcessResult:
        run_config = {**_quiet(log_level), **(config or {})}
        if job is not None:
            return defs.resolve_job_def(job).execute_in_process(
                run_config=run_config,
                instance=instance,
                partition_key=partition_key,
                resources=resources,
                tags=base_tags,
            )
        return dg.materialize(
            everything,
            instance=instance,
            resources=resources,
            selection=selection,
            partition_key=partition_key,
            run_config=run_config,
            tags=base_tags,
        )

    return run


def stage_job_name(suite: str, stage: str) -> str:
    return f"{suite}_{stage}"


def per_model_job_name(suite: str) -> str:
    return stage_job_name(suite, "per_model")


def stage_job(
    suite: str, stage: str, selection: dg.AssetSelection, description: str, partitions_def: Any = None
) -> Any:
    """``<suite>_<stage>``: one stage of a suite's graph as a named job (the UI, sensors and ``geomon run``
    launch it), so the runs page reads as a log of evaluations: ``worldbench_prompts``, ``worldbench_per_model``,
    ``worldbench_leaderboard``."""
    return dg.define_asset_job(
        stage_job_name(suite, stage),
        selection=selection,
        partitions_def=partitions_def,
        description=description,
        tags={SUITE_TAG: suite},
    )


def per_model_job(suite: str, selection: dg.AssetSelection, partitions_def: Any, description: str) -> Any:
    """``<suite>_per_model``: a suite's per-model assets as a partitioned job."""
    return stage_job(suite, "per_model", selection, description, partitions_def)


@dataclass(frozen=True)
class PerModelPlan:
    """The common run order: sources and prompts once (op config for ``prompts_op``), each model's
    partition (through the suite's named per-model job), then the leaderboard."""

    suite: str
    sources: dg.AssetSelection
    per_model: dg.AssetSelection
    leaderboard: dg.AssetSelection
    prompts_op: str

    def stage_jobs(self) -> tuple[Any, Any]:
        """The ``<suite>_prompts`` and ``<suite>_leaderboard`` jobs (the per-model job is declared beside)."""
        return (
            stage_job(
                self.suite, "prompts", self.sources, "Sources and prompts (the sample or variant in its config)."
            ),
            stage_job(
                self.suite, "leaderboard", self.leaderboard, "Every model's results side by side, and the report."
            ),
        )

    def materialize(
        self,
        defs: dg.Definitions,
        instance: dg.DagsterInstance,
        models: Sequence[str],
        prompt_config: dict[str, Any] | None = None,
        log_level: str = "WARNING",
        resources: dict[str, Any] | None = None,
        described: str = "",
    ) -> list[dg.ExecuteInProcessResult]:
        """Run the plan for ``models`` (``described``: the options, as a run tag); failed checks are in the
        returned results."""
        register_models(instance, models)
        tags = {SUITE_TAG: self.suite, **({OPTIONS_TAG: described} if described else {})}
        run = runner(defs, instance, resources, log_level, tags)
        prompts = {"ops": {self.prompts_op: {"config": prompt_config or {}}}}
        results = [run(self.sources, config=prompts, job=stage_job_name(self.suite, "prompts"))]
        job = per_model_job_name(self.suite)
        results += [run(self.per_model, partition_key=name, job=job) for name in models]
        results.append(run(self.leaderboard, job=stage_job_name(self.suite, "leaderboard")))
        return results


def failed_checks(results: Sequence[dg.ExecuteInProcessResult]) -> list[dg.AssetCheckEvaluation]:
    return [c for r in results for c in r.get_asset_check_evaluations() if not c.passed]
