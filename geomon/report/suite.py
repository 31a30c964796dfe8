"""The report of a suite declared by a Pipeline: the latest verdicts (``verdict_section``, which every suite's
report opens with), the leaderboard, then one chart with intervals per breakdown (every model side by side), then
the breakdown's table; CSVs beside it."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from geomon.report import charts, regressions


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
    return charts.html_table(frame, 2)


def verdict_section(out_dir: Path, board: pd.DataFrame, title: str = "") -> list[str]:
    """What a suite's report opens with: its open regressions (``report.regressions``: run or imported, with
    baseline, metric, group, change, interval, MDE and power at the minimum effect), then each model's latest
    verdicts (the board's ``verdicts`` and ``regressions``, from the metric history) and a link to each model's
    per-item table (``items-<model>.csv`` beside the report: every item's prompt, reply, parsed answer and score)
    where the history kept one."""
    opening = regressions.section(regressions.read(out_dir), f"in {title}" if title else "")
    if "verdicts" not in board or board.empty:
        return [
            *opening,
            "<h2>Latest verdicts</h2>",
            "<p>No verdicts yet: nothing in the metric history to compare.</p>",
        ]
    labels = [c for c in ("model", "revision", "origin") if c in board]
    rows = board[[*labels, "verdicts", *(["regressions"] if "regressions" in board else [])]].fillna("")
    own = board["origin"].fillna("geomon").ne("published") if "origin" in board else True
    # A published figure (a paper's row) is never compared: only evaluated rows wait for a comparison.
    imported = board["origin"].fillna("").str.startswith("imported") if "origin" in board else False
    empty = own & rows["verdicts"].eq("")
    rows["verdicts"] = rows["verdicts"].mask(empty, "nothing compared yet")
    # An imported model compared with nothing is the first of its release line in the history.
    rows["verdicts"] = rows["verdicts"].mask(empty & imported, "nothing to compare with: the first of its line here")
    items = [f"items-{m}.csv" for m in board["model"]]
    rows["items"] = [
        f"<a href='{html.escape(name, quote=True)}'>{html.escape(name)}</a>" if (out_dir / name).is_file() else ""
        for name in items
    ]
    lead = []
    if not opening:  # no open-regressions table beside the report: name the board's regressions instead
        named = rows[rows.get("regressions", pd.Series("", index=rows.index)) != ""]
        said = [
            f"<li><b>{html.escape(str(r['model']))}</b>: {html.escape(str(r['regressions']))}</li>"
            for r in named.to_dict("records")
        ]
        lead = [
            f"<p><b>Regression in the latest evaluation:</b></p><ul>{''.join(said)}</ul>"
            if said
            else "<p>No regression in the latest evaluations.</p>"
        ]
    kept = rows["items"].ne("").any()
    if not kept:  # a built-in suite keeps its answers in its per-model CSVs, not in the history
        rows = rows.drop(columns="items")
    safe = rows.assign(**{c: rows[c].map(lambda v: html.escape(str(v))) for c in rows.columns if c != "items"})
    where = (
        "<p>Each model's items as scored: the linked table, or <code>geomon items --suite … --model …</code>.</p>"
        if kept
        else "<p>Each model's answers as scored: the per-model CSVs beside this report.</p>"
    )
    table = safe.to_html(index=False, escape=False, na_rep="—")
    return [
        *opening,
        "<h2>Latest verdicts</h2>",
        *lead,
        f"<details{' open' if len(rows) <= 12 else ''}><summary>every model's latest verdicts ({len(rows)})"
        f"</summary>{table}</details>",
        where,
    ]


SAMPLE_NOTE = "sample_note"  # the board's column: what a row's sample cannot support (defs.leaderboard)


def sample_notes(board: pd.DataFrame) -> list[str]:
    """The board's sample notes said once, above its table: each distinct note one item, with the models it
    applies to (the table leaves the column out; leaderboard.csv keeps it per row)."""
    if SAMPLE_NOTE not in board:
        return []
    notes = board[SAMPLE_NOTE].fillna("").astype(str)
    models = board["model"].astype(str) if "model" in board else pd.Series("", index=board.index)
    said = {note: list(dict.fromkeys(models[notes == note])) for note in dict.fromkeys(notes) if note}
    if not said:
        return []
    items = "".join(
        f"<li>{html.escape(note)} <i>({len(named)} model{'s' if len(named) != 1 else ''}: "
        f"{html.escape(', '.join(named))})</i></li>"
        for note, named in said.items()
    )
    covered = int(notes.ne("").sum())
    return [
        f"<details class='sample-notes'><summary>Sample notes: what {covered} of {len(board)} rows' samples cannot "
        f"support ({len(said)} distinct note{'s' if len(said) != 1 else ''}, each once; per row in "
        f"leaderboard.csv)</summary><ul>{items}</ul></details>"
    ]


BOARD_LABELS = ("model", "revision", "origin", "evaluated_at")  # what names a leaderboard's row, where it has them


def leaderboard_table(board: pd.DataFrame, columns: Sequence[str], digits: int = 3) -> list[str]:
    """The leaderboard as a report shows it: each row's labels and the suite's headline ``columns`` (its
    pipeline's ``leaderboard_columns``), sample notes said once above it, and a link to ``leaderboard.csv``
    beside the report, which holds every column, naming how many more it holds."""
    shown = [c for c in dict.fromkeys((*BOARD_LABELS, *columns)) if c in board]
    rest = [c for c in board.columns if c not in shown]
    more = (
        f"<p class='more-columns'>The headline figures; {len(rest)} more column{'s' if len(rest) != 1 else ''} "
        f"(intervals, counts, samples, verdicts) in <a href='leaderboard.csv'>leaderboard.csv</a>.</p>"
        if rest
        else ""
    )
    return [*sample_notes(board), charts.html_table(board[shown], digits), more]


def write_suite_report(
    out_dir: Path,
    title: str,
    definition: str,
    board: pd.DataFrame,
    results: dict[str, dict[str, Any]],
    breakdowns: list[Breakdown],
    columns: Sequence[str],
) -> Path:
    """leaderboard.csv (every column), one CSV per breakdown and model, and report.html (the leaderboard's
    headline ``columns``: ``leaderboard_table``); returns the HTML path. A breakdown with no finite value says so
    instead of drawing an empty chart."""
    out_dir.mkdir(parents=True, exist_ok=True)
    board.to_csv(out_dir / "leaderboard.csv", index=False)
    sections = [
        f"<h1>geomon — {html.escape(title)}</h1>",
        *verdict_section(out_dir, board, title),
        f"<p>{html.escape(' '.join(definition.replace('``', '').split()))}</p>",
        "<h2>Leaderboard</h2>",
        *leaderboard_table(board, columns, 2),
    ]
    sections += breakdown_sections(out_dir, results, breakdowns)
    return charts.write_html(out_dir / "report.html", f"geomon {title}", sections)


def breakdown_sections(out_dir: Path, results: dict[str, dict[str, Any]], breakdowns: list[Breakdown]) -> list[str]:
    """Each breakdown as a heading, a chart of every model side by side (intervals where the rows have them)
    and its table; one CSV per breakdown and model. A breakdown with no finite value says so."""
    sections = []
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
    return sections


def regressed_models(out_dir: Path, board: pd.DataFrame) -> set[str]:
    """The models with an open regression: those of the open-regressions table beside the report (the one
    ``verdict_section`` opens with), else those whose row names a regression in the latest evaluation."""
    frame = regressions.read(out_dir)
    if frame is not None:
        return set(frame["model"])
    if "regressions" not in board:
        return set()
    return set(board.loc[board["regressions"].fillna("").ne(""), "model"].astype(str))


def headline_chart(board: pd.DataFrame, metric: str, title: str, regressed: set[str], why: str = "") -> str:
    """Every model's ``metric`` with its ``<metric>_ci_low``/``_ci_high`` interval as one sorted dot plot, a row
    per model, the ``regressed`` ones marked (HTML); a model without a value is named with ``why`` (the metric's
    own reason where a suite knows it, else ``charts.EMPTY_REASON``), and with no value at all the chart is that
    sentence."""
    column = board[metric] if metric in board else pd.Series(float("nan"), index=board.index)
    frame = pd.DataFrame(
        {
            "model": board["model"] if "model" in board else pd.Series(dtype=str),
            metric: column,
            "ci_low": board.get(f"{metric}_ci_low", column),
            "ci_high": board.get(f"{metric}_ci_high", column),
        }
    )
    label = "origin" in board and board["origin"].eq("published").any()
    if label:  # a paper's row beside geomon's of the same model: two rows, each named
        frame["model"] = [
            f"{m} (published)" if o == "published" else str(m)
            for m, o in zip(board["model"], board["origin"], strict=True)
        ]
    xlabel = f"{metric.replace('_', ' ')} (dot: the figure; line: its 95 % interval)"
    return charts.dot_plot(frame, metric, "model", title, xlabel, regressed, why)
