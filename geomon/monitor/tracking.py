"""Record an evaluation, decide what changed and tell people: the one verdict engine over the metric history.

Each evaluation is compared with its *baseline*, in release order: the model's previous evaluation in the
same suite and scope, or, for a model's first one there, its predecessor's (the previous release of the
same line: its latest evaluation no later than this one, else its first). When an evaluation arrives out of
order (a predecessor's after its successor's, an older run imported late) the evaluations whose baseline
it becomes are compared again, so importing the same runs in any order gives the same history.

The paired tests are the suites' declared metrics (``geomon.stats.declared``). A suite's comparisons in one
evaluation are decided together, at the suite's share of the release's α (``verdicts.ReleasePlan``), when
the evaluation is recorded: the decision does not wait for, or change with, the release's other suites.
Recording, deciding and announcing one suite's series happen under one lock (``MetricHistory.lock``), and
``announce`` (``geomon.monitor.announce``) tells people about every regression a decision creates or
withdraws, exactly once, from the record of what was sent.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from statistics import NormalDist
from typing import Any

import pandas as pd

from geomon.monitor.history import Evaluation, MetricHistory, MetricValue
from geomon.stats import compare, declared, sufficiency, verdicts
from geomon.stats.declared import TrackedMetric
from geomon.stats.values import IMPORTED, series_change, series_key, unit


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


def declared_values(
    suite: str, tracked: Sequence[TrackedMetric], items: pd.DataFrame, own: Sequence[MetricValue] = (), seed: int = 0
) -> list[MetricValue]:
    """``own`` with each tracked metric's value, interval and sample (its clusters) from its declaration: the
    one definition every surface shows. A suite value that disagrees with its declared statistic is an error
    naming both (two definitions of one headline)."""
    computed = {}
    for metric in tracked:
        try:
            found = declared.estimates(metric, items, seed=seed, where=f"suite {suite}")
        except declared.DeclarationError as exc:
            raise TrackingError(str(exc)) from None
        for e in found:
            computed[(e.metric, e.breakdown)] = MetricValue(
                e.metric, e.value, e.breakdown, _finite(e.ci_low), _finite(e.ci_high), e.clusters
            )
    out = []
    for value in own:
        key = (value.metric, value.breakdown)
        if key in computed:
            mine = computed.pop(key)
            if not _agree(value.value, mine.value):
                raise TrackingError(
                    f"suite {suite}: {value.metric}{f' ({value.breakdown})' if value.breakdown else ''} is "
                    f"{value.value} as the suite computes it but {mine.value} by its declared statistic; a "
                    "tracked headline must have one definition"
                )
            out.append(mine)
        else:
            out.append(value)
    return out + list(computed.values())


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


def _finite(x: float) -> float | None:
    return x if x == x and abs(x) != float("inf") else None


def _agree(a: float | None, b: float | None) -> bool:
    a_ok, b_ok = a is not None and a == a, b is not None and b == b
    if not (a_ok and b_ok):
        return a_ok == b_ok
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


Announcer = Callable[[MetricHistory, Sequence[Evaluation]], dict[str, list[str]]]


def release_plan(settings: verdicts.VerdictSettings, hosted: bool = True) -> verdicts.ReleasePlan:
    """The α-sharing a release starts with (``verdicts.ReleasePlan``): over every registered suite when geomon
    runs the model (``hosted``), over the import slots and ``verdicts.shares`` alone when it only arrives by
    import."""
    from geomon.suites import registry

    return verdicts.ReleasePlan.of(settings, list(registry.suites()), hosted)


def track(
    history: MetricHistory,
    suite: str,
    model: str,
    metrics: list[MetricValue],
    items: pd.DataFrame,
    tracked: Sequence[TrackedMetric],
    settings: verdicts.VerdictSettings,
    *,
    scope: str = "",
    versions: dict[str, str] | None = None,
    predecessor: str | None = None,
    dagster_run_id: str = "",
    run_started_at: datetime | None = None,
    evaluated_at: datetime | None = None,
    origin: str = "geomon",
    figures_declared: bool = False,
    plan: verdicts.ReleasePlan | None = None,
    announcer: Announcer | None = None,
    replies: pd.DataFrame | None = None,
) -> Tracked:
    """Record this evaluation (once: ``MetricHistory.record``), compare it with its baseline and decide it at
    the suite's share of α (``plan``: the registered suites' by default), compare and decide again the
    evaluations whose baseline it becomes, and let ``announcer`` tell people what those decisions changed —
    all under the suite's lock. An evaluation identical to one already stored (a re-run of unchanged answers,
    a retried step) is not compared again: its stored verdicts stand, and are returned (the announcer still
    sees it: an alert that never reached anyone is tried again). ``figures_declared``: ``metrics`` already
    come from ``declared_values``; ``replies``: every item as scored, kept for ``geomon items``."""
    tracked = declared.with_min_effects(tracked, settings.min_effects)
    if not figures_declared:  # the caller has not made the declared figures yet (bootstraps are not free)
        metrics = declared_values(suite, tracked, items, metrics)
    plan = plan or release_plan(settings)
    with history.lock(f"geomon decisions: {suite}"):
        current = history.record(
            suite,
            model,
            metrics,
            scope=scope,
            items=items,
            versions=versions,
            dagster_run_id=dagster_run_id,
            run_started_at=run_started_at,
            evaluated_at=evaluated_at,
            origin=origin,
            predecessor=predecessor or "",
            replies=replies,
        )
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
    own = history.evaluations_of(evaluation.suite, evaluation.scope, model=evaluation.model)
    earlier = _before(own, evaluation)
    if earlier:
        return earlier[-1], "previous run"
    if not evaluation.predecessor:
        return None
    theirs = history.evaluations_of(evaluation.suite, evaluation.scope, model=evaluation.predecessor)
    if not theirs:
        return None
    if earlier_own := _before(theirs, evaluation):
        return earlier_own[-1], f"predecessor {evaluation.predecessor}"
    return theirs[0], f"predecessor {evaluation.predecessor}"  # evaluated after its successor: still its predecessor


def _utc(moment: datetime) -> pd.Timestamp:
    stamp = pd.Timestamp(moment)
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp


def release_order(e: Evaluation) -> tuple[pd.Timestamp, pd.Timestamp]:
    """Release order: the evaluation date, then when it was recorded."""
    return _utc(e.when), _utc(e.recorded_at)


def _before(evaluations_: list[Evaluation], evaluation: Evaluation) -> list[Evaluation]:
    mine = release_order(evaluation)
    return [e for e in evaluations_ if e.evaluation_id != evaluation.evaluation_id and release_order(e) <= mine]


def _dependents(history: MetricHistory, evaluation: Evaluation) -> list[Evaluation]:
    """The evaluations whose baseline ``evaluation`` may now be: the model's next one in the scope, and the
    first one of each model whose predecessor it is."""
    out = []
    own = history.evaluations_of(evaluation.suite, evaluation.scope, model=evaluation.model)
    later = [
        e for e in own if e.evaluation_id != evaluation.evaluation_id and release_order(e) > release_order(evaluation)
    ]
    if later:
        out.append(later[0])
    successors = history.evaluations_of(evaluation.suite, evaluation.scope, successors_of=evaluation.model)
    firsts: dict[str, Evaluation] = {}
    for e in successors:
        firsts.setdefault(e.model, e)
    return out + list(firsts.values())


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
    history: MetricHistory, proposed: verdicts.ReleasePlan, family: str, evaluation: Evaluation, before: Evaluation
) -> Look:
    """The look this decision of ``evaluation`` against ``before`` takes in the release ``family``, under its lock:
    the plan stored with the release's first decision (``proposed`` becomes it when there is none); the suite's
    share split among its planned scopes (a suite outside the plan takes one of the import slots, in the order
    suites arrive, while one is free); in its scope, the first look, and the reserve for a decision against a
    fallback baseline (``provisional``) or against a changed one. Deciding again against the same baseline takes
    the same look; a look with no α left is ``SPENT`` (α 0). Never more than the release's α in all."""
    plan = verdicts.ReleasePlan.from_json(history.release_plan(family, proposed.to_json()))
    looks = history.release_looks(family)
    suite, scope = evaluation.suite, evaluation.scope
    # The scope's looks in this release, whichever of the model's evaluations took them: a second evaluation of
    # the model against the same predecessor (one dated earlier, arriving late) takes the reserve, not a new first.
    mine = looks[(looks["suite"] == suite) & (looks["scope"] == scope)]
    again = mine[
        (mine["evaluation_id"] == evaluation.evaluation_id) & (mine["against_evaluation_id"] == before.evaluation_id)
    ]
    if len(again):
        return Look(float(again["alpha"].iloc[0]), str(again["look"].iloc[0]), str(again["note"].iloc[0]))
    taken = set(mine["look"])
    fallback = provisional(evaluation, before)
    kind = verdicts.RESERVE if fallback or verdicts.FIRST in taken else verdicts.FIRST
    why = _no_alpha(plan, looks, suite, scope)
    if not why and kind in taken:
        why = "no α left: the scope's first look and its reserve are spent (decisions against earlier baselines)"
    if why:
        look = Look(0.0, verdicts.SPENT, f"{why} {NEVER_PAGED}")
    else:
        note = "" if kind == verdicts.FIRST else PROVISIONAL_NOTE if fallback else REBASED_NOTE
        look = Look(plan.look(suite, kind), kind, note)
    history.record_look(
        family=family,
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
        tests, decided = compare.compare(tracked, before.items, evaluation.items, alpha, settings, profiled=profiled)
    except compare.PairingError as exc:
        raise TrackingError(f"suite {evaluation.suite}, {evaluation.model}: {exc}") from None
    rows = [
        {
            "against_evaluation_id": before.evaluation_id,
            "against": against,
            "metric": t.metric,
            "breakdown": t.breakdown,
            "before": _finite(t.before),
            "after": _finite(t.after),
            "change": _finite(t.change),
            "worse_when": "higher" if t.higher_is_worse else "lower",
            "p_value": v.p_value,
            "se": _finite(t.se),
            "items": t.items,
            "clusters": t.clusters,
            "min_effect": t.min_effect,
            "family": release,
            "family_size": v.family_size,
            "alpha": look.alpha,
            "p_adjusted": v.p_adjusted,
            "q_value": v.q_value,
            "mde": _finite(v.mde),
            "power": _finite(v.power),
            # The look's note always (why its α is what it is), first: the column holds 500 characters.
            "note": "; ".join(n for n in (why, v.note or t.note) if n)[:500],
            "verdict": v.verdict,
        }
        for t, v in zip(tests, decided, strict=True)
    ]
    if look.kind == verdicts.SPENT:
        for row in rows:
            if row["verdict"] == verdicts.REGRESSION:
                row["verdict"] = verdicts.REBASED
    history.record_comparisons(evaluation, rows)


REBASED_NOTE = (
    "decided again against a baseline that changed: at the scope's reserve (the first look was spent against the "
    "earlier baseline)"
)


def standing(history: MetricHistory, evaluation: Evaluation) -> list[dict[str, Any]]:
    """Every regression the gates of ``evaluation`` read, each with the ``evaluation_id`` it was decided on: its
    own, and those of its release against the predecessor — the model's first evaluation in the suite's scope,
    decided against the predecessor's — which stand until acknowledged or withdrawn by a later decision against
    the predecessor: a re-run compared with the model's own previous run (a re-import, a new epoch) never
    clears them."""
    own = history.evaluations_of(evaluation.suite, evaluation.scope, model=evaluation.model)
    first = own[0].evaluation_id if own else evaluation.evaluation_id
    rows = history.comparisons(dict.fromkeys([first, evaluation.evaluation_id]))
    if rows.empty:
        return []
    inherited = (rows["evaluation_id"] == first) & rows["against"].str.startswith("predecessor ")
    chosen = rows[
        (rows["verdict"] == verdicts.REGRESSION) & ((rows["evaluation_id"] == evaluation.evaluation_id) | inherited)
    ]
    return chosen.drop(columns=["id"]).to_dict("records")


def failing(history: MetricHistory, evaluation: Evaluation) -> list[dict[str, Any]]:
    """The regressions ``evaluation``'s gates read (``standing``) that no operator has acknowledged: the
    no_regression check and the exit status of ``geomon run`` / ``geomon import`` fail on them, on every re-run,
    until a decision against the predecessor withdraws them or someone acknowledges that metric and breakdown."""
    rows = standing(history, evaluation)
    acks = history.acknowledgements({r["evaluation_id"] for r in rows})
    return [r for r in rows if not acknowledged(acks[acks["evaluation_id"] == r["evaluation_id"]], r)]


def acknowledged(acks: pd.DataFrame, comparison: dict[str, Any]) -> bool:
    """Whether an acknowledgement covers this comparison: every regression of the evaluation (no metric), the
    metric's every breakdown ("*"), or exactly its breakdown ("" the overall figure)."""
    for ack in acks.to_dict("records"):
        if not ack["metric"]:
            return True
        if ack["metric"] == comparison["metric"] and ack.get("breakdown", "*") in ("*", comparison["breakdown"]):
            return True
    return False


def verdict_text(verdict: dict[str, Any]) -> str:
    """``correct_rate (language=en) regression -17.2`` — a stored verdict in one phrase."""
    breakdown = f" ({verdict['breakdown']})" if verdict.get("breakdown") else ""
    change = verdict.get("change")
    moved = f" {change:+.3g}" if isinstance(change, float) and change == change else ""
    return f"{verdict['metric']}{breakdown} {verdict['verdict']}{moved}"


def _worse(verdict: str) -> bool:
    """A regression of any kind (paged, below the alert threshold, found against a late baseline) or a widened
    disparity: what a suite's report names."""
    return verdict.startswith(verdicts.REGRESSION) or verdict == verdicts.WIDENED


def latest_verdicts(history: MetricHistory, suite: str) -> pd.DataFrame:
    """Per model and scope, the stored verdicts of its latest evaluation in ``suite`` in a phrase (``1
    regression, 3 no detectable change``; empty where nothing was compared), its regressions named
    (``accuracy regression -12.5``; empty where none), and the comparisons not decidable at the run's profile or
    sample (``blind``: their MDE above their minimum effect, or too few clusters to be tested, so "no
    detectable change" is not "no regression"): what a leaderboard row and a suite's report show."""
    columns = ["model", "scope", "verdicts", "regressions", "blind"]
    evaluations = history.evaluations(suite=suite)
    if evaluations.empty:
        return pd.DataFrame(columns=columns)
    latest = evaluations.groupby(["model", "scope"], sort=False).tail(1)
    tests = history.comparisons(latest["evaluation_id"])
    phrases, named, blind = {}, {}, {}
    for evaluation, rows in tests.groupby("evaluation_id"):
        records = rows.to_dict("records")
        phrases[evaluation] = verdicts.summary(records)
        named[evaluation] = "; ".join(verdict_text(r) for r in records if _worse(r["verdict"]))
        blind[evaluation] = profile_blind(records)
    return latest.assign(
        verdicts=[phrases.get(e, "") for e in latest["evaluation_id"]],
        regressions=[named.get(e, "") for e in latest["evaluation_id"]],
        blind=[blind.get(e, "") for e in latest["evaluation_id"]],
    )[columns]


def profile_blind(rows: Sequence[Mapping[str, Any]], shown: int = 4) -> str:
    """The stored comparisons no verdict could be read from, by why: ``not decidable at this profile (power below
    the stated power at the minimum effect; …): mean_error, parse_rate and 3 more; not decidable at this sample
    (too few clusters; …): mean_error (region=…) and 5 more``; "" where there is none."""
    plan = "; `geomon plan` says what would be"
    wide = "power below the stated power at the minimum effect"
    kinds = (
        (sufficiency.PROFILE_PREFIX, wide + plan),
        (sufficiency.PUBLISHED_PREFIX, wide),  # an imported evaluation: no profile of geomon's sized it
        (
            sufficiency.SAMPLE_PREFIX,
            f"fewer than {sufficiency.MIN_SAMPLE} clusters, or a value outside its range{plan}",
        ),
    )
    parts = []
    for prefix, why in kinds:
        names = [
            f"{r['metric']} ({r['breakdown']})" if r.get("breakdown") else str(r["metric"])
            for r in rows
            if str(r.get("note") or "").startswith(prefix)
        ]
        if names:
            more = f" and {len(names) - shown} more" if len(names) > shown else ""
            parts.append(f"{prefix.rstrip(': ')} ({why}): {', '.join(names[:shown])}{more}")
    return "; ".join(parts)


def new_series(history: MetricHistory, suite: str) -> dict[str, str]:
    """Per evaluation id of ``suite``, why it starts a new series (``values.series_change``: ``new series: scorer
    changed``) where the model's previous evaluation on the same line (the same scope key) — for a model's first,
    its predecessor's — was of another version of the benchmark: it is never compared with it."""
    out: dict[str, str] = {}
    latest: dict[tuple[str, str], str] = {}  # (model, scope key) → the scope of its latest evaluation so far
    for row in history.evaluations(suite=suite).itertuples(index=False):
        key = series_key(row.scope)
        before = latest.get((row.model, key)) or latest.get((row.predecessor, key))
        if before is not None and (change := series_change(before, row.scope)):
            out[row.evaluation_id] = change
        latest[(row.model, key)] = row.scope
    return out


HISTORY_COLUMNS = [
    "model",
    "evaluated_at",
    "metric",
    "breakdown",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "predecessor",
    "change",
    "p_value",
    "p_adjusted",
    "alpha",
    "mde",
    "power",
    "verdict",
    "note",
    "origin",
    "evaluation_id",
]


def history_table(
    history: MetricHistory,
    suite: str,
    headlines: Sequence[tuple[str, str]] | None = None,
    model: str | None = None,
    breakdowns: bool | str = False,
    bounds: dict[str, tuple[float, float] | None] | None = None,
) -> pd.DataFrame:
    """One row per evaluation, metric and breakdown with its stored comparison: ``predecessor`` (previous run
    or the predecessor model), ``change`` (after − before), ``p_value`` (one-sided, the way it moved),
    ``p_adjusted`` (Holm, over the suite's comparisons), ``alpha`` (the suite's share of the release's α that
    ``p_adjusted`` is compared with), ``mde`` and ``verdict`` (empty where nothing was
    compared); ``note`` marks an insufficient sample, says why a comparison is undefined or insufficient, and
    where an evaluation starts a new series (``new_series``).

    ``headlines`` (metric, breakdown) pairs select the rows (BorderLines' headlines are ``persona=vanilla``);
    None keeps the overall figures and whatever was compared — as evaluations imported from per-item outcomes
    always do, under any suite's name (their metrics are the import's, not the suite's headlines).
    ``breakdowns``: True adds every breakdown of those metrics (each country of sem_b_local), a text only the
    breakdowns containing it."""
    series = history.series(suite=suite, model=model)
    if series.empty:
        return pd.DataFrame(columns=HISTORY_COLUMNS)
    tests = history.comparisons(series["evaluation_id"].unique())
    compared = set(zip(tests["metric"], tests["breakdown"], strict=True))
    pairs = set(headlines) if headlines is not None else {(m, "") for m in series["metric"]} | compared
    imported = series["scope"].map(series_key).str.startswith(IMPORTED).to_numpy()
    chosen = [
        (m, b) in pairs or (elsewhere and (b == "" or (m, b) in compared))
        for m, b, elsewhere in zip(series["metric"], series["breakdown"], imported, strict=True)
    ]
    if breakdowns is not False:
        wanted = {m for m, _ in pairs}
        chosen = [
            c or (m in wanted and (breakdowns is True or str(breakdowns) in b))
            for c, m, b in zip(chosen, series["metric"], series["breakdown"], strict=True)
        ]
    series = series[chosen]
    against = history.evaluations(suite=suite)[["evaluation_id", "model"]].rename(
        columns={"evaluation_id": "against_evaluation_id", "model": "against_model"}
    )
    tests = tests.merge(against, on="against_evaluation_id", how="left")
    tests["predecessor"] = [
        "previous run" if a == "previous run" else str(m)
        for a, m in zip(tests["against"], tests["against_model"], strict=True)
    ]
    compared = ["predecessor", "change", "p_value", "p_adjusted", "alpha", "mde", "power", "verdict"]
    table = series.merge(
        tests[["evaluation_id", "metric", "breakdown", *compared, "note"]].rename(columns={"note": "why"}),
        on=["evaluation_id", "metric", "breakdown"],
        how="left",
    )
    bounds = bounds or {}
    started = new_series(history, suite)
    # The figure's own sample, the comparison's reason (undefined, too few *shared* clusters), a new series.
    table["note"] = [
        "; ".join(
            dict.fromkeys(n for n in (sufficiency.reasons(v, lo, hi, count, bounds.get(m)), why, started.get(e)) if n)
        )
        for v, lo, hi, count, m, why, e in zip(
            table["value"],
            table["ci_low"],
            table["ci_high"],
            table["n"],
            table["metric"],
            table["why"].fillna(""),
            table["evaluation_id"],
            strict=True,
        )
    ]
    table["evaluated_at"] = pd.to_datetime(table["evaluated_at"]).dt.strftime("%Y-%m-%d")
    table = table.sort_values(["evaluated_at", "model", "metric", "breakdown"], kind="stable")
    return table[HISTORY_COLUMNS].fillna({"predecessor": "", "verdict": ""}).reset_index(drop=True)


OUTCOMES = ("right", "wrong", "partial", "unanswered", "failed")  # ``item_rows``'s ``outcome`` filter


def item_rows(
    history: MetricHistory,
    suite: str,
    model: str,
    groups: Sequence[str] = (),
    outcome: str = "",
    limit: int = 0,
) -> tuple[Evaluation, pd.DataFrame, int]:
    """Every item of ``model``'s latest evaluation in ``suite`` as it was scored (its prompt, reply, parsed answer,
    gold and score on 0–100, and status), with how many there are before filtering: ``groups`` (``COLUMN=VALUE``
    each) and ``outcome`` (``OUTCOMES``: full marks, none, between, no answer read, the request failed) keep the
    matching rows, ``limit`` the first N. Anything the history does not hold, or a filter that names no column,
    is a ``TrackingError`` that says what there is."""
    found = history.replies(suite, model)
    if found is None:
        held = history.evaluations(suite=suite)
        models = sorted(held["model"].unique()) if len(held) else []
        if not models:
            raise TrackingError(f"suite {suite}: no evaluation in the history (is the name right?)")
        if model not in models:
            raise TrackingError(f"suite {suite}: no evaluation of {model} (models evaluated: {', '.join(models)})")
        raise TrackingError(
            f"suite {suite}: its evaluations keep no items as scored in the history: only suites declared with the "
            "kit (YAML or kit Python suites) do; a built-in suite writes each answer as scored to the per-model "
            "CSVs beside its report"
        )
    evaluation, rows = found
    total = len(rows)
    for wanted in groups:
        column, sep, value = wanted.partition("=")
        if not sep or column not in rows:
            raise TrackingError(f"--group {wanted!r}: COLUMN=VALUE with a column of {', '.join(rows.columns)}")
        rows = rows[rows[column].astype(str) == value]
    if outcome:
        if outcome not in OUTCOMES:
            raise TrackingError(f"--score {outcome!r}: one of {', '.join(OUTCOMES)}")
        score, answered = pd.to_numeric(rows["score"], errors="coerce"), rows["status"] == "answered"
        keep = {
            "right": answered & (score >= 100),
            "wrong": answered & (score <= 0),
            "partial": answered & (score > 0) & (score < 100),
            "unanswered": rows["status"] == "unanswered",
            "failed": rows["status"] == "failed",
        }[outcome]
        rows = rows[keep]
    return evaluation, (rows.head(limit) if limit > 0 else rows).reset_index(drop=True), total


Bounds = tuple[float, float] | None
# The power column's name says what it is: the chance the test had to find a worsening of the minimum effect
# (a regression found at low power is a change larger than the test could reliably see, not a contradiction).
POWER = "power at the minimum effect"
CHANGE_Z = NormalDist().inv_cdf(0.975)  # a change's 95 % interval: change ± z × its paired test's standard error


def _figure(value: Any, suffix: str = "", signed: bool = False) -> str:
    if value is None or not math.isfinite(float(value)):
        return "—"
    return (f"{float(value):+.3g}" if signed else f"{float(value):.3g}").replace("-", "−") + suffix


def _p(value: Any) -> str:
    if value is None or not math.isfinite(float(value)):
        return "—"
    return "< 0.001" if value < 0.001 else f"{float(value):.2g}"


def _power(value: Any) -> str:
    """The power at the minimum effect, as a percentage ("—" where none was stated)."""
    if value is None or not math.isfinite(float(value)):
        return "—"
    return f"{float(value):.0%}"


def baseline_model(against: str) -> str:
    """``predecessor o1`` → ``o1 (predecessor)``; ``previous run`` as it is."""
    return f"{against.removeprefix('predecessor ')} (predecessor)" if against.startswith("predecessor ") else against


def verdict_phrase(model: str, row: Mapping[str, Any], bounds: Bounds) -> str:
    """``o3-mini vs o1: correct_rate −17.2 pts (p < 0.001, adjusted 0.002), regression``: one stored verdict."""
    against = str(row.get("against", "")).removeprefix("predecessor ") or "nothing"
    where = f"{row['metric']} ({row['breakdown']})" if row.get("breakdown") else str(row["metric"])
    change = _figure(row.get("change"), unit(bounds), signed=True)
    p, adjusted = _p(row.get("p_value")), _p(row.get("p_adjusted"))
    p = p if p.startswith("<") else f"= {p}"
    return f"{model} vs {against}: {where} {change} (p {p}, adjusted {adjusted}), {row['verdict']}"


def verdict_table(rows: Sequence[Mapping[str, Any]], bounds: Mapping[str, Bounds]) -> pd.DataFrame:
    """Stored verdicts as a person reads them, worst first: the metric (and breakdown), the baseline model, the
    change in the metric's units (``bounds`` per metric: percentage points for a percentage), rounded, with its
    95 % interval (change ± 1.96 × the paired test's standard error: its sign-flip null's), the one-sided
    p, the Holm-adjusted p, the minimum detectable effect in the same units, the verdict and its note (why it is
    insufficient, undefined or not decidable at this profile)."""
    order = {v: i for i, v in enumerate(verdicts.VERDICTS)}
    ranked = sorted(
        rows, key=lambda r: (order.get(r["verdict"], len(order)), bool(r.get("breakdown")), r["metric"], r["breakdown"])
    )
    out = []
    for row in ranked:
        suffix = unit(bounds.get(row["metric"]))
        change, se = row.get("change"), row.get("se")
        spread = CHANGE_Z * se if change is not None and se is not None and math.isfinite(se) else None
        out.append(
            {
                "metric": f"{row['metric']} ({row['breakdown']})" if row.get("breakdown") else row["metric"],
                "baseline": baseline_model(str(row.get("against", ""))),
                "change": _figure(change, suffix, signed=True),
                "95 % interval": "—"
                if spread is None or not math.isfinite(float(change))
                else f"[{_figure(change - spread)}, {_figure(change + spread)}]{suffix}",
                "p": _p(row.get("p_value")),
                "adjusted p": _p(row.get("p_adjusted")),
                "MDE": _figure(row.get("mde"), suffix),
                # A page from a test below the stated power says so where the pages are listed, not only in its note.
                POWER: _power(row.get("power"))
                + (" (underpowered)" if verdicts.UNDERPOWERED_PAGE in str(row.get("note") or "") else ""),
                "verdict": row["verdict"],
                "note": str(row.get("note") or ""),
            }
        )
    columns = ["metric", "baseline", "change", "95 % interval", "p", "adjusted p", "MDE", POWER, "verdict", "note"]
    return pd.DataFrame(out, columns=columns)


def open_regressions(
    history: MetricHistory, suite: str | None = None, imported_only: bool = False
) -> list[tuple[str, str, dict[str, Any]]]:
    """(suite, model, stored verdict) of every regression the gate of each model's latest evaluation per suite
    and scope reads (``failing``: its own, and its release's against the predecessor, unacknowledged) — geomon's
    runs and imported ones (``imported_only``: imported ones), of one ``suite`` or all — in release order, each
    verdict with its evaluation's ``evaluated_at`` and ``origin``: what ``geomon run``'s closing screen, every
    suite's report, the results index and ``monitor/open_regressions`` name."""
    frame = history.evaluations(suite=suite)
    if imported_only:
        frame = frame[frame["origin"].astype(str).str.startswith("import:")]
    latest = frame.groupby(["suite", "model", "scope"], sort=False).tail(1)  # oldest first: the last is the latest
    out = []
    for row in latest.to_dict("records"):
        evaluation = Evaluation(row["evaluation_id"], row["suite"], row["model"], row["scope"], row["recorded_at"])
        when = row["evaluated_at"] if pd.notna(row["evaluated_at"]) else row["recorded_at"]
        out += [
            (row["suite"], row["model"], {**test, "evaluated_at": when, "origin": row["origin"]})
            for test in failing(history, evaluation)
        ]
    return out


def origin_label(origin: str) -> str:
    """An evaluation's origin as a reader says it: ``geomon`` (its own run) or ``imported (gapminder)``."""
    return origin if origin == "geomon" else f"imported ({origin.split(':')[1] if ':' in origin else origin})"


OPEN_REGRESSION_COLUMNS = [
    "suite",
    "model",
    "source",
    "evaluated",
    "baseline",
    "metric",
    "group",
    "change",
    "95 % interval",
    "min effect",
    "MDE",
    POWER,
    "adjusted p",
]


def open_regressions_table(
    found: Sequence[tuple[str, str, Mapping[str, Any]]], bounds: Mapping[tuple[str, str], Bounds]
) -> pd.DataFrame:
    """``open_regressions`` as a person reads them, one row each: the suite, the model, whether geomon ran it or
    it was imported, when it was evaluated, the baseline, the metric and group (the breakdown: ``family=ideology``;
    "" the overall figure), the change with its 95 % interval, the minimum effect, the MDE and the power at the
    minimum effect in the metric's units (``bounds`` per (suite, metric)), and the Holm-adjusted p."""
    out = []
    for suite, model, row in found:
        metric = str(row["metric"])
        bound = bounds.get((suite, metric))
        shown = verdict_table([row], {metric: bound}).iloc[0]
        out.append(
            {
                "suite": suite,
                "model": model,
                "source": origin_label(str(row.get("origin") or "geomon")),
                "evaluated": f"{pd.Timestamp(row['evaluated_at']):%Y-%m-%d}",
                "baseline": shown["baseline"],
                "metric": metric,
                "group": str(row.get("breakdown") or "") or "overall",
                "change": shown["change"],
                "95 % interval": shown["95 % interval"],
                "min effect": _figure(row.get("min_effect"), unit(bound)),
                "MDE": shown["MDE"],
                POWER: shown[POWER],
                "adjusted p": shown["adjusted p"],
            }
        )
    return pd.DataFrame(out, columns=OPEN_REGRESSION_COLUMNS)


def open_regressions_frame(
    history: MetricHistory,
    suite: str | None = None,
    found: Sequence[tuple[str, str, Mapping[str, Any]]] | None = None,
) -> pd.DataFrame:
    """``open_regressions_table`` of every open regression (of one ``suite``, or all; or those ``found`` already),
    in the units of the registered suites' headlines: what the results index, each suite's report and
    ``monitor/open_regressions`` show."""
    from geomon.suites import registry

    bounds = {(name, metric): bound for name, metric, _, _, bound in registry.headline_catalog()}
    return open_regressions_table(open_regressions(history, suite) if found is None else found, bounds)


def imported_rows(history: MetricHistory, suite: str, headlines: Sequence[tuple[str, str]]) -> pd.DataFrame:
    """One row per model imported into ``suite`` (its latest imported evaluation per scope): ``model``,
    ``origin``, ``evaluated_at``, ``n`` and each headline's (metric, breakdown) value with ``<metric>_ci_low`` and
    ``<metric>_ci_high``: the rows a leaderboard adds to geomon's own, so every evaluated model is on it."""
    evaluations = history.evaluations(suite=suite)
    if evaluations.empty:
        return pd.DataFrame(columns=["model"])
    imported = evaluations[evaluations["origin"].astype(str).str.startswith("import:")]
    latest = imported.groupby(["model", "scope"], sort=False).tail(1)
    if latest.empty:
        return pd.DataFrame(columns=["model"])
    series = history.series(suite=suite)
    series = series[series["evaluation_id"].isin(set(latest["evaluation_id"]))]
    wanted = set(headlines)
    rows = []
    for evaluation in latest.to_dict("records"):
        mine = series[series["evaluation_id"] == evaluation["evaluation_id"]]
        row: dict[str, Any] = {
            "model": evaluation["model"],
            "origin": origin_label(evaluation["origin"]),
            "evaluated_at": f"{pd.Timestamp(evaluation['evaluated_at'] or evaluation['recorded_at']):%Y-%m-%d}",
        }
        for value in mine.to_dict("records"):
            if (value["metric"], value["breakdown"]) not in wanted:
                continue
            metric = value["metric"]
            row.update(
                {metric: value["value"], f"{metric}_ci_low": value["ci_low"], f"{metric}_ci_high": value["ci_high"]}
            )
            row.setdefault("n", value.get("n"))
        rows.append(row)
    return pd.DataFrame(rows)
