"""Materializing a suite's graph the way the UI's backfills do: sources and prompts once (per revision in a
suite with revisions), then each model's partition, then the cross-model leaderboard. The factory builds
each suite's ``PerModelPlan``; ``suite_runs`` finds it through the suite registry."""

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

import dagster as dg

# Run tags of `geomon run`'s runs (and automation's): who launched them, which suite, with which options.
from geomon.defs.automation import LAUNCHED_BY, SUITE_TAG
from geomon.defs.resources import models_partitions, partition_label
from geomon.defs.samples import CONFIRM

OPTIONS_TAG = "geomon/options"
# Metadata of the stage that asks the model under evaluation: the fingerprint of the answers it read and the
# settings it ran under (``store.answers_fingerprint``), which ``geomon run``'s plan computes before a run.
ANSWERS = "answers"
# The asks of a step that got no answer (tolerated up to engine.max_failed_share; not stored, so asked again): a
# partition with any is never taken as unchanged, so a judge's or a follow-up's failed ask is retried.
FAILED_ASKS = "failed_asks"


def _register(
    instance: dg.DagsterInstance, partitions: dg.DynamicPartitionsDefinition, keys: Sequence[str]
) -> list[str]:
    new = [k for k in keys if not instance.has_dynamic_partition(partitions.name, k)]
    if new:
        instance.add_dynamic_partitions(partitions.name, new)
    return new


def register_models(instance: dg.DagsterInstance, names: Sequence[str]) -> list[str]:
    """Add models not yet known as dynamic partitions; returns the new ones."""
    return _register(instance, models_partitions, names)


def _quiet(log_level: str) -> dict[str, Any]:
    return {"loggers": {"console": {"config": {"log_level": log_level}}}}


LOCATION = "geomon"  # workspace.yaml's code location: the UI, the daemon and `geomon run` share it
REPOSITORY = "__repository__"  # the name Dagster gives the repository of a Definitions object


def code_location(instance: dg.DagsterInstance) -> Any:
    """The ``geomon`` code location loaded in this process, as workspace.yaml names it, so the runs
    ``geomon run`` launches carry its origin: the UI lists them under it (Overview, the job's page) and
    re-executes them like its own."""
    from dagster._core.remote_origin import InProcessCodeLocationOrigin
    from dagster._core.remote_representation.code_location import InProcessCodeLocation
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

    target = LoadableTargetOrigin(
        executable_path=sys.executable,
        module_name="geomon.definitions",
        attribute="defs",
        working_directory=os.getcwd(),
    )
    return InProcessCodeLocation(InProcessCodeLocationOrigin(target, location_name=LOCATION), instance=instance)


def _resources_as_config(resources: dict[str, Any] | None) -> dict[str, Any]:
    """Resource overrides (a settings file for the tests) as run config: a run of the code location builds
    its resources from the definitions, configured by the run."""
    if not resources:
        return {}
    config = {}
    for name, resource in resources.items():
        if not isinstance(resource, dg.ConfigurableResource):
            raise TypeError(f"resource {name}: only configurable resources can be set for a run, not {resource!r}")
        fields = {k: v for k, v in resource.model_dump().items() if v is not None}
        config[name] = {"config": fields}
    return {"resources": config}


def runner(
    instance: dg.DagsterInstance,
    resources: dict[str, Any] | None,
    log_level: str,
    tags: dict[str, str] | None = None,
) -> Callable[..., Any]:
    """A function that runs one of the code location's named jobs (one partition, with op config) as a run of
    the ``geomon`` code location, executed in this process, tagged with ``tags``; returns its result."""
    from dagster._core.execution.api import execute_run
    from dagster._core.execution.execute_in_process import merge_run_tags

    location = code_location(instance)
    repository = location.get_repository(REPOSITORY)
    base_tags = {LAUNCHED_BY: "geomon run", **(tags or {})}
    resource_config = _resources_as_config(resources)

    def run(
        job: str,
        partition_key: str | None = None,
        config: dict[str, Any] | None = None,
        assets: AbstractSet[dg.AssetKey] | None = None,
    ) -> Any:
        """``assets``: only these of the job's assets (and their checks), as the UI's "Materialize selected"."""
        from dagster._core.definitions.selector import JobSubsetSelector

        run_config = {**_quiet(log_level), **resource_config, **(config or {})}
        reconstructable = location.get_reconstructable_job(REPOSITORY, job)
        job_def = reconstructable.get_definition()
        if assets:
            remote_job = location.get_job(JobSubsetSelector(LOCATION, REPOSITORY, job, None, asset_selection=assets))
            reconstructable = reconstructable.get_subset(asset_selection=frozenset(assets))
        else:
            remote_job = repository.get_full_job(job)
        if job_def.executor_def.name == dg.multi_or_in_process_executor.name:
            # Dagster's default executor would start a process per step; `geomon run` asks one model at a
            # time, so its steps run here. A configured executor (Celery) is used as the UI's runs use it.
            run_config["execution"] = {"config": {"in_process": {}}}
        run_tags = merge_run_tags(job_def, partition_key, base_tags, None, instance, run_config)
        plan = location.get_execution_plan(
            remote_job, run_config, step_keys_to_execute=None, known_state=None, instance=instance
        )
        dagster_run = instance.create_run(
            job_name=job,
            run_id=None,
            run_config=run_config,
            resolved_op_selection=None,
            step_keys_to_execute=None,
            op_selection=None,
            status=None,
            root_run_id=None,
            parent_run_id=None,
            tags=run_tags,
            job_snapshot=remote_job.job_snapshot,
            execution_plan_snapshot=plan.execution_plan_snapshot,
            parent_job_snapshot=remote_job.parent_job_snapshot,
            remote_job_origin=remote_job.get_remote_origin(),
            job_code_origin=remote_job.get_python_origin(),
            asset_selection=frozenset(assets) if assets else None,
            asset_check_selection=None,
            asset_graph=repository.asset_graph,
        )
        return execute_run(reconstructable, dagster_run, instance, raise_on_error=True)

    return run


@dataclass(frozen=True)
class Unchanged:
    """A model's partition whose stages up to the decision ``geomon run`` did not run again: its assets are fresh
    in Dagster (the same code and upstream data versions) and the model's answers are the ones its asking stage
    last read under the same settings and code, so they would reproduce what is there. Its decision (the tracked
    stage: recorded, decided against the history as it is now, alerts sent) runs, in a run of its own."""

    partition: str

    def get_asset_check_evaluations(self) -> list[dg.AssetCheckEvaluation]:
        return []  # the decision's run reports the checks


class Freshness:
    """Whether a model's stages would reproduce what the instance holds: Dagster's stale status (the UI's) and
    the answers its asking stage last read."""

    def __init__(self, instance: dg.DagsterInstance) -> None:
        from dagster._core.definitions.data_version import CachingStaleStatusResolver
        from dagster._core.loader import LoadingContextForTest

        self.instance = instance
        self.asset_graph = code_location(instance).get_repository(REPOSITORY).asset_graph
        # The loading context Dagster's own stale-status queries take outside a webserver request.
        self.resolver = CachingStaleStatusResolver(instance, self.asset_graph, LoadingContextForTest(instance))

    def keys(self, selection: dg.AssetSelection) -> AbstractSet[dg.AssetKey]:
        return selection.resolve(self.asset_graph)

    def _latest(self, key: dg.AssetKey, partition: str) -> Any:
        records = self.instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=1
        ).records
        return records[0].event_log_entry if records else None

    def _fresh(self, keys: AbstractSet[dg.AssetKey], partition: str | None = None) -> bool:
        from dagster._core.definitions.data_version import StaleStatus

        return all(self.resolver.get_status(key, partition) == StaleStatus.FRESH for key in keys)

    def same_prompts(self, selection: dg.AssetSelection, prompts: dg.AssetKey, sample: str) -> bool:
        """The sources and prompts (``selection``) are fresh and the prompts asset's data version ends with
        ``sample``: materializing them again would give the same prompts."""
        from dagster._core.definitions.data_version import extract_data_version_from_entry

        if not sample or not self._fresh(self.keys(selection)):
            return False
        record = self.instance.get_latest_data_version_record(prompts)
        version = extract_data_version_from_entry(record.event_log_entry) if record else None
        return version is not None and version.value.endswith(sample)

    def unchanged(self, selection: dg.AssetSelection, partition: str, answers: str) -> bool:
        """Every asset of ``selection`` (of ``partition``) is materialized and fresh, none had an ask go
        unanswered (``FAILED_ASKS``), and the stage that asked the model last read exactly ``answers``
        (``store.answers_fingerprint``)."""
        keys = self.keys(selection)
        if not self._fresh(keys, partition):
            return False
        latest = [self._latest(key, partition) for key in keys]
        if any(entry is None for entry in latest):
            return False
        metadata = [e.asset_materialization.metadata for e in latest]
        failed = partition_label(FAILED_ASKS, partition)  # a number: keyed by its partition, as every per-model one
        if any(m[failed].value for m in metadata if failed in m):
            return False
        read = [m[ANSWERS].value for m in metadata if ANSWERS in m]
        return bool(read) and all(r == answers for r in read)


def suite_of(run: dg.DagsterRun) -> str | None:
    """The one suite whose assets (or checks) a run materializes (a suite's prompts may read the World Bank's
    assets beside it), or None: several suites, or none."""
    from geomon.suites.registry import suites

    keys = [*(run.asset_selection or ()), *(c.asset_key for c in run.asset_check_selection or ())]
    named = {key.path[0] for key in keys} & set(suites())
    return named.pop() if len(named) == 1 else None


class SuiteTaggingRunCoordinator(dg.QueuedRunCoordinator):
    """Dagster's queued run coordinator (``run_coordinator`` in dagster.yaml) that first gives a run launched
    from the UI the ``geomon/suite`` tag of the suite it materializes, as ``geomon run``'s and automation's
    runs carry it: Materialize in the UI runs Dagster's implicit asset job, which has no tags of its own, so
    the runs page could not filter those runs by suite."""

    def submit_run(self, context: Any) -> dg.DagsterRun:
        run = context.dagster_run
        suite = suite_of(run) if SUITE_TAG not in run.tags else None
        if suite is not None:
            self._instance.add_run_tags(run.run_id, {SUITE_TAG: suite})
            context = context._replace(dagster_run=self._instance.get_run_by_id(run.run_id))
        return super().submit_run(context)


def stage_job_name(suite: str, stage: str) -> str:
    return f"{suite}_{stage}"


def per_model_job_name(suite: str) -> str:
    return stage_job_name(suite, "per_model")


def stage_job(
    suite: str,
    stage: str,
    selection: dg.AssetSelection,
    description: str,
    partitions_def: Any = None,
    config: dict[str, Any] | None = None,
) -> Any:
    """``<suite>_<stage>``: one stage of a suite's graph as a named job (the UI, sensors and ``geomon run``
    launch it), so the runs page reads as a log of evaluations: ``worldbench_prompts``, ``worldbench_per_model``,
    ``worldbench_leaderboard``. ``config``: the run config its launchpad proposes."""
    return dg.define_asset_job(
        stage_job_name(suite, stage),
        selection=selection,
        partitions_def=partitions_def,
        description=description,
        tags={SUITE_TAG: suite},
        config=config,
    )


def per_model_job(suite: str, selection: dg.AssetSelection, partitions_def: Any, description: str) -> Any:
    """``<suite>_per_model``: a suite's per-model assets as a partitioned job."""
    return stage_job(suite, "per_model", selection, description, partitions_def)


@dataclass(frozen=True)
class PerModelPlan:
    """The common run order: sources and prompts once (op config for ``prompts_op``), each model's
    partition (through the suite's named per-model job), then the leaderboard. In a suite with revisions
    (``per_revision``): the sources once, each revision's stages with its own prompts config, each model ×
    revision, the leaderboard."""

    suite: str
    sources: dg.AssetSelection
    per_model: dg.AssetSelection
    decision: dg.AssetSelection  # the tracked stage and the per-model stages that read it
    leaderboard: dg.AssetSelection
    prompts_op: str
    per_revision: dg.AssetSelection | None = None
    revisions: Any = None  # the suite's own revisions partitions (a suite with revisions)
    sources_stage: str = "prompts"  # the sources job is ``<suite>_<sources_stage>``
    # The prompts stage's options the ``<suite>_prompts`` launchpad proposes (the sample the store holds, else the
    # automation profile's sizes) and a line saying which (``samples.sample_in_use``).
    prompts_options: Mapping[str, Any] | None = None
    proposed_note: str = ""

    def stage_jobs(self) -> list[Any]:
        """The ``<suite>_prompts`` (and the sources') and ``<suite>_leaderboard`` jobs (the per-model job is
        declared beside). The prompts job's launchpad shows the profile's sizes; launching it sets them (a
        sample chosen on purpose), where a click on Materialize keeps the sample the prompts have."""
        proposed = {"ops": {self.prompts_op: {"config": dict(self.prompts_options)}}} if self.prompts_options else None
        sample = (
            f" Its launchpad proposes {self.proposed_note}. The prompts asset's `plan` shows each model's asks and "
            "time; a new sample estimated above confirm_above_minutes stops before asking (`confirm: true` confirms)."
        )
        # The observable sources they read (the WDI release) are observed in the same run, first: the version read
        # is the one recorded, so the hourly observation that follows finds no update.
        sources = self.sources | self.sources.upstream_source_assets()
        if self.per_revision is None:
            described = "Sources and prompts (the sample in its config)." + sample
            jobs = [stage_job(self.suite, self.sources_stage, sources, described, config=proposed)]
        else:
            per_revision = "One revision's data and its prompts (the sample in its config)." + sample
            jobs = [
                stage_job(self.suite, self.sources_stage, sources, "The sources every revision shares."),
                stage_job(self.suite, "prompts", self.per_revision, per_revision, self.revisions, proposed),
            ]
        jobs.append(
            stage_job(
                self.suite, "leaderboard", self.leaderboard, "Every model's results side by side, and the report."
            )
        )
        return jobs

    def materialize(
        self,
        instance: dg.DagsterInstance,
        models: Sequence[str],
        prompt_config: dict[str, Any] | None = None,
        log_level: str = "WARNING",
        resources: dict[str, Any] | None = None,
        described: str = "",
        revisions: Mapping[str, dict[str, Any]] | None = None,
        answers: Mapping[str, str] | None = None,
        sample: str = "",
    ) -> list[Any]:
        """Run the plan for ``models`` (``revisions``: each revision key's prompts config, in a suite with
        revisions; ``described``: the options, as a run tag); failed checks are in the returned results.
        ``answers``: by partition key, the fingerprint of the stored answers a run of it would read (``geomon
        run``'s plan, where every ask is stored); such a partition whose assets are fresh and last read exactly
        those runs only its decision (an ``Unchanged`` in the results, then that run). ``sample``: the prompts the
        plan built (``pipeline.sample_id``); with ``answers``, fresh sources and prompts of that sample are not
        materialized again."""
        register_models(instance, models)
        tags = {SUITE_TAG: self.suite, **({OPTIONS_TAG: described} if described else {})}
        run = runner(instance, resources, log_level, tags)
        prompts_job = stage_job_name(self.suite, "prompts")

        def prompts(config: dict[str, Any] | None) -> dict[str, Any]:
            # `geomon run` asked before a run above the limits (or was told --yes): the prompts need not stop it.
            return {"ops": {self.prompts_op: {"config": {**(config or {}), CONFIRM: True}}}}

        fresh = Freshness(instance) if answers else None
        if self.per_revision is None:
            prompts_key = dg.AssetKey(self.prompts_op.split("__"))
            same = fresh is not None and fresh.same_prompts(self.sources, prompts_key, sample)
            results = [] if same else [run(prompts_job, config=prompts(prompt_config))]
            partitions: list[Any] = list(models)
        else:
            if not revisions:
                raise ValueError(f"suite {self.suite}: name the revisions to evaluate")
            _register(instance, self.revisions, list(revisions))
            results = [run(stage_job_name(self.suite, self.sources_stage))]
            results += [
                run(prompts_job, partition_key=key, config=prompts(config)) for key, config in revisions.items()
            ]
            partitions = [dg.MultiPartitionKey({"model": m, "revision": r}) for r in revisions for m in models]
        per_model = per_model_job_name(self.suite)
        for key in partitions:
            if (
                fresh is not None
                and str(key) in answers
                and fresh.unchanged(self.per_model, str(key), answers[str(key)])
            ):
                results.append(Unchanged(str(key)))
                results.append(run(per_model, partition_key=key, assets=fresh.keys(self.decision)))
            else:
                results.append(run(per_model, partition_key=key))
        # Always: the leaderboard and the report read the history (imports, acknowledgements, re-decisions).
        results.append(run(stage_job_name(self.suite, "leaderboard")))
        return results


def failed_checks(results: Sequence[dg.JobExecutionResult]) -> list[dg.AssetCheckEvaluation]:
    return [c for r in results for c in r.get_asset_check_evaluations() if not c.passed]
