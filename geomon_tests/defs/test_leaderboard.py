"""Leaderboards as Dagster tables: sortable numbers, missing values left empty, text as text."""

import math

import dagster as dg
import pandas as pd

from geomon.defs.leaderboard import metadata_table


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
