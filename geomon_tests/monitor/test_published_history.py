"""The verdict engine over the metric history, on Gapminder's published history of 37 real model configurations:
every configuration in its release line, the same history whatever the import order, the verdicts the real
history holds, acknowledgements, and the CLI gate."""

from __future__ import annotations

import pandas as pd
import pytest

from geomon.monitor import imports, release, views
from geomon.monitor.history import EvaluationRun, MetricHistory
from geomon.stats import verdicts
from geomon.suites.gapminder import published, source
from geomon_tests.conftest import GAPMINDER_ENTITIES, GAPMINDER_PUBLISHED, SHARED


@pytest.fixture(scope="module")
def runs() -> list[imports.ImportedRun]:
    bank = source.read_snapshot(SHARED / "snapshots" / "gapminder")
    return imports.published_runs(
        "gapminder-results", published.evaluations(GAPMINDER_PUBLISHED, GAPMINDER_ENTITIES, bank)
    )


def _table(history: MetricHistory) -> pd.DataFrame:
    table = views.history_table(history, "gapminder", [("correct_rate", ""), ("very_wrong_rate", "")])
    return table.drop(columns=["evaluation_id"]).sort_values(["model", "metric"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def forward(runs, tmp_path_factory) -> pd.DataFrame:
    """The whole published history in one import."""
    history = MetricHistory(f"sqlite:///{tmp_path_factory.mktemp('forward') / 'h.sqlite'}")
    imports.record_runs(history, runs)
    return _table(history)


def _verdict(table, model, metric="correct_rate"):
    return table[(table["model"] == model) & (table["metric"] == metric)].iloc[0]


def test_every_published_configuration_in_its_release_line(runs):
    """All 37 configurations, December 2023 (the first publish date) to June 2025, each one evaluation dated by
    its first experiment, in the vendors' release lines by publish date; 19 complete per-answer files add every
    prompt family's correct rate."""
    assert len(runs) == 37 and len({r.model for r in runs}) == 37
    assert str(min(r.released for r in runs)) == "2023-12-01" and str(runs[-1].evaluated_at.date()) == "2025-06-13"
    predecessor = {r.model: r.predecessor for r in runs}
    line, model = [], "o3-2025-04-16"
    while model:
        line.append(model)
        model = predecessor[model]
    assert line[::-1] == [
        "gpt-4-0125-preview",
        "gpt-4o-2024-05-13",
        "gpt-4o-2024-08-06",
        "gpt-4o-2024-11-20",
        "o1-2024-12-17",
        "o3-mini-2025-01-31",
        "gpt-4.1-2025-04-14",
        "o3-2025-04-16",
    ]
    assert sum(not r.note for r in runs) == 19 and sum(r.note == published.RATES_ONLY for r in runs) == 17


def test_the_real_history_holds_the_verdicts_people_read(forward):
    """o1 → o3-mini: o3-mini was evaluated first (2025-03-06), o1 later (2025-04-15); in release order o1
    is o3-mini's predecessor, so the 17-point drop is a regression once o1 arrives."""
    o3_mini = _verdict(forward, "o3-mini-2025-01-31")
    assert o3_mini["predecessor"] == "o1-2024-12-17" and o3_mini["verdict"] == verdicts.REGRESSION
    assert -19 < o3_mini["change"] < -15 and o3_mini["p_adjusted"] < 0.01
    sonnet = _verdict(forward, "claude-sonnet-4-20250514")
    # Real and below 5 points: significant as the paired test plans it (the same questions), shown, never paged.
    assert sonnet["verdict"] == verdicts.BELOW_THRESHOLD and -4 < sonnet["change"] < -3
    chat = _verdict(forward, "deepseek-chat")
    assert chat["predecessor"] == "deepseek-reasoner" and chat["verdict"] == verdicts.REGRESSION
    assert chat["change"] == pytest.approx(-6.67, abs=0.1)  # after − before
    qwen = _verdict(forward, "qwen-max-2025-01-25")  # on the 365 questions both were published on
    assert qwen["predecessor"] == "qwen-max-2024-09-19" and qwen["change"] == pytest.approx(-4.55, abs=0.01)
    gains = forward[(forward["metric"] == "correct_rate") & (forward["change"] > 0)]
    assert set(gains["verdict"]) <= {verdicts.IMPROVEMENT, verdicts.WATCH, verdicts.NO_CHANGE}
    significant = gains[gains["p_adjusted"] < gains["alpha"]]
    assert len(significant) >= 10 and (significant["verdict"] == verdicts.IMPROVEMENT).all()
    assert forward.loc[forward["verdict"] != "", "mde"].gt(0).all()  # every verdict states its MDE


def test_the_same_history_in_any_import_order(runs, forward, tmp_path):
    """One import of everything, and one import per configuration newest first (each import sees only what
    came before it, and a baseline arrives after its successor): the same history."""
    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    for run in reversed(runs):
        imports.record_runs(history, [run])
    pd.testing.assert_frame_equal(_table(history), forward)


def test_a_regression_stays_failed_until_acknowledged(runs, tmp_path):
    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    pair = [r for r in runs if r.model in ("deepseek-reasoner", "deepseek-chat")]
    recorded = {r.run.model: r for r in imports.record_runs(history, pair)}
    chat = recorded["deepseek-chat"].tracked.evaluation
    failing = [r.key for r in release.failing(history, chat)]
    assert ("correct_rate", "") in failing and {m for m, _ in failing} == {"correct_rate"}
    # Recording the same evaluation again (a re-run) reuses it and keeps its verdicts: still failing.
    again = imports.record_runs(history, pair)[1].tracked
    assert again.evaluation.reused
    assert [r.key for r in release.failing(history, again.evaluation)] == failing
    history.acknowledge(chat.evaluation_id, "on-call", note="known: chat is the cheaper model")
    assert release.failing(history, chat) == []
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
    from geomon.cli.common import gate

    assert gate("check", 1, 0) == 3 and gate("regression", 1, 0) == 0 and gate("regression", 0, 1) == 3
    assert gate("never", 5, 5) == 0


def test_alerts_list_names_every_open_regression_and_who_acknowledged_the_rest(runs, tmp_path, monkeypatch, capsys):
    """`geomon alerts list`: the gate's open regressions with release, group, change, p and adjusted p, exit 3
    while any is open; an acknowledged one moves to `acknowledged` with who and why, and exit 0 when none is left."""
    from geomon.cli import main

    monkeypatch.setenv("GEOMON_STORE_URL", f"sqlite:///{tmp_path / 'h.sqlite'}")
    assert main(["alerts", "list"]) == 0
    assert "No regression in the metric history" in capsys.readouterr().out
    pair = [r for r in runs if r.model in ("deepseek-reasoner", "deepseek-chat")]
    imports.record_runs(MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}"), pair)
    assert main(["alerts", "list", "--format", "csv"]) == 3
    table = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out))
    assert set(table["state"]) == {"open"}
    row = table[(table["metric"] == "correct_rate") & (table["group"] == "overall")].iloc[0]
    assert row["suite"] == "gapminder" and row["release"] == "deepseek-chat vs deepseek-reasoner"
    assert row["change"].startswith("−") and row["p"] and row["adjusted p"]
    assert main(["alerts", "list"]) == 3
    shown = capsys.readouterr().out
    assert "deepseek-chat vs deepseek-reasoner" in shown and f"{len(table)} open, 0 acknowledged" in shown
    assert main(["alerts", "ack", row["evaluation"], "--by", "on-call", "--note", "cheaper model"]) == 0
    capsys.readouterr()
    assert main(["alerts", "list", "--format", "csv"]) == 0
    after = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out))
    assert set(after["state"]) == {"acknowledged"} and len(after) == len(table)
    assert after["acknowledged"].str.match(r"on-call \d{4}-\d\d-\d\d \d\d:\d\d: cheaper model").all()


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

    def evaluate(scope: str, right: int, day: str) -> release.Tracked:
        items = pd.DataFrame({"item": [f"q{i:02d}" for i in range(40)], "region": ["Asia", "Europe"] * 20}).assign(
            value=[100.0 if i < right else 0.0 for i in range(40)]
        )
        when = pd.Timestamp(day, tz="UTC").to_pydatetime()
        figures = release.declared_figures("toy", tracked, items)
        run = EvaluationRun("toy", "m", scope=scope, evaluated_at=when)
        return release.track(history, run, figures, items, tracked, verdicts.VerdictSettings())

    evaluate(before, 36, "2026-11-01")
    fixed = evaluate(after, 16, "2026-11-08")
    assert fixed.verdicts == [] and fixed.against == ""  # never compared with the old scoring
    again = evaluate(after, 16, "2026-11-15")
    overall = next(v for v in again.verdicts if v.key == ("accuracy", ""))
    assert again.against == "previous run" and overall.verdict == verdicts.NO_CHANGE
    table = views.history_table(history, "toy", [("accuracy", "")])
    notes = dict(zip(table["evaluated_at"], table["note"], strict=True))
    assert notes["2026-11-08"] == "new series: scorer changed" and "new series" not in notes["2026-11-15"]
    catalog = [("toy", "accuracy", "", "Toy: accuracy", (0.0, 100.0))]
    page = trends.write_report(tmp_path / "trends", history.series(), history.comparisons(), catalog=catalog)
    saved = pd.read_csv(tmp_path / "trends" / "trends.csv", keep_default_na=False)
    assert list(saved["new_series"]) == ["", "new series: scorer changed", ""]
    text = page.read_text()
    assert "m · series 1" in text and "m · series 2" in text and "new series: scorer changed" in text


def test_imported_comparisons_note_what_applies_to_them(forward):
    """An imported evaluation never had a geomon run profile: a comparison too weak to detect its minimum effect
    says so in terms of its published sample, never "not decidable at this profile" or `geomon plan`."""
    from geomon.stats import sufficiency

    notes = forward["note"].fillna("")
    assert notes.str.startswith(sufficiency.PUBLISHED_PREFIX).any()
    assert not notes.str.contains(sufficiency.PROFILE_PREFIX.strip(": ")).any()
    assert not notes.str.contains("geomon plan").any()
