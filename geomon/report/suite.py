"""The report of a suite declared by a Pipeline: the leaderboard, then one chart with intervals per
breakdown (every model side by side), then the breakdown's table; CSVs beside it."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from geomon.report import charts


@dataclass(frozen=True)
class Breakdown:
    """A chart of ``result[key]`` rows (``where`` selects them): ``value`` per ``group`` with ``ci_low`` and
    ``ci_high``, one colour per model."""

    key: str
    title: str
    group: str
    value: str
    where: dict[str, Any] = field(default_factory=dict)


def _rows(result: dict[str, Any], breakdown: Breakdown) -> pd.DataFrame:
    frame = result.get(breakdown.key)
    if not isinstance(frame, pd.DataFrame) or frame.empty:
        return pd.DataFrame()
    for column, wanted in breakdown.where.items():
        frame = frame[frame[column] == wanted]
    return frame


def _table(frame: pd.DataFrame) -> str:
    return frame.to_html(index=False, na_rep="—", float_format=lambda v: f"{v:.2f}")


def write_suite_report(
    out_dir: Path,
    title: str,
    definition: str,
    board: pd.DataFrame,
    results: dict[str, dict[str, Any]],
    breakdowns: list[Breakdown],
) -> Path:
    """leaderboard.csv, one CSV per breakdown and model, and report.html; returns the HTML path. A breakdown
    with no finite value says so instead of drawing an empty chart."""
    out_dir.mkdir(parents=True, exist_ok=True)
    board.to_csv(out_dir / "leaderboard.csv", index=False)
    sections = [
        f"<h1>geomon — {html.escape(title)}</h1>",
        f"<p>{html.escape(' '.join(definition.split()))}</p>",
        "<h2>Leaderboard</h2>",
        _table(board),
    ]
    for breakdown in breakdowns:
        frames = []
        for model, result in sorted(results.items()):
            rows = _rows(result, breakdown)
            if len(rows):
                rows.to_csv(out_dir / f"{breakdown.key}-{model}.csv", index=False)
                frames.append(rows.assign(model=model))
        sections.append(f"<h2>{html.escape(breakdown.title)}</h2>")
        joined = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        finite = joined[pd.to_numeric(joined[breakdown.value], errors="coerce").notna()] if len(joined) else joined
        if finite.empty:
            sections.append("<p>No value to show: no scored answer falls in this breakdown.</p>")
            continue
        png = charts.breakdown_bars(finite, breakdown.value, breakdown.group, "model", breakdown.title)
        sections += [charts.png_html(png), "<details><summary>table</summary>", _table(joined), "</details>"]
    return charts.write_html(out_dir / "report.html", f"geomon {title}", sections)
