"""The verdict engine over the metric history, on Gapminder's published history of 37 real model configurations:
every configuration in its release line, the same history whatever the import order, the verdicts the real
history holds, acknowledgements, and the CLI gate."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from geomon.monitor import imports, release, views
from geomon.monitor.history import MetricHistory
from geomon.sources import gapminder as source
from geomon.stats import compare, verdicts
from geomon_tests.conftest import GAPMINDER_ENTITIES, GAPMINDER_PUBLISHED, SHARED
from geomon_tests.stats.test_compare import ACC, _items


@pytest.fixture(scope="module")
def runs() -> list[imports.ImportedRun]:
    bank = source.read_snapshot(SHARED / "snapshots" / "gapminder")
    return imports.gapminder_runs(GAPMINDER_PUBLISHED, GAPMINDER_ENTITIES, bank)


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
    assert sum(not r.note for r in runs) == 19 and sum(r.note == imports.RATES_ONLY for r in runs) == 17


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
    failing = [(r["metric"], r["breakdown"]) for r in release.failing(history, chat)]
    assert ("correct_rate", "") in failing and {m for m, _ in failing} == {"correct_rate"}
    # Recording the same evaluation again (a re-run) reuses it and keeps its verdicts: still failing.
    again = imports.record_runs(history, pair)[1].tracked
    assert again.evaluation.reused
    assert [(r["metric"], r["breakdown"]) for r in release.failing(history, again.evaluation)] == failing
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

    def evaluate(scope: str, right: int, day: str) -> release.Tracked:
        items = pd.DataFrame({"item": [f"q{i:02d}" for i in range(40)], "region": ["Asia", "Europe"] * 20}).assign(
            value=[100.0 if i < right else 0.0 for i in range(40)]
        )
        when = pd.Timestamp(day, tz="UTC").to_pydatetime()
        return release.track(history, "toy", "m", [], items, tracked, verdicts.VerdictSettings(), scope=scope,
                              evaluated_at=when)  # fmt: skip

    evaluate(before, 36, "2026-11-01")
    fixed = evaluate(after, 16, "2026-11-08")
    assert fixed.verdicts == [] and fixed.against == ""  # never compared with the old scoring
    again = evaluate(after, 16, "2026-11-15")
    overall = next(v for v in again.verdicts if v["metric"] == "accuracy" and not v["breakdown"])
    assert again.against == "previous run" and overall["verdict"] == verdicts.NO_CHANGE
    table = views.history_table(history, "toy", [("accuracy", "")])
    notes = dict(zip(table["evaluated_at"], table["note"], strict=True))
    assert notes["2026-11-08"] == "new series: scorer changed" and "new series" not in notes["2026-11-15"]
    catalog = [("toy", "accuracy", "", "Toy: accuracy", (0.0, 100.0))]
    page = trends.write_report(tmp_path / "trends", history.series(), history.comparisons(), catalog=catalog)
    saved = pd.read_csv(tmp_path / "trends" / "trends.csv", keep_default_na=False)
    assert list(saved["new_series"]) == ["", "new series: scorer changed", ""]
    text = page.read_text()
    assert "m · series 1" in text and "m · series 2" in text and "new series: scorer changed" in text


def test_a_verdict_reads_in_the_metric_units_worst_first():
    """What the no_regression check and the import's catalog entries show: percentage points for a percentage,
    the metric's own units otherwise, a 95 % interval of ± 1.96 standard errors, p values rounded (tiny ones as
    < 0.001), the MDE in the same units, "—" where a figure is undefined, and each verdict's note (a comparison not
    decidable at the run's profile says so)."""
    rows = [
        {
            "metric": "correct_rate",
            "breakdown": "topic=other",
            "against": "predecessor o1",
            "change": 1.0,
            "se": 1.0,
            "p_value": 0.2,
            "p_adjusted": 0.4,
            "mde": 3.0,
            "power": 0.5,
            "verdict": verdicts.NO_CHANGE,
            "note": "not decidable at this profile: MDE 3 > min effect 1 (`geomon plan --detect`)",
        },
        {
            "metric": "correct_rate",
            "breakdown": "",
            "against": "predecessor o1",
            "change": -17.19,
            "se": 2.0,
            "p_value": 0.00001,
            "p_adjusted": 0.0004,
            "mde": 5.123,
            "power": 0.912,
            "verdict": verdicts.REGRESSION,
        },
        {
            "metric": "mean_error",
            "breakdown": "",
            "against": "previous run",
            "change": float("nan"),
            "se": None,
            "p_value": None,
            "p_adjusted": None,
            "mde": 0.0123,
            "verdict": verdicts.UNDEFINED,
        },
    ]
    table = views.verdict_table(rows, {"correct_rate": (0, 100), "mean_error": None})
    assert table.to_dict("records") == [
        {
            "metric": "correct_rate",
            "baseline": "o1 (predecessor)",
            "change": "−17.2 pts",
            "95 % interval": "[−21.1, −13.3] pts",
            "p": "< 0.001",
            "adjusted p": "< 0.001",
            "MDE": "5.12 pts",
            views.POWER: "91%",
            "verdict": "regression",
            "note": "",
        },
        {
            "metric": "correct_rate (topic=other)",
            "baseline": "o1 (predecessor)",
            "change": "+1 pts",
            "95 % interval": "[−0.96, 2.96] pts",
            "p": "0.2",
            "adjusted p": "0.4",
            "MDE": "3 pts",
            views.POWER: "50%",
            "verdict": "no detectable change",
            "note": "not decidable at this profile: MDE 3 > min effect 1 (`geomon plan --detect`)",
        },
        {
            "metric": "mean_error",
            "baseline": "previous run",
            "change": "—",
            "95 % interval": "—",
            "p": "—",
            "adjusted p": "—",
            "MDE": "0.0123",
            views.POWER: "—",
            "verdict": "undefined",
            "note": "",
        },
    ]
    assert views.verdict_phrase("o3-mini", rows[1], (0, 100)) == (
        "o3-mini vs o1: correct_rate −17.2 pts (p < 0.001, adjusted < 0.001), regression"
    )


def test_geomon_items_says_why_a_suite_has_no_items(tmp_path):
    """A built-in suite's evaluation keeps no items as scored: `geomon items` says so, and where its answers are,
    instead of claiming the evaluated model has none."""
    from geomon.suites import quench

    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    items = pd.DataFrame(
        {
            "item": [f"e{i}|normal" for i in range(4)],
            "question_id": ["1", "2", "3", "4"],
            "mode": "normal",
            "correct": [1.0, 0.0, 1.0, 1.0],
            "answered": 1.0,
            "indic": [True, False, True, False],
            "questions": ["Indic", "non-Indic", "Indic", "non-Indic"],
        }
    )
    release.track(history, "quench", "m", [], items, quench.TRACKED, verdicts.VerdictSettings(resamples=99))
    with pytest.raises(release.TrackingError, match=r"keep no items as scored.*per-model CSVs"):
        views.item_rows(history, "quench", "m")
    with pytest.raises(release.TrackingError, match=r"no evaluation of n \(models evaluated: m\)"):
        views.item_rows(history, "quench", "n")


def test_the_blind_line_names_comparisons_too_small_to_test_and_too_weak_to_decide():
    """A leaderboard's "blind" line names both kinds of comparison whose "no detectable change" is not "no
    regression": too few clusters to be tested at all (a small group), and an MDE above the minimum effect.
    Mutation caught: the line naming only the profile-blind ones (the small groups were left out)."""
    from geomon.stats import sufficiency

    rows = [
        {"metric": "acc", "breakdown": "", "note": f"{sufficiency.PROFILE_PREFIX}MDE 12 > min effect 5"},
        {"metric": "acc", "breakdown": "country=Kenya", "note": f"{sufficiency.SAMPLE_PREFIX} (8 clusters < 30)"},
        {"metric": "acc", "breakdown": "country=Peru", "note": ""},
    ]
    line = views.profile_blind(rows)
    assert (
        line.startswith("not decidable at this profile (power below the stated power at the minimum effect")
        and ": acc;" in line
    )
    assert "not decidable at this sample (fewer than 30 clusters, or a value" in line and "acc (country=Kenya)" in line
    assert "Peru" not in line and views.profile_blind(rows[2:]) == ""


def test_imported_comparisons_note_what_applies_to_them(forward):
    """An imported evaluation never had a geomon run profile: a comparison too weak to detect its minimum effect
    says so in terms of its published sample, never "not decidable at this profile" or `geomon plan`."""
    from geomon.stats import sufficiency

    notes = forward["note"].fillna("")
    assert notes.str.startswith(sufficiency.PUBLISHED_PREFIX).any()
    assert not notes.str.contains(sufficiency.PROFILE_PREFIX.strip(": ")).any()
    assert not notes.str.contains("geomon plan").any()


def test_a_page_from_an_underpowered_comparison_says_so_in_the_power_column():
    """Where the open regressions are listed (the check's table, ``monitor/open_regressions``, the reports), the
    power of a page from a test below the stated power reads "6 % (underpowered)"; a well-powered page's does not.
    Mutation caught: the flag dropped from ``verdict_table``."""
    row = {"metric": "acc", "breakdown": "", "against": "predecessor a", "change": -20.0, "se": 2.0, "p_value": 1e-4,
           "p_adjusted": 1e-3, "mde": 30.0, "power": 0.06, "verdict": verdicts.REGRESSION,
           "note": f"{verdicts.UNDERPOWERED_PAGE} (6% power at the minimum effect)"}  # fmt: skip
    weak, strong = views.verdict_table([row, {**row, "power": 0.95, "note": ""}], {}).to_dict("records")
    assert weak[views.POWER] == "6% (underpowered)" and strong[views.POWER] == "95%"


def test_what_the_history_stores_is_what_compare_returns(tmp_path):
    """``tracking`` reads the baseline, spends the look and stores ``compare``'s verdicts as they are."""
    settings = verdicts.VerdictSettings(resamples=199)
    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    plan = verdicts.ReleasePlan(0.05, {"toy": 1.0}, import_slots=0)
    release.track(history, "toy", "old", [], _items(0), (ACC,), settings, plan=plan)
    out = release.track(history, "toy", "new", [], _items(20), (ACC,), settings, plan=plan, predecessor="old")
    (old,) = history.evaluations_of("toy", "", model="old")
    _, decided = compare.compare((ACC,), old.items, out.evaluation.items, plan.look("toy"), settings)

    def number(x: float | None) -> float:
        return math.nan if x is None else float(x)

    stored = {(r["metric"], r["breakdown"]): (r["verdict"], number(r["p_adjusted"]), r["mde"]) for r in out.verdicts}
    assert stored.keys() == {(v.metric, v.breakdown) for v in decided}
    for v in decided:
        verdict, p_adjusted, mde = stored[(v.metric, v.breakdown)]
        assert verdict == v.verdict and mde == v.mde
        assert p_adjusted == number(v.p_adjusted) or (math.isnan(p_adjusted) and math.isnan(number(v.p_adjusted)))
