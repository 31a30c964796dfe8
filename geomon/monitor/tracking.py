"""Record an evaluation and compare it with what came before: the model's previous run in the same
scope, and its predecessor's latest run (the registry's ``predecessor``). A suite plugs in by giving
its per-item table and its ``REGRESSION_METRICS`` (statistic, direction, minimum effect)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd

from geomon.monitor.history import Evaluation, MetricHistory, MetricValue
from geomon.stats.regression import RegressionResult, paired_regression


@dataclass
class Comparison:
    against: str  # "previous run" or "predecessor <name>"
    evaluation_id: str
    results: list[RegressionResult] = field(default_factory=list)


def compare(
    current: Evaluation, baseline: Evaluation, against: str, metrics: dict[str, tuple[Any, bool, float]]
) -> Comparison:
    comparison = Comparison(against, baseline.evaluation_id)
    if current.items is None or baseline.items is None or current.items.empty or baseline.items.empty:
        return comparison
    # Items read back from the stored JSON may have become numbers ("1541" → 1541): pair them as text.
    before = baseline.items.assign(item=baseline.items["item"].astype(str))
    after = current.items.assign(item=current.items["item"].astype(str))
    for name, (statistic, higher_is_worse, min_effect) in metrics.items():
        try:
            result = paired_regression(
                name, before, after, statistic, higher_is_worse=higher_is_worse, min_effect=min_effect
            )
        except ValueError:
            continue  # no items in common (e.g. a different table version): nothing to compare
        comparison.results.append(result)
    return comparison


def track(
    history: MetricHistory,
    suite: str,
    model: str,
    metrics: list[MetricValue],
    items: pd.DataFrame,
    regression_metrics: dict[str, tuple[Any, bool, float]],
    *,
    scope: str = "",
    versions: dict[str, str] | None = None,
    predecessor: str | None = None,
    dagster_run_id: str = "",
    run_started_at: datetime | None = None,
    evaluated_at: datetime | None = None,
    origin: str = "geomon",
) -> tuple[Evaluation, list[Comparison]]:
    """Store this evaluation (one per evaluation: ``MetricHistory.record``); compare it with the model's
    previous run in the scope or, for its first run there, with the predecessor's latest before it (a new
    model is judged against its predecessor once); store the comparisons with their verdicts.

    An evaluation identical to the latest one (``reused``) is not compared again: nothing changed, and its
    stored comparison stands."""
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
    )
    if current.reused:
        return current, []
    found: list[Comparison] = []
    previous = history.latest(suite, model, scope, before=current)
    if previous is not None:
        found = [compare(current, previous, "previous run", regression_metrics)]
    else:
        earlier = _predecessor_before(history, suite, predecessor, scope, current) if predecessor else None
        if earlier is not None:
            found = [compare(current, earlier, f"predecessor {predecessor}", regression_metrics)]
    history.record_comparisons(
        current,
        [
            {
                "against_evaluation_id": c.evaluation_id,
                "against": c.against,
                "metric": r.metric,
                "before": r.before,
                "after": r.after,
                "effect": r.effect,
                "p_value": r.p_value if r.effect >= 0 else r.p_improvement,
                "items": r.items,
                "verdict": r.verdict,
            }
            for c in found
            for r in c.results
        ],
    )
    return current, found


def _predecessor_before(
    history: MetricHistory, suite: str, predecessor: str, scope: str, current: Evaluation
) -> Evaluation | None:
    """The predecessor's latest evaluation no later than ``current``'s date (an imported history is dated:
    a release is compared with what its predecessor was then, not with a later re-run)."""
    return history.latest(suite, predecessor, scope, before=current)


HISTORY_COLUMNS = [
    "model",
    "evaluated_at",
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "predecessor",
    "effect",
    "p_value",
    "verdict",
    "note",
    "origin",
]


def history_table(
    history: MetricHistory, suite: str, metrics: list[str] | None = None, model: str | None = None
) -> pd.DataFrame:
    """One row per evaluation and metric (``metrics``: the suite's headlines; every overall metric when
    None), with what it was compared with: ``predecessor`` (the previous run or predecessor model),
    ``effect`` (signed so that positive = worse), ``p_value`` and ``verdict`` (regression, improvement,
    no change; empty when there was nothing to compare with, or the metric is not tested)."""
    series = history.series(suite=suite, model=model)
    if series.empty:
        return pd.DataFrame(columns=HISTORY_COLUMNS)
    series = series[series["breakdown"] == ""]
    if metrics is not None:
        series = series[series["metric"].isin(metrics)]
    tests = history.comparisons(series["evaluation_id"].unique())
    against = history.evaluations(suite=suite)[["evaluation_id", "model"]].rename(
        columns={"evaluation_id": "against_evaluation_id", "model": "against_model"}
    )
    tests = tests.merge(against, on="against_evaluation_id", how="left")
    tests["predecessor"] = [
        "previous run" if a == "previous run" else str(m)
        for a, m in zip(tests["against"], tests["against_model"], strict=True)
    ]
    table = series.merge(
        tests[["evaluation_id", "metric", "predecessor", "effect", "p_value", "verdict"]],
        on=["evaluation_id", "metric"],
        how="left",
    )
    from geomon.stats import sufficiency
    from geomon.suites.registry import suites

    info = suites().get(suite)
    bounds = {h.metric: h.bounds for h in info.headlines} if info is not None else {}
    table["note"] = [
        sufficiency.reasons(v, lo, hi, n, bounds.get(m))
        for v, lo, hi, n, m in zip(
            table["value"], table["ci_low"], table["ci_high"], table["n"], table["metric"], strict=True
        )
    ]
    table["evaluated_at"] = pd.to_datetime(table["evaluated_at"]).dt.strftime("%Y-%m-%d")
    table = table.sort_values(["evaluated_at", "model", "metric"], kind="stable")
    return table[HISTORY_COLUMNS].fillna({"predecessor": "", "verdict": ""}).reset_index(drop=True)
