"""The metric history on SQLite and on the real PostgreSQL server."""

from __future__ import annotations

import pandas as pd
import pytest

from geomon.monitor.history import MetricHistory
from geomon.stats.values import EvaluationRun, MetricValue, metrics_from_mapping


@pytest.fixture(params=["sqlite", "postgresql"])
def history(request, tmp_path):
    if request.param == "sqlite":
        return MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    return MetricHistory(request.getfixturevalue("postgres_url"))


def test_evaluations_keep_values_versions_and_items(history):
    items = pd.DataFrame({"item": ["A", "B"], "error_sum": [0.5, 0.25], "answers": [1, 1]})
    first = history.record(
        EvaluationRun(
            "worldbench",
            "m",
            scope="wdi-1",
            versions={"data": "wdi-1", "prompts": "p1", "code": "c1"},
            dagster_run_id="run-1",
        ),
        metrics_from_mapping({"mean_error": 0.4, "mean_error_ci_low": 0.3, "mean_error_ci_high": 0.5, "flag": True}),
        items=items,
    )
    second = history.record(
        EvaluationRun("worldbench", "m", scope="wdi-1"), [MetricValue("mean_error", float("nan"))], items=items
    )
    latest = history.latest("worldbench", "m", "wdi-1")
    assert latest.evaluation_id == second.evaluation_id
    before = history.latest("worldbench", "m", "wdi-1", before=second)
    assert before.evaluation_id == first.evaluation_id and before.versions == {
        "data": "wdi-1",
        "prompts": "p1",
        "code": "c1",
    }
    pd.testing.assert_frame_equal(before.items, items)
    series = history.series(suite="worldbench", metric="mean_error")
    assert list(series["value"].isna()) == [False, True]  # NaN stored as NULL, not dropped
    assert series.iloc[0][["ci_low", "ci_high", "data_version", "dagster_run_id"]].tolist() == [
        0.3,
        0.5,
        "wdi-1",
        "run-1",
    ]
    assert history.latest("worldbench", "other-model", "wdi-1") is None
    assert "flag" not in set(history.series()["metric"])  # booleans are not metrics


def test_series_can_be_limited_to_given_series(history):
    """The trends report reads only the headline series; the database does the selection."""
    history.record(
        EvaluationRun("worldbench", "m"),
        [MetricValue("mean_error", 0.4), MetricValue("mean_error", 0.2, breakdown="region=Asia")],
    )
    history.record(EvaluationRun("borderlines", "m"), [MetricValue("kb_cs", 50.0), MetricValue("mean_error", 9.0)])
    picked = history.series(only=[("worldbench", "mean_error", ""), ("borderlines", "kb_cs", "")])
    assert sorted(zip(picked["suite"], picked["metric"], picked["value"], strict=True)) == [
        ("borderlines", "kb_cs", 50.0),
        ("worldbench", "mean_error", 0.4),
    ]
    assert history.series(only=[]).empty


def test_one_evaluation_per_run(history):
    """A retried step records nothing new; a run that evaluated exactly what a concurrent run recorded after
    it started reuses that evaluation; a later run with the same numbers is a new point in the history."""
    items = pd.DataFrame({"item": ["FRA", "DEU"], "error": [0.1, 0.2]})
    versions = {"data": "wdi-1", "prompts": "p1", "code": "c1"}
    metric = [MetricValue("mean_error", 0.15)]

    def run(dagster_run_id: str) -> EvaluationRun:
        return EvaluationRun("wb", "m", versions=versions, dagster_run_id=dagster_run_id)

    first = history.record(run("run-a"), metric, items=items)
    retried = history.record(run("run-a"), metric, items=items)
    assert retried.evaluation_id == first.evaluation_id
    concurrent = history.record(run("run-b"), metric, items=items)
    assert concurrent.evaluation_id == first.evaluation_id and concurrent.dagster_run_id == "run-a"
    different = history.record(run("run-c"), metric, items=items.assign(error=[0.1, 0.3]))
    later = history.record(run("run-d"), metric, items=items)
    assert len({first.evaluation_id, different.evaluation_id, later.evaluation_id}) == 3
    assert len(history.series(suite="wb")) == 3


def test_one_engine_per_database_and_process_checked_once(tmp_path, monkeypatch):
    """A run opens the history about 18 times: one engine per database in a process, its tables created and
    migrated once; a database file removed and made anew, or emptied, is set up again."""
    import sqlite3

    from geomon.monitor import history as module

    checks = []
    check = module._add_missing_columns
    monkeypatch.setattr(module, "_add_missing_columns", lambda engine: checks.append(1) or check(engine))
    path = tmp_path / "history.sqlite"
    first = MetricHistory(f"sqlite:///{path}")
    assert MetricHistory(f"sqlite:///{path}").engine is first.engine and len(checks) == 1
    first.record(EvaluationRun("toy", "m"), [MetricValue("mean", 0.5)])
    path.unlink()  # the engine's pooled connection still reads the removed file
    again = MetricHistory(f"sqlite:///{path}")
    assert again.engine is not first.engine and len(checks) == 2
    assert again.latest("toy", "m") is None  # the new file's tables, created
    with sqlite3.connect(path) as conn:  # the same file emptied: its tables are created again
        conn.executescript("".join(f"DROP TABLE {t};" for t in reversed(module.metadata.sorted_tables)))
    assert MetricHistory(f"sqlite:///{path}").latest("toy", "m") is None and len(checks) == 3
    memory = MetricHistory("sqlite:///:memory:")  # each in-memory database is its own
    assert MetricHistory("sqlite:///:memory:").engine is not memory.engine
