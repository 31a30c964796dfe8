"""A model's state as its own catalog entry shows it (``monitor.states``)."""

from __future__ import annotations

from datetime import UTC, datetime

from geomon.monitor import states
from geomon.monitor.history import EvaluationRun, MetricHistory
from geomon.stats.values import MetricValue
from geomon.stats.verdicts import Comparison


def test_a_models_state_is_its_latest_evaluation_per_suite_newest_first_with_its_open_regressions(tmp_path):
    """What a model's own catalog entry shows (``states.latest_by_model``): one row per suite, its latest evaluation
    there (an earlier one of the same suite is not shown), newest first, each with the open regressions of that
    suite only. Mutation caught: counting a model's open regressions over every suite in each row."""
    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    for suite, model, day, value in [
        ("quench", "m", 1, 1.0),
        ("quench", "m", 3, 2.0),
        ("blend", "m", 2, 3.0),
        ("blend", "other", 4, 4.0),
    ]:
        run = EvaluationRun(suite, model, evaluated_at=datetime(2025, 1, day, tzinfo=UTC))
        history.record(run, [MetricValue("score", value)])
    latest = {(r.suite, r.model): r for r in history.evaluations().itertuples()}  # the last recorded of each
    regression = Comparison("score", verdict="regression")
    found = [("blend", "m", regression), ("blend", "m", regression), ("blend", "other", regression)]
    shown = states.latest_by_model(history, found)
    mine = shown[shown["model"] == "m"]
    assert mine[["suite", "evaluated", "source", "open"]].values.tolist() == [
        ["quench", "2025-01-03", "geomon", 0],
        ["blend", "2025-01-02", "geomon", 2],
    ]
    assert mine["evaluation_id"].tolist() == [
        latest[("quench", "m")].evaluation_id,
        latest[("blend", "m")].evaluation_id,
    ]
    assert states.latest_by_model(MetricHistory(f"sqlite:///{tmp_path / 'empty.sqlite'}"), []).empty
