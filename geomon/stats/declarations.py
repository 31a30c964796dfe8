"""One definition per tracked metric: a statistic declared over a suite's per-item rows.

A suite declares each headline it tracks once (``TrackedMetric``): the statistic over its per-item rows (one of
``geomon.stats.statistics``), the column it is clustered on (question, country, territory), which direction is
worse and its minimum effect (the smallest worsening that pages; a disparity's is shown, never paged). That one
declaration gives the headline's value, its interval and its sample size for the sufficiency rule (its clusters:
``geomon.stats.bootstrap``) and its paired test (``geomon.stats.signflip``). How a release is decided from these
tests is described once, in ``geomon.stats.verdicts``. The leaderboard, the history, the alerts and the trends all
read these numbers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from geomon.stats.statistics import Difference, ImpactRatio, Mean, Range, Ratio, Statistic, Where
from geomon.stats.values import MetricValue, breakdown_by


class DeclarationError(ValueError):
    """A tracked metric's declaration does not fit the rows it is given (a missing column, duplicated items)."""


@dataclass(frozen=True)
class TrackedMetric:
    """One tracked headline, declared once: ``statistic`` over the per-item rows, ``cluster`` the column of
    its independent unit (resampled and flipped together), ``higher_is_worse`` the direction of a
    regression, ``min_effect`` the smallest worsening that pages (in the metric's units; a disparity never pages:
    its minimum effect is what its test's power is planned at), ``breakdown`` the
    label its value carries in the history (``persona=vanilla``), ``by`` group columns whose groups are
    also compared one by one (``country``: a drop in one country is a verdict of its own), ``bounds`` the
    metric's possible range."""

    name: str
    statistic: Statistic
    cluster: str = "item"
    higher_is_worse: bool = False
    min_effect: float = 0.0
    breakdown: str = ""
    by: tuple[str, ...] = ()
    bounds: tuple[float, float] | None = None
    # Which way the groups' own values are worse, where it is not the metric's (a range of sentiment is worse
    # when higher; a country's sentiment when lower). None: the metric's.
    groups_higher_is_worse: bool | None = None
    # The name the groups' values carry, where it is not the metric's (a range of regions' mean errors: each
    # region's is ``mean_error``, ``region=…``). "": the metric's.
    groups_name: str = ""
    # The groups' own minimum effect and bounds, where they are not the metric's (a gap between families' correct
    # rates is 10 points and unbounded; each family's rate is a percentage that alerts at 5). None: the metric's.
    groups_min_effect: float | None = None
    groups_bounds: tuple[float, float] | None = None
    # What an item the baseline has and the compared evaluation lacks scores in the statistic's column (an answer
    # rate: 0, unanswered; an intention-to-treat mean: 0, wrong); None: nothing, it is left out of the mean as an
    # unanswered item is (``absent_items``). Not part of what a figure is drawn under (no repr: the digest).
    absent: float | None = field(default=None, repr=False)

    def columns(self) -> set[str]:
        """The columns the per-item rows must hold."""
        return {"item", self.cluster, *self.statistic.columns(), *self.by}

    @property
    def worse(self) -> str:
        return "higher" if self.higher_is_worse else "lower"

    def declares(self, metric: str, breakdown: str) -> bool:
        """Whether a figure named ``metric`` with ``breakdown`` is one of this declaration's: its headline, or one of
        its groups (``<by>=…``, after the headline's breakdown)."""
        if (metric, breakdown) == (self.name, self.breakdown):
            return True
        return metric == (self.groups_name or self.name) and any(
            breakdown.startswith(breakdown_by(self.breakdown, column, "")) for column in self.by
        )

    def name_for(self, statistic: Any) -> str:
        """The metric name one of its parts is recorded under: the headline's, or its groups'."""
        return self.name if statistic is self.statistic or not self.groups_name else self.groups_name

    def min_effect_for(self, statistic: Any) -> float:
        """The minimum effect of one of its parts: the headline's, or its groups'."""
        if statistic is self.statistic or self.groups_min_effect is None:
            return self.min_effect
        return self.groups_min_effect

    def bounds_for(self, statistic: Any) -> tuple[float, float] | None:
        """The bounds of one of its parts: the headline's, or its groups'."""
        if statistic is self.statistic or self.groups_bounds is None:
            return self.bounds
        return self.groups_bounds

    def higher_is_worse_for(self, statistic: Any) -> bool:
        """The direction of one of its parts: the headline's, or its groups'."""
        if statistic is self.statistic or self.groups_higher_is_worse is None:
            return self.higher_is_worse
        return self.groups_higher_is_worse

    @property
    def group(self) -> str:
        """The column the metric's groups are read by (its first ``by``, a range's groups), or ""."""
        return self.by[0] if self.by else self.statistic.by if isinstance(self.statistic, Range) else ""

    def check(self, frame: pd.DataFrame, where: str) -> None:
        missing = sorted(self.columns() - set(frame.columns))
        if missing:
            raise DeclarationError(
                f"{where}: tracked metric {self.name} needs column(s) {missing} in the per-item rows "
                f"(they have {sorted(frame.columns)})"
            )
        if not frame["item"].duplicated().any() and frame["item"].map(type).nunique() <= 1:
            return
        keys = frame["item"].astype(str)
        duplicated = sorted(keys[keys.duplicated()].unique())
        if duplicated:
            raise DeclarationError(
                f"{where}: item keys appear more than once ({len(duplicated)}: {', '.join(duplicated[:5])}"
                f"{', …' if len(duplicated) > 5 else ''}); each item must be one row to be paired"
            )

    def parts(self, frame: pd.DataFrame) -> list[tuple[str, Any]]:
        """(breakdown, statistic) for the headline and, with ``by``, each of its groups: the group's value of
        the statistic's pooled mean (a Range's ``of``, else the statistic itself)."""
        out = [(self.breakdown, self.statistic)]
        inner = self.statistic.of if isinstance(self.statistic, Range) else self.statistic
        for column in self.by:
            if not isinstance(inner, Mean | Ratio):
                raise DeclarationError(f"tracked metric {self.name}: by={column} needs a Mean or Ratio inside")
            # A group of the rows the statistic reads: rows of another level (no group), or a group none of whose rows
            # has a value (English, never a claimant's language), are in none.
            valued = inner.parts(frame)[1] != 0 if len(frame) else np.zeros(0, dtype=bool)
            present = frame[column][frame[column].notna().to_numpy() & valued]
            for group in sorted(present.astype(str).unique()):
                where = (*inner.where, (column, group))
                part = replace(inner, where=where)
                out.append((breakdown_by(self.breakdown, column, group), part))
        return out


def drawn_as(metric: TrackedMetric) -> TrackedMetric:
    """What a metric's draw depends on: its declaration without the minimum effects (never read by a draw)."""
    return replace(metric, min_effect=0.0, groups_min_effect=None)


def declaration_digest(metric: TrackedMetric) -> str:
    """A digest of what a metric's figures were drawn under (``drawn_as``: its statistic, cluster, groups, bounds),
    recorded with them, so a later reader uses a recorded standard error only under the same declaration. A
    declaration whose text is not stable across processes (a function in it) gets a digest that never matches."""
    return hashlib.blake2b(repr(drawn_as(metric)).encode(), digest_size=8).hexdigest()


ANSWERED_RATE = "answered_rate"


def answered_rate(
    cluster: str, by: tuple[str, ...] = (), where: Where = (), breakdown: str = "", min_effect: float = 5.0
) -> TrackedMetric:
    """Whether the model still answers, overall and per group (``by``): the percent of the asked items answered
    (``answered``: 1, 0 for an unanswered or refused reply, NaN for a failed request — an outage is not a model
    that stopped answering), lower is worse. Every suite tracks it: a score over the answered items alone would
    look better when a model stops answering the ones it gets wrong."""
    return TrackedMetric(
        ANSWERED_RATE,
        Mean("answered", where=where, scale=100),
        cluster,
        False,
        min_effect,
        breakdown,
        by=by,
        bounds=(0.0, 100.0),
        absent=0.0,  # an item the evaluation lacks is an item it did not answer
    )


def outcome_columns(statistic: Any) -> set[str]:
    """The columns a statistic reads its outcomes from (not the groups and filters it selects rows by)."""
    if isinstance(statistic, Mean):
        return {statistic.column, *([statistic.per] if statistic.per else [])}
    if isinstance(statistic, Ratio):
        return {statistic.numerator, statistic.denominator}
    if isinstance(statistic, Range):
        return outcome_columns(statistic.of)
    if isinstance(statistic, Difference):
        return outcome_columns(statistic.minuend) | outcome_columns(statistic.subtrahend)
    if isinstance(statistic, ImpactRatio):
        return {statistic.column}
    raise DeclarationError(f"no outcome columns known for {type(statistic).__name__}")


def absent_items(metrics: Sequence[TrackedMetric], before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """``after`` with a row for each item ``before`` has and it lacks: an absent item is an outcome, never a row
    left out of the pairing (a harness that drops the items that errored would otherwise switch the guardrail off).
    Its groups, filters and cluster are the baseline's; its outcomes are none (NaN: out of an answered-only mean,
    as an unanswered item is), except where a metric says what an absent item scores (``TrackedMetric.absent``:
    an answer rate's 0, an intention-to-treat mean's 0). Where no metric says (Gapminder's published rates: each
    configuration was published on its own questions), the evaluations are compared on the items they share."""
    if all(m.absent is None for m in metrics):  # no declaration says what an absent item is: the shared items
        return after
    have = set(after["item"].astype(str))
    lacking = before[~before["item"].astype(str).isin(have).to_numpy()]
    if lacking.empty:
        return after
    rows = lacking.copy()
    for metric in metrics:
        for column in outcome_columns(metric.statistic) & set(rows.columns):
            rows[column] = np.nan
    for metric in metrics:
        if metric.absent is not None and isinstance(metric.statistic, Mean) and metric.statistic.column in rows:
            rows[metric.statistic.column] = metric.absent
    rows = rows.reindex(columns=after.columns) if set(rows.columns) != set(after.columns) else rows[after.columns]
    return pd.concat([after, rows], ignore_index=True)


def undeclared(values: Iterable[MetricValue], tracked: Sequence[TrackedMetric]) -> list[MetricValue]:
    """The figures of ``values`` no tracked metric declares: what a tracked stage hands in beside its items (a
    declared figure is computed from the items, once, by whoever records them)."""
    return [v for v in values if not any(m.declares(v.metric, v.breakdown) for m in tracked)]


def with_min_effects(metrics: Sequence[TrackedMetric], overrides: Mapping[str, float]) -> list[TrackedMetric]:
    """The metrics with the minimum effects the settings give (by metric name: a metric's, or its groups' where
    they are recorded under another name), the declared ones otherwise."""
    out = []
    for m in metrics:
        if m.name in overrides:
            m = replace(m, min_effect=float(overrides[m.name]))
        if m.groups_name and m.groups_name in overrides:
            m = replace(m, groups_min_effect=float(overrides[m.groups_name]))
        out.append(m)
    return out
