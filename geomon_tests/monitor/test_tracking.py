"""The verdict engine over the metric history, on Gapminder's published runs of 20 real models: release
order whatever the import order, the verdicts the real history holds, acknowledgements, and the CLI gate."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from geomon.monitor import imports, tracking
from geomon.monitor.history import MetricHistory
from geomon.sources import gapminder as source
from geomon.stats import verdicts
from geomon_tests.conftest import SHARED

RESULTS = SHARED / "reference" / "gapminder" / "results"
ENTITIES = SHARED / "snapshots" / "gapminder" / "ddf" / "ddf--entities--model_configuration.csv"


@pytest.fixture(scope="module")
def runs() -> list[imports.ImportedRun]:
    return imports.gapminder_runs(RESULTS, ENTITIES, source.read_snapshot(SHARED / "snapshots" / "gapminder"))


def _history(runs, order, path) -> pd.DataFrame:
    history = MetricHistory(f"sqlite:///{path}")
    predecessors = imports.vendor_predecessors(runs)
    for run in order:  # one at a time: each import sees only what came before it
        imports.record_runs(history, [run], None, predecessors)
    table = tracking.history_table(history, "gapminder", [("correct_rate", ""), ("very_wrong_rate", "")])
    return table.drop(columns=["evaluation_id"]).sort_values(["model", "metric"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def forward(runs, tmp_path_factory) -> pd.DataFrame:
    return _history(runs, runs, tmp_path_factory.mktemp("forward") / "h.sqlite")


def _verdict(table, model, metric="correct_rate"):
    return table[(table["model"] == model) & (table["metric"] == metric)].iloc[0]


def test_the_real_history_holds_the_verdicts_people_read(forward):
    """o1 → o3-mini: o3-mini was evaluated first (2025-03-06), o1 later (2025-04-15); in release order o1
    is o3-mini's predecessor, so the 17-point drop is a regression once o1 arrives."""
    o3_mini = _verdict(forward, "o3-mini-2025-01-31")
    assert o3_mini["predecessor"] == "o1-2024-12-17" and o3_mini["verdict"] == verdicts.REGRESSION
    assert -19 < o3_mini["change"] < -15 and o3_mini["p_adjusted"] < 0.01
    sonnet = _verdict(forward, "claude-sonnet-4-20250514")
    # Real, below 5 points, and not significant once the prompt families are watched too: watched, never paged.
    assert sonnet["verdict"] == verdicts.WATCH and -4 < sonnet["change"] < -3
    chat = _verdict(forward, "deepseek-chat")
    assert chat["predecessor"] == "deepseek-reasoner" and chat["verdict"] == verdicts.REGRESSION
    assert chat["change"] == pytest.approx(-6.67, abs=0.1)  # after − before
    gains = forward[(forward["metric"] == "correct_rate") & (forward["change"] > 0)]
    assert set(gains["verdict"]) <= {verdicts.IMPROVEMENT, verdicts.WATCH, verdicts.NO_CHANGE}
    significant = gains[gains["p_adjusted"] < gains["alpha"]]
    assert len(significant) >= 5 and (significant["verdict"] == verdicts.IMPROVEMENT).all()
    assert forward.loc[forward["verdict"] != "", "mde"].gt(0).all()  # every verdict states its MDE


@pytest.mark.parametrize("order", ["reversed", "shuffled"])
def test_the_same_runs_in_any_order_give_the_same_history(runs, forward, order, tmp_path):
    shuffled = list(reversed(runs)) if order == "reversed" else random.Random(7).sample(runs, len(runs))
    other = _history(runs, shuffled, tmp_path / "h.sqlite")
    pd.testing.assert_frame_equal(other, forward)


def test_a_regression_stays_failed_until_acknowledged(runs, tmp_path):
    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    pair = [r for r in runs if r.model in ("deepseek-reasoner", "deepseek-chat")]
    recorded = {r.run.model: r for r in imports.record_runs(history, pair)}
    chat = recorded["deepseek-chat"].tracked.evaluation
    failing = [(r["metric"], r["breakdown"]) for r in tracking.failing(history, chat)]
    assert ("correct_rate", "") in failing and {m for m, _ in failing} == {"correct_rate"}
    # Recording the same evaluation again (a re-run) reuses it and keeps its verdicts: still failing.
    again = imports.record_runs(history, pair)[1].tracked
    assert again.evaluation.reused
    assert [(r["metric"], r["breakdown"]) for r in tracking.failing(history, again.evaluation)] == failing
    history.acknowledge(chat.evaluation_id, "on-call", note="known: chat is the cheaper model")
    assert tracking.failing(history, chat) == []
    acks = history.acknowledgements([chat.evaluation_id])
    assert acks.iloc[0]["acknowledged_by"] == "on-call" and acks.iloc[0]["note"].startswith("known")
    with pytest.raises(KeyError, match="no evaluation 'nope'"):
        history.acknowledge("nope", "on-call")


def test_the_cli_history_ack_and_gate(runs, tmp_path, monkeypatch, capsys):
    from geomon.cli import main

    monkeypatch.setenv("GEOMON_STORE_URL", f"sqlite:///{tmp_path / 'h.sqlite'}")
    pair = [r for r in runs if r.model in ("deepseek-reasoner", "deepseek-chat")]
    imports.record_runs(MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}"), pair)
    assert main(["history", "--suite", "gapminder", "--format", "csv"]) == 0
    table = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out))
    row = table[(table["model"] == "deepseek-chat") & (table["metric"] == "correct_rate")].iloc[0]
    assert row["verdict"] == "regression" and row["mde"] > 0
    assert main(["alerts", "ack", row["evaluation_id"], "--by", "on-call"]) == 0
    assert "acknowledged by on-call" in capsys.readouterr().out
    from geomon.cli import gate

    assert gate("check", 1, 0) == 3 and gate("regression", 1, 0) == 0 and gate("regression", 0, 1) == 3
    assert gate("never", 5, 5) == 0


def test_a_changed_scorer_starts_a_new_series_never_compared(tmp_path):
    """A suite whose scorer was fixed: its next evaluation, 50 points lower, is a new series — nothing compared,
    no regression — and `geomon history` and the trends report (a break in the line) say why; the next run of
    the fixed definition is compared with it."""
    from geomon.report import trends
    from geomon.stats.values import series_scope
    from geomon.suites import kit

    _, tracked = kit.group_metrics("accuracy", ("region",), 5.0, 10.0, "Toy")
    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    parts = {"data": "capitals.csv", "prompt": "The capital of {country}?", "scorer": "normalised", "code": "v1"}
    before, after = series_scope("toy|40", parts), series_scope("toy|40", {**parts, "scorer": "exact"})

    def evaluate(scope: str, right: int, day: str) -> tracking.Tracked:
        items = pd.DataFrame({"item": [f"q{i:02d}" for i in range(40)], "region": ["Asia", "Europe"] * 20}).assign(
            value=[100.0 if i < right else 0.0 for i in range(40)]
        )
        when = pd.Timestamp(day, tz="UTC").to_pydatetime()
        return tracking.track(history, "toy", "m", [], items, tracked, verdicts.VerdictSettings(), scope=scope,
                              evaluated_at=when)  # fmt: skip

    evaluate(before, 36, "2026-11-01")
    fixed = evaluate(after, 16, "2026-11-08")
    assert fixed.verdicts == [] and fixed.against == ""  # never compared with the old scoring
    again = evaluate(after, 16, "2026-11-15")
    overall = next(v for v in again.verdicts if v["metric"] == "accuracy" and not v["breakdown"])
    assert again.against == "previous run" and overall["verdict"] == verdicts.NO_CHANGE
    table = tracking.history_table(history, "toy", [("accuracy", "")])
    notes = dict(zip(table["evaluated_at"], table["note"], strict=True))
    assert notes["2026-11-08"] == "new series: scorer changed" and "new series" not in notes["2026-11-15"]
    catalog = [("toy", "accuracy", "", "Toy: accuracy", (0.0, 100.0))]
    page = trends.write_report(tmp_path / "trends", history.series(), history.comparisons(), catalog=catalog)
    saved = pd.read_csv(tmp_path / "trends" / "trends.csv", keep_default_na=False)
    assert list(saved["new_series"]) == ["", "new series: scorer changed", ""]
    text = page.read_text()
    assert "m · series 1" in text and "m · series 2" in text and "new series: scorer changed" in text
