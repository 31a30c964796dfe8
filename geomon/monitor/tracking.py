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
    for name, (statistic, higher_is_worse, min_effect) in metrics.items():
        try:
            result = paired_regression(
                name, baseline.items, current.items, statistic, higher_is_worse=higher_is_worse, min_effect=min_effect
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
) -> tuple[Evaluation, list[Comparison]]:
    """Store this evaluation (one per run: ``MetricHistory.record``); compare it with the model's previous run
    in the scope or, for its first run there, with the predecessor's latest (a new model is judged against its
    predecessor once)."""
    current = history.record(
        suite,
        model,
        metrics,
        scope=scope,
        items=items,
        versions=versions,
        dagster_run_id=dagster_run_id,
        run_started_at=run_started_at,
    )
    previous = history.latest(suite, model, scope, before=current)
    if previous is not None:
        return current, [compare(current, previous, "previous run", regression_metrics)]
    earlier = history.latest(suite, predecessor, scope) if predecessor else None
    if earlier is not None:
        return current, [compare(current, earlier, f"predecessor {predecessor}", regression_metrics)]
    return current, []
