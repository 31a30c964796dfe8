"""BLEnD's page: the declared suite's report with its breakdowns — SEM-B per country in each language, the local
language against English, topics."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from geomon.report.suite import Breakdown, write_suite_report


def write_report(
    out: Path,
    title: str,
    description: str,
    board: pd.DataFrame,
    results: dict[str, dict[str, Any]],
    columns: Sequence[str],
) -> Path:
    """BLEnD's report.html and CSVs in ``out``: the leaderboard's headline ``columns``, then one interval chart per
    breakdown with every model side by side."""
    return write_suite_report(
        out,
        title,
        description,
        board,
        results,
        [
            Breakdown(
                "countries", "SEM-B per country, local language", "group", "value", {"view": "local", "metric": "sem_b"}
            ),
            Breakdown(
                "countries", "SEM-B per country, English", "group", "value", {"view": "english", "metric": "sem_b"}
            ),
            Breakdown(
                "local_vs_english",
                "Local language − English, SEM-B points (paired on questions)",
                "country",
                "difference",
            ),
            Breakdown("topics", "SEM-B per topic, local language", "group", "value", {"view": "local"}),
        ],
        columns,
    )
