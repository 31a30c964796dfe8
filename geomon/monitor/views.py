"""The stored decisions as people read them: verdict phrases and tables, the history table, open regressions,
the items as scored and the comparisons no verdict could be read from. Nothing here decides (``monitor.release``
does); everything reads the metric history.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from statistics import NormalDist
from typing import Any

import pandas as pd

from geomon.monitor import release
from geomon.monitor.history import Evaluation, MetricHistory
from geomon.monitor.release import TrackingError
from geomon.stats import sufficiency, verdicts
from geomon.stats.values import IMPORTED, series_change, series_key, unit
from geomon.stats.verdicts import Comparison, LookKind


def verdict_text(comparison: Comparison) -> str:
    """``correct_rate (language=en) regression -17.2`` — a stored verdict in one phrase."""
    change = comparison.change
    moved = f" {change:+.3g}" if isinstance(change, float) and change == change else ""
    return f"{comparison.key} {comparison.verdict}{moved}"


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
        records = [Comparison.of(row) for row in rows.to_dict("records")]
        phrases[evaluation] = verdicts.summary(records)
        named[evaluation] = "; ".join(verdict_text(r) for r in records if _worse(r.verdict))
        blind[evaluation] = profile_blind(records)
    return latest.assign(
        verdicts=[phrases.get(e, "") for e in latest["evaluation_id"]],
        regressions=[named.get(e, "") for e in latest["evaluation_id"]],
        blind=[blind.get(e, "") for e in latest["evaluation_id"]],
    )[columns]


def profile_blind(rows: Sequence[Comparison], shown: int = 4) -> str:
    """The stored comparisons no verdict could be read from, by why: ``not decidable at this profile (power below
    the stated power at the minimum effect; …): mean_error, parse_rate and 3 more; not decidable at this sample
    (too few clusters; …): mean_error (region=…) and 5 more``; "" where there is none."""
    plan = "; `geomon plan` says what would be"
    wide = "power below the stated power at the minimum effect"
    kinds = (  # the kind, its heading (its notes' prefix), why
        (verdicts.Decidability.UNDERPOWERED_PROFILE, sufficiency.PROFILE_PREFIX, wide + plan),
        # An imported evaluation: no profile of geomon's sized it.
        (verdicts.Decidability.UNDERPOWERED_PUBLISHED, sufficiency.PUBLISHED_PREFIX, wide),
        (
            verdicts.Decidability.UNDECIDABLE_SAMPLE,
            sufficiency.SAMPLE_PREFIX,
            f"fewer than {sufficiency.MIN_SAMPLE} clusters, or a value outside its range{plan}",
        ),
    )
    parts = []
    for kind, heading, why in kinds:
        names = [str(r.key) for r in rows if r.decidability == kind]
        if names:
            more = f" and {len(names) - shown} more" if len(names) > shown else ""
            parts.append(f"{heading.rstrip(': ')} ({why}): {', '.join(names[:shown])}{more}")
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
    "model", "evaluated_at", "metric", "breakdown", "value", "ci_low", "ci_high", "n", "predecessor", "change",
    "p_value", "p_adjusted", "alpha", "mde", "power", "verdict", "note", "origin", "evaluation_id",
]  # fmt: skip


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
    ``p_adjusted`` (Holm, over the suite's comparisons), ``alpha`` (the look's α, ``ReleasePlan.look``, that
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
    # The look, where it is not the first (a provisional reserve; no α: never paged), then the verdict's reason.
    stored = [Comparison.of(row) for row in tests.to_dict("records")]
    looks = [PROVISIONAL if c.look == LookKind.RESERVE else unpaged(c) for c in stored]
    tests["why"] = ["; ".join(filter(None, (look, c.note))) for look, c in zip(looks, stored, strict=True)]
    table = series.merge(
        tests[["evaluation_id", "metric", "breakdown", *compared, "why"]],
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


def _worst(comparison: Comparison, suffix: str) -> str:
    """``; at worst −2.4 pts (one-sided 95 %)``: how much worse the change may be, as a claim — "no change as large
    as the MDE" says what the test could see, this what the data allow (the change ± 1.645 standard errors of the
    sign-flip null, toward worse); "" without a standard error."""
    change, se = comparison.change, comparison.se
    if change is None or se is None or not (math.isfinite(float(change)) and math.isfinite(float(se))):
        return ""
    worst = float(change) + (1 if comparison.worse_when == "higher" else -1) * 1.6449 * float(se)
    return f"; at worst {_figure(worst, suffix, signed=True)} (one-sided 95 %)"


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


def verdict_phrase(model: str, comparison: Comparison, bounds: Bounds) -> str:
    """``o3-mini vs o1: correct_rate −17.2 pts (p < 0.001, adjusted 0.002), regression``: one stored verdict."""
    against = comparison.against.removeprefix("predecessor ") or "nothing"
    change = _figure(comparison.change, unit(bounds), signed=True)
    p, adjusted = _p(comparison.p_value), _p(comparison.p_adjusted)
    p = p if p.startswith("<") else f"= {p}"
    return f"{model} vs {against}: {comparison.key} {change} (p {p}, adjusted {adjusted}), {comparison.verdict}"


NEVER_PAGED = "(shown, never paged)"  # said after why a decision's look had no α
PROVISIONAL = "reserve: provisional baseline (decided again when the release's own arrives)"


def look_text(comparison: Comparison) -> str:
    """The look a comparison was decided at, in words (read from its columns, never its note): the first look
    (also one stored before looks were kept), the reserve against a provisional baseline, or none — why α was 0."""
    spent = f"none, never paged: {comparison.alpha_zero}"
    return {LookKind.SPENT: spent, LookKind.RESERVE: PROVISIONAL}.get(comparison.look, "first look")


def unpaged(comparison: Comparison) -> str:
    """Why a comparison decided at α 0 pages nothing (``why … (shown, never paged)``), or ""."""
    return f"{comparison.alpha_zero} {NEVER_PAGED}" if comparison.look == LookKind.SPENT else ""


def verdict_table(rows: Sequence[Comparison], bounds: Mapping[str, Bounds]) -> pd.DataFrame:
    """Stored verdicts as a person reads them, worst first: the metric (and breakdown), the baseline model, the
    change in the metric's units (``bounds`` per metric: percentage points for a percentage), rounded, with its
    95 % interval (change ± 1.96 × the paired test's standard error: its sign-flip null's), the one-sided
    p, the Holm-adjusted p, the minimum detectable effect in the same units, the verdict, its note (why it is
    insufficient, undefined or not decidable at this profile) and the look it was decided at (``look_text``)."""
    order = {v: i for i, v in enumerate(verdicts.VERDICTS)}
    ranked = sorted(rows, key=lambda r: (order.get(r.verdict, len(order)), bool(r.breakdown), r.metric, r.breakdown))
    out = []
    for row in ranked:
        suffix = unit(bounds.get(row.metric))
        change, se = row.change, row.se
        spread = CHANGE_Z * se if change is not None and se is not None and math.isfinite(se) else None
        out.append(
            {
                "metric": str(row.key),
                "baseline": baseline_model(row.against),
                "change": _figure(change, suffix, signed=True),
                "95 % interval": "—"
                if spread is None or not math.isfinite(float(change))
                else f"[{_figure(change - spread)}, {_figure(change + spread)}]{suffix}",
                "p": _p(row.p_value),
                "adjusted p": _p(row.p_adjusted),
                "MDE": _figure(row.mde, suffix),
                # A page from a test below the stated power says so where the pages are listed, not only in its note.
                POWER: _power(row.power)
                + (" (underpowered)" if row.decidability == verdicts.Decidability.UNDERPOWERED_REGRESSION else ""),
                "verdict": row.verdict,
                "note": row.note,
                "look": look_text(row),
            }
        )
    columns = ["metric", "baseline", "change", "95 % interval", "p", "adjusted p", "MDE", POWER, "verdict", "note"]
    columns.append("look")
    return pd.DataFrame(out, columns=columns)


def open_regressions(
    history: MetricHistory, suite: str | None = None, imported_only: bool = False
) -> list[tuple[str, str, Comparison]]:
    """(suite, model, stored verdict) of every regression the gate of each model's latest evaluation per suite
    and scope reads (``failing``: its own, and its release's against the predecessor, unacknowledged) — geomon's
    runs and imported ones (``imported_only``: imported ones), of one ``suite`` or all — in release order, each
    verdict with its evaluation's ``evaluated_at`` and ``origin``: what ``geomon run``'s closing screen, every
    suite's report, the results index and ``monitor/open_regressions`` name."""
    every = history.evaluations(suite=suite)
    frame = every[every["origin"].astype(str).str.startswith("import:")] if imported_only else every
    latest = frame.groupby(["suite", "model", "scope"], sort=False).tail(1)  # oldest first: the last is the latest
    failing = release.failing_each(history, every, latest["evaluation_id"].tolist())
    out = []
    for row in latest.to_dict("records"):
        when = row["evaluated_at"] if pd.notna(row["evaluated_at"]) else row["recorded_at"]
        out += [
            (row["suite"], row["model"], replace(test, evaluated_at=when, origin=row["origin"]))
            for test in failing[row["evaluation_id"]]
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
    found: Sequence[tuple[str, str, Comparison]], bounds: Mapping[tuple[str, str], Bounds]
) -> pd.DataFrame:
    """``open_regressions`` as a person reads them, one row each: the suite, the model, whether geomon ran it or
    it was imported, when it was evaluated, the baseline, the metric and group (the breakdown: ``family=ideology``;
    "" the overall figure), the change with its 95 % interval, the minimum effect, the MDE and the power at the
    minimum effect in the metric's units (``bounds`` per (suite, metric)), and the Holm-adjusted p."""
    out = []
    for suite, model, row in found:
        bound = bounds.get((suite, row.metric))
        shown = verdict_table([row], {row.metric: bound}).iloc[0]
        out.append(
            {
                "suite": suite,
                "model": model,
                "source": origin_label(row.origin or "geomon"),
                "evaluated": f"{pd.Timestamp(row.evaluated_at):%Y-%m-%d}",
                "baseline": shown["baseline"],
                "metric": row.metric,
                "group": row.breakdown or "overall",
                "change": shown["change"],
                "95 % interval": shown["95 % interval"],
                "min effect": _figure(row.min_effect, unit(bound)),
                "MDE": shown["MDE"],
                POWER: shown[POWER],
                "adjusted p": shown["adjusted p"],
            }
        )
    return pd.DataFrame(out, columns=OPEN_REGRESSION_COLUMNS)


def open_regressions_frame(
    history: MetricHistory,
    suite: str | None = None,
    found: Sequence[tuple[str, str, Comparison]] | None = None,
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


ALERT_LIST_COLUMNS = [
    "state",
    "suite",
    "release",
    "evaluated",
    "metric",
    "group",
    "change",
    "95 % interval",
    "p",
    "adjusted p",
    "acknowledged",
    "evaluation",
]


def alert_list(history: MetricHistory, suite: str | None = None) -> pd.DataFrame:
    """Every regression the gates read (``open_regressions``'s latest evaluations per suite, model and scope) as
    ``geomon alerts list`` shows it, one row each: ``state`` ``open`` (the gate fails on it) or ``acknowledged``
    (who, when and why in ``acknowledged``), the suite, the release (model vs its baseline), when it was evaluated,
    the metric and group, the change with its 95 % interval in the metric's units, p and Holm-adjusted p, and the
    evaluation id an acknowledgement names. Open rows first."""
    from geomon.suites import registry

    bounds = {(name, metric): bound for name, metric, _, _, bound in registry.headline_catalog()}
    every = history.evaluations(suite=suite)
    latest = every.groupby(["suite", "model", "scope"], sort=False).tail(1)
    open_ids = {
        (row.evaluation_id, row.key)
        for rows in release.failing_each(history, every, latest["evaluation_id"].tolist()).values()
        for row in rows
    }
    evaluated = dict(zip(every["evaluation_id"], every["evaluated_at"].fillna(every["recorded_at"]), strict=True))
    found: dict[tuple[str, Any], dict[str, Any]] = {}
    for row in latest.to_dict("records"):
        names = ("evaluation_id", "suite", "model", "scope", "recorded_at")
        evaluation = Evaluation(**{name: row[name] for name in names})
        standing = release.standing(history, evaluation)
        acks = history.acknowledgements({r.evaluation_id for r in standing})
        for test in standing:
            key = (test.evaluation_id, test.key)
            if key in found:  # a release's regression read by several of its model's evaluations: listed once
                continue
            state = "open" if key in open_ids else "acknowledged"
            covering = acks[acks["evaluation_id"] == test.evaluation_id]
            who = [
                f"{a['acknowledged_by']} {pd.Timestamp(a['acknowledged_at']):%Y-%m-%d %H:%M}"
                + (f": {a['note']}" if a["note"] else "")
                for a in covering.to_dict("records")
                if release.acknowledged(pd.DataFrame([a]), test.key)
            ]
            shown = verdict_table([test], {test.metric: bounds.get((row["suite"], test.metric))}).iloc[0]
            found[key] = {
                "state": state,
                "suite": row["suite"],
                "release": f"{row['model']} vs {test.against.removeprefix('predecessor ') or 'nothing'}",
                "evaluated": f"{pd.Timestamp(evaluated.get(test.evaluation_id)):%Y-%m-%d}",
                "metric": test.metric,
                "group": test.breakdown or "overall",
                "change": shown["change"],
                "95 % interval": shown["95 % interval"],
                "p": shown["p"],
                "adjusted p": shown["adjusted p"],
                "acknowledged": "; ".join(who),
                "evaluation": test.evaluation_id,
            }
    table = pd.DataFrame(list(found.values()), columns=ALERT_LIST_COLUMNS)
    return table.sort_values("state", key=lambda s: s != "open", kind="stable").reset_index(drop=True)


def release_decided(
    history: MetricHistory, model: str, change: str, bounds: Mapping[tuple[str, str], Bounds], shown: int = 3
) -> list[str]:
    """What a release (a variant and its serving ``change``) decided against its predecessor, per suite and scope,
    from its latest stored evaluations: how many comparisons were decidable at the stated power, each regression
    named with its group, change, p and adjusted p; each decidable headline without one as "no change as large as
    the MDE"; and what the rest lacked (their notes: too few clusters, the MDE above the minimum effect) and what
    would decide their headlines — what
    ``geomon run`` closes with for every variant it ran."""
    every = history.evaluations(model=model)
    if every.empty:
        return [f"{model}: not evaluated yet"]
    rows = history.comparisons(every["evaluation_id"].tolist())
    by_evaluation = {e: [Comparison.of(r) for r in g.to_dict("records")] for e, g in rows.groupby("evaluation_id")}
    # per suite and scope, the latest evaluation decided against the predecessor: a later re-run of the variant
    # (its code or settings changed, its items not) is compared with its own previous run, not the release
    against_predecessor = every["evaluation_id"].map(
        lambda e: any(c.against.startswith("predecessor") for c in by_evaluation.get(e, []))
    )
    latest = (
        every.assign(_release=against_predecessor)
        .sort_values("_release", kind="stable")
        .groupby(["suite", "scope"], sort=False)
        .tail(1)
        .drop(columns="_release")
    )
    latest = every.loc[every.index.isin(latest.index)]  # in the history's order
    against = next((c.against for e in latest["evaluation_id"] for c in by_evaluation.get(e, []) if c.against), "")
    lines = [f"Release {model} vs {baseline_model(against) or 'nothing'} — {change}:"]
    for evaluation in latest.to_dict("records"):
        suite, tests = evaluation["suite"], by_evaluation.get(evaluation["evaluation_id"], [])
        scope = evaluation["scope"]
        where = f"{suite} ({scope})" if scope else suite
        if not tests:
            lines.append(f"  {where}: nothing compared (no baseline evaluation of the predecessor yet)")
            continue
        could = decidable(tests)
        lines.append(f"  {where}: {len(could)} of {len(tests)} comparisons decidable; {verdicts.summary(tests)}")
        for test in tests:
            if _worse(test.verdict):
                lines.append(f"    {verdict_phrase(model, test, bounds.get((suite, test.metric)))}")
        quiet = [t for t in could if not _worse(t.verdict)]
        for test in quiet[:shown]:
            suffix = unit(bounds.get((suite, test.metric)))
            # a watch or an improvement is said as such: "no change" would hide what the test flagged
            said = "no change" if test.verdict == verdicts.NO_CHANGE else f"{test.verdict}, no worsening"
            lines.append(
                f"    {test.key}: {said} as large as the MDE {_figure(test.mde, suffix)} "
                f"(change {_figure(test.change, suffix, signed=True)}, p {_p(test.p_value)}"
                f"{_worst(test, suffix)})"
            )
        if len(quiet) > shown:
            lines.append(f"    … and {len(quiet) - shown} more decidable without a regression")
        rest = [t for t in tests if t not in could]
        if rest:
            lines.append(f"    not decidable: {profile_blind(rest, shown) or 'no comparison could be tested'}")
            needs = [n for n in (clusters_needed(t) for t in rest if not t.breakdown) if n]
            if needs:
                lines.append(f"    what would decide the headlines: {'; '.join(needs[:shown])}")
    return lines


def decidable(tests: Sequence[Comparison]) -> list[Comparison]:
    """The comparisons that could see a regression of their minimum effect at the stated power (tested, with
    enough clusters, their MDE at most their minimum effect; or a regression paged though underpowered): the others'
    silence is no evidence of no regression."""
    kinds = (verdicts.Decidability.DECIDABLE, verdicts.Decidability.UNDERPOWERED_REGRESSION)
    return [
        t for t in tests if t.decidability in kinds and t.verdict not in (verdicts.INSUFFICIENT, verdicts.UNDEFINED)
    ]


def clusters_needed(test: Comparison) -> str:
    """What would make a headline decidable, from what this pair measured: at least ``sufficiency.MIN_SAMPLE``
    clusters, and the clusters at which its MDE reaches its minimum effect — the paired standard error falls as
    1/√clusters, so n × (MDE / minimum effect)² (``power.paired_se``, planned at this pair's spread); "" where it
    is decidable or nothing says."""
    clusters = test.clusters or 0
    if test.verdict == verdicts.INSUFFICIENT:
        return f"{test.key} {clusters} clusters, needs at least {sufficiency.MIN_SAMPLE}"
    mde, least = test.mde, test.min_effect
    if mde is None or least is None or not (math.isfinite(mde) and least > 0 and mde > least and clusters):
        return ""
    return f"{test.key} MDE {mde:.3g} > {least:g} at {clusters} clusters: ≈{math.ceil(clusters * (mde / least) ** 2)}"
