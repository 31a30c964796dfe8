"""The decision over the history, in one room: record an evaluation, compare it with its baseline, decide, tell people.

Each evaluation is compared with its *baseline*, in release order: the model's previous evaluation in the
same suite and scope, or, for a model's first one there, its predecessor's (the previous release of the
same line: its latest evaluation no later than this one, else its first). When an evaluation arrives out of
order (a predecessor's after its successor's, an older run imported late) the evaluations whose baseline
it becomes are compared again, so importing the same runs in any order gives the same history.

The paired tests are the suites' declared metrics (``geomon.stats.declarations``). A suite's comparisons in one
evaluation are decided together, at the α of the look it takes in the release (``spend``: the suite's share of
the release's α, ``verdicts.ReleasePlan``, with its import slots and reserve), when the evaluation is recorded:
the decision does not wait for, or change with, the release's other suites. The comparison itself is pure
(``stats.compare.compare``: pair, plan, decide); this module reads from the history what it rests on (the
baseline, the release's plan and looks), calls it, and writes the look and the verdicts (``compare_and_decide``).
Recording, deciding and announcing one suite's series happen under one lock (``MetricHistory.lock``), and
``announce`` (``geomon.monitor.announce``) tells people about every regression a decision creates or withdraws,
exactly once, from the record of what was sent. The gates read what stands (``standing``, ``failing``); how it
is shown is ``monitor.views``'.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd

from geomon.monitor.history import Evaluation, EvaluationRun, MetricHistory, MetricValue, StoredComparison
from geomon.stats import bootstrap, compare, declarations, verdicts
from geomon.stats.declarations import TrackedMetric
from geomon.stats.values import MetricKey, finite


class TrackingError(ValueError):
    """An evaluation that cannot be recorded as declared (the message names the suite, metric and field)."""


@dataclass
class Tracked:
    """What recording an evaluation decided: the evaluation, its stored verdicts (as rows), and what it was
    compared with."""

    evaluation: Evaluation
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    against: str = ""  # "previous run", "predecessor <model>", or "" (nothing to compare with)
    redecided: list[Evaluation] = field(default_factory=list)  # later evaluations this one became the baseline of
    told: dict[str, list[str]] = field(default_factory=dict)  # per evaluation id: what the announcer did

    @property
    def regressions(self) -> list[dict[str, Any]]:
        return [v for v in self.verdicts if v["verdict"] == verdicts.REGRESSION]


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
    rows = history.comparisons([evaluation.evaluation_id])
    records = rows.drop(columns=["id", "evaluation_id"]).to_dict("records") if len(rows) else []
    return Tracked(evaluation, records, str(rows["against"].iloc[0]) if len(rows) else "")


def baseline(history: MetricHistory, evaluation: Evaluation) -> tuple[Evaluation, str] | None:
    """What ``evaluation`` is compared with, in release order (module docstring)."""
    own = history.evaluations_of(evaluation.suite, evaluation.scope, model=evaluation.model, items=False)
    earlier = _before(own, evaluation)
    if earlier:
        return history.with_items(earlier[-1]), "previous run"
    if not evaluation.predecessor:
        return None
    theirs = history.evaluations_of(evaluation.suite, evaluation.scope, model=evaluation.predecessor, items=False)
    if not theirs:
        return None
    against = f"predecessor {evaluation.predecessor}"
    if earlier_own := _before(theirs, evaluation):
        return history.with_items(earlier_own[-1]), against
    return history.with_items(theirs[0]), against  # evaluated after its successor: still its predecessor


def _utc(moment: datetime) -> pd.Timestamp:
    stamp = pd.Timestamp(moment)
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp


def release_order(e: Evaluation) -> tuple[pd.Timestamp, str, pd.Timestamp]:
    """Release order: the evaluation date, then its origin (two imports dated the same day — the predecessor
    evaluated twice on its successor's day — are ordered by their source, never by which arrived first: arrival
    order must not choose a baseline), then when it was recorded."""
    return _utc(e.when), e.origin, _utc(e.recorded_at)


def _before(evaluations_: list[Evaluation], evaluation: Evaluation) -> list[Evaluation]:
    mine = release_order(evaluation)
    return [e for e in evaluations_ if e.evaluation_id != evaluation.evaluation_id and release_order(e) <= mine]


def _dependents(history: MetricHistory, evaluation: Evaluation) -> list[Evaluation]:
    """The evaluations whose baseline ``evaluation`` may now be: the model's next one in the scope, and the
    first one of each model whose predecessor it is."""
    out = []
    own = history.evaluations_of(evaluation.suite, evaluation.scope, model=evaluation.model, items=False)
    later = [
        e for e in own if e.evaluation_id != evaluation.evaluation_id and release_order(e) > release_order(evaluation)
    ]
    if later:
        out.append(later[0])
    successors = history.evaluations_of(evaluation.suite, evaluation.scope, successors_of=evaluation.model, items=False)
    firsts: dict[str, Evaluation] = {}
    for e in successors:
        firsts.setdefault(e.model, e)
    return [history.with_items(e) for e in [*out, *firsts.values()]]


@dataclass(frozen=True)
class Look:
    """The α one decision is taken at (``verdicts.FIRST``, ``RESERVE`` or ``SPENT``: none left) and why, when it is
    not the first look's."""

    alpha: float
    kind: str
    note: str = ""


def provisional(evaluation: Evaluation, before: Evaluation) -> bool:
    """Whether ``before`` is a fallback baseline: the predecessor's evaluation made on a *later day* than its
    successor's (the release-order one, no later than the successor, has not arrived). One made later the same
    day — a ``geomon run`` of both models, the successor's suite done first — is the release's own baseline."""
    return before.model != evaluation.model and _utc(before.when).date() > _utc(evaluation.when).date()


NEVER_PAGED = "(shown, never paged)"  # ends the note of a decision at α 0
PROVISIONAL_NOTE = (
    "provisional: decided at the scope's reserve against the predecessor's evaluation made on a later day; decided "
    "again at its first look when one made before it arrives"
)


def spend(
    history: MetricHistory, proposed: verdicts.ReleasePlan, release: str, evaluation: Evaluation, before: Evaluation
) -> Look:
    """The look this decision of ``evaluation`` against ``before`` takes in ``release``, under its lock: the plan
    stored with the release's first decision (``proposed`` becomes it when there is none); the suite's share split
    among its planned scopes (a suite outside the plan takes one of the import slots, in the order suites arrive,
    while one is free); in its scope, **the first look belongs to the release-order pair** — the decision against
    the baseline ``baseline`` gives in release order — and the reserve to a decision against a fallback baseline
    (``provisional``). A look is a property of the pair, never of the arrival: when an earlier-dated evaluation
    arrives (an earlier copy of the successor, the predecessor's release-order evaluation), the pair that holds the
    look changes and the look moves to it (``MetricHistory.move_look``: its α counted once), and the decision it
    leaves is decided again against its own baseline (a re-run's release). Deciding again against the same baseline
    takes the same look; a scope, slot or share with no α left is ``SPENT`` (α 0). Never more than the release's α
    in all."""
    plan = verdicts.ReleasePlan.from_json(history.release_plan(release, proposed.to_json()))
    looks = history.release_looks(release)
    suite, scope = evaluation.suite, evaluation.scope
    mine = looks[(looks["suite"] == suite) & (looks["scope"] == scope)]
    again = mine[
        (mine["evaluation_id"] == evaluation.evaluation_id) & (mine["against_evaluation_id"] == before.evaluation_id)
    ]
    if len(again):
        return Look(float(again["alpha"].iloc[0]), str(again["look"].iloc[0]), str(again["note"].iloc[0]))
    fallback = provisional(evaluation, before)
    kind = verdicts.RESERVE if fallback else verdicts.FIRST
    note = PROVISIONAL_NOTE if fallback else ""
    held = mine[mine["look"] == kind]
    if len(held):  # the pair that held it is no longer the release order's: the look moves, nothing is spent
        look = Look(float(held["alpha"].iloc[0]), kind, note)
        history.move_look(int(held["id"].iloc[0]), evaluation.evaluation_id, before.evaluation_id, note)
        return look
    why = _no_alpha(plan, looks, suite, scope)
    look = Look(0.0, verdicts.SPENT, f"{why} {NEVER_PAGED}") if why else Look(plan.look(suite, kind), kind, note)
    history.record_look(
        release=release,
        suite=suite,
        scope=scope,
        evaluation_id=evaluation.evaluation_id,
        against_evaluation_id=before.evaluation_id,
        look=look.kind,
        alpha=look.alpha,
        note=look.note,
    )
    return look


def _no_alpha(plan: verdicts.ReleasePlan, looks: pd.DataFrame, suite: str, scope: str) -> str:
    """Why ``suite``'s ``scope`` has no α in this release (its weight is 0; no import slot or scope left), or ""."""
    holding = looks[looks["look"] != verdicts.SPENT]
    if suite in plan.weights and plan.share(suite) == 0:
        return "α 0: its weight in verdicts.shares is 0"
    if suite not in plan.weights:
        if not plan.import_slots:
            return "α 0: not in the release plan, which keeps no import slots"
        holders = list(dict.fromkeys(s for s in holding["suite"] if s not in plan.weights))
        if suite not in holders and len(holders) >= plan.import_slots:
            return (
                f"no α left: the release's {plan.import_slots} import slot(s) are taken by {', '.join(holders)} (in "
                "the order they arrived): name this suite in verdicts.shares to page on it"
            )
    scopes = list(dict.fromkeys(holding[holding["suite"] == suite]["scope"]))
    planned = plan.scopes.get(suite, 1)
    if scope not in scopes and len(scopes) >= planned:
        return (
            f"no α left: suite {suite}'s share covers {planned} scope(s) per release, taken by {', '.join(scopes)}: "
            f"raise verdicts.scopes.{suite} to page on more"
        )
    return ""


def release_of(evaluation: Evaluation, against_model: str) -> str:
    """The release a comparison belongs to: a model identity against its predecessor; or, compared with its own
    previous evaluation (an API model asked again, a new epoch, a re-import), that re-run — a release of its own,
    labelled by the evaluation's day and id, so each re-run spends one α and two re-runs never share a look."""
    if against_model != evaluation.model:
        return f"{evaluation.model} vs {against_model}"
    return f"{evaluation.model} re-run {_utc(evaluation.when):%Y-%m-%d} ({evaluation.evaluation_id[:8]})"


def compare_and_decide(
    history: MetricHistory,
    evaluation: Evaluation,
    tracked: Sequence[TrackedMetric],
    settings: verdicts.VerdictSettings,
    plan: verdicts.ReleasePlan,
) -> None:
    """Compare ``evaluation`` with its baseline on every tracked metric at the look's α (``spend``: the suite's
    share of the release's α) — paired, planned and decided together by ``stats.compare.compare`` — and store the
    comparisons with their verdicts; nothing stored when there is nothing to compare with."""
    found = baseline(history, evaluation)
    if found is None or evaluation.items is None:
        history.record_comparisons(evaluation, [])
        return
    before, against = found
    release = release_of(evaluation, before.model)
    with history.lock(f"geomon release: {release}"):  # its plan and looks: one writer at a time
        look = spend(history, plan, release, evaluation, before)
    # A look with no α left is decided at the reserve's level to show what it would say, and pages nothing.
    alpha = look.alpha if look.kind != verdicts.SPENT else plan.look(evaluation.suite, verdicts.RESERVE)
    why = look.note
    profiled = evaluation.origin == "geomon"  # an imported evaluation's sample was never a profile's
    try:
        tests, decided, missing = compare.compare(
            tracked, before.items, evaluation.items, alpha, settings, profiled=profiled
        )
    except compare.PairingError as exc:
        raise TrackingError(f"suite {evaluation.suite}, {evaluation.model}: {exc}") from None
    rows = [
        {
            "against_evaluation_id": before.evaluation_id,
            "against": against,
            "metric": t.metric,
            "breakdown": t.breakdown,
            "before": finite(t.before),
            "after": finite(t.after),
            "change": finite(t.change),
            "worse_when": "higher" if t.higher_is_worse else "lower",
            "p_value": v.p_value,
            "se": finite(t.se),
            "items": t.items,
            "clusters": t.clusters,
            "min_effect": t.min_effect,
            "release": release,
            "family_size": v.family_size,
            "alpha": look.alpha,
            "p_adjusted": v.p_adjusted,
            "q_value": v.q_value,
            "mde": finite(v.mde),
            "power": finite(v.power),
            "level": finite(v.level),
            # The look's note always (why its α is what it is), first: the column holds 500 characters.
            "note": "; ".join(n for n in (why, v.note or t.note) if n)[:500],
            "verdict": v.verdict,
            "decidability": v.decidability,
            "missing": missing,
        }
        for t, v in zip(tests, decided, strict=True)
    ]
    if look.kind == verdicts.SPENT:
        for row in rows:
            if row["verdict"] == verdicts.REGRESSION:
                row["verdict"] = verdicts.REBASED
    history.record_comparisons(evaluation, rows)


def standing(history: MetricHistory, evaluation: Evaluation) -> list[StoredComparison]:
    """Every regression the gates of ``evaluation`` read, each with the ``evaluation_id`` it was decided on: its
    own, and those of its release against the predecessor — the model's first evaluation in the suite's scope,
    decided against the predecessor's — which stand until acknowledged or withdrawn by a later decision against
    the predecessor: a re-run compared with the model's own previous run (a re-import, a new epoch) never
    clears them."""
    own = history.evaluations_of(evaluation.suite, evaluation.scope, model=evaluation.model, items=False)
    first = own[0].evaluation_id if own else evaluation.evaluation_id
    return _standing(history, {evaluation.evaluation_id: first})[evaluation.evaluation_id]


def _standing(history: MetricHistory, firsts: Mapping[str, str]) -> dict[str, list[StoredComparison]]:
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
        out[evaluation_id] = [StoredComparison.of(row) for row in chosen]
    return out


def failing(history: MetricHistory, evaluation: Evaluation) -> list[StoredComparison]:
    """The regressions ``evaluation``'s gates read (``standing``) that no operator has acknowledged: the
    no_regression check and the exit status of ``geomon run`` / ``geomon import`` fail on them, on every re-run,
    until a decision against the predecessor withdraws them or someone acknowledges that metric and breakdown."""
    return _unacknowledged(history, {evaluation.evaluation_id: standing(history, evaluation)})[evaluation.evaluation_id]


def failing_each(
    history: MetricHistory, evaluations: pd.DataFrame, asked: Collection[str]
) -> dict[str, list[StoredComparison]]:
    """``failing`` of each evaluation id ``asked`` about, given ``evaluations`` (rows of ``history.evaluations()``,
    oldest first, holding every evaluation of those models in those suites and scopes), in two reads of the history
    instead of three per evaluation: what every open-regressions table is built from."""
    series = evaluations.groupby(["suite", "model", "scope"], sort=False)["evaluation_id"]
    firsts = dict(zip(evaluations["evaluation_id"], series.transform("first"), strict=True))
    return _unacknowledged(history, _standing(history, {e: firsts[e] for e in asked}))


def _unacknowledged(
    history: MetricHistory, standing_of: Mapping[str, list[StoredComparison]]
) -> dict[str, list[StoredComparison]]:
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
