"""``<results_dir>/index.html``: one page that opens with every open regression across the suites, then links
every suite's report, leaderboard and the trends."""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from geomon.report import charts, regressions


def _models(board: Path) -> str:
    """``2 run, 37 imported`` from a suite's leaderboard.csv (its ``origin`` column; a paper's rows apart),
    counting distinct models: a leaderboard has a row per model, revision and persona where a suite has those."""
    frame = pd.read_csv(board, usecols=lambda column: column in ("model", "origin"))  # a board has ~200 columns
    if "model" not in frame:
        return str(len(pd.read_csv(board)))
    if "origin" not in frame:
        return str(frame["model"].nunique())
    kinds = frame["origin"].fillna("geomon").map(lambda o: o if o in ("geomon", "published") else "imported")
    models = frame.assign(kind=kinds).groupby("kind")["model"].nunique()
    named = {"geomon": "run", "imported": "imported", "published": "published"}
    return ", ".join(f"{models[kind]} {word}" for kind, word in named.items() if kind in models)


def write_index(
    results_dir: Path,
    suites: Sequence[tuple[str, str]],
    open_regressions: pd.DataFrame,
    releases: Sequence[Sequence[str]] = (),
) -> Path:
    """The index of what ``results_dir`` holds now: every open regression across the suites first
    (``open_regressions``: ``monitor.views.open_regressions_frame``, handed in by the caller), then each
    serving-change release's decision against its predecessor (``releases``: its lines, as ``geomon run``
    closes with them: ``monitor.views.release_decided``), then each suite
    (``suites``: (name, title) in the registry's order) with its open regressions counted, then the trends;
    rewritten whenever a report is. Links are relative, so the folder can be moved or served as is."""
    counted = open_regressions["suite"].value_counts() if len(open_regressions) else pd.Series(dtype=int)
    rows = []
    for name, title in suites:
        report = results_dir / name / "report.html"
        board = results_dir / name / "leaderboard.csv"
        found = int(counted.get(name, 0))
        alarm = (
            f"<td class='bad'><a href='{name}/report.html#open-regressions'>{found}</a></td>" if found else "<td>0</td>"
        )
        if not report.exists():
            rows.append(f"<tr><td>{html.escape(title)}</td><td>not run yet</td><td></td>{alarm}<td></td></tr>")
            continue
        written = datetime.fromtimestamp(report.stat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M UTC")
        links = f"<a href='{name}/report.html'>report</a>"
        if board.exists():
            links += f" · <a href='{name}/leaderboard.csv'>leaderboard.csv</a>"
        models = _models(board) if board.exists() else ""
        rows.append(f"<tr><td>{html.escape(title)}</td><td>{links}</td><td>{models}</td>{alarm}<td>{written}</td></tr>")
    trends = results_dir / "trends" / "report.html"
    rows.append(
        "<tr><td>Trends (every headline metric over time)</td>"
        + ("<td><a href='trends/report.html'>report</a></td>" if trends.exists() else "<td>no history yet</td>")
        + "<td></td><td></td><td></td></tr>"
    )
    table = (
        "<table><tr><th>benchmark</th><th>open</th><th>models evaluated</th><th>open regressions</th>"
        "<th>written</th></tr>" + "".join(rows) + "</table>"
    )
    results_dir.mkdir(parents=True, exist_ok=True)
    sections = [
        "<h1>geomon — results</h1>",
        *regressions.section(open_regressions, "across every suite", show_suite=True),
        *_releases(releases),
        "<h2>Reports</h2>",
        table,
    ]
    return charts.write_html(results_dir / "index.html", "geomon — results", sections)


def _releases(releases: Sequence[Sequence[str]]) -> list[str]:
    """A section per serving-change release: what it decided, suite by suite, in the closing screen's words."""
    if not releases:
        return []
    wrap = "style='white-space:pre-wrap;overflow-wrap:anywhere'"  # long lines wrap within the page
    blocks = "".join(f"<pre class='release' {wrap}>{html.escape(chr(10).join(lines))}</pre>" for lines in releases)
    return ["<h2 id='releases'>Serving-change releases</h2>", blocks]
