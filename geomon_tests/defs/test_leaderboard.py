"""Leaderboards as Dagster tables: sortable numbers, missing values left empty, text as text."""

import math

import dagster as dg
import pandas as pd

from geomon.defs.leaderboard import metadata_table, per_model_series


def test_metadata_table_keeps_numbers_and_leaves_missing_cells_empty():
    board = pd.DataFrame(
        {"model": ["a", "b"], "questions": [10, 12], "error": [0.25, math.nan], "parsed": [True, False]}
    )
    value = metadata_table(board)
    assert isinstance(value, dg.TableMetadataValue)
    assert [(c.name, c.type) for c in value.schema.columns] == [
        ("model", "string"),
        ("questions", "int"),
        ("error", "float"),
        ("parsed", "bool"),
    ]
    first, second = (r.data for r in value.records)
    assert first == {"model": "a", "questions": 10, "error": 0.25, "parsed": True}
    assert second["error"] is None and type(second["questions"]) is int


def test_each_model_gets_its_own_series_for_the_plots_tab():
    board = pd.DataFrame(
        {
            "model": ["a", "b"],
            "name": ["x", "y"],
            "questions": [10, 12],
            "error": [0.25, math.nan],
            "delta": [math.inf, 1.0],
            "rate": [0.5, 0.6],
        }
    )
    series = per_model_series(board, ["error", "delta", "rate", "absent"])
    # The given (headline) metrics, one key per model; values that are not finite are left out.
    assert series == {"error · a": 0.25, "delta · b": 1.0, "rate · a": 0.5, "rate · b": 0.6}
    by_version = per_model_series(board, ["rate"], ("model", "name"))
    assert by_version == {"rate · a · x": 0.5, "rate · b · y": 0.6}


def test_every_suites_leaderboard_plots_its_headlines_never_counts():
    from geomon.defs.leaderboard import headline_metrics
    from geomon.suites.registry import suites

    for name, info in suites().items():
        metrics = headline_metrics(name)
        assert metrics and all(not m.endswith(("_ci_low", "_ci_high")) and m not in {"n", "answered"} for m in metrics)
        assert metrics == list(dict.fromkeys(h.metric for h in info.headlines))


def test_a_comparison_not_decidable_at_its_profile_is_said_on_every_surface(tmp_path):
    """A toy suite compared on 40 items: its planned MDE (~36 points) is above its 5-point minimum
    effect, so "no detectable change" is not "no regression" — the stored verdict's note, the check's table, the
    leaderboard's ``sample_note`` and `geomon run`'s terminal table all say "not decidable at this profile".
    Mutation caught: the rule (MDE above the minimum effect) removed from ``sufficiency.underpowered`` (every assertion
    below)."""
    from types import SimpleNamespace

    from geomon.cli.tables import terminal_table
    from geomon.defs.leaderboard import SAMPLE_NOTE, with_verdicts
    from geomon.defs.verdict_tables import comparisons_table
    from geomon.monitor import release
    from geomon.monitor.history import EvaluationRun, MetricHistory
    from geomon.stats import verdicts
    from geomon.suites import kit

    _, tracked = kit.group_metrics("accuracy", (), 5.0, 10.0, "Toy")
    store_url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    history = MetricHistory(store_url)
    settings = verdicts.VerdictSettings(resamples=199)
    for day, right in (("2026-11-01", 20), ("2026-11-08", 19)):
        values = [100.0 * (i < right) for i in range(40)]
        items = pd.DataFrame({"item": [f"q{i:02d}" for i in range(40)], "value": values})
        when = pd.Timestamp(day, tz="UTC").to_pydatetime()
        run = EvaluationRun("toy", "m", scope="toy|40", evaluated_at=when)
        result = release.track(history, run, release.declared_figures("toy", tracked, items), items, tracked, settings)
    (row,) = [r for r in result.verdicts if r.metric == "accuracy"]
    assert row.verdict == verdicts.NO_CHANGE and row.mde > 2 * 5.0
    assert row.note.startswith(f"not decidable at this profile: MDE {row.mde:.3g} > min effect 5")
    # The no_regression check's table carries the note beside the verdict.
    assert "not decidable at this profile: MDE" in comparisons_table(result.verdicts, tracked).value
    # The leaderboard's sample_note, and the terminal table `geomon run` prints from the leaderboard's CSV.
    board = with_verdicts(pd.DataFrame({"model": ["m"], "accuracy": [47.5], SAMPLE_NOTE: [""]}), "toy", store_url)
    assert (
        board[SAMPLE_NOTE]
        .iloc[0]
        .startswith("not decidable at this profile (power below the stated power at the minimum effect")
    )
    assert "accuracy" in board[SAMPLE_NOTE].iloc[0]
    board.to_csv(tmp_path / "leaderboard.csv", index=False)
    text = terminal_table(tmp_path / "leaderboard.csv", SimpleNamespace(headlines=()))
    assert "  m: not decidable at this profile (power below the stated power at the minimum effect" in text


def test_the_leaderboard_assets_tables_show_the_headline_columns_and_name_the_csv_with_the_rest(tmp_path):
    """The leaderboard asset's table and Markdown hold each row's labels, its headline columns, sample and verdicts,
    not the board's other columns (intervals, counts, the long sample note): those are in leaderboard.csv beside
    the report, whose path the metadata gives. Mutation caught: the whole board in the table."""
    from geomon.defs.leaderboard import leaderboard_metadata

    board = pd.DataFrame(
        {
            "model": ["a", "b"],
            "origin": "geomon",
            "mean_error": [0.2, 0.3],
            "mean_error_ci_low": [0.1, 0.2],
            "questions": [10, 12],
            "sample": "abc (8 prompts)",
            "sample_note": "insufficient sample: mean_error: n = 8 < 30",
            "verdicts": "nothing compared yet",
        }
    )
    report = tmp_path / "results" / "worldbench" / "report.html"
    report.parent.mkdir(parents=True)
    board.to_csv(report.parent / "leaderboard.csv", index=False)
    meta = leaderboard_metadata(
        "worldbench", board, report, ["mean_error"], store_url=f"sqlite:///{tmp_path / 'store.sqlite'}"
    )
    shown = [c.name for c in meta["leaderboard_table"].schema.columns]
    assert shown == ["model", "origin", "mean_error", "sample", "verdicts"]
    assert "mean_error_ci_low" not in meta["leaderboard"].value and "sample_note" not in meta["leaderboard"].value
    assert meta["leaderboard_csv"].value == str(report.parent / "leaderboard.csv")
