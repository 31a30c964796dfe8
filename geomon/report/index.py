"""``<results_dir>/index.html``: one page that links every suite's report, leaderboard and the trends."""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from geomon.report import charts


def write_index(results_dir: Path, suites: Sequence[tuple[str, str]]) -> Path:
    """The index of what ``results_dir`` holds now (``suites``: (name, title) in the registry's order, handed in
    by the caller; then the trends); rewritten whenever a report is. Links are relative, so the folder can be
    moved or served as is."""
    rows = []
    for name, title in suites:
        report = results_dir / name / "report.html"
        board = results_dir / name / "leaderboard.csv"
        if not report.exists():
            rows.append(f"<tr><td>{html.escape(title)}</td><td colspan='3'>not run yet</td></tr>")
            continue
        models = len(pd.read_csv(board)) if board.exists() else 0
        written = datetime.fromtimestamp(report.stat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M UTC")
        links = f"<a href='{name}/report.html'>report</a>"
        if board.exists():
            links += f" · <a href='{name}/leaderboard.csv'>leaderboard.csv</a>"
        rows.append(f"<tr><td>{html.escape(title)}</td><td>{links}</td><td>{models}</td><td>{written}</td></tr>")
    trends = results_dir / "trends" / "report.html"
    rows.append(
        "<tr><td>Trends (every headline metric over time)</td>"
        + ("<td><a href='trends/report.html'>report</a></td><td></td><td></td>" if trends.exists() else "")
        + ("" if trends.exists() else "<td colspan='3'>no history yet</td>")
        + "</tr>"
    )
    table = (
        "<table><tr><th>benchmark</th><th>open</th><th>models</th><th>written</th></tr>" + "".join(rows) + "</table>"
    )
    results_dir.mkdir(parents=True, exist_ok=True)
    return charts.write_html(results_dir / "index.html", "geomon — results", ["<h1>geomon — results</h1>", table])
