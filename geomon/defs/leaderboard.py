"""The leaderboard every suite ends on: each model's summary side by side, its report, its metadata."""

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from geomon.defs.resources import by_partition
from geomon.report import charts


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
    shown = [c for c in ("model", *columns) if c in board]
    return dg.Output(
        board,
        metadata={
            "models": len(board),
            "leaderboard": dg.MetadataValue.md(charts.markdown_table(board[shown])),
            "report": dg.MetadataValue.path(str(report)),
        },
    )
