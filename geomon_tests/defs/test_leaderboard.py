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
    series = per_model_series(board, ["model", "name", "questions", "error", "delta", "rate"])
    # The first three numeric columns, one key per model; values that are not finite are left out.
    assert series == {"questions · a": 10.0, "questions · b": 12.0, "error · a": 0.25, "delta · b": 1.0}
