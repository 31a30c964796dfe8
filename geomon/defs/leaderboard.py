"""The leaderboard every suite ends on: each model's summary side by side, its report, its metadata."""

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from geomon.defs.resources import by_partition
from geomon.report import charts
from geomon.report.index import write_index


def _column_type(values: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(values):
        return "bool"
    if pd.api.types.is_integer_dtype(values):
        return "int"
    return "float" if pd.api.types.is_float_dtype(values) else "string"


def metadata_table(frame: pd.DataFrame) -> dg.MetadataValue:
    """A Dagster table (sortable in the UI): numbers stay numbers, a missing number is an empty cell
    (None: every record must have every column)."""
    kinds = {column: _column_type(frame[column]) for column in frame.columns}
    records = []
    for row in frame.itertuples(index=False):
        cells: dict[str, Any] = {}
        for column, value in zip(frame.columns, row, strict=True):
            if kinds[column] == "string":
                cells[column] = str(value)
            else:
                cells[column] = (value.item() if hasattr(value, "item") else value) if pd.notna(value) else None
        records.append(dg.TableRecord(cells))
    schema = dg.TableSchema(columns=[dg.TableColumn(column, kind) for column, kind in kinds.items()])
    return dg.MetadataValue.table(records, schema)


def leaderboard(
    context: dg.AssetExecutionContext,
    input_name: str,
    per_model: Any,
    write: Callable[[pd.DataFrame, dict[str, dict[str, Any]]], Path],
    columns: Sequence[str],
) -> dg.Output[pd.DataFrame]:
    """One row per model from its partition's ``summary``; ``write(board, results)`` writes the report;
    the metadata shows ``columns`` (those present) and links the report."""
    results = by_partition(context, input_name, per_model)
    board = pd.DataFrame([{"model": model, **result["summary"]} for model, result in sorted(results.items())])
    report = write(board, results)
    index = write_index(report.parent.parent)
    shown = [c for c in ("model", *columns) if c in board]
    return dg.Output(
        board,
        metadata={
            "models": len(board),
            "leaderboard": dg.MetadataValue.md(charts.markdown_table(board[shown])),
            "leaderboard_table": metadata_table(board[shown]),
            "report": dg.MetadataValue.path(str(report)),
            # A link too; browsers may refuse file:// links from the UI's http:// page, the path is copyable.
            "report_url": dg.MetadataValue.url(report.resolve().as_uri()),
            "index": dg.MetadataValue.path(str(index)),
            **per_model_series(board, shown),
        },
    )


TREND_COLUMNS = 3  # numeric leaderboard columns given a per-model series in the asset's Plots tab


def per_model_series(board: pd.DataFrame, shown: Sequence[str]) -> dict[str, float]:
    """``<column> · <model>`` for the first numeric leaderboard columns: Dagster's Plots tab draws each
    metadata key over the materializations, so each model gets its own line over time, never one line
    drawn across models."""
    numeric = [c for c in shown if c != "model" and pd.api.types.is_numeric_dtype(board[c])][:TREND_COLUMNS]
    return {
        f"{column} · {row['model']}": float(row[column])
        for _, row in board.iterrows()
        for column in numeric
        if pd.notna(row[column]) and abs(float(row[column])) != float("inf")
    }
