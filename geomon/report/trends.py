"""The cross-model trends report: every headline metric over time per model, and knowledge recency
(WorldBench's best-matching data year) per model over time, from the metric history."""

from __future__ import annotations

import hashlib
import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geomon.report import charts
from geomon.stats import sufficiency
from geomon.stats.values import IMPORTED, series_change, series_key, unit

# (suite, metric, breakdown, title, bounds) of each headline the report charts: the caller hands in the suites'
# (``suites.registry.headline_catalog``); the report adds its own drift line and imports no suite.
Catalog = Sequence[tuple[str, str, str, str, tuple[float, float] | None]]
DRIFT_HEADLINES = [("drift", "change_rate", "", "Drift probes: share of answers changed vs baseline", (0.0, 1.0))]


def headlines(catalog: Catalog) -> list[tuple[str, str, str, str, tuple[float, float] | None]]:
    """The suites' headlines, then drift's."""
    return [*catalog, *DRIFT_HEADLINES]


def headline_keys(catalog: Catalog) -> list[tuple[str, str, str]]:
    """(suite, metric, breakdown) of every headline: what the report reads from the history."""
    return [(suite, metric, breakdown) for suite, metric, breakdown, _, _ in headlines(catalog)]


TABLE_COLUMNS = [
    "suite",
    "metric",
    "breakdown",
    "model",
    "scope",
    "origin",
    "evaluated_at",
    "value",
    "ci_low",
    "ci_high",
    "evaluation_id",
]
Key = tuple[str, str, str]  # (suite, metric, breakdown): one series of the history


def trend_table(series: pd.DataFrame, catalog: Catalog, breakdowns: Sequence[Key] = ()) -> pd.DataFrame:
    """One row per (suite, metric, breakdown, model, evaluation date) for the headline metrics and the
    ``breakdowns`` asked for: the date the model was evaluated (an imported run's own date), not when geomon
    recorded it."""
    if series.empty:
        return pd.DataFrame(columns=[*TABLE_COLUMNS, "n"])
    wanted = set(headline_keys(catalog)) | set(breakdowns)
    keep = [(s, m, b) in wanted for s, m, b in zip(series["suite"], series["metric"], series["breakdown"], strict=True)]
    frame = series.loc[keep].copy()
    if "evaluated_at" not in frame:
        frame["evaluated_at"] = frame["recorded_at"]
    frame["evaluated_at"] = pd.to_datetime(frame["evaluated_at"], utc=True)
    if "evaluation_id" not in frame:
        frame["evaluation_id"] = ""
    frame["origin"] = frame["origin"].fillna("geomon") if "origin" in frame else "geomon"
    frame["n"] = frame.get("n", None)
    order = ["suite", "metric", "breakdown", "model", "evaluated_at"]
    return frame[[*TABLE_COLUMNS, "n"]].sort_values(order, ignore_index=True)


def release_lines(series: pd.DataFrame, comparisons: pd.DataFrame) -> dict[str, str]:
    """Model → the release line it belongs to: models joined by a predecessor comparison (a vendor's
    successive releases, or a registry's ``predecessor``), named by their models in release order."""
    if series.empty or comparisons is None or comparisons.empty:
        return {}
    model_of = dict(zip(series["evaluation_id"], series["model"], strict=False))
    first_seen = pd.to_datetime(series["evaluated_at"], utc=True).groupby(series["model"]).min()
    parent: dict[str, str] = {}

    def root(model: str) -> str:
        while parent.get(model, model) != model:
            model = parent[model]
        return model

    for row in comparisons.itertuples(index=False):
        if not str(row.against).startswith("predecessor "):
            continue
        current, earlier = model_of.get(row.evaluation_id), str(row.against).removeprefix("predecessor ")
        if current is None or earlier not in first_seen.index:
            continue
        a, b = root(current), root(earlier)
        if a != b:
            parent[a] = b
    members: dict[str, list[str]] = {}
    for model in first_seen.index:
        members.setdefault(root(model), []).append(model)
    lines = {}
    for group in members.values():
        if len(group) < 2:
            continue
        ordered = sorted(group, key=lambda m: first_seen[m])
        label = " → ".join(ordered) if len(ordered) <= 3 else f"{ordered[0]} → … → {ordered[-1]} ({len(ordered)})"
        lines.update({m: label for m in ordered})
    return lines


LABELLED_MODELS = 8  # beyond this a chart labels the highest and lowest models and greys the rest


def labelled_models(frame: pd.DataFrame) -> set[str]:
    """Every model, or with more than ``LABELLED_MODELS`` the half with the highest and the half with the
    lowest latest values: the ones a reader looks for."""
    when = "evaluated_at" if "evaluated_at" in frame else "recorded_at"
    latest = frame.sort_values(when).groupby("model")["value"].last().sort_values()
    if len(latest) <= LABELLED_MODELS:
        return set(latest.index)
    half = LABELLED_MODELS // 2
    return set(latest.index[:half]) | set(latest.index[-half:])


def trend_lines(frame: pd.DataFrame) -> pd.Series:
    """The line each row belongs to: its model; · its scope's key where the metric has several (a BorderLines
    score on two table versions is two series, never one line jumping between versions); · series N (in the
    order the rows come: by date) where the model's scope changed on one key (another version of the benchmark:
    the line breaks there)."""
    keys = frame["scope"].map(series_key)
    line = frame["model"] if keys.nunique() <= 1 else frame["model"] + " · " + keys.replace("", "(no scope)")
    starts = pd.DataFrame({"line": line, "scope": frame["scope"]}).drop_duplicates()
    starts["number"] = starts.groupby("line").cumcount() + 1
    several = starts[starts.groupby("line")["number"].transform("max") > 1]
    number = {(li, s): n for li, s, n in zip(several["line"], several["scope"], several["number"], strict=True)}
    named = [
        f"{li} · series {number[(li, s)]}" if (li, s) in number else li
        for li, s in zip(line, frame["scope"], strict=True)
    ]
    return pd.Series(named, index=frame.index)


def series_breaks(table: pd.DataFrame) -> pd.Series:
    """Per row, why it starts a new series of its model's line (``values.series_change``: ``new series: scorer
    changed``), else "": the chart breaks the line there and says why, and the table says it beside the value."""
    ordered = table.sort_values("evaluated_at", kind="stable")
    line = [ordered["suite"], ordered["metric"], ordered["model"], ordered["scope"].map(series_key)]
    previous = ordered.groupby(line)["scope"].shift()
    why = [series_change(p, s) if isinstance(p, str) else "" for p, s in zip(previous, ordered["scope"], strict=True)]
    return pd.Series(why, index=ordered.index, dtype=object).reindex(table.index)


# The page's sections, in its order: the real history (evaluations imported from their publishers) first, then
# metrics imported from per-item files (in the file's units), then geomon's own runs (the bundled models' dates
# and 0/100 % figures never stretch the history's axes).
HISTORY = "Published history (imported evaluations)"
FILES = "Imported from per-item files (in each file's units)"
RUNS = "geomon's own runs"
SECTIONS = (HISTORY, FILES, RUNS)


def panels(part: pd.DataFrame, title: str) -> list[tuple[pd.DataFrame, str, str]]:
    """One series' rows as charts of one scale and one time span each, (rows, title, section): the imported
    history, the metric as imported from per-item files (in the file's units, which geomon does not know) and
    geomon's own runs, never on one axis."""
    files = part["scope"].map(series_key).str.startswith(IMPORTED)
    origin = part["origin"] if "origin" in part else pd.Series("geomon", index=part.index)
    imported = origin.fillna("geomon").astype(str).str.startswith("import:")
    out = [
        (part[imported & ~files], title, HISTORY),
        (part[files], f"{title} (imported, in the file's units)", FILES),
        (part[~imported & ~files], title, RUNS),
    ]
    return [(rows, name, section) for rows, name, section in out if len(rows)]


# One colour per line across the whole page (matplotlib's tab10 without its red, which marks regressions, and
# its grey, which draws the unlabelled models; then darker tones): a model is the same colour on every chart.
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#393b79", "#637939",
    "#8c6d31", "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#843c39", "#6baed6", "#fd8d3c", "#74c476",
)  # fmt: skip


def line_colours(lines: pd.Series) -> dict[str, str]:
    """Each line's colour, from the whole page's lines in name order (beyond the palette, colours repeat)."""
    return {line: PALETTE[i % len(PALETTE)] for i, line in enumerate(sorted(set(lines)))}


def _chart(frame: pd.DataFrame, title: str, colours: dict[str, str]) -> str:
    """One line per model (or release line) over real dates, its interval as a band, regressions marked with
    a red cross. With many models the legend would be unreadable (and drawing 100 bands takes seconds): the
    models with the highest and lowest latest values are labelled, the others drawn as one grey line
    collection."""
    import matplotlib.dates as mdates
    import matplotlib.ticker
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure

    frame = frame.assign(when=pd.to_datetime(frame["evaluated_at"], utc=True), model=trend_lines(frame))
    # A line is its model's colour; a model's line per table version (``a · 2023-05-15``) too.
    colours = {line: colours.get(line.split(" · ")[0], "#444444") for line in frame["model"].unique()}
    labelled = labelled_models(frame)
    # Constrained layout sizes the axes around their labels and the legend outside them: nothing is clipped,
    # however long the models' names.
    fig = Figure(figsize=(11, 3.4), layout="constrained")
    ax = fig.subplots()
    # The unlabelled models as one collection: dates converted once, then split by model (a per-model
    # groupby and date conversion cost more than drawing them).
    rest = frame[~frame["model"].isin(labelled)].sort_values(["model", "when"])
    points = np.column_stack(
        [mdates.date2num(rest["when"].dt.tz_localize(None).to_numpy()), rest["value"].to_numpy(dtype=float)]
    )
    cuts = np.flatnonzero(rest["model"].to_numpy()[1:] != rest["model"].to_numpy()[:-1]) + 1
    others = np.split(points, cuts) if len(rest) else []
    if others:
        named = f"{len(others)} other model{'s' if len(others) != 1 else ''}"
        ax.add_collection(LineCollection(others, colors="0.75", linewidths=0.8, label=named))
    for model, part in frame[frame["model"].isin(labelled)].groupby("model"):
        when = part["when"].dt.tz_localize(None)
        ax.plot(when, part["value"], marker="o", label=model, color=colours[model])
        if part["ci_low"].notna().any():
            ax.fill_between(when, part["ci_low"], part["ci_high"], alpha=0.15, color=colours[model])
    for row in frame[frame.get("new_series", pd.Series("", index=frame.index)).fillna("") != ""].itertuples():
        ax.axvline(row.when.tz_localize(None), color="0.5", linestyle=":", linewidth=0.8)
        ax.annotate(row.new_series, (row.when.tz_localize(None), row.value), fontsize=LABEL_PT, xytext=(4, 6),
                    textcoords="offset points")  # fmt: skip
    regressed = frame[frame.get("verdict", pd.Series("", index=frame.index)) == "regression"]
    marks = []
    if len(regressed):
        ax.scatter(
            regressed["when"].dt.tz_localize(None),
            regressed["value"],
            marker="x",
            s=60,
            color="red",
            zorder=5,
            label="regression vs predecessor",
        )
        # Each cross says what it is; a label runs away from the nearer edge, so it stays inside the plot.
        middle = frame["when"].min() + (frame["when"].max() - frame["when"].min()) / 2
        for when, value, label in zip(regressed["when"], regressed["value"], regressed["mark"], strict=True):
            left = when > middle
            mark = ax.annotate(
                label,
                (when.tz_localize(None), value),
                xytext=(-5 if left else 5, -10),
                textcoords="offset points",
                ha="right" if left else "left",
                fontsize=LABEL_PT,
                color="darkred",
                zorder=6,
            )
            marks.append(mark)
    first, last = frame["when"].min(), frame["when"].max()
    if last - first < pd.Timedelta(days=2):  # one day of history: give the axis days to label, not seconds
        middle = (first + (last - first) / 2).tz_localize(None)
        ax.set_xlim(middle - pd.Timedelta(days=3), middle + pd.Timedelta(days=3))
    locator = mdates.AutoDateLocator(minticks=3, maxticks=6)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))  # short labels, no rotation
    ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(4))
    ax.autoscale_view(scalex=last - first >= pd.Timedelta(days=2))
    ax.tick_params(labelsize=LABEL_PT)
    ax.set_title(title, fontsize=LABEL_PT + 2)
    ax.set_ylabel(str(frame["metric"].iloc[0]).replace("_", " "), fontsize=LABEL_PT)
    # Outside the plot, at a fixed place: matplotlib's "best" spot tests every line (slow with 100 models).
    ax.legend(fontsize=LABEL_PT, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    # The crosses' labels kept apart last, once the legend, limits and ticks have set the axes' final size: placed
    # before, the constrained layout shrank the axes under them and two labels drawn apart met again.
    apart(fig, marks)
    return charts.figure_svg(fig)


# Every text of a trends chart, in points: the chart (11 in) is drawn at its own width in the report's 1,200-px
# column, where a point is 4/3 px, so 8 pt is 10.7 px (at least 10 px, the reports' smallest label).
LABEL_PT = 8


def apart(fig: Any, labels: list[Any]) -> None:
    """Move each of ``labels`` (annotations, in their order) that would overlap one placed before it up or down by
    its own height, the nearest free place first (at most three heights), so no two labels of a chart overlap."""
    if len(labels) < 2:
        return
    from matplotlib.transforms import Bbox

    fig.draw_without_rendering()  # lays the figure out: the labels' extents are known
    to_px = fig.dpi / 72
    placed = []
    for label in labels:
        glyphs = label.get_window_extent()
        # A browser draws a text's box a line high, taller than matplotlib's glyphs: pad each by a third of its size
        pad = label.get_fontsize() / 3 * to_px
        box = Bbox.from_extents(glyphs.x0, glyphs.y0 - pad, glyphs.x1, glyphs.y1 + pad)
        step = box.height / to_px  # points: the padded label's height
        for k in (0, -1, 1, -2, 2, -3, 3):
            moved = box.translated(0, k * step * to_px)
            if not any(moved.overlaps(other) for other in placed):
                break
        x, y = label.xyann
        label.xyann = (x, y + k * step)
        placed.append(moved)


def bounds_of(catalog: Catalog) -> dict[tuple[str, str], tuple[float, float] | None]:
    """(suite, metric) → its bounds, the drift line's too."""
    return {(suite, metric): bound for suite, metric, _, _, bound in headlines(catalog)}


def verdict_marks(table: pd.DataFrame, bounds: dict[tuple[str, str], tuple[float, float] | None]) -> list[str]:
    """Each figure's verdict as its mark's label: ``o3-mini vs o1: −17.2 pts, regression`` (the change in the
    metric's units: percentage points for a percentage); empty where it was not compared."""
    marks = []
    for row in table.to_dict("records"):
        verdict = row.get("verdict")
        if not isinstance(verdict, str) or not verdict:
            marks.append("")
            continue
        against = str(row.get("against") or "").removeprefix("predecessor ")
        model = row.get("release", row["model"])
        change = row.get("change")
        suffix = unit(bounds.get((row["suite"], row["metric"])))
        moved = f"{change:+.3g}".replace("-", "−") + suffix if pd.notna(change) else "—"
        marks.append(f"{model} vs {against}: {moved}, {verdict}")
    return marks


def _cached_chart(cache: Path, part: pd.DataFrame, title: str, colours: dict[str, str]) -> Path:
    """The chart of ``part``, drawn only if its data, title or colours changed since it was last drawn: drawing
    is what the report costs (~0.14 s a chart), and new evaluations change only their suite's charts."""
    mine = sorted((model, colour) for model, colour in colours.items() if model in set(part["model"]))
    key = f"{CHART_VERSION}|{title}|{mine}|{part.to_csv(index=False)}"
    path = cache / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.svg"
    if not path.exists():
        path.write_text(_chart(part, title, colours), encoding="utf-8")
    return path


CHART_VERSION = "11"  # bump when _chart draws differently, so cached charts are redrawn


def write_report(
    out_dir: Path,
    series: pd.DataFrame,
    comparisons: pd.DataFrame | None = None,
    *,
    catalog: Catalog,
    breakdowns: Sequence[Key] = (),
) -> Path:
    """trends.csv and report.html: a contents list, then a chart and the latest values per headline metric and
    per ``breakdowns`` series (a group's own line: o3's indecisive rate under the ideology wording), in the
    ``SECTIONS``' order, each chart's time axis and scale its section's own; one colour per model on the whole
    page. ``comparisons`` (the history's paired tests) join a vendor's successive releases into one line and
    mark regressions. Charts are kept in ``out_dir/charts`` by a hash of their data; charts no series uses any
    more are removed."""
    cache = out_dir / "charts"
    cache.mkdir(parents=True, exist_ok=True)
    table = trend_table(series, catalog, breakdowns)
    lines = release_lines(table, comparisons) if comparisons is not None else {}
    if lines:
        table["release"] = table["model"]
        table["model"] = table["model"].map(lambda m: lines.get(m, m))
        table = table.sort_values(["suite", "metric", "breakdown", "model", "evaluated_at"], ignore_index=True)
    if comparisons is not None and len(comparisons) and len(table):
        # The stored verdict of each figure (its breakdown too: one country's drop is its own verdict).
        keys = ["evaluation_id", "metric", "breakdown"]
        verdicts = comparisons.assign(breakdown=comparisons["breakdown"].fillna(""))[
            [*keys, "verdict", "change", "against"]
        ]
        table = table.merge(verdicts.drop_duplicates(keys), on=keys, how="left")
        table["mark"] = verdict_marks(table, bounds_of(catalog))
    if len(table):
        table["new_series"] = series_breaks(table)
    table.to_csv(out_dir / "trends.csv", index=False)
    colours = line_colours(table["model"]) if len(table) else {}
    bounds = bounds_of(catalog)
    titles = {(suite, metric): headline for suite, metric, _, headline, _ in headlines(catalog)}
    wanted = [(s, m, b, t) for s, m, b, t, _ in headlines(catalog)]
    wanted += [(s, m, b, f"{titles.get((s, m), m)} — {b}") for s, m, b in breakdowns]
    charts_by_section: dict[str, list[tuple[pd.DataFrame, str, tuple[float, float] | None]]] = {}
    for suite, metric, breakdown, headline in wanted:
        rows = table[(table["suite"] == suite) & (table["metric"] == metric) & (table["breakdown"] == breakdown)]
        for part, title, section in panels(rows, headline):
            bound = bounds.get((suite, metric)) if section != FILES else None
            charts_by_section.setdefault(section, []).append((part, title, bound))
    used: set[Path] = set()
    contents, body = [], []
    for section in [s for s in SECTIONS if s in charts_by_section]:
        anchor = f"section-{SECTIONS.index(section)}"
        items = []
        body.append(f"<h2 id='{anchor}'>{html.escape(section)}</h2>")
        for number, (part, title, bound) in enumerate(charts_by_section[section]):
            chart_id = f"{anchor}-{number}"
            items.append(f"<li><a href='#{chart_id}'>{html.escape(title)}</a></li>")
            body += _panel(cache, part, title, bound, used, colours, chart_id)
        contents.append(f"<li><a href='#{anchor}'>{html.escape(section)}</a><ol>{''.join(items)}</ol></li>")
    for stale in (set(cache.glob("*.png")) | set(cache.glob("*.svg"))) - used:
        stale.unlink()
    sections = [
        "<h1>geomon — trends</h1>",
        "<p>Every evaluation in the history per model (a vendor's successive releases joined into one line, in "
        "release order, one colour per line on the whole page) over the dates the models were evaluated; bands "
        "are 95 % intervals, red crosses regressions against the predecessor; a dotted line marks where a "
        "model's series changed (another version of the benchmark's data, prompt, scorer or code: a new series, "
        "never compared with the one before). The published history comes first; geomon's own runs have charts "
        "of their own, so their dates and scales never stretch the history's axes. A group's chart (a prompt "
        "family's, a topic's) is drawn where an open regression is in that group only; <code>geomon trends "
        "--breakdown family=ideology</code> draws any group.</p>",
        "<nav><b>Contents</b><ol class='contents'>" + "".join(contents) + "</ol></nav>" if contents else "",
        *(body or ["<p>No history yet.</p>"]),
    ]
    return charts.write_html(out_dir / "report.html", "geomon trends", sections)


def _panel(
    cache: Path,
    part: pd.DataFrame,
    title: str,
    bounds: tuple[float, float] | None,
    used: set[Path],
    colours: dict[str, str],
    chart_id: str,
) -> list[str]:
    """One chart (one scale) and the latest value of each of its lines, noted with its sample's shortfall and, for a
    series that followed another, why it is a new series."""
    chart = _cached_chart(cache, part, title, colours)
    used.add(chart)
    latest = part.groupby(["model", "scope"]).tail(1)
    began = part[part["new_series"].fillna("") != ""].groupby(["model", "scope"])["new_series"].first()
    shown = [c for c in ("model", "release", "scope", "evaluated_at", "value", "ci_low", "ci_high", "n") if c in part]
    numbers = {c: pd.to_numeric(latest[c], errors="coerce") for c in ("value", "ci_low", "ci_high", "n") if c in shown}
    latest = latest[shown].assign(
        **numbers,  # a missing interval or count is a dash, never "None"
        note=[
            "; ".join(x for x in (sufficiency.reasons(v, lo, hi, count, bounds), began.get((m, s), "")) if x)
            for m, s, v, lo, hi, count in zip(
                latest["model"], latest["scope"], latest["value"], latest["ci_low"], latest["ci_high"], latest["n"],
                strict=True,
            )
        ],
        evaluated_at=pd.to_datetime(latest["evaluated_at"]).dt.strftime("%Y-%m-%d"),
    )  # fmt: skip
    return [
        f"<h3 id='{chart_id}'>{html.escape(title)}</h3>",
        f"<figure style='margin:0'>{chart.read_text(encoding='utf-8')}</figure>",
        f"<details><summary>latest value of each line ({len(latest)})</summary>",
        latest.pipe(charts.html_table, 3),
        "</details>",
    ]
