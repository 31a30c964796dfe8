"""A suite's graph, declared in plain Python: its stages (each becomes one Dagster asset), the checks each
stage evaluates, the stage whose evaluation joins the metric history, and the leaderboard's report.

The Dagster layer (``geomon.defs.factory``) builds assets, checks, jobs, the run order, history recording,
the regression check and the leaderboard from a ``Pipeline``; nothing here imports Dagster. Every stage has
one signature, ``run(context, **inputs) -> StageResult``: ``inputs`` are the values of the stages it names.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import pandas as pd

from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.quality import CheckOutcome
from geomon.stats.values import MetricValue

__all__ = ["CheckOutcome"]  # re-exported: a suite's checks are declared with the rest of its pipeline


def sample_id(prompts: Any) -> str:
    """The prompts' sample: a hash of their content, so a new size, seed or question set is a new sample
    (the prompts asset's data version: the models answered on another are marked stale) and the same
    sample rebuilt is the same one."""
    text = prompts.to_json(orient="split", default_handler=str) if isinstance(prompts, pd.DataFrame) else repr(prompts)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


class PipelineError(ValueError):
    """A suite's declaration is inconsistent (an input no stage produces, two tracked stages, …)."""


@dataclass(frozen=True)
class StageCheck:
    """A check a stage evaluates on its own output (it becomes an asset check on the stage's asset)."""

    name: str
    description: str = ""  # default: ``evaluate``'s docstring
    blocking: bool = False  # a blocking check that fails stops automation downstream
    # A check of its own (re-runnable from the UI, run after the stage): ``evaluate(context, value)``. Without
    # it the stage evaluates the check itself and returns its outcome.
    evaluate: Callable[[Any, Any], CheckOutcome] | None = None

    @property
    def about(self) -> str:
        return " ".join((self.description or (self.evaluate.__doc__ if self.evaluate else "") or self.name).split())


class Markdown(str):
    """Metadata text to show as Markdown (a chart as an image, a formatted note), not as plain text."""


@dataclass
class Tracked:
    """What a tracked stage adds to the metric history: the per-item values its tracked metrics are computed
    from and the regression test pairs, and the scope two runs must share to be compared. The tracked metrics'
    figures are not the stage's to give: the factory computes them once from ``items``, by their declarations
    (``geomon.monitor.release.declared_figures``), for the history, the leaderboard's summary and the alerts."""

    items: pd.DataFrame
    scope: str
    data_version: str = ""  # the data's own version (a World Bank release); default: the source stage's code
    # Every item as scored (its prompt, reply, parsed answer, score, status), kept for ``geomon items``.
    replies: pd.DataFrame | None = None
    # Figures no tracked metric declares (counts, a paper's own statistics: ``declarations.undeclared``), recorded
    # beside the declared ones and never compared; handing in a declared one fails the step.
    others: list[MetricValue] = field(default_factory=list)


@dataclass
class StageResult:
    value: Any
    metadata: dict[str, Any] = field(default_factory=dict)  # plain values; frames become tables
    checks: list[CheckOutcome] = field(default_factory=list)
    tracked: Tracked | None = None
    data_version: str = ""  # the data's own version (a Wikipedia revision id): Dagster's data version


class StageContext(Protocol):
    """What a stage may use: the settings, the options of the run, the model and revision of its partition,
    the run's id (for what it records) and the one way to ask a model (through the response store: nothing
    answered is asked again)."""

    settings: Any  # geomon.config.Settings
    options: dict[str, Any]
    model: str | None
    revision: str | None  # a suite with ``Revisions``: the revision key of a per-revision or per-model stage
    run_id: str
    code_version: str  # the stage's own code version (a hash of the modules it is versioned by)

    def spec(self) -> ModelSpec: ...

    def ask(self, spec: ModelSpec, requests: list[GenerationRequest]) -> tuple[pd.DataFrame, dict[str, Any]]: ...

    def history(self) -> Any:
        """The metric history (``record``, ``series``): a suite reads and records through it, never by importing
        the monitor above it."""
        ...

    def alert(self, kind: str, title: str, summary: str, numbers: dict[str, Any]) -> list[str]:
        """Send an alert about this stage's asset and partition; returns what each channel did."""
        ...


StageFunction = Callable[..., StageResult]


@dataclass(frozen=True)
class Option:
    """A stage option (the prompts stage's sample): run config in the UI, persisted between runs."""

    name: str
    type: type
    default: Any
    help: str = ""


SEED = Option("seed", int, 0, "the sample's seed")


def responses_stage(
    requests_for: Callable[[pd.DataFrame, ModelSpec], list[GenerationRequest]], id_column: str
) -> Stage:
    """The ``responses`` stage most suites have: each model's answers to the prompts (``requests_for``),
    through the response store (nothing answered is asked again), keyed by the prompts' ``id_column``."""

    def run(context: StageContext, prompts: pd.DataFrame) -> StageResult:
        """Each model's answers, through the response store: nothing already answered is asked again."""
        spec = context.spec()
        responses, metadata = context.ask(spec, requests_for(prompts, spec))
        responses.insert(0, id_column, prompts[id_column].to_numpy())
        return StageResult(responses, metadata=metadata)

    return Stage(
        "responses",
        run,
        inputs=("prompts",),
        per_model=True,
        asks_models=True,
        requests=lambda prompts, spec, settings: requests_for(prompts, spec),
    )


def filled_outcome(name: str, prompts: int, unfilled: list[str], require_prompts: bool = True) -> CheckOutcome:
    """The ``prompts_filled`` kind of check every suite runs on its rendered prompts: no placeholder left
    (``unfilled``: the ids of prompts that still have one) and, where required, at least one prompt."""
    return CheckOutcome(
        name,
        passed=not unfilled and (prompts > 0 or not require_prompts),
        metadata={"prompts": prompts, "unfilled": len(unfilled), "examples": unfilled[:10]},
    )


@dataclass(frozen=True)
class Revisions:
    """A suite whose data comes in revisions (the versions of Wikipedia's disputes table): its per-revision
    stages are partitioned by revision, its per-model stages by model × revision, and ``geomon run``
    evaluates the revisions ``resolve`` names, each with the prompts options ``options`` gives it."""

    # The Dagster dynamic partitions of this suite's revisions ("dispute_revisions"): a suite's own, so two
    # versioned sources never share partitions (the registry refuses a name two suites declare).
    partitions: str
    resolve: Callable[[Any], list[str]]  # settings → the revision keys a run evaluates, oldest first
    # geomon run's options (by ``RunOption.dest``) and the revisions → the prompts stage's options per revision
    options: Callable[[dict[str, Any], list[str]], dict[str, dict[str, Any]]]
    # What the suite's revisions sensor adds: (settings, its cursor) → (revision keys wanted now, next cursor).
    # Default: ``resolve``'s keys, no cursor.
    watch: Callable[[Any, str | None], tuple[list[str], str | None]] | None = None
    watch_every_seconds: int = 3600  # how often the sensor asks
    # The suite's geomon.yaml section → how many revisions one release decides: each is a scope its share of α is
    # split among (``verdicts.scopes``). Default: 1.
    scopes: Callable[[Any], int] | None = None

    def wanted(self, settings: Any, cursor: str | None) -> tuple[list[str], str | None]:
        """The revision keys the sensor should know now, and its next cursor."""
        return self.watch(settings, cursor) if self.watch else (self.resolve(settings), cursor)


@dataclass(frozen=True)
class Stage:
    name: str  # the asset key is [suite, name] (or ``key``)
    run: StageFunction
    description: str = ""  # what the asset holds (default: ``run``'s docstring)
    # Earlier stages by name, or assets outside the suite by key ("worldbank/indicators": the stage gets it as
    # ``indicators``).
    inputs: tuple[str, ...] = ()
    per_model: bool = False  # partitioned by model (by model × revision in a suite with revisions)
    per_revision: bool = False  # partitioned by revision (a suite with revisions)
    key: str = ""  # an asset key outside the suite's prefix, in that group ("wikipedia/dispute_revisions")
    asks_models: bool = False  # gets the model queue, pool and retry policy
    # code version: a hash of these modules' source (or files' text: a YAML suite's); by default the suite's own
    versioned_by: tuple[ModuleType | Path, ...] = ()
    checks: tuple[StageCheck, ...] = ()
    options: tuple[Option, ...] = ()
    tracked: bool = False  # records the evaluation in the history; gets the ``no_regression`` check
    source: bool = False  # the release the suite reads: versions the history's "data"
    # The contestant's requests: (prompts, spec, settings) → what the stage sends (``geomon plan`` counts them
    # and looks them up in the store without asking).
    requests: Callable[[pd.DataFrame, ModelSpec, Any], list[GenerationRequest]] | None = None

    @property
    def about(self) -> str:
        return " ".join((self.description or self.run.__doc__ or self.name).split())


# (out_dir, leaderboard, per-partition results of the tracked stage, settings, **report_inputs) → the report
ReportWriter = Callable[..., Path]


@dataclass(frozen=True)
class DriftProbe:
    """The questions the drift probe (``monitor/drift_probe``) re-asks every API-served model: ``questions`` builds
    the whole question bank (each row with a ``question_id``) from the asset at ``source``, a key outside the suite
    ("worldbank/indicators"), and ``requests`` is what a model is sent for them. One registered suite declares it."""

    source: str
    questions: Callable[[Any], pd.DataFrame]
    requests: Callable[[pd.DataFrame, ModelSpec], list[GenerationRequest]]


@dataclass(frozen=True)
class Pipeline:
    stages: tuple[Stage, ...]
    write_report: ReportWriter
    leaderboard_columns: tuple[str, ...]
    per_model_description: str
    settings_key: str = ""  # the settings section holding ``jury`` etc. (defaults to the suite name)
    # The paper's own per-model scores (settings → rows of model and leaderboard columns), shown beside
    # geomon's as ``origin = published``: aggregates, so without intervals or items.
    published: Callable[[Any], pd.DataFrame | None] | None = None
    # Assets outside the suite that its prompts job materializes first ("worldbank/economies").
    upstream: tuple[str, ...] = ()
    revisions: Revisions | None = None
    # The leaderboard's rows of one tracked result (default: its ``summary``); the partition's model (and
    # revision) label them.
    board_rows: Callable[[Any], list[dict[str, Any]]] | None = None
    # Stages the report also reads, every partition ({partition key: value}), as keyword arguments of
    # ``write_report`` and ``board_metadata`` (BorderLines compares its table revisions).
    report_inputs: tuple[str, ...] = ()
    board_metadata: Callable[..., dict[str, Any]] | None = None  # (board, **report_inputs) → extra metadata
    # The rows drawn as per-model series on the Plots tab (default: every row of geomon's own).
    series_rows: Callable[[pd.DataFrame], pd.DataFrame] | None = None
    drift_probe: DriftProbe | None = None  # the questions the drift probe re-asks, where this suite offers them

    @property
    def labels(self) -> tuple[str, ...]:
        """What names a leaderboard row's partition: the model, and the revision in a suite with revisions."""
        return ("model", "revision") if self.revisions is not None else ("model",)

    def stage(self, name: str) -> Stage:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise PipelineError(f"no stage {name!r}; stages: {[s.name for s in self.stages]}")

    @property
    def tracked(self) -> Stage:
        return next(s for s in self.stages if s.tracked)

    @property
    def prompts(self) -> Stage:
        """The stage whose options a run sets (the sample)."""
        return next((s for s in self.stages if s.options), self.stages[0])

    def validate(self, suite: str) -> None:
        """Inputs refer to earlier stages, exactly one tracked per-model stage, unique names; an error names
        the suite and the stage."""
        if self.revisions is not None and not re.fullmatch(r"[A-Za-z0-9_]+", self.revisions.partitions):
            raise PipelineError(
                f"suite {suite}: revisions.partitions {self.revisions.partitions!r} must be letters, digits and "
                "underscores (it names Dagster partitions)"
            )
        seen: dict[str, Stage] = {}
        for stage in self.stages:
            if stage.name in seen or stage.name == "leaderboard":
                raise PipelineError(f"suite {suite}: stage name {stage.name!r} is used twice or reserved")
            if stage.per_revision and (self.revisions is None or stage.per_model):
                raise PipelineError(
                    f"suite {suite}: stage {stage.name} is per revision, which needs the suite's revisions and "
                    "is not per model (per-model stages of a suite with revisions are per model × revision)"
                )
            for name in stage.inputs:
                if "/" in name:  # an asset outside the suite
                    continue
                if name not in seen:
                    raise PipelineError(
                        f"suite {suite}: stage {stage.name} reads {name!r}, which no earlier stage makes"
                    )
                if seen[name].per_model and not stage.per_model:
                    raise PipelineError(
                        f"suite {suite}: stage {stage.name} is not per model but reads {name}, which is"
                    )
                if seen[name].per_revision and not (stage.per_revision or stage.per_model):
                    raise PipelineError(
                        f"suite {suite}: stage {stage.name} is not per revision but reads {name}, which is"
                    )
            seen[stage.name] = stage
        for name in self.report_inputs:
            if name not in seen:
                raise PipelineError(f"suite {suite}: the report reads {name!r}, which no stage makes")
        if not any(s.requests is not None for s in self.stages):
            raise PipelineError(
                f"suite {suite}: no stage declares requests (what it sends the models, which `geomon plan` and "
                "the prompts asset's plan count; responses_stage declares them)"
            )
        tracked = [s for s in self.stages if s.tracked]
        if len(tracked) != 1 or not tracked[0].per_model:
            raise PipelineError(f"suite {suite}: exactly one per-model stage must be tracked, found {len(tracked)}")
        if sum(bool(s.options) for s in self.stages) > 1:
            raise PipelineError(f"suite {suite}: only one stage (the prompts) takes run options")
