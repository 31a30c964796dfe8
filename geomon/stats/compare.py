"""One comparison of a suite's evaluation with its baseline, as a pure function: pair, plan, decide.

``compare`` takes the suite's tracked metrics, the baseline's and the new evaluation's per-item rows, the α of
this look and the verdict settings, and returns every comparison's paired test and verdict: the two evaluations
paired once (``paired``: each tracked metric's sign-flip test over the clusters they share, as precise as the
Holm levels it may be tested at need), each comparison's standard error planned from the pair's paired differences
(``planned``: what its MDE and power are stated at, and what weighs it in Holm), and the suite's
comparisons decided together (``verdicts.decide``). No I/O and no history: which baseline, which α (the release's
plan and looks) and what is stored are ``monitor.release``'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

import pandas as pd

from geomon.stats import bootstrap, declarations, power, signflip, statistics, sufficiency, verdicts
from geomon.stats.declarations import TrackedMetric
from geomon.stats.signflip import PairedTest
from geomon.stats.verdicts import Comparison, VerdictSettings

# ``geomon plan`` plans a comparison before any pair exists from one evaluation's cluster-bootstrap standard
# errors, those of the one draw that gave its recorded figures (``bootstrap.estimates``' resamples, seed 0): read
# from what it recorded (``stored_spreads``), drawn again from its items only where it recorded none.
PLANNING_SEED = 0


class PairingError(ValueError):
    """Two evaluations that cannot be paired as declared (the message names the metric and field)."""


class Compared(NamedTuple):
    """A comparison's paired tests (as planned: what is stored beside the verdicts) and their verdicts, in order,
    and how many of the baseline's items the new evaluation lacks (each compared as an absent outcome:
    ``declarations.absent_items``)."""

    tests: list[PairedTest]
    verdicts: list[Comparison]
    missing: int = 0


def compare(
    tracked: Sequence[TrackedMetric],
    before_items: pd.DataFrame | None,
    after_items: pd.DataFrame,
    alpha: float,
    settings: VerdictSettings,
    *,
    profiled: bool = True,
    min_sample: int = sufficiency.MIN_SAMPLE,
) -> Compared:
    """Every tracked comparison of ``after_items`` with ``before_items`` (the baseline's; None: it kept none, and
    every metric is undefined), decided together at ``alpha`` (``verdicts.decide``; ``profiled``: the sample was
    a geomon run profile's). ``tracked`` carries the minimum effects in force (``declarations.with_min_effects``);
    An item the baseline has and ``after_items`` lacks is an outcome (``declarations.absent_items``: unanswered),
    counted in ``missing``."""
    missing = 0
    if before_items is not None and len(before_items) and "item" in before_items and "item" in after_items:
        filled = declarations.absent_items(tracked, before_items, after_items)
        missing = len(filled) - len(after_items)
        after_items = filled
    tests = paired(tracked, before_items, after_items, settings, alpha)
    tests = planned(tests)
    decided = verdicts.decide(tests, settings, alpha, min_sample=min_sample, profiled=profiled)
    return Compared(tests, decided, missing)


def paired(
    tracked: Sequence[TrackedMetric],
    before_items: pd.DataFrame | None,
    after_items: pd.DataFrame,
    settings: VerdictSettings,
    alpha: float,
) -> list[PairedTest]:
    """The paired tests of every tracked metric (the two evaluations paired once); a metric whose columns the
    earlier evaluation lacks (recorded by an older geomon) is undefined, saying which. A p-value near one of the
    Holm levels a family at ``alpha`` may test it at is computed again with more flips (``signflip.Precision``)."""
    old = before_items if before_items is not None else pd.DataFrame(columns=["item"])
    testable, out = [], []
    for metric in tracked:
        if _never_valued(metric, old, after_items):
            continue
        missing = sorted(metric.columns() - set(old.columns))
        if not missing:
            testable.append(metric)
            continue
        note = f"undefined: the earlier evaluation has no {', '.join(missing)}"
        nan = float("nan")
        out.append(
            PairedTest(
                metric.name,
                metric.breakdown,
                nan,
                nan,
                nan,
                None,
                nan,
                0,
                0,
                metric.higher_is_worse,
                metric.min_effect,
                metric.bounds,
                note,
            )
        )
    comparisons = sum(len(m.parts(after_items)) for m in testable)
    precision = signflip.Precision(
        settings.exact_up_to,
        power.holm_levels(alpha, comparisons, settings.undecidable_weight),
        settings.max_resamples,
        sufficiency.MIN_SAMPLE,
    )
    try:
        return (
            signflip.paired_tests(testable, old, after_items, resamples=settings.resamples, precision=precision) + out
        )
    except declarations.DeclarationError as exc:
        raise PairingError(str(exc)) from None


def _never_valued(metric: TrackedMetric, *frames: pd.DataFrame) -> bool:
    """A mean whose column no row of either evaluation has a number in (rank classification's probability, where
    both answered in words): there is nothing to compare, so no comparison — an "undefined" one would sit on every
    such pair."""
    statistic = metric.statistic
    if not isinstance(statistic, statistics.Mean):
        return False
    return all(
        statistic.column not in frame or pd.to_numeric(frame[statistic.column], errors="coerce").isna().all()
        for frame in frames
    )


def baseline_spreads(tracked: Sequence[TrackedMetric], items: pd.DataFrame) -> dict[tuple[str, str], power.Spread]:
    """Each comparison's cluster-bootstrap standard error, value and clusters in one evaluation's items: what its
    planned standard error rests on (``power.planned_se``), from the draw of its recorded figures."""
    return {
        (e.metric, e.breakdown): spread_of(metric, e)
        for metric in tracked
        if metric.columns() <= set(items.columns)
        for e in bootstrap.estimates(metric, items, resamples=bootstrap.RESAMPLES, seed=PLANNING_SEED)
    }


def stored_spreads(
    tracked: Sequence[TrackedMetric], figures: pd.DataFrame
) -> dict[tuple[str, str], power.Spread] | None:
    """``baseline_spreads`` read from an evaluation's recorded figures (``MetricHistory.figures``: its declared
    figures' value, standard error and clusters ``n``) instead of drawn again; None — draw them — where any tracked
    metric's figures were recorded under another declaration than today's (another statistic, cluster, groups or
    bounds: ``declarations.declaration_digest``) or without their standard errors (recorded before they were kept)."""
    out = {}
    for metric in tracked:
        rows = figures[[metric.declares(a, b) for a, b in zip(figures["metric"], figures["breakdown"], strict=True)]]
        if rows.empty:
            continue
        if (rows["declared_as"] != declarations.declaration_digest(metric)).any() or not rows["se"].notna().any():
            return None
        for r in rows.itertuples():
            clusters = int(r.n) if r.n == r.n else 0  # n: the figure's clusters (NULL: none counted)
            value, se = float(r.value), float(r.se)
            estimate = bootstrap.Estimate(r.metric, r.breakdown, value, math.nan, math.nan, 0, clusters, se)
            out[(r.metric, r.breakdown)] = spread_of(metric, estimate)
    return out or None


def spread_of(metric: TrackedMetric, e: bootstrap.Estimate) -> power.Spread:
    """One estimate of ``metric`` (its overall figure or a group's) as the spread a plan rests on. A standard error
    below a millionth of the metric's range (or of its value) is rounding, not spread (a baseline whose clusters all
    agree): 0."""
    group = e.breakdown != metric.breakdown
    ranged = group and isinstance(metric.statistic, statistics.Range)
    part = metric.statistic.of if ranged else metric.statistic  # a group of a range: one of its means
    bounds = metric.groups_bounds if group and metric.groups_bounds else metric.bounds
    se = 0.0 if math.isfinite(e.se) and e.se < power.rounding_noise(bounds, e.value) else e.se
    return power.Spread(se, e.value, e.clusters, isinstance(part, statistics.Mean))


def planned(tests: list[PairedTest]) -> list[PairedTest]:
    """Each comparison's standard error for its MDE, power, decidability label and Holm weight — one for all four
    (``power.paired_se``): planned from the pair's own paired differences, what the sign-flip test conditions on
    (each cluster's two evaluations as an unordered pair: the same whichever evaluation is the baseline, and the
    same under every flip the test counts (up to the Monte Carlo error of random flips), so weights read from it
    keep each p-value's conditional level), with the minimum effect's worth of worsening added (a regression of that
    size moves clusters the pair did not). A serving change of the same model answers most items alike: planned as
    if the two were independent samples (√2 × one side), its MDE would be several times what the paired test
    detects. Where the null has no spread (no cluster differs) the added worsening alone plans it; where the
    comparison has no clusters or no null, the worst case of a bounded metric (``power.worst_case_spread``: a coin
    flip per cluster, on each side of a gap) over its clusters."""
    out = []
    for t in tests:
        if t.p_value is not None:
            se = power.paired_se(t)
            why = ""
            if not se > 0 and t.bounds is not None and t.clusters:
                se = power.worst_case_spread(t.bounds, gap=t.disparity) / math.sqrt(t.clusters)
                why = "MDE planned from the worst case of the metric's range: the pair has no spread to plan from"
            elif not se > 0:
                why = "MDE unknown: the pair does not vary and the metric has no bounds"
            se = se if se > 0 else math.nan
            t = replace(t, planned_se=se, weighing_se=se, note=t.note or why)
        out.append(t)
    return out
