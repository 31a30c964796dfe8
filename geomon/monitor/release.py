"""The decision over the history, in one room: record an evaluation, compare it with its baseline, decide, tell people.

Each evaluation is compared with its *baseline*, in release order: the model's previous evaluation in the
same suite and scope, or, for a model's first one there, its predecessor's (the previous release of the
same line: its latest evaluation no later than this one, else its first). When an evaluation arrives out of
order (a predecessor's after its successor's, an older run imported late) the evaluations whose baseline
it becomes are compared again, so importing the same runs in any order gives the same history.

The paired tests are the suites' declared metrics (``geomon.stats.declarations``). A suite's comparisons in one
evaluation are decided together, at the α of the look it takes in the release (``ReleasePlan.take_look``: the
suite's share of the release's α, ``verdicts.ReleasePlan``, with its import slots and reserve), when the evaluation
is recorded: the decision does not wait for, or change with, the release's other suites. A decision reads once,
decides, writes once (``compare_and_decide``): the history reads what it rests on (``decision_inputs``: the
baseline, the release's plan and looks), the choice of look and the comparison are pure (``take_look``;
``stats.compare.compare``: pair, plan, decide), and the history writes the look and the comparisons in one
transaction (``record_decision``). Recording, deciding and announcing one suite's series happen under one lock
(``MetricHistory.lock``), and ``announce`` (``geomon.monitor.announce``) tells people about every regression a
decision creates or withdraws, exactly once, from the record of what was sent. The gates read what stands
(``standing``, ``failing``); how it is shown is ``monitor.views``'.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

import pandas as pd

from geomon.monitor.history import Evaluation, EvaluationRun, MetricHistory, MetricValue
from geomon.stats import bootstrap, compare, declarations, verdicts
from geomon.stats.declarations import TrackedMetric
from geomon.stats.values import MetricKey, finite
from geomon.stats.verdicts import Comparison


class TrackingError(ValueError):
    """An evaluation that cannot be recorded as declared (the message names the suite, metric and field)."""


@dataclass
class Tracked:
    """What recording an evaluation decided: the evaluation, its stored comparisons, and what it was compared
    with."""

    evaluation: Evaluation
    verdicts: list[Comparison] = field(default_factory=list)
    against: str = ""  # "previous run", "predecessor <model>", or "" (nothing to compare with)
    redecided: list[Evaluation] = field(default_factory=list)  # later evaluations this one became the baseline of
    told: dict[str, list[str]] = field(default_factory=dict)  # per evaluation id: what the announcer did

    @property
    def regressions(self) -> list[Comparison]:
        return [v for v in self.verdicts if v.alerts]


def declared_figures(
    suite: str,
    tracked: Sequence[TrackedMetric],
    items: pd.DataFrame,
    others: Sequence[MetricValue] = (),
    seed: int = 0,
) -> list[MetricValue]:
    """Each tracked metric's value, interval and sample (its clusters) from its declaration over ``items`` — the
    one definition every surface shows, computed once, here — then ``others``, the evaluation's figures no tracked
    metric declares (counts, a paper's own statistics: recorded, never compared). A figure in ``others`` that a
    tracked metric declares is an error naming it: a tracked headline has one definition."""
    second = [v for v in others if any(m.declares(v.metric, v.breakdown) for m in tracked)]
    if second:
        named = ", ".join(str(MetricKey(v.metric, v.breakdown)) for v in second[:5])
        raise TrackingError(
            f"suite {suite}: {named} handed in beside the items, but a tracked metric declares it: a tracked "
            "headline has one definition, its declared statistic over the items (leave it out of the figures "
            "the tracked stage hands in)"
        )
    figures: dict[tuple[str, str], MetricValue] = {}
    for metric in tracked:
        try:
            found = bootstrap.estimates(metric, items, seed=seed, where=f"suite {suite}")
        except declarations.DeclarationError as exc:
            raise TrackingError(str(exc)) from None
        for e in found:
            figures[(e.metric, e.breakdown)] = MetricValue(
                e.metric,
                e.value,
                e.breakdown,
                finite(e.ci_low),
                finite(e.ci_high),
                e.clusters,
                finite(e.se),
                declarations.declaration_digest(metric),
            )
    return [*figures.values(), *others]


def headline_figures(metrics: Sequence[MetricValue], tracked: Sequence[TrackedMetric]) -> dict[str, Any]:
    """The tracked overall headlines as flat figures: ``<metric>``, ``<metric>_ci_low``, ``<metric>_ci_high``
    and ``<metric>_n`` (its clusters: the sample of the sufficiency rule)."""
    names = {m.name for m in tracked if not m.breakdown}
    out: dict[str, Any] = {}
    for value in metrics:
        if value.metric in names and not value.breakdown:
            out[value.metric] = value.value
            out[f"{value.metric}_ci_low"] = value.ci_low
            out[f"{value.metric}_ci_high"] = value.ci_high
            out[f"{value.metric}_n"] = value.n
    return out


def headline_into_summary(result: Any, metrics: Sequence[MetricValue], tracked: Sequence[TrackedMetric]) -> None:
    """A tracked stage's ``summary`` (what its leaderboard row shows) takes the declared figures, so the
    leaderboard, the history, the alerts and the trends show the same value, interval and sample."""
    summary = result.get("summary") if isinstance(result, dict) else None
    if isinstance(summary, dict):
        summary.update(headline_figures(metrics, tracked))


Announcer = Callable[[MetricHistory, Sequence[Evaluation]], dict[str, list[str]]]


def release_plan(settings: verdicts.VerdictSettings, hosted: bool = True) -> verdicts.ReleasePlan:
    """The α-sharing a release starts with (``verdicts.ReleasePlan``): over every registered suite when geomon
    runs the model (``hosted``), over the import slots and ``verdicts.shares`` alone when it only arrives by
    import."""
    from geomon.suites import registry

    return verdicts.ReleasePlan.of(settings, list(registry.suites()), hosted)


def track(
    history: MetricHistory,
    run: EvaluationRun,
    figures: list[MetricValue],
    items: pd.DataFrame,
    tracked: Sequence[TrackedMetric],
    settings: verdicts.VerdictSettings,
    *,
    plan: verdicts.ReleasePlan | None = None,
    announcer: Announcer | None = None,
    replies: pd.DataFrame | None = None,
) -> Tracked:
    """Record ``run``'s evaluation (once: ``MetricHistory.record``), compare it with its baseline and decide it at
    the look's α (``ReleasePlan.look``; ``plan``: the registered suites' by default), compare and decide again the
    evaluations whose baseline it becomes, and let ``announcer`` tell people what those decisions changed —
    all under the suite's lock. An evaluation identical to one already stored (a re-run of unchanged answers,
    a retried step) is not compared again: its stored verdicts stand, and are returned (the announcer still
    sees it: an alert that never reached anyone is tried again). ``figures`` are recorded as given: the caller
    computes them once, from ``items`` (``declared_figures``: the factory for a suite's tracked stage, the
    imports for a file), and shows the same ones; ``replies``: every item as scored, kept for ``geomon items``."""
    tracked = declarations.with_min_effects(tracked, settings.min_effects)
    plan = plan or release_plan(settings)
    with history.lock(f"geomon decisions: {run.suite}"):
        current = history.record(run, figures, items=items, replies=replies)
        redecided = []
        if not current.reused:
            compare_and_decide(history, current, tracked, settings, plan)
            for dependent in _dependents(history, current):
                compare_and_decide(history, dependent, tracked, settings, plan)
                redecided.append(dependent)
        told = announcer(history, [current, *redecided]) if announcer is not None else {}
        out = stored(history, current)
    out.redecided, out.told = redecided, told
    return out


def stored(history: MetricHistory, evaluation: Evaluation) -> Tracked:
    """The verdicts stored for ``evaluation``, as every surface reads them."""
    decided = [Comparison.of(row) for row in history.comparisons([evaluation.evaluation_id]).to_dict("records")]
    return Tracked(evaluation, decided, decided[0].against if decided else "")


def _dependents(history: MetricHistory, evaluation: Evaluation) -> list[Evaluation]:
    """The evaluations whose baseline ``evaluation`` may now be: the model's next one in the scope, and the
    first one of each model whose predecessor it is."""
    out = []
    own = history.evaluations_of(evaluation.suite, evaluation.scope, model=evaluation.model, items=False)
    later = [
        e for e in own if e.evaluation_id != evaluation.evaluation_id and e.release_order > evaluation.release_order
    ]
    if later:
        out.append(later[0])
    successors = history.evaluations_of(evaluation.suite, evaluation.scope, successors_of=evaluation.model, items=False)
    firsts: dict[str, Evaluation] = {}
    for e in successors:
        firsts.setdefault(e.model, e)
    return [history.with_items(e) for e in [*out, *firsts.values()]]


def provisional(evaluation: Evaluation, before: Evaluation) -> bool:
    """Whether ``before`` is a fallback baseline, decided at the scope's reserve: the predecessor's evaluation made
    on a *later day* than its successor's (the release-order one, no later than the successor, may still arrive).
    One made later the same day — a ``geomon run`` of both models, the successor's suite done first — is the
    release's own baseline; and so is one of the same published history as the successor's
    (``EvaluationRun.published_history``, the same source): the source published its whole record at once, so no
    earlier evaluation of the predecessor is to come and its release order is final (Gapminder evaluated o1 after
    o3-mini)."""
    if before.model == evaluation.model or _day(before) <= _day(evaluation):
        return False
    return not (evaluation.published_history and before.published_history and _source(before) == _source(evaluation))


def _day(evaluation: Evaluation) -> date:
    return evaluation.release_order[0].date()


def _source(evaluation: Evaluation) -> str:
    """``import:<source>:<key>`` → ``<source>``."""
    return evaluation.origin.split(":", 2)[1] if evaluation.origin.count(":") >= 2 else evaluation.origin


def compare_and_decide(
    history: MetricHistory,
    evaluation: Evaluation,
    tracked: Sequence[TrackedMetric],
    settings: verdicts.VerdictSettings,
    plan: verdicts.ReleasePlan,
) -> None:
    """Compare ``evaluation`` with its baseline on every tracked metric at the look's α and store the decision:
    read once (``MetricHistory.decision_inputs``: the baseline, the release's plan and looks), decide (the look,
    ``ReleasePlan.take_look``: the suite's share of the release's α, the plan stored with the release's first
    decision or ``plan``; the comparisons paired, planned and decided together by ``stats.compare.compare``), write
    once (``MetricHistory.record_decision``: the look and the comparisons in one transaction) — under the model's
    release lock, so two suites of one release never both take its last slot. Nothing to compare with: nothing
    stored."""
    with history.lock(f"geomon release: {evaluation.model}"):  # its releases' plans and looks: one writer at a time
        inputs = history.decision_inputs(evaluation) if evaluation.items is not None else None
        if inputs is None:
            history.record_decision(evaluation, [])
            return
        before = inputs.baseline
        stored = verdicts.ReleasePlan.from_json(inputs.plan) if inputs.plan is not None else plan
        pair = (evaluation.evaluation_id, before.evaluation_id)
        look = stored.take_look(inputs.looks, evaluation.suite, evaluation.scope, pair, provisional(evaluation, before))
        spent = look.kind == verdicts.LookKind.SPENT
        # A look with no α left is decided at the reserve's level to show what it would say, and pages nothing.
        alpha = stored.look(evaluation.suite, verdicts.LookKind.RESERVE) if spent else look.alpha
        profiled = evaluation.origin == "geomon"  # an imported evaluation's sample was never a profile's
        try:
            tests, decided, missing = compare.compare(
                tracked, before.items, evaluation.items, alpha, settings, profiled=profiled
            )
        except compare.PairingError as exc:
            raise TrackingError(f"suite {evaluation.suite}, {evaluation.model}: {exc}") from None
        rows = [
            replace(
                v,
                evaluation_id=evaluation.evaluation_id,
                against_evaluation_id=before.evaluation_id,
                against=inputs.against,
                release=inputs.release,
                se=finite(t.se),
                note=(v.note or t.note)[:500],
                alpha=look.alpha,
                missing=missing,
                look=str(look.kind),
                alpha_zero=look.why,
                verdict=verdicts.REBASED if spent and v.verdict == verdicts.REGRESSION else v.verdict,
            )
            for t, v in zip(tests, decided, strict=True)
        ]
        history.record_decision(evaluation, rows, inputs.release, look, None if inputs.plan else stored.to_json())


def standing(history: MetricHistory, evaluation: Evaluation) -> list[Comparison]:
    """Every regression the gates of ``evaluation`` read, each with the ``evaluation_id`` it was decided on: its
    own, and those of its release against the predecessor — the model's first evaluation in the suite's scope,
    decided against the predecessor's — which stand until acknowledged or withdrawn by a later decision against
    the predecessor: a re-run compared with the model's own previous run (a re-import, a new epoch) never
    clears them."""
    own = history.evaluations_of(evaluation.suite, evaluation.scope, model=evaluation.model, items=False)
    first = own[0].evaluation_id if own else evaluation.evaluation_id
    return _standing(history, {evaluation.evaluation_id: first})[evaluation.evaluation_id]


def _standing(history: MetricHistory, firsts: Mapping[str, str]) -> dict[str, list[Comparison]]:
    """``standing`` of each evaluation id, given its model's first evaluation in the suite's scope (``firsts``),
    from one read of their comparisons."""
    regressions: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    ids = dict.fromkeys([*firsts, *firsts.values()])
    for row in history.comparisons(ids, verdict=verdicts.REGRESSION).to_dict("records"):
        regressions[row["evaluation_id"]].append(row)
    out = {}
    for evaluation_id, first in firsts.items():
        own = regressions.get(evaluation_id, [])
        inherited = [r for r in regressions.get(first, []) if r["against"].startswith("predecessor ")]
        chosen = sorted(own + inherited, key=lambda r: r["id"]) if first != evaluation_id else own
        out[evaluation_id] = [Comparison.of(row) for row in chosen]
    return out


def failing(history: MetricHistory, evaluation: Evaluation) -> list[Comparison]:
    """The regressions ``evaluation``'s gates read (``standing``) that no operator has acknowledged: the
    no_regression check and the exit status of ``geomon run`` / ``geomon import`` fail on them, on every re-run,
    until a decision against the predecessor withdraws them or someone acknowledges that metric and breakdown."""
    return _unacknowledged(history, {evaluation.evaluation_id: standing(history, evaluation)})[evaluation.evaluation_id]


def failing_each(
    history: MetricHistory, evaluations: pd.DataFrame, asked: Collection[str]
) -> dict[str, list[Comparison]]:
    """``failing`` of each evaluation id ``asked`` about, given ``evaluations`` (rows of ``history.evaluations()``,
    oldest first, holding every evaluation of those models in those suites and scopes), in two reads of the history
    instead of three per evaluation: what every open-regressions table is built from."""
    series = evaluations.groupby(["suite", "model", "scope"], sort=False)["evaluation_id"]
    firsts = dict(zip(evaluations["evaluation_id"], series.transform("first"), strict=True))
    return _unacknowledged(history, _standing(history, {e: firsts[e] for e in asked}))


def _unacknowledged(history: MetricHistory, standing_of: Mapping[str, list[Comparison]]) -> dict[str, list[Comparison]]:
    """Each evaluation's standing regressions without those an acknowledgement covers (one read of them)."""
    acks = history.acknowledgements({r.evaluation_id for rows in standing_of.values() for r in rows})
    by_evaluation = dict(tuple(acks.groupby("evaluation_id", sort=False))) if len(acks) else {}
    empty = acks.iloc[:0]
    return {
        evaluation_id: [r for r in rows if not acknowledged(by_evaluation.get(r.evaluation_id, empty), r.key)]
        for evaluation_id, rows in standing_of.items()
    }


def acknowledged(acks: pd.DataFrame, key: MetricKey) -> bool:
    """Whether an acknowledgement covers this comparison (``key``): every regression of the evaluation (no metric),
    the metric's every breakdown ("*"), or exactly its breakdown ("" the overall figure)."""
    for ack in acks.to_dict("records"):
        if not ack["metric"]:
            return True
        if ack["metric"] == key.metric and ack.get("breakdown", "*") in ("*", key.breakdown):
            return True
    return False
