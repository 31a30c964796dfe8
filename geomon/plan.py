"""What a run will ask, cost and be able to tell, before it asks anything (``geomon plan``).

For each model × suite at a run profile: the prompts the suite builds (its stages up to the prompts, run
here on the local data, no model called), the requests the contestant is sent and how many of them the
response store already holds, the wall time and tokens those asks take at the model's measured pace (the
store's recent answers: latency and tokens), their cost where ``geomon.yaml`` prices the model, and each
tracked headline's minimum detectable effect at that sample (``stats.power``: from the spread of the
suite's stored comparisons, else the worst case a bounded metric allows). ``--detect`` inverts it: the
sample each headline needs to detect a given change.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.stats import compare, power, sufficiency
from geomon.stats.declarations import with_min_effects
from geomon.stats.statistics import is_disparity
from geomon.stats.values import MetricKey, breakdown_by, last_group
from geomon.suites import registry
from geomon.suites.pipeline import Pipeline, Stage, StageResult, sample_id


def cluster_count(count: int) -> str:
    """``1 cluster``, ``12 clusters``."""
    return f"{count:,} cluster{'' if count == 1 else 's'}"


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
    """One comparison production will make for a suite at this sample: a tracked metric or one of its groups,
    with what decides whether this sample can decide it — its clusters, and its MDE against its minimum effect."""

    metric: str
    breakdown: str
    clusters: int | None  # None: its groups are known only once the answers are scored
    disparity: bool  # shown, never paged: decided in a family of its own
    min_effect: float = 0.0  # its own: a group's where the groups declare theirs
    bounds: tuple[float, float] | None = None
    mde: float | None = None  # at this sample and its family's first Holm level (None: no spread known)
    # The clusters it needs to be decidable (≥ MIN_SAMPLE, MDE ≤ min effect: the stated power at it), at the level of a
    # family holding every comparison of the suite: the size at which they all are.
    need: int | None = None
    population: int | None = None  # its clusters at the suite's full size (None: not counted)
    source: str = ""  # where its MDE's spread comes from (``spread``)

    @property
    def in_family(self) -> bool:
        """Tested with the suite's family (clusters enough for the sufficiency rule)."""
        return self.clusters is not None and self.clusters >= sufficiency.MIN_SAMPLE

    @property
    def decidable(self) -> bool:
        return self.in_family and not sufficiency.underpowered(self.mde, self.min_effect)

    @property
    def why(self) -> str:
        """Why this sample cannot decide it ("" where it can)."""
        if self.clusters is None:
            return "its groups are known once the answers are scored"
        few = "" if self.in_family else f"{cluster_count(self.clusters)} < {sufficiency.MIN_SAMPLE}"
        return "; ".join(w for w in (few, sufficiency.underpowered(self.mde, self.min_effect)) if w)

    @property
    def name(self) -> str:
        return str(MetricKey(self.metric, self.breakdown))


def comparisons(info: registry.SuiteInfo, prompts: pd.DataFrame, min_effects: dict[str, float]) -> list[Comparison]:
    """Every comparison production makes for this suite on these prompts — each tracked metric and each of its
    groups — with the clusters it rests on (a statistic between groups: its smallest group's) and its minimum
    effect (``min_effects``: the settings' overrides by name, as production applies them)."""
    out = []
    for metric in with_min_effects(registry.suite(info.name).tracked, min_effects):
        group = metric.group
        whole = (metric.name, metric.breakdown, metric.min_effect, metric.bounds)
        if is_disparity(metric.statistic) and group:
            sizes = [_clusters(part, info.unit) for _, part in prompts.groupby(group)] if group in prompts else None
            out.append(Comparison(*whole[:2], min(sizes) if sizes else None, True, *whole[2:]))
        else:
            clusters = _clusters(prompts, info.unit)
            out.append(Comparison(*whole[:2], clusters, is_disparity(metric.statistic), *whole[2:]))
        # Not the headline's statistic: a group's minimum effect and bounds.
        effect, bounds = metric.min_effect_for(None), metric.bounds_for(None)
        for column in metric.by:
            name = metric.groups_name or metric.name
            if column not in prompts:
                out.append(Comparison(name, breakdown_by("", column, "…"), None, False, effect, bounds))
                continue
            for value, part in prompts.groupby(column):
                breakdown = breakdown_by(metric.breakdown, column, value)
                out.append(Comparison(name, breakdown, _clusters(part, info.unit), False, effect, bounds))
    return out


def powered(
    planned: list[Comparison],
    settings: Any,
    suite: str,
    history: Any,
    population: dict[tuple[str, str], int],
    measured: dict[tuple[str, str], power.Spread] | None = None,
) -> None:
    """Each comparison's MDE at this sample and the clusters it needs to be decidable, in place: from its spread
    (``spread``: measured on the latest stored evaluation, else stored comparisons, else the worst case its range
    allows), at its first Holm level as the decision weighs it (``first_levels``) — now; the clusters it needs, with
    every comparison of the suite in the family at weight 1 (an upper bound).
    ``population``: each comparison's clusters at the suite's full size, where counted."""
    full = {d: sum(c.clusters is not None and c.disparity == d for c in planned) for d in (False, True)}
    spreads = {}
    for c in planned:
        c.population = population.get((c.metric, c.breakdown))
        sd, c.source = spread(history, suite, c.metric, c.breakdown, c.bounds, measured, c.disparity)
        if c.clusters is None:
            continue
        if sd is None:
            c.need = max(sufficiency.MIN_SAMPLE, c.clusters)
            continue
        spreads[id(c)] = sd
        detect = clusters_to_detect(sd, c.min_effect, settings, suite, full[c.disparity]) if c.min_effect > 0 else None
        c.need = max(sufficiency.MIN_SAMPLE, detect or 0)
    levels = first_levels(planned, spreads, settings, suite)
    now = {d: sum(c.in_family and c.disparity == d for c in planned) for d in (False, True)}
    for c in planned:
        if id(c) in spreads:
            se = spreads[id(c)] / math.sqrt(max(c.clusters, 1))
            # One too small to be tested: at the level it would get in an unweighted family.
            level = levels.get(id(c)) or test_level(settings, suite, now[c.disparity] + 1)
            c.mde = power.minimum_detectable_effect(se, level, settings.verdicts.power)


def first_levels(planned: list[Comparison], spreads: dict[int, float], settings: Any, suite: str) -> dict[int, float]:
    """Each tested comparison's first Holm level, as the decision will weigh it (``power.first_levels``): what
    can page, weighted by whether its spread lets it decide, over the look's α; the disparities, unweighted."""
    alpha = test_level(settings, suite, 1)
    paging = [c for c in planned if c.in_family and not c.disparity]
    ratios = [
        c.min_effect * math.sqrt(c.clusters) / spreads[id(c)] if id(c) in spreads and c.min_effect > 0 else math.nan
        for c in paging
    ]
    _, levels = power.first_levels(ratios, alpha, settings.verdicts.power, settings.verdicts.undecidable_weight)
    out = {id(c): level for c, level in zip(paging, levels, strict=True)}
    between = [c for c in planned if c.in_family and c.disparity]
    out.update({id(c): power.first_level(alpha, 1.0, len(between)) for c in between})
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
    budget: int = 0  # asks per model and suite a run may make (``budget.asks_per_suite``)
    sample_option: str = ""  # the prompts option that sets the clusters ("": none)
    answers: str = ""  # the fingerprint of the answers its asks read (``store.answers_fingerprint``)
    sample: str = ""  # the prompts' sample (``pipeline.sample_id``), as the prompts asset's data version ends
    # In a suite with revisions, by revision the run evaluates: the fingerprint of the answers its asks read
    revision_answers: dict[str, str] = field(default_factory=dict)
    scored: int = 0  # of the asks to make, those that score a continuation (rank classification) instead of generating

    @property
    def to_ask(self) -> int:
        return self.asks - self.stored

    def remedy(self, c: Comparison) -> str:
        """What would make ``c`` decidable, against the budget: ``raise sample_countries to 120 (≈1,212 asks,
        within the budget 20,000)``, ``not decidable at this profile: needs ≈41,000 asks > budget 20,000``, or
        never (fewer clusters in the whole benchmark than it needs). The asks grow with the clusters."""
        if c.decidable or not c.clusters or c.need is None:
            return ""
        if c.population is not None and c.population < c.need:
            if c.population < sufficiency.MIN_SAMPLE:
                return f"never decidable: {cluster_count(c.population)} in the whole benchmark"
            return f"never decidable: needs {c.need:,} clusters, {c.population:,} in the whole benchmark"
        scale = c.need / c.clusters
        asks = math.ceil(self.asks * scale)
        if asks > self.budget:
            return f"{sufficiency.PROFILE_PREFIX}needs ≈{asks:,} asks > budget {self.budget:,}"
        value = self.options.get(self.sample_option)
        size = f"raise {self.sample_option} to {math.ceil(value * scale):,}" if value else f"{c.need:,} clusters"
        return f"{size} (≈{asks:,} asks, within the budget {self.budget:,})"

    def reachable(self, need: int | None, c: Comparison) -> bool:
        """Whether ``c`` can have ``need`` clusters: the whole benchmark has them and their asks are in the budget."""
        if need is None or not c.clusters or (c.population is not None and c.population < need):
            return False
        return math.ceil(self.asks * need / c.clusters) <= self.budget

    def wanted(self, c: Comparison) -> float | None:
        """How much larger the sample must be for ``c``: decidable where the budget allows, else at least tested
        (``MIN_SAMPLE`` clusters) where it allows that; None where it already is, or neither is possible."""
        if c.decidable or not c.clusters:
            return None
        for need in (c.need, None if c.in_family else sufficiency.MIN_SAMPLE):
            if self.reachable(need, c):
                return max(need, c.clusters) / c.clusters
        return None


@dataclass
class Fit:
    """The size of a suite's sample option that decides every comparison the budget allows (``fit``)."""

    suite: str
    option: str  # "": the suite has no sample option
    value: int | None  # 0: the whole benchmark (as the profile had it)
    plan: SuitePlan
    whole: bool = False  # the size is the whole benchmark's

    def line(self) -> str:
        """``blend: {sample_questions: 66}  # ≈1,969 asks; 5 of 69 decidable, 64 tested but not decidable, …`` (a
        line of ``geomon.yaml``'s ``profiles:``; a size that was the profile's and already over the budget says so:
        a fit only raises)."""
        p = self.plan
        unknown = sum(c.in_family and c.mde is None for c in p.comparisons)
        decidable = sum(c.decidable for c in p.comparisons) - unknown
        tested = sum(c.in_family and not c.decidable for c in p.comparisons)
        blind = len(p.comparisons) - decidable - tested - unknown
        size = f"{{{self.option}: {self.value}}}" if self.option else "{}  # no sample option"
        notes = [" (the whole benchmark)" if self.whole else "", " (over the budget)" if p.asks > p.budget else ""]
        return (
            f"{self.suite}: {size}  # ≈{p.asks:,} asks{''.join(notes)}; {decidable} of {len(p.comparisons)} "
            f"decidable, {tested} tested but not decidable, {unknown} tested with no spread known yet, {blind} with "
            "too few clusters within the budget or the benchmark"
        )


def fit(
    settings: Any,
    info: registry.SuiteInfo,
    profile: str,
    spec: ModelSpec,
    store: Any,
    history: Any,
    measured: dict[tuple[str, str], power.Spread] | None = None,
    rounds: int = 8,
) -> Fit:
    """The size of the suite's sample option (``sample_option``; its other options ``profile``'s) at which every
    comparison is decidable where the budget of asks allows it, and at least tested (30 clusters) where it allows
    that: ``profile``'s size, raised by the comparison that needs the most (``SuitePlan.wanted``) and planned
    again, until none wants more (groups grow unevenly with the sample) or the sample is the whole benchmark.
    ``measured``: the spreads to plan from (``measured_spreads``), else those ``suite_plans`` finds."""
    option = sample_option(info.name)
    options = settings.run_options(info.name, profile)
    value = options.get(option) if option else None  # 0: already the whole benchmark
    upstream: dict[str, Any] = {}
    whole = len(build_prompts(settings, info.name, {**options, option: 0}, upstream)[0]) if option else 0
    below = 0  # the largest size known to be short of the whole benchmark
    for last in range(rounds, 0, -1):
        now = {**options, option: value} if option else options
        prompts, _ = build_prompts(settings, info.name, now, upstream)
        if value and len(prompts) >= whole and below:  # the whole benchmark: its smallest size that is
            while value - below > 1:
                middle = (below + value) // 2
                short = len(build_prompts(settings, info.name, {**options, option: middle}, upstream)[0]) < whole
                below, value = (middle, value) if short else (below, middle)
            now = {**options, option: value}
            prompts, _ = build_prompts(settings, info.name, now, upstream)
        found = suite_plans(settings, [spec], info, profile, store, history, prompts, True, measured, now)[0]
        scale = max((w for c in found.comparisons if (w := found.wanted(c)) is not None), default=1.0)
        if not value or scale <= 1.0 or len(prompts) >= whole or last == 1:  # the size planned is the one given
            break
        below, value = value, max(value + 1, math.ceil(value * scale))
    return Fit(info.name, option, value, found, bool(option) and found.prompts >= whole)


def external_input(settings: Any, key: str) -> Any:
    """An asset outside the suite that a plan reads from the local data."""
    if key == "worldbank/indicators":
        from geomon.sources import worldbank

        if settings.worldbank_snapshot is None:
            raise PlanError("worldbank/indicators: a plan reads the World Bank snapshot (worldbank.snapshot)")
        return worldbank.read_snapshot(settings.worldbank_snapshot)
    raise PlanError(f"{key}: a plan cannot read this asset outside Dagster")


def build_prompts(
    settings: Any,
    suite: str,
    options: dict[str, Any],
    upstream: dict[str, Any] | None = None,
    revision: str | None = None,
) -> tuple[pd.DataFrame, Stage]:
    """Suite ``suite``'s prompts at ``options`` (its stages up to the prompts, run here; of ``revision``, by
    default the newest, in a suite with revisions), and the stage that asks the contestant. ``upstream`` keeps the
    values of the stages that take no options and no revision, for another build to reuse."""
    pipeline: Pipeline = registry.suite(suite).pipeline
    if pipeline.revisions is not None and revision is None:
        revision = pipeline.revisions.resolve(settings)[-1]
    upstream = {} if upstream is None else upstream
    values: dict[str, Any] = {}
    for stage in pipeline.stages:
        if stage.per_model:
            break
        if stage.name in upstream:
            values[stage.name] = upstream[stage.name]
            continue
        inputs = {}
        for name in stage.inputs:
            inputs[name.rsplit("/", 1)[-1]] = external_input(settings, name) if "/" in name else values[name]
        context = PlanContext(settings, options if stage.options else {}, revision=revision)
        result: StageResult = stage.run(context, **inputs)
        values[stage.name] = result.value
        if not (stage.options or stage.per_revision) and all("/" in name or name in upstream for name in stage.inputs):
            upstream[stage.name] = result.value  # the same at any options and revision
        if stage is pipeline.prompts:
            asking = next((s for s in pipeline.stages if s.requests is not None), None)
            if asking is None:
                raise PlanError(f"suite {suite}: no stage declares the requests it sends")
            return result.value, asking
    raise PlanError(f"suite {suite}: no prompts stage before the per-model stages")


def asked_keys(asking: Stage, prompts: pd.DataFrame, spec: ModelSpec, settings: Any) -> dict[str, bool]:
    """The response-store keys of what ``asking`` sends ``spec`` for ``prompts``, each once, in order, each with
    whether it scores a continuation (rank classification: a forward pass, no generation)."""
    from geomon.engine.runner import model_identity
    from geomon.engine.store import response_key

    identity = model_identity(spec, make=False)  # a plan re-quantizes nothing: an unmade file has nothing stored
    requests = asking.requests(prompts, spec, settings)
    return {response_key(identity, r, settings.cache_epoch): r.continuation is not None for r in requests}


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
    """The one-sided level a suite's headline is tested at in a release: the first look's α (``ReleasePlan.look``,
    the scheme: ``geomon.stats.verdicts``) over the comparisons that can page (``paging``; its tracked metrics when
    not counted) — Holm's first step, where its MDE is stated."""
    from geomon.monitor import release

    count = paging if paging is not None else len(registry.suite(suite).tracked)
    return power.first_level(release.release_plan(settings.verdicts).look(suite), 1.0, max(count, 1))


WORST_CASE = "worst case for the metric's range"  # nothing stored: ``power.worst_case_spread``


MEASURED = "measured on a stored evaluation"


def measured_spreads(history: Any, suite: str, model: str | None = None) -> dict[tuple[str, str], power.Spread]:
    """The suite's latest stored evaluation with items (of ``model``, else any: the bundled ones after `make run`),
    as the baseline of a comparison would plan its MDE (``compare.baseline_spreads``); {} where none is stored."""
    if history is None:
        return {}
    for row in reversed(list(history.evaluations(suite=suite, model=model).itertuples())):
        evaluations = history.evaluations_of(suite, row.scope, model=row.model)
        items = evaluations[-1].items if evaluations else None
        if items is not None and len(items):
            tracked = registry.suite(suite).tracked
            stored = compare.stored_spreads(tracked, history.figures(evaluations[-1].evaluation_id))
            return stored if stored is not None else compare.baseline_spreads(tracked, items)
    return {}


def spread(
    history: Any,
    suite: str,
    metric: str,
    breakdown: str,
    bounds: tuple[float, float] | None,
    measured: dict[tuple[str, str], power.Spread] | None = None,
    gap: bool = False,
) -> tuple[float | None, str]:
    """The per-cluster spread of a comparison's change and where it comes from: the latest stored evaluation's own
    variance, as production plans a comparison's MDE from its baseline (``measured_spreads``), else its stored
    comparisons (``headline_spread``: a comparison of a metric the latest evaluation lacks), else the worst case
    its range allows (``power.worst_case_spread``; ``gap``: a statistic between groups)."""

    own = (measured or {}).get((metric, breakdown))
    if own is not None:
        se = power.planned_se(own, bounds)
        if se > 0 and own.clusters > 0:
            return se * math.sqrt(own.clusters), MEASURED
    sd = headline_spread(history, suite, metric, breakdown)
    if sd is not None:
        return sd, "stored comparisons"
    if bounds is not None:
        return power.worst_case_spread(bounds, gap), WORST_CASE
    return None, "unknown until a first run"


def headlines(
    info: registry.SuiteInfo,
    clusters: int,
    settings: Any,
    history: Any,
    paging: int | None = None,
    measured: dict[tuple[str, str], power.Spread] | None = None,
) -> list[Headline]:
    """Each tracked headline's MDE at ``clusters`` (the stated power, at the suite's ``test_level``)."""
    alpha = test_level(settings, info.name, paging)
    out = []
    for metric in registry.suite(info.name).tracked:
        gap = is_disparity(metric.statistic)
        sd, source = spread(history, info.name, metric.name, metric.breakdown, metric.bounds, measured, gap)
        if sd is None:
            out.append(Headline(metric.name, metric.breakdown, clusters, None, None, source))
            continue
        se = sd / math.sqrt(max(clusters, 1))
        out.append(
            Headline(
                metric.name,
                metric.breakdown,
                clusters,
                power.minimum_detectable_effect(se, alpha, settings.verdicts.power),
                sd,
                source,
            )
        )
    return out


def clusters_to_detect(
    sd: float | None, change: float, settings: Any, suite: str, paging: int | None = None
) -> int | None:
    """The clusters a comparison whose change spreads ``sd`` per cluster needs to detect ``change`` at the stated
    power (at the suite's ``test_level``)."""
    if sd is None or change <= 0:
        return None
    return power.clusters_to_detect(sd, change, test_level(settings, suite, paging), settings.verdicts.power)


def run_config(
    settings: Any, info: registry.SuiteInfo, flags: dict[str, Any], profile: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``geomon run``'s flags of suite ``info`` over run ``profile`` (default: the automation profile): the
    flags with the profile's values where none was given, and the prompts stage's run config. The run and its
    plan both read them here, so a flag changes what the plan counts as it changes what the run asks."""
    sizes = settings.run_options(info.name, profile)
    options = {o.dest: sizes.get(o.config) if flags.get(o.dest) is None else flags[o.dest] for o in info.options}
    config = {**sizes, **{o.config: options[o.dest] for o in info.options if options[o.dest] is not None}}
    return options, config


def sample_option(suite: str) -> str:
    """The prompts option that sets a suite's clusters: its first ``sample`` or ``sample_*`` option (the
    questions, countries, territories; a later one, like Gapminder's variations, samples within them)."""
    names = [o.name for o in registry.suite(suite).pipeline.prompts.options]
    return next((n for n in names if n == "sample" or n.startswith("sample_")), "")


def suite_plans(
    settings: Any,
    models: list[ModelSpec],
    info: registry.SuiteInfo,
    profile: str,
    store: Any,
    history: Any,
    prompts: pd.DataFrame | None = None,
    full_size: bool = False,
    measured: dict[tuple[str, str], power.Spread] | None = None,
    options: dict[str, Any] | None = None,
    flags: dict[str, Any] | None = None,
) -> list[SuitePlan]:
    """One suite's plan for each model (``prompts``: already built, e.g. by the prompts asset, at ``options``, by
    default ``flags`` — ``geomon run``'s, by ``RunOption.dest`` — over the profile's); ``full_size`` also builds
    the suite's prompts at its full size, to count the clusters each comparison could ever have; ``measured``: the
    spreads to plan from, else the suite's latest stored evaluation's (``measured_spreads``). A suite with
    revisions asks every revision a run evaluates, each at its own options: their asks are counted together, the
    comparisons planned on the newest."""
    from geomon.engine.store import answers_fingerprint

    if options is None:
        flags, options = run_config(settings, info, flags or {}, profile)
    elif flags is None:
        flags = {o.dest: options.get(o.config) for o in info.options}
    upstream: dict[str, Any] = {}
    revisions = registry.suite(info.name).pipeline.revisions
    frames: dict[str | None, pd.DataFrame] = {}  # the prompts each revision a run evaluates asks, oldest first
    newest = None
    if prompts is None and revisions is not None:
        # each revision at the options a run gives it: the prompts stage's defaults and the revision's own
        *older, newest = revisions.resolve(settings)
        defaults = {o.name: o.default for o in registry.suite(info.name).pipeline.prompts.options}
        by_revision = {key: {**defaults, **given} for key, given in revisions.options(flags, [*older, newest]).items()}
        options = by_revision[newest]
        frames = {key: build_prompts(settings, info.name, by_revision[key], upstream, key)[0] for key in older}
    if prompts is None:
        prompts, asking = build_prompts(settings, info.name, options, upstream, newest)
    else:
        asking = next(s for s in registry.suite(info.name).pipeline.stages if s.requests is not None)
    frames[newest] = prompts
    clusters = _clusters(prompts, info.unit)
    min_effects = settings.verdicts.min_effects
    planned = comparisons(info, prompts, min_effects)
    option = sample_option(info.name)
    population = {}
    if full_size:
        everything = prompts
        if options.get(option):
            everything, _ = build_prompts(settings, info.name, {**options, option: 0}, upstream, newest)  # 0: all
        population = {(c.metric, c.breakdown): c.clusters for c in comparisons(info, everything, min_effects)}
    measured = measured_spreads(history, info.name) if measured is None else measured
    powered(planned, settings, info.name, history, population, measured)
    paging = sum(c.in_family and not c.disparity for c in planned)
    marks = headlines(info, clusters, settings, history, paging, measured)
    plans = []
    digest = settings.digest()
    sample = sample_id(prompts)
    for spec in models:
        # the stored answers each revision's asks read (one "revision", None, in a suite without revisions)
        read = {revision: asked_keys(asking, frame, spec, settings) for revision, frame in frames.items()}
        scores = {key: scored for revision_keys in read.values() for key, scored in revision_keys.items()}
        keys = list(scores)
        held = store.get_many(keys)
        stored = len(held)
        speed = pace(store, spec)
        seconds = tokens = cost = None
        remaining = len(keys) - stored
        if speed is not None:
            seconds = remaining * speed["latency_s"] / parallelism(settings, spec)
            inputs, outputs = remaining * speed["prompt_tokens"], remaining * speed["completion_tokens"]
            tokens = int(inputs + outputs)
            if spec.price_input_per_million is not None and spec.price_output_per_million is not None:
                cost = (inputs * spec.price_input_per_million + outputs * spec.price_output_per_million) / 1e6
        note = "" if speed else "no answers stored yet: time and tokens unknown (geomon plan --probe measures)"
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
                settings.budget.asks_per_suite,
                option,
                answers_fingerprint(list(read[newest]), digest),
                sample,
                {
                    revision: answers_fingerprint(list(k), digest)
                    for revision, k in read.items()
                    if revision is not None
                },
                sum(scored and key not in held for key, scored in scores.items()),
            )
        )
    return plans


PAIRED = "the release's last decision (paired)"


def paired_comparisons(history: Any, plan: SuitePlan) -> list[Comparison]:
    """A release's comparisons (``plan``: its model's) planned as its decision plans them — from the pair's paired
    differences — where the same release has been decided on this suite before: each one's MDE as its latest
    evaluation's decision stated it, at that decision's sample (source ``PAIRED``; not rescaled: the clusters a
    comparison tests are not the sample's — BorderLines tests the territories with a known controller — so a rescaled
    MDE would flatter a smaller sample). The others keep the plan for one model (``powered``): how much of a release
    changes is known only once both models are asked."""
    evaluations = history.evaluations(suite=plan.suite, model=plan.model) if history is not None else None
    if evaluations is None or evaluations.empty:
        return plan.comparisons
    rows = history.comparisons(evaluations["evaluation_id"].iloc[-1:])  # one scope: the latest evaluation's
    rows = rows[rows["mde"].notna() & (rows["clusters"].fillna(0) >= sufficiency.MIN_SAMPLE)]
    latest = {(r.metric, r.breakdown or ""): r for r in rows.itertuples()}
    out = []
    for c in plan.comparisons:
        row = latest.get((c.metric, c.breakdown))
        out.append(c if row is None else replace(c, mde=float(row.mde), source=PAIRED))
    return out


def make_plan(
    settings: Any,
    models: list[ModelSpec],
    suites: list[registry.SuiteInfo],
    profile: str,
    store: Any,
    history: Any,
    full_size: bool = False,
    flags: dict[str, dict[str, Any]] | None = None,
) -> list[SuitePlan]:
    """Every model × suite at ``profile`` (and ``geomon run``'s ``flags``, by suite); nothing is asked
    (``full_size``: as ``suite_plans``)."""
    return [
        p
        for info in suites
        for p in suite_plans(
            settings, models, info, profile, store, history, full_size=full_size, flags=(flags or {}).get(info.name)
        )
    ]


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


CONFIRM_HOW = (
    "`geomon run --yes`; in the Dagster UI, launch the prompts again with `confirm: true` in their config (Launchpad); "
    "or raise confirm_above_minutes / confirm_above_usd in geomon.yaml"
)


def above_limits(settings: Any, plans: list[SuitePlan]) -> str:
    """Why a run of ``plans`` waits for a confirmation: its estimate on the models it would ask, above
    ``confirm_above_minutes`` or ``confirm_above_usd`` (geomon.yaml); "" when it does not (below both, or a
    pace not known yet: ``geomon plan --probe`` measures it)."""
    total = totals(plans)
    asked = ", ".join(sorted({p.model for p in plans if p.to_ask}))
    minutes = total["seconds"] / 60 if total["seconds"] is not None else None
    reasons = []
    if minutes is not None and 0 < settings.confirm_above_minutes < minutes:
        reasons.append(
            f"about {duration(total['seconds'])} ({total['to_ask']:,} asks on {asked}), above "
            f"confirm_above_minutes {settings.confirm_above_minutes:g}"
        )
    if total["cost"] is not None and 0 < settings.confirm_above_usd < total["cost"]:
        reasons.append(f"about ${total['cost']:,.2f}, above confirm_above_usd {settings.confirm_above_usd:g}")
    return "; ".join(reasons)


def probe(settings: Any, spec: ModelSpec, requests: list[GenerationRequest], store: Any, count: int = 3) -> None:
    """Ask ``count`` of ``requests`` through the store (the answers stay: a later run does not ask them again),
    so the plan knows the model's pace."""
    from geomon.engine.runner import ask

    ask(spec, requests[:count], store, epoch=settings.cache_epoch, options=settings.engine)


def table(plans: list[SuitePlan]) -> pd.DataFrame:
    """The plan as rows a person reads: one per model × suite, with the headlines' MDE."""
    rows = []
    for p in plans:
        mde = "; ".join(headline_mde(p, h) for h in p.headlines)
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


def blind_lines(plan: SuitePlan) -> list[str]:
    """Each comparison ``plan``'s sample cannot decide, why, and what would (``SuitePlan.remedy``): one line per
    reason, the groups that share it named together (``sem_b_local (country=China, Greece): 8 clusters < 30; …``)."""
    shared: dict[tuple[str, str, str], list[str]] = {}
    for c in plan.comparisons:
        if c.decidable:
            continue
        reason = "; ".join(w for w in (c.why, plan.remedy(c)) if w)
        column, value = last_group(c.breakdown)
        shared.setdefault((c.metric, column, reason), []).append(value)
    blind = [c for c in plan.comparisons if not c.decidable]
    worst = sum(c.source == WORST_CASE for c in blind)
    lines = [f"(the MDE of {worst} of them is the {WORST_CASE}: none is stored yet)"] if worst else []
    measured = sum(c.source == MEASURED for c in blind)
    if measured:
        lines.append(f"(the MDE of {measured} of them is {MEASURED}: its variance, planned as its comparison would be)")
    for (metric, column, reason), values in shared.items():
        where = breakdown_by("", column, ", ".join(values)) if any(values) else column
        lines.append(f"{metric}{f' ({where})' if where else ''}: {reason}")
    return lines


def headline_mde(plan: SuitePlan, headline: Headline) -> str:
    """``mean_error 0.154``, ``mean_error 0.4 (not decidable at this profile)`` (its MDE above its minimum effect),
    ``region_disparity_mean not decidable`` (too few clusters to be tested), ``… ?`` (no spread known yet)."""
    name = MetricKey(headline.metric, headline.breakdown)
    mine = next((c for c in plan.comparisons if (c.metric, c.breakdown) == (headline.metric, headline.breakdown)), None)
    if mine is not None and not mine.in_family:
        return f"{name} not decidable"
    mde = mine.mde if mine is not None and mine.mde is not None else headline.mde
    if mde is None:
        return f"{name} ?"
    return f"{name} {mde:.3g}" + ("" if mine is None or mine.decidable else " (not decidable at this profile)")


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
