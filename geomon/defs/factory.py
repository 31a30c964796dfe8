"""One factory for every suite declared by a ``Pipeline`` (``geomon.suites.pipeline``): its assets (one per
stage, keyed ``[suite, stage]``), their checks, the history recording and ``no_regression`` check of the
tracked stage, the leaderboard and its report, the ``<suite>_prompts`` / ``<suite>_per_model`` /
``<suite>_leaderboard`` jobs and the order ``geomon run`` materializes them in.

A suite declared this way has no ``defs/<suite>/`` folder: its domain module (stages, scoring, statistics)
and its source reader are all of it. The ``declared_suites`` definitions below find every such suite
through the registry.
"""

import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import dagster as dg
import pandas as pd

from geomon.config import Settings
from geomon.defs import monitoring
from geomon.defs.automation import ANNUAL_DATA, EAGER
from geomon.defs.engine import ask_model, progress_events
from geomon.defs.execution import model_call_options
from geomon.defs.leaderboard import (
    ORIGIN,
    leaderboard_frame,
    leaderboard_metadata,
    mark_insufficient,
    samples,
    with_imported,
    with_published,
    with_samples,
    with_verdicts,
    write_item_tables,
    write_open_regressions,
)
from geomon.defs.resources import (
    by_partition,
    check_spec,
    keyed_by_partition,
    model_revision_partitions,
    models_partitions,
    options_metadata_values,
    previous_options,
    profile_sizes,
    revisions_partitions,
)
from geomon.defs.runs import ANSWERS, FAILED_ASKS, PerModelPlan, per_model_job, per_model_job_name
from geomon.defs.samples import CONFIRM, confirm_field, mixed_samples, refusal, refuse, sample_in_use
from geomon.defs.sensors import revisions_sensor, stale_sample_sensor
from geomon.defs.versions import SAMPLE, sample_id, sample_label, source_version, versioned_output
from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.engine.runner import ProgressListener
from geomon.engine.store import answers_fingerprint
from geomon.monitor import release
from geomon.monitor.history import MetricHistory, MetricValue
from geomon.report import charts
from geomon.stats.values import MetricKey
from geomon.suites import registry
from geomon.suites.pipeline import CheckOutcome, Markdown, Pipeline, Stage, StageCheck, StageResult

FLOAT_DIGITS = 4  # metadata floats: enough to compare runs, not 16 digits of noise


def metadata_value(value: Any) -> Any:
    """A plain value as Dagster metadata: frames as Markdown tables (untrusted text escaped), mappings and
    lists as JSON, floats rounded, None as "none"."""
    if isinstance(value, dg.MetadataValue):
        return value
    if isinstance(value, Markdown):
        return dg.MetadataValue.md(str(value))
    if isinstance(value, pd.DataFrame):
        return dg.MetadataValue.md(charts.markdown_table(value) if len(value) else "none")
    if isinstance(value, dict | list | tuple):
        return dg.MetadataValue.json(value if not isinstance(value, tuple) else list(value))
    if isinstance(value, bool) or value is None:
        return str(value).lower() if value is not None else "none"
    if isinstance(value, float):
        return round(value, FLOAT_DIGITS)
    return value.item() if hasattr(value, "item") else value


@dataclass
class DagsterStageContext:
    """``StageContext`` for a stage running as a Dagster asset."""

    settings: Settings
    options: dict[str, Any]
    model: str | None
    revision: str | None = None
    run_id: str = ""
    code_version: str = ""
    label: str = ""  # the asset key, for the progress line
    on_progress: ProgressListener | None = None  # where progress goes while a model is asked (the step's logs)
    read: list[str] = field(default_factory=list)  # the keys of the answers this step read, stored or asked
    failed: int = 0  # of those, the asks that got no answer (tolerated up to engine.max_failed_share)

    def spec(self) -> ModelSpec:
        if self.model is None:
            raise ValueError("this stage is not per model: there is no model to ask")
        return self.settings.model(self.model)

    def ask(self, spec: ModelSpec, requests: list[GenerationRequest]) -> tuple[pd.DataFrame, dict[str, Any]]:
        answers, metadata = ask_model(self.settings, spec, requests, self.label, self.on_progress)
        self.read.extend(answers["key"])
        self.failed += int(answers["error"].notna().sum())
        return answers, metadata

    def history(self) -> MetricHistory:
        return MetricHistory(self.settings.store_url)

    def alert(self, kind: str, title: str, summary: str, numbers: dict[str, Any]) -> list[str]:
        from geomon.monitor import alerts

        suite = self.label.split("/", 1)[0]
        url = alerts.asset_url(self.settings.alerts.ui_url, self.label.split("/"), self.model)
        return alerts.deliver(
            alerts.Alert(kind, title, summary, self.model or "", suite, url, numbers), self.settings.alerts
        )


def stage_key(suite: str, stage: Stage) -> list[str]:
    """A stage's asset key: ``[suite, name]``, or the key it declares outside the suite's prefix."""
    return stage.key.split("/") if stage.key else [suite, stage.name]


def stage_version(suite: str, stage: Stage) -> str:
    """A stage's code version: a hash of the modules it declares, by default the suite's domain module."""
    return source_version(*(stage.versioned_by or (registry.suite(suite).source,)))


def input_key(suite: str, pipeline: Pipeline, name: str) -> list[str]:
    """An input's asset key: a stage of the suite, or an asset outside it named by its key."""
    if name in {s.name for s in pipeline.stages}:
        return stage_key(suite, pipeline.stage(name))
    return name.split("/") if "/" in name else [suite, name]


def input_name(name: str) -> str:
    """The keyword a stage receives an input under: the stage's name, or the last part of an outside key."""
    return name.rsplit("/", 1)[-1]


def stage_partitions(pipeline: Pipeline, stage: Stage) -> Any:
    """Per model (× revision in a suite with revisions), per revision, or none."""
    revisions = pipeline.revisions
    if stage.per_model:
        return model_revision_partitions(revisions.partitions) if revisions is not None else models_partitions
    return revisions_partitions(revisions.partitions) if stage.per_revision and revisions is not None else None


# A per-model × revision stage reads its revision's partition of a per-revision stage.
PER_REVISION = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="revision")


def _asset_in(suite: str, pipeline: Pipeline, stage: Stage, name: str) -> dg.AssetIn:
    names = {s.name for s in pipeline.stages}
    reads_revision = name in names and pipeline.stage(name).per_revision and stage.per_model
    return dg.AssetIn(key=input_key(suite, pipeline, name), partition_mapping=PER_REVISION if reads_revision else None)


def _partition(context: dg.AssetExecutionContext, stage: Stage) -> tuple[str | None, str | None]:
    """The model and revision of the running partition (either may be None)."""
    key = context.partition_key if context.has_partition_key else None
    if isinstance(key, dg.MultiPartitionKey):
        return key.keys_by_dimension["model"], key.keys_by_dimension["revision"]
    return (key if stage.per_model else None), (key if stage.per_revision else None)


def _check_result(stage: Stage, outcome: CheckOutcome) -> dg.AssetCheckResult:
    """A declared check's outcome as a Dagster check result (a name the stage does not declare is an error)."""
    if outcome.name not in {c.name for c in stage.checks}:
        raise ValueError(f"stage {stage.name} returned check {outcome.name!r}, which it does not declare")
    return dg.AssetCheckResult(
        check_name=outcome.name,
        passed=bool(outcome.passed),
        severity=dg.AssetCheckSeverity.WARN if outcome.severity == "warn" else dg.AssetCheckSeverity.ERROR,
        metadata={k: metadata_value(v) for k, v in outcome.metadata.items()},
    )


def _options(
    context: dg.AssetExecutionContext, suite: str, stage: Stage, settings: Settings, proposed: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The stage's options: what the run config sets, else what the previous materialization used (so a
    chosen sample survives a click in the UI or automation), else the automation profile's (``geomon.yaml``'s
    ``automation_profile``: the same sizes ``geomon run --profile`` asks), never the full benchmark unless
    that profile says so; and the previous materialization's (a new sample is checked against the limits).
    Without ``confirm``, a value equal to its field's default, ``proposed`` (the sample held when the code location
    loaded, which every launchpad shows), counts as unset: automation and a click on Materialize run with the
    defaults, and must keep the sample held now, which a run elsewhere may have changed since the load."""
    if not stage.options:
        return {}, {}
    config = context.op_execution_context.op_config or {}
    # `confirm: true` (geomon run sets it, having asked) takes every value as chosen, defaults included.
    literal = bool(config.get(CONFIRM))
    chosen = {k: v for k, v in config.items() if k != CONFIRM and (literal or k not in proposed or v != proposed[k])}
    previous = {k: v for k, v in previous_options(context).items() if k in {o.name for o in stage.options}}
    stale = {
        k: v
        for k, v in config.items()
        if k != CONFIRM
        and k not in chosen  # left at its default: read as unset
        and k in previous
        and previous[k] != (tuple(v) if type(v) is list else v)
    }
    if stale:
        context.log.warning(
            f"geomon: {suite} kept the sample the store holds ({', '.join(f'{k} {previous[k]}' for k in stale)}): "
            f"{', '.join(f'{k} {v}' for k, v in stale.items())} is the default the launchpad proposed when the code "
            "location loaded, before the sample changed; to choose it, set confirm: true (or Reload definitions)"
        )
    return {**settings.run_options(suite), **previous, **chosen}, previous


@dataclass(frozen=True)
class _Versions:
    data: str
    prompts: str
    code: str


def _separate_check(info: registry.SuiteInfo, stage: Stage, check: StageCheck) -> dg.AssetChecksDefinition:
    """A check with its own ``evaluate``: a Dagster asset check that loads the stage's value."""

    def evaluate(context: dg.AssetCheckExecutionContext, **value: Any) -> dg.AssetCheckResult:
        settings = context.resources.geomon.settings()
        outcome = check.evaluate(DagsterStageContext(settings, {}, None, run_id=context.run.run_id), value[stage.name])
        return _check_result(stage, outcome)

    # Dagster hands the asset's value to the parameter named after the asset.
    context_parameter = inspect.Parameter(
        "context", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=dg.AssetCheckExecutionContext
    )
    value_parameter = inspect.Parameter(stage.name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    evaluate.__signature__ = inspect.Signature([context_parameter, value_parameter])  # type: ignore[attr-defined]
    evaluate.__doc__ = check.about
    return dg.asset_check(
        asset=dg.AssetKey(stage_key(info.name, stage)),
        name=check.name,
        blocking=check.blocking,
        description=check.about,
        required_resource_keys={"geomon"},
    )(evaluate)


def _stage_asset(
    info: registry.SuiteInfo, pipeline: Pipeline, stage: Stage, versions: _Versions
) -> dg.AssetsDefinition:
    key = stage_key(info.name, stage)
    # A partitioned stage's checks are partitioned like it, so the UI says which model a result is for.
    partitions = stage_partitions(pipeline, stage)
    check_specs = [
        check_spec(c.name, key, partitions, blocking=c.blocking, description=c.about)
        for c in stage.checks
        if c.evaluate is None
    ]
    if stage.tracked:
        check_specs.append(monitoring.regression_spec(key, partitions))
    tracked = registry.suite(info.name).tracked
    code_version = stage_version(info.name, stage)
    # What every launchpad proposes for the options (the job's and the asset's): the sample held at load, else the
    # automation profile's; the help says which.
    sizes = profile_sizes(info.name) if stage.options else {}
    held, where = sample_in_use(info.name, key) if stage.options else ({}, "")
    proposed = {k: list(v) if isinstance(v, tuple) else v for k, v in held.items() if v is not None}  # as config

    def compute(context: dg.AssetExecutionContext, **inputs: Any):
        settings = context.resources.geomon.settings()
        options, previous = _options(context, info.name, stage, settings, proposed)
        model, revision = _partition(context, stage)
        stage_context = DagsterStageContext(
            settings,
            options,
            model,
            revision,
            context.run.run_id,
            code_version,
            "/".join(key),
            progress_events(context),
        )
        result: StageResult = stage.run(stage_context, **inputs)
        if stage.requests is not None:
            # What the model's answers were read from, so `geomon run` can tell an unchanged partition (runs.py).
            result.metadata[ANSWERS] = answers_fingerprint(stage_context.read, settings.digest())
        if stage_context.read:  # any step that asked, follow-up asks (judges, rationales) included
            result.metadata[FAILED_ASKS] = stage_context.failed
        figures: list[MetricValue] = []
        if stage.tracked:
            if result.tracked is None:
                raise ValueError(f"suite {info.name}: tracked stage {stage.name} returned nothing to record")
            value = result.value
            if pipeline.board_rows is None and not (isinstance(value, dict) and isinstance(value.get("summary"), dict)):
                raise ValueError(
                    f"suite {info.name}: tracked stage {stage.name}'s value needs a 'summary' mapping (the "
                    "leaderboard row: each headline's value and its _ci_low/_ci_high)"
                )
            # One definition per headline, computed once here from the stage's items: its declared statistic's
            # value, interval and sample go into the history, the leaderboard's summary and the metadata.
            figures = release.declared_figures(info.name, tracked, result.tracked.items, result.tracked.others)
            release.headline_into_summary(result.value, figures, tracked)
            result.metadata.update(release.headline_figures(figures, tracked))
        metadata = {k: metadata_value(v) for k, v in result.metadata.items()}
        if model is not None:
            metadata = keyed_by_partition(metadata, str(context.partition_key))
        data_version = result.data_version
        if stage.options:
            metadata.update(options_metadata_values(options))
            plans, shown = prompt_plans(settings, info, result.value)
            confirmed = bool((context.op_execution_context.op_config or {}).get(CONFIRM))
            refused = refusal(settings, info.name, plans, options, previous, confirmed)  # before any model is asked
            if refused:
                yield from refuse(context, refused, [spec.name for spec in check_specs])
                return
            metadata["plan"] = metadata_value(shown)
            # The prompts' data version is their sample: a new one marks every model answered on the old stale.
            data_version = "-".join(filter(None, (result.data_version, sample_id(result.value))))
            metadata[SAMPLE] = sample_label(result.value)
        elif stage.per_model and pipeline.prompts.name in stage.inputs:
            metadata[SAMPLE] = sample_label(inputs[input_name(pipeline.prompts.name)])
        if data_version:
            yield versioned_output(result.value, data_version, metadata=metadata)
        else:
            yield dg.Output(result.value, metadata=metadata)
        for outcome in result.checks:
            yield _check_result(stage, outcome)
        if stage.tracked:
            yield monitoring.track_evaluation(
                context,
                settings,
                key,
                info.name,
                model,
                figures,
                result.tracked.items,
                tracked,
                scope=result.tracked.scope,
                versions={
                    "data": result.tracked.data_version or versions.data,
                    "prompts": versions.prompts,
                    "code": versions.code,
                },
                replies=result.tracked.replies,
            )

    compute.__doc__ = stage.about
    options: dict[str, Any] = {}
    if stage.options:
        # The default is the sample held at load (_options reads it as unset: the current sample is kept); the help
        # says what it is and what the automation profile would set.
        options["config_schema"] = {
            **{
                o.name: dg.Field(
                    dg.Noneable(o.type) if o.default is None else [str] if o.type is list else o.type,
                    is_required=False,
                    description=f"{o.help} (automation profile: {sizes.get(o.name)}; now {held.get(o.name)}, "
                    f"{where}; left at this default: the current sample, else the profile's)",
                    **({"default_value": proposed[o.name]} if o.name in proposed else {}),
                )
                for o in stage.options
            },
            CONFIRM: confirm_field(),
        }
    if stage.asks_models:
        options.update(model_call_options())
    return dg.asset(
        key=key,
        group_name=key[0],
        description=stage.about,
        code_version=code_version,
        automation_condition=EAGER,
        freshness_policy=ANNUAL_DATA if stage.source else None,
        partitions_def=partitions,
        ins={input_name(name): _asset_in(info.name, pipeline, stage, name) for name in stage.inputs},
        check_specs=check_specs or None,
        required_resource_keys={"geomon"},
        output_required=not stage.options,  # a refused new sample materializes nothing (samples.refuse)
        **options,
    )(compute)


def _leaderboard_asset(info: registry.SuiteInfo, pipeline: Pipeline, code_version: str) -> dg.AssetsDefinition:
    tracked = pipeline.tracked.name
    # Each model's sample is in the metadata of the first per-model stage that reads the prompts.
    reader = next((s for s in pipeline.stages if s.per_model and pipeline.prompts.name in s.inputs), None)
    sample_key = dg.AssetKey(stage_key(info.name, reader)) if reader is not None else None

    def compute(context: dg.AssetExecutionContext, **inputs: Any):
        settings = context.resources.geomon.settings()
        out = settings.results_dir / info.name
        extra = {name: by_partition(context, name, inputs[name]) for name in pipeline.report_inputs}
        published = pipeline.published(settings) if pipeline.published is not None else None
        board, results = leaderboard_frame(context, tracked, inputs[tracked], pipeline.labels, pipeline.board_rows)
        # Partitions known but not evaluated (a model the registry sensor added, a revision not run yet) are
        # left out of the board and named, never a failure of the whole leaderboard.
        known = {str(k) for k in context.asset_partition_keys_for_input(tracked)}
        not_evaluated = sorted(known - {str(k) for k in results})
        answered_on = samples(context.instance, sample_key, list(results)) if sample_key else {}
        board = with_imported(board, info.name, settings.store_url)  # every evaluated model: run or imported
        board = with_samples(mark_insufficient(board, info.name), answered_on, pipeline.labels)
        board = with_published(with_verdicts(board, info.name, settings.store_url), published)
        if "model" in board:  # the per-item tables the report links (``geomon items``)
            write_item_tables(out, info.name, settings.store_url, board["model"].unique())
        write_open_regressions(out, info.name, settings.store_url)  # what the report opens with
        report = pipeline.write_report(out, board, results, settings, **extra)
        own = board[board[ORIGIN] == "geomon"]
        series = pipeline.series_rows(own) if pipeline.series_rows is not None else own
        metadata = leaderboard_metadata(
            info.name,
            board,
            report,
            pipeline.leaderboard_columns,
            pipeline.labels,
            series,
            store_url=settings.store_url,
            changes=settings.serving_changes(),
        )
        if pipeline.board_metadata is not None:
            metadata.update({k: metadata_value(v) for k, v in pipeline.board_metadata(board, **extra).items()})
        metadata["partitions_not_evaluated"] = metadata_value(not_evaluated)
        mixed = mixed_samples(board, pipeline.labels)
        if mixed:  # the first entry the asset shows
            metadata = {"mixed_samples": mixed, **metadata}
        if not_evaluated:
            context.log.warning(f"{info.name} leaderboard: not evaluated yet, left out: {', '.join(not_evaluated)}")
        return dg.Output(board, metadata=metadata)

    every = dg.AllPartitionMapping()
    return dg.asset(
        key=[info.name, "leaderboard"],
        group_name=info.name,
        description=f"Every model's {info.title} figures side by side, with the HTML report in the results directory.",
        code_version=code_version,
        automation_condition=EAGER,
        ins={
            name: dg.AssetIn(
                key=input_key(info.name, pipeline, name),
                partition_mapping=every,
                metadata={"allow_missing_partitions": True},  # the IO manager skips what was never stored
            )
            for name in (tracked, *pipeline.report_inputs)
        },
        required_resource_keys={"geomon"},
    )(compute)


@dataclass
class DeclaredSuite:
    """A declared suite's Dagster half: its assets and jobs, and how ``geomon run`` materializes it."""

    info: registry.SuiteInfo
    pipeline: Pipeline
    assets: list[Any]  # assets and separate asset checks
    jobs: list[Any]
    plan: PerModelPlan

    def materialize(self, *args: Any, **kwargs: Any) -> list[dg.JobExecutionResult]:
        return self.plan.materialize(*args, **kwargs)

    def run_from_options(
        self,
        instance: dg.DagsterInstance,
        models: Sequence[str],
        options: dict[str, Any],
        settings: Settings,
        log_level: str,
        profile: str | None = None,
        plans: Sequence[Any] = (),
    ) -> tuple[list[Any], str]:
        """``geomon run``'s options of this suite under run ``profile`` (each flag given overrides the profile's
        value of a prompts-stage option; 0 = all). ``plans``: the run's plan rows of this suite
        (``plan.SuitePlan``, made at the same flags), which say what each model's asks would read: a partition
        whose every ask is stored and whose assets are fresh and last read exactly those answers is not run again,
        and prompts of the plan's sample that are fresh are not materialized again."""
        from geomon.plan import run_config

        options, config = run_config(settings, self.info, options, profile)
        shown = {o.config: config.get(o.config) for o in self.info.options if o.config.startswith("sample")}
        described = f"profile {profile or settings.automation_profile}; " + (
            ", ".join(f"{name}: {value or 'all'}" for name, value in shown.items()) or "defaults"
        )
        stored = [p for p in plans if p.suite == self.info.name and not p.to_ask]  # every answer stored
        revisions = self.pipeline.revisions
        if revisions is None:
            answers = {p.model: p.answers for p in stored}
            sample = next((p.sample for p in plans if p.suite == self.info.name), "")
            results = self.materialize(
                instance, models, config, log_level=log_level, described=described, answers=answers, sample=sample
            )
            return results, described
        keys = revisions.resolve(settings)
        described = f"revisions: {', '.join(keys)}; {described}"
        answers = {
            str(dg.MultiPartitionKey({"model": p.model, "revision": revision})): read
            for p in stored
            for revision, read in p.revision_answers.items()
            if revision in keys
        }
        results = self.materialize(
            instance,
            models,
            log_level=log_level,
            described=described,
            revisions=revisions.options(options, keys),
            answers=answers,
        )
        return results, described


def prompt_plans(settings: Settings, info: registry.SuiteInfo, prompts: Any) -> tuple[list[Any], Markdown]:
    """What these prompts will ask each registered model (``geomon plan``'s rows), and the plan as the prompts
    asset shows it, so the UI says what a materialization of the per-model stages costs before anyone clicks."""
    from geomon import plan
    from geomon.monitor.history import MetricHistory

    history = MetricHistory(settings.store_url)
    plans = plan.suite_plans(
        settings, settings.models, info, settings.automation_profile, settings.store(), history, prompts
    )
    return plans, plan_markdown(plan.table(plans).drop(columns=["suite"]), info)


UNKNOWN = "—"  # a plan cell that cannot be known before a run; the notes below the table say why
PLAN_NOTES = {
    "time": "time, tokens: no answer of the model is stored yet, so its pace is unknown (`geomon plan --probe` "
    "measures it)",
    "cost_usd": "cost: known once the pace is, for a model priced in geomon.yaml (`price_input_per_million`, "
    "`price_output_per_million`); a local model costs only time",
}


def plan_markdown(table: pd.DataFrame, info: registry.SuiteInfo) -> Markdown:
    """The plan as the prompts asset shows it, narrow enough for a 1440 px screen: what every row shares
    (prompts, clusters) above the table, asks with the stored ones beside, long text (the MDEs) in a table of
    its own below, each unknown cell a dash whose reason is noted, and the metrics' units."""
    table = table.copy()
    shared = [c for c in ("prompts", "clusters") if c in table and table[c].nunique(dropna=False) <= 1]
    above = [f"{table[c].iloc[0]} {c}" for c in shared if len(table)]
    if {"asks", "stored"} <= set(table.columns):
        table["asks"] = [f"{a} ({s} stored)" for a, s in zip(table["asks"], table["stored"], strict=True)]
        table = table.drop(columns=["stored"])
    wide = [c for c in table.columns if c != "model" and table[c].astype(str).str.len().max() > 40]
    # Each long cell's parts one per row (a model's MDEs, "; "-joined): a table cell is cut at 200 characters.
    below = [
        charts.markdown_table(table[["model", c]].assign(**{c: table[c].astype(str).str.split("; ")}).explode(c))
        for c in wide
        if "model" in table
    ]
    table = table.drop(columns=[*shared, *wide])
    unknown = {c for c in table.columns if table[c].isna().any() or (table[c].astype(str) == "?").any()}

    def shown(value: Any) -> Any:  # a column with an unknown cell is float: counts stay the whole numbers they are
        if value is None or (isinstance(value, float) and math.isnan(value)) or value == "?":
            return UNKNOWN
        return int(value) if isinstance(value, float) and value.is_integer() else value

    table = pd.DataFrame({c: pd.Series([shown(v) for v in table[c]], dtype=object) for c in table.columns})
    table = table.rename(columns={"cost_usd": "cost (USD)"})
    notes = [f"{UNKNOWN} {why}" for column, why in PLAN_NOTES.items() if column in unknown]
    units = [
        f"{MetricKey(h.metric, h.breakdown)}: on a {h.bounds[0]:g}–{h.bounds[1]:g} scale"
        for h in info.headlines
        if h.bounds is not None
    ]
    if units:
        notes.append("MDE: the smallest change a run can detect, in the metric's units; " + "; ".join(units))
    parts = [", ".join(above) + " for every model" if above else "", charts.markdown_table(table), *below]
    return Markdown("\n\n".join(p for p in (*parts, "\n".join(f"- {n}" for n in notes)) if p))


def suite_runs(name: str) -> DeclaredSuite:
    """How ``geomon run`` materializes a registered suite (an unknown one is an error listing the known)."""
    registry.suite(name)
    return declared(name)


@cache
def declared(name: str) -> DeclaredSuite:
    """Build (once) the Dagster half of suite ``name`` from its pipeline."""
    suite = registry.suite(name)
    info, pipeline = suite.info, suite.pipeline
    sources = [s for s in pipeline.stages if s.source] or [pipeline.stages[0]]
    versions = _Versions(*(stage_version(name, s) for s in (sources[0], pipeline.prompts, pipeline.tracked)))
    assets: list[Any] = [_stage_asset(info, pipeline, stage, versions) for stage in pipeline.stages]
    assets += [_separate_check(info, s, c) for s in pipeline.stages for c in s.checks if c.evaluate is not None]
    assets.append(_leaderboard_asset(info, pipeline, versions.code))

    def keys(stages: Sequence[Stage]) -> dg.AssetSelection:
        return dg.AssetSelection.assets(*[stage_key(name, s) for s in stages])

    per_model = keys([s for s in pipeline.stages if s.per_model])
    per_revision = [s for s in pipeline.stages if s.per_revision]
    upstream = dg.AssetSelection.assets(*[key.split("/") for key in pipeline.upstream])
    proposed, where = sample_in_use(name, stage_key(name, pipeline.prompts))
    plan = PerModelPlan(
        suite=name,
        sources=keys([s for s in pipeline.stages if not (s.per_model or s.per_revision)]) | upstream,
        per_model=per_model,
        # The decision: the tracked stage (record, decide against the history as it is now, alert) and what reads it.
        decision=dg.AssetSelection.assets(stage_key(name, pipeline.tracked)).downstream() & per_model,
        leaderboard=dg.AssetSelection.assets([name, "leaderboard"]),
        prompts_op="__".join(stage_key(name, pipeline.prompts)),
        per_revision=keys(per_revision) if per_revision else None,
        revisions=revisions_partitions(pipeline.revisions.partitions) if pipeline.revisions else None,
        # A suite with revisions: the shared sources' job is named after its source stage ("release").
        sources_stage=sources[0].name if per_revision else "prompts",
        prompts_options=proposed,
        proposed_note=where,
    )
    per_model_partitions = stage_partitions(pipeline, pipeline.tracked)
    jobs = [*plan.stage_jobs(), per_model_job(name, per_model, per_model_partitions, pipeline.per_model_description)]
    return DeclaredSuite(info, pipeline, assets, jobs, plan)


def declared_names() -> list[str]:
    return [name for name in registry.suites() if registry.suite(name).pipeline is not None]


@dg.definitions
def declared_suites() -> dg.Definitions:
    """Every suite declared by a Pipeline, built by the factory."""
    built = [declared(name) for name in declared_names()]
    definitions = [a for suite in built for a in suite.assets]
    return dg.Definitions(
        assets=[a for a in definitions if not isinstance(a, dg.AssetChecksDefinition)],
        asset_checks=[a for a in definitions if isinstance(a, dg.AssetChecksDefinition)],
        jobs=[j for suite in built for j in suite.jobs],
        sensors=[
            *(revisions_sensor(s.info.name, s.pipeline.revisions) for s in built if s.pipeline.revisions),
            *(sample_sensor(s) for s in built if s.pipeline.revisions is None),
        ],
    )


def sample_sensor(suite: DeclaredSuite) -> dg.SensorDefinition:
    """The suite's ``<suite>_sample_sensor`` (``sensors.stale_sample_sensor``): its prompts, the per-model stage
    that records each model's sample, its per-model job."""
    name, pipeline = suite.info.name, suite.pipeline
    reader = next(s for s in pipeline.stages if s.per_model and pipeline.prompts.name in s.inputs)
    return stale_sample_sensor(
        name,
        dg.AssetKey(stage_key(name, pipeline.prompts)),
        dg.AssetKey(stage_key(name, reader)),
        per_model_job_name(name),
    )
