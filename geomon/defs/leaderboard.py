"""The leaderboard every suite ends on: each model's summary side by side, its report, its metadata."""

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from geomon.defs.resources import by_partition
from geomon.defs.versions import SAMPLE
from geomon.report import charts


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


def leaderboard_frame(
    context: dg.AssetExecutionContext,
    input_name: str,
    per_partition: Any,
    labels: Sequence[str] = ("model",),
    rows: Callable[[Any], list[dict[str, Any]]] | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The board (rows labelled by their partition: the model, or model and revision; each result's
    ``rows``, by default its ``summary``) and the results by partition key."""
    # Nothing stored yet (the leaderboard materialized before any model was run: only imported models to
    # show) is no result, not a failure.
    results = {k: v for k, v in (by_partition(context, input_name, per_partition) or {}).items() if v is not None}
    records = []
    for key, result in sorted(results.items()):
        # A multi-partition key joins its dimensions in name order: "model|revision".
        named = dict(zip(labels, str(key).split("|"), strict=True))
        records += [{**named, **row} for row in (rows(result) if rows is not None else [result["summary"]])]
    board = pd.DataFrame(records, columns=None if records else list(labels))
    return board.sort_values(list(reversed(labels)), kind="stable", ignore_index=True), results


VERDICTS = "verdicts"
REGRESSIONS = "regressions"  # the latest evaluation's regressions, named (a suite's report opens with them)


def with_imported(board: pd.DataFrame, suite: str, store_url: str) -> pd.DataFrame:
    """``board`` with a row for each model imported into the suite's history and not on it (``origin``
    ``imported (gapminder)``; ``views.imported_rows``): every evaluated model is on the leaderboard and in
    the report, run or imported."""
    from geomon.monitor.history import MetricHistory
    from geomon.monitor.views import imported_rows
    from geomon.suites.registry import suites

    info = suites().get(suite)
    if info is None:
        return board
    found = imported_rows(MetricHistory(store_url), suite, [(h.metric, h.breakdown) for h in info.headlines])
    if "model" in board:
        found = found[~found["model"].isin(set(board["model"]))]
    return pd.concat([board, found], ignore_index=True) if len(found) else board


def write_open_regressions(out: Path, suite: str, store_url: str) -> None:
    """``open_regressions.csv`` beside the suite's report: the suite's open regressions, run or imported, which
    the report opens with (``report.regressions``)."""
    from geomon.monitor.history import MetricHistory
    from geomon.monitor.views import open_regressions_frame
    from geomon.report import regressions

    out.mkdir(parents=True, exist_ok=True)
    open_regressions_frame(MetricHistory(store_url), suite).to_csv(out / regressions.FILE, index=False)


def with_verdicts(board: pd.DataFrame, suite: str, store_url: str) -> pd.DataFrame:
    """``board`` with each geomon or imported row's stored verdicts (its model's latest evaluation in the suite;
    with a ``revision`` column, the evaluation of that revision) and its regressions named: the same verdicts as
    the history and the alerts; its ``sample_note`` also names the comparisons its sample could not decide."""
    from geomon.monitor.history import MetricHistory
    from geomon.monitor.views import latest_verdicts

    if board.empty or "model" not in board:
        return board
    latest = latest_verdicts(MetricHistory(store_url), suite)
    phrases, named, notes = [], [], []
    for row in board.to_dict("records"):
        mine = latest[latest["model"] == row["model"]]
        if "revision" in row and len(mine):
            mine = mine[mine["scope"].str.startswith(f"{row['revision']}|")]
        origin = row.get(ORIGIN)
        own = origin != "published" and len(mine)  # a paper's row is never compared (NaN: a geomon row)
        phrases.append(str(mine["verdicts"].iloc[-1]) if own else "")
        named.append(str(mine["regressions"].iloc[-1]) if own else "")
        # What its sample cannot decide is said where the figures' other limits are.
        blind = str(mine["blind"].iloc[-1]) if own else ""
        note = row.get(SAMPLE_NOTE) if isinstance(row.get(SAMPLE_NOTE), str) else ""
        notes.append("; ".join(n for n in (note, blind) if n))
    return board.assign(**{VERDICTS: phrases, REGRESSIONS: named, SAMPLE_NOTE: notes})


def write_item_tables(out: Path, suite: str, store_url: str, models: Iterable[str]) -> None:
    """``items-<model>.csv`` in the report's folder: every item of the model's latest evaluation as it was scored
    (what ``geomon items`` shows), for the suite's report to link; nothing for a model whose items were not kept."""
    from geomon.monitor.history import MetricHistory

    history = MetricHistory(store_url)
    for model in models:
        found = history.replies(suite, model)
        if found is not None:
            out.mkdir(parents=True, exist_ok=True)
            found[1].to_csv(out / f"items-{model}.csv", index=False)


def leaderboard_metadata(
    suite: str,
    board: pd.DataFrame,
    report: Path,
    columns: Sequence[str],
    labels: Sequence[str] = ("model",),
    series_rows: pd.DataFrame | None = None,
    *,
    store_url: str,
    changes: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """What every suite's leaderboard shows: the board's labels and headline ``columns`` (with each row's sample
    and verdicts) as Markdown and as a sortable table, leaderboard.csv beside the report with every column (each
    row's sample note among them), the report's path and link, the results index, and one series per row of
    ``series_rows`` (default: the board; ``labels`` name a row: model, or model and table version) of each of the
    suite's headline metrics, so the Plots tab draws each model's own line. The results index (read from the
    history at ``store_url``; with the serving-change releases of ``changes``) is rewritten."""
    from geomon.monitor import results

    index = results.write_index(report.parent.parent, store_url, changes)
    shown = [c for c in (*labels, ORIGIN, *columns, SAMPLE, VERDICTS) if c in board]
    rounded = board[shown].round(4)
    own = board[board[ORIGIN] == "geomon"] if ORIGIN in board else board
    return {
        "models": int(own["model"].nunique()) if len(own) else 0,
        # Every model on the board evaluated elsewhere and imported into the history (the report lists them too).
        "models_imported": int(board[ORIGIN].fillna("").str.startswith("imported").sum()) if ORIGIN in board else 0,
        "samples": int(own[SAMPLE].replace("", pd.NA).nunique()) if SAMPLE in own else 0,
        "leaderboard": dg.MetadataValue.md(charts.markdown_table(rounded)),
        "leaderboard_table": metadata_table(rounded),
        # The columns the tables leave out (intervals, counts, sample notes): the report's CSV, written beside it.
        "leaderboard_csv": dg.MetadataValue.path(str(report.parent / "leaderboard.csv")),
        "report": dg.MetadataValue.path(str(report)),
        # A link too; browsers may refuse file:// links from the UI's http:// page, the path is copyable.
        "report_url": dg.MetadataValue.url(report.resolve().as_uri()),
        "index": dg.MetadataValue.path(str(index)),
        **per_model_series(own if series_rows is None else series_rows, headline_metrics(suite), labels),
    }


ORIGIN = "origin"  # "geomon" for geomon's own rows, "imported (…)" for imported ones, "published" for a paper's
PUBLISHED_NOTE = "published aggregate: no interval, no items (the per-item results are not public)"


def with_published(board: pd.DataFrame, published: pd.DataFrame | None) -> pd.DataFrame:
    """``board`` with ``origin`` and, below geomon's rows, the paper's published ones (marked so, never
    mistaken for an insufficient sample or tracked in the history; a row's own ``sample_note``, say what its
    reader corrected, follows the mark)."""
    board = board.assign(**{ORIGIN: board[ORIGIN].fillna("geomon") if ORIGIN in board else "geomon"})
    if published is None or published.empty:
        return board
    own = published[SAMPLE_NOTE].fillna("") if SAMPLE_NOTE in published else pd.Series("", index=published.index)
    notes = [PUBLISHED_NOTE + (f"; {note}" if note else "") for note in own]
    rows = published.assign(**{ORIGIN: "published", SAMPLE_NOTE: notes})
    return pd.concat([board, rows], ignore_index=True)


SAMPLE_NOTE = "sample_note"  # the board's column: which headline figures cannot carry a claim, and why


def mark_insufficient(board: pd.DataFrame, suite: str) -> pd.DataFrame:
    """``board`` with ``sample_note``: per row, each headline figure its sample cannot support and why
    (``stats.sufficiency``); empty where every figure can carry its claim. The numbers stay."""
    from geomon.stats import sufficiency
    from geomon.suites.registry import suites

    info = suites().get(suite)
    if info is None or board.empty:
        return board
    metrics = list({h.metric: (h.metric, h.bounds) for h in info.headlines}.values())
    notes = []
    for row in board.to_dict("records"):
        marks = sufficiency.assess(row, metrics, info.sample)
        notes.append("; ".join(f"{m}: {why.removeprefix(sufficiency.PREFIX)}" for m, why in marks.items() if why))
    return board.assign(**{SAMPLE_NOTE: [f"{sufficiency.PREFIX}{n}" if n else "" for n in notes]})


def samples(instance: dg.DagsterInstance, asset: dg.AssetKey, partitions: Sequence[str]) -> dict[str, str]:
    """Each partition's sample: the ``sample`` metadata of ``asset``'s latest materialization of it (a
    partition never materialized, or from before samples were recorded, has none)."""
    found = {}
    for key in partitions:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=asset, asset_partitions=[str(key)]), limit=1
        ).records
        entry = records[0].asset_materialization.metadata.get(SAMPLE) if records else None
        if entry is not None:
            found[str(key)] = str(entry.value)
    return found


def with_samples(board: pd.DataFrame, answered_on: dict[str, str], labels: Sequence[str]) -> pd.DataFrame:
    """``board`` with each row's ``sample`` (``answered_on``: by partition key, ``model`` or
    ``model|revision``); where rows compared side by side (one revision) were answered on different samples,
    each row's ``sample_note`` says so, so two samples are never put side by side silently."""
    if board.empty or not answered_on:
        return board
    records = board.to_dict("records")
    sample = [answered_on.get("|".join(str(row[label]) for label in labels), "") for row in records]
    notes = [row.get(SAMPLE_NOTE, "") for row in records]
    together = ["|".join(str(row[label]) for label in labels[1:]) for row in records]  # e.g. one revision
    for group in set(together):
        rows = [i for i, g in enumerate(together) if g == group]
        shown = sorted({sample[i] for i in rows} - {""})
        if len(shown) < 2:
            continue
        for i in rows:
            others = " and ".join(s for s in shown if s != sample[i])
            note = (
                f"answered on sample {sample[i] or 'unknown'}, other rows on {others}: not comparable side by "
                "side until each model is re-run on the current sample (automation re-runs stale ones)"
            )
            notes[i] = f"{notes[i]}; {note}" if notes[i] else note
    return board.assign(**{SAMPLE: sample, SAMPLE_NOTE: notes})


def headline_metrics(suite: str) -> list[str]:
    """The suite's headline metrics (SuiteInfo.headlines), each once."""
    from geomon.suites.registry import suites

    info = suites().get(suite)
    return list(dict.fromkeys(h.metric for h in info.headlines)) if info is not None else []


def per_model_series(
    board: pd.DataFrame, metrics: Sequence[str], labels: Sequence[str] = ("model",)
) -> dict[str, float]:
    """``<metric> · <model>`` for each headline metric the board has: Dagster's Plots tab draws each
    metadata key over the materializations, so each model gets its own line over time, never one line
    drawn across models. Counts and interval bounds are never series; values that are not finite are left
    out."""
    return {
        " · ".join([metric, *(str(row[label]) for label in labels)]): round(float(row[metric]), 4)
        for _, row in board.iterrows()
        for metric in metrics
        if metric in board
        and pd.api.types.is_number(row[metric])
        and pd.notna(row[metric])
        and abs(float(row[metric])) != float("inf")
    }
