"""What a run will ask, cost and be able to tell, before it asks anything (``geomon plan``).

For each model × suite at a run profile: the prompts the suite builds (its stages up to the prompts, run
here on the local data, no model called), the requests the contestant is sent and how many of them the
response store already holds, the wall time and tokens those asks take at the model's measured pace (the
store's recent answers: latency and tokens), their cost where ``geomon.yaml`` prices the model, and each
tracked headline's minimum detectable effect at that sample (``stats.verdicts``: from the spread of the
suite's stored comparisons, else the worst case a bounded metric allows). ``--detect`` inverts it: the
sample each headline needs to detect a given change.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.stats import sufficiency, verdicts
from geomon.suites import registry
from geomon.suites.pipeline import Pipeline, Stage, StageResult


class PlanError(ValueError):
    """A plan that cannot be made (a suite whose data is not available offline, an unknown model)."""


@dataclass
class PlanContext:
    """The ``StageContext`` of a stage run for a plan: settings and options; never a model."""

    settings: Any
    options: dict[str, Any]
    model: str | None = None
    revision: str | None = None
    run_id: str = "plan"
    code_version: str = "plan"
    _history: Any = None

    def spec(self) -> ModelSpec:
        raise PlanError("a plan asks no model")

    def ask(self, spec: ModelSpec, requests: list[GenerationRequest]) -> tuple[pd.DataFrame, dict[str, Any]]:
        raise PlanError(f"a plan asks no model (a prompts stage wanted to ask {spec.name})")

    def history(self) -> Any:
        """A history of its own, in memory: a plan records nothing."""
        from geomon.monitor.history import MetricHistory

        if self._history is None:
            self._history = MetricHistory("sqlite:///:memory:")
        return self._history

    def alert(self, kind: str, title: str, summary: str, numbers: dict[str, Any]) -> list[str]:
        return ["not sent: a plan"]


@dataclass
class Headline:
    metric: str
    breakdown: str
    clusters: int
    mde: float | None  # None: no stored comparison and no bounds to assume the worst from
    sd: float | None  # the per-cluster spread of the change the MDE rests on
    source: str  # "stored comparisons" | "worst case for the metric's range" | "unknown until a first run"


@dataclass
class Comparison:
    """One comparison production will make for a suite at this sample: a tracked metric or one of its groups."""

    metric: str
    breakdown: str
    clusters: int | None  # None: its groups are known only once the answers are scored
    disparity: bool  # shown, never paged: decided in a family of its own

    @property
    def decidable(self) -> bool:
        return self.clusters is not None and self.clusters >= sufficiency.MIN_SAMPLE

    @property
    def why(self) -> str:
        if self.clusters is None:
            return "its groups are known once the answers are scored"
        return "" if self.decidable else f"{self.clusters} clusters < {sufficiency.MIN_SAMPLE}"

    @property
    def name(self) -> str:
        return f"{self.metric}{f' ({self.breakdown})' if self.breakdown else ''}"


def comparisons(info: registry.SuiteInfo, prompts: pd.DataFrame) -> list[Comparison]:
    """Every comparison production makes for this suite on these prompts — each tracked metric and each of its
    groups — with the clusters it rests on (a statistic between groups: its smallest group's)."""
    from geomon.stats.declared import is_disparity

    out = []
    for metric in registry.tracked(info.name):
        group = metric.group
        if is_disparity(metric.statistic) and group:
            sizes = [_clusters(part, info.unit) for _, part in prompts.groupby(group)] if group in prompts else None
            out.append(Comparison(metric.name, metric.breakdown, min(sizes) if sizes else None, True))
        else:
            whole = _clusters(prompts, info.unit)
            out.append(Comparison(metric.name, metric.breakdown, whole, is_disparity(metric.statistic)))
        for column in metric.by:
            name = metric.groups_name or metric.name
            if column not in prompts:
                out.append(Comparison(name, f"{column}=…", None, False))
                continue
            for value, part in prompts.groupby(column):
                label = f"{column}={value}"
                out.append(
                    Comparison(
                        name,
                        f"{metric.breakdown},{label}" if metric.breakdown else label,
                        _clusters(part, info.unit),
                        False,
                    )
                )
    return out


@dataclass
class SuitePlan:
    suite: str
    model: str
    profile: str
    prompts: int
    asks: int
    stored: int
    seconds: float | None
    tokens: int | None
    cost: float | None
    options: dict[str, Any]
    headlines: list[Headline] = field(default_factory=list)
    note: str = ""
    comparisons: list[Comparison] = field(default_factory=list)

    @property
    def to_ask(self) -> int:
        return self.asks - self.stored


def external_input(settings: Any, key: str) -> Any:
    """An asset outside the suite that a plan reads from the local data."""
    if key == "worldbank/indicators":
        from geomon.sources import worldbank

        if settings.worldbank_snapshot is None:
            raise PlanError("worldbank/indicators: a plan reads the World Bank snapshot (worldbank.snapshot)")
        return worldbank.read_snapshot(settings.worldbank_snapshot)
    raise PlanError(f"{key}: a plan cannot read this asset outside Dagster")


def build_prompts(settings: Any, suite: str, options: dict[str, Any]) -> tuple[pd.DataFrame, Stage]:
    """Suite ``suite``'s prompts at ``options`` (its stages up to the prompts, run here; the newest revision
    of a suite with revisions), and the stage that asks the contestant."""
    pipeline: Pipeline = registry.pipeline(suite)
    revision = pipeline.revisions.resolve(settings)[-1] if pipeline.revisions is not None else None
    values: dict[str, Any] = {}
    for stage in pipeline.stages:
        if stage.per_model:
            break
        inputs = {}
        for name in stage.inputs:
            inputs[name.rsplit("/", 1)[-1]] = external_input(settings, name) if "/" in name else values[name]
        context = PlanContext(settings, options if stage.options else {}, revision=revision)
        result: StageResult = stage.run(context, **inputs)
        values[stage.name] = result.value
        if stage is pipeline.prompts:
            asking = next((s for s in pipeline.stages if s.requests is not None), None)
            if asking is None:
                raise PlanError(f"suite {suite}: no stage declares the requests it sends")
            return result.value, asking
    raise PlanError(f"suite {suite}: no prompts stage before the per-model stages")


def pace(store: Any, spec: ModelSpec) -> dict[str, float] | None:
    """The model's measured pace from its recent stored answers: median latency, mean tokens per answer."""
    recent = store.recent_answers(spec.name)
    recent = recent[recent["latency_s"].notna()]
    if recent.empty:
        return None
    return {
        "latency_s": float(recent["latency_s"].median()),
        "prompt_tokens": float(recent["prompt_tokens"].fillna(0).mean()),
        "completion_tokens": float(recent["completion_tokens"].fillna(0).mean()),
        "answers": len(recent),
    }


def parallelism(settings: Any, spec: ModelSpec) -> int:
    """Requests answered at once: bundled models' llama-server processes × slots, else the client's
    concurrency."""
    engine = settings.engine
    if spec.bundled is not None:
        return max(1, (engine.servers or os.cpu_count() or 1) * engine.slots)
    return max(1, engine.concurrency)


def headline_spread(history: Any, suite: str, metric: str, breakdown: str) -> float | None:
    """The per-cluster spread of a headline's change (se × √clusters) from the suite's latest stored
    comparison of it, any model."""
    if history is None:
        return None
    rows = history.suite_comparisons(suite, metric, breakdown)
    rows = rows[rows["se"].notna() & (rows["clusters"].fillna(0) > 0) & (rows["se"] > 0)]
    if rows.empty:
        return None
    last = rows.iloc[-1]
    return float(last["se"]) * math.sqrt(float(last["clusters"]))


def _clusters(prompts: pd.DataFrame, unit: tuple[str, ...]) -> int:
    present = [c for c in unit if c in prompts]
    return int(prompts[present].drop_duplicates().shape[0]) if present else len(prompts)


def test_level(settings: Any, suite: str, paging: int | None = None) -> float:
    """The one-sided level a suite's headline is tested at in a release: the suite's share of α (the release
    plan) over the comparisons that can page (``paging``; its tracked metrics when not counted) — Holm's first
    step, where its MDE is stated."""
    from geomon.monitor import tracking

    count = paging if paging is not None else len(registry.tracked(suite))
    return tracking.release_plan(settings.verdicts).share(suite) / max(count, 1)


def headlines(
    info: registry.SuiteInfo, clusters: int, settings: Any, history: Any, paging: int | None = None
) -> list[Headline]:
    """Each tracked headline's MDE at ``clusters`` (the stated power, at the suite's ``test_level``)."""
    alpha = test_level(settings, info.name, paging)
    out = []
    for metric in registry.tracked(info.name):
        sd = headline_spread(history, info.name, metric.name, metric.breakdown)
        source = "stored comparisons"
        if sd is None and metric.bounds is not None:
            sd = (metric.bounds[1] - metric.bounds[0]) * math.sqrt(0.5)  # a coin flip per cluster, each side
            source = "worst case for the metric's range"
        if sd is None:
            out.append(Headline(metric.name, metric.breakdown, clusters, None, None, "unknown until a first run"))
            continue
        se = sd / math.sqrt(max(clusters, 1))
        out.append(
            Headline(
                metric.name,
                metric.breakdown,
                clusters,
                verdicts.minimum_detectable_effect(se, alpha, settings.verdicts.power),
                sd,
                source,
            )
        )
    return out


def clusters_to_detect(
    headline: Headline, change: float, settings: Any, suite: str, paging: int | None = None
) -> int | None:
    """The clusters a headline needs to detect ``change`` at the stated power (at the suite's ``test_level``)."""
    if headline.sd is None or change <= 0:
        return None
    alpha = test_level(settings, suite, paging)
    z = verdicts.minimum_detectable_effect(1.0, alpha, settings.verdicts.power)
    return math.ceil((z * headline.sd / change) ** 2)


def suite_plans(
    settings: Any,
    models: list[ModelSpec],
    info: registry.SuiteInfo,
    profile: str,
    store: Any,
    history: Any,
    prompts: pd.DataFrame | None = None,
) -> list[SuitePlan]:
    """One suite's plan for each model (``prompts``: already built, e.g. by the prompts asset)."""
    from geomon.engine.runner import model_identity
    from geomon.engine.store import response_key

    options = settings.run_options(info.name, profile)
    if prompts is None:
        prompts, asking = build_prompts(settings, info.name, options)
    else:
        asking = next(s for s in registry.pipeline(info.name).stages if s.requests is not None)
    clusters = _clusters(prompts, info.unit)
    planned = comparisons(info, prompts)
    paging = sum(c.decidable and not c.disparity for c in planned)
    marks = headlines(info, clusters, settings, history, paging)
    plans = []
    for spec in models:
        requests = asking.requests(prompts, spec, settings)
        identity = model_identity(spec)
        keys = list(dict.fromkeys(response_key(identity, r, settings.cache_epoch) for r in requests))
        stored = len(store.get_many(keys))
        measured = pace(store, spec)
        seconds = tokens = cost = None
        remaining = len(keys) - stored
        if measured is not None:
            seconds = remaining * measured["latency_s"] / parallelism(settings, spec)
            inputs, outputs = remaining * measured["prompt_tokens"], remaining * measured["completion_tokens"]
            tokens = int(inputs + outputs)
            if spec.price_input_per_million is not None and spec.price_output_per_million is not None:
                cost = (inputs * spec.price_input_per_million + outputs * spec.price_output_per_million) / 1e6
        note = "" if measured else "no answers stored yet: time and tokens unknown (geomon plan --probe measures)"
        plans.append(
            SuitePlan(
                info.name,
                spec.name,
                profile,
                len(prompts),
                len(keys),
                stored,
                seconds,
                tokens,
                cost,
                options,
                marks,
                note,
                planned,
            )
        )
    return plans


def make_plan(
    settings: Any, models: list[ModelSpec], suites: list[registry.SuiteInfo], profile: str, store: Any, history: Any
) -> list[SuitePlan]:
    """Every model × suite at ``profile``; nothing is asked."""
    return [p for info in suites for p in suite_plans(settings, models, info, profile, store, history)]


def totals(plans: list[SuitePlan]) -> dict[str, Any]:
    """What a whole run asks: asks to make, stored, seconds and cost (None where a model's pace is unknown)."""
    known = [p.seconds for p in plans if p.seconds is not None]
    costs = [p.cost for p in plans if p.cost is not None]
    return {
        "to_ask": sum(p.to_ask for p in plans),
        "stored": sum(p.stored for p in plans),
        "seconds": sum(known) if known else None,
        "pace_unknown": sorted({p.model for p in plans if p.seconds is None and p.to_ask}),
        "cost": sum(costs) if costs else None,
    }


def probe(settings: Any, spec: ModelSpec, requests: list[GenerationRequest], store: Any, count: int = 3) -> None:
    """Ask ``count`` of ``requests`` through the store (the answers stay: a later run does not ask them again),
    so the plan knows the model's pace."""
    from geomon.engine.runner import ask

    ask(spec, requests[:count], store, epoch=settings.cache_epoch, options=settings.engine)


def table(plans: list[SuitePlan]) -> pd.DataFrame:
    """The plan as rows a person reads: one per model × suite, with the headlines' MDE."""
    rows = []
    for p in plans:
        blind = {(c.metric, c.breakdown) for c in p.comparisons if not c.decidable}
        mde = "; ".join(
            f"{h.metric}{f' ({h.breakdown})' if h.breakdown else ''} "
            + ("not decidable" if (h.metric, h.breakdown) in blind else "?" if h.mde is None else f"{h.mde:.3g}")
            for h in p.headlines
        )
        rows.append(
            {
                "model": p.model,
                "suite": p.suite,
                "prompts": p.prompts,
                "asks": p.asks,
                "stored": p.stored,
                "time": duration(p.seconds),
                "tokens": p.tokens,
                "cost_usd": None if p.cost is None else round(p.cost, 2),
                "clusters": p.headlines[0].clusters if p.headlines else None,
                "decidable": f"{sum(c.decidable for c in p.comparisons)} of {len(p.comparisons)}",
                "mde": mde,
            }
        )
    return pd.DataFrame(rows)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
