"""Charts and tables for materialization metadata and the HTML report."""

from __future__ import annotations

import base64
import html
import io
import os
import re
from typing import Any

import pandas as pd

PNG_DPI = 90
# The smallest text of a PNG chart: at PNG_DPI a point is 1.25 px, so 8 pt is 10 px where the page shows the image at
# its own width (the charts are at most 12 in, 1,080 px: inside the reports' 1,200-px column).
PNG_LABEL_PT = 8


def figure_png(fig, tight: bool = True) -> bytes:
    """The figure as PNG bytes. ``tight`` fits the bounding box to what was drawn, which draws the figure twice:
    a chart with a fixed layout passes False and takes half the time."""
    buf = io.BytesIO()
    # zlib level 1: a chart of a few colours compresses almost as well, and encoding takes a fraction of the time.
    tightly = "tight" if tight else None
    fig.savefig(buf, format="png", dpi=PNG_DPI, bbox_inches=tightly, pil_kwargs={"compress_level": 1})
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()


def figure_svg(fig) -> str:
    """A pyplot-free ``matplotlib.figure.Figure`` as inline SVG, its text kept as text: about 40 % faster to
    write than a PNG, a third of the size, sharp at any zoom, and it needs no pyplot import (0.4 s)."""
    import matplotlib

    matplotlib.rcParams["svg.fonttype"] = "none"
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    text = buf.getvalue()
    return text[text.index("<svg") :]


def group_error_chart(disparity: pd.DataFrame, title: str) -> bytes:
    """Bar charts of mean error per region and per income group (overall, all indicators)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    overall = disparity[
        (disparity["indicator"] == "all") & ~disparity["group"].astype(str).str.startswith("disparity_")
    ]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for ax, cat in zip(axes, ("region", "income_group"), strict=True):
        part = overall[overall["categorization"] == cat].sort_values("mean_error")
        if "mean_ci_low" in part:  # 95 % bootstrap intervals over each group's countries
            low = (part["mean_error"] - part["mean_ci_low"]).clip(lower=0).fillna(0)
            high = (part["mean_ci_high"] - part["mean_error"]).clip(lower=0).fillna(0)
            ax.barh(part["group"], part["mean_error"], xerr=[low, high], color="#4c72b0", ecolor="#333", capsize=3)
        else:
            ax.barh(part["group"], part["mean_error"], color="#4c72b0")
        base = disparity[
            (disparity["indicator"] == "all")
            & (disparity["categorization"] == cat)
            & (disparity["group"] == "disparity_mean")
        ]
        ax.set_title(
            f"{cat.replace('_', ' ')}: disparity {base['mean_error'].iloc[0]:.3f} "
            f"(random {base['baseline'].iloc[0]:.3f})",
            fontsize=9,
        )
        ax.set_xlabel("mean absolute relative error")
        ax.set_xlim(0, 1)
    fig.suptitle(title, fontsize=10)
    return figure_png(fig)


def model_comparison_chart(disparities: dict[str, pd.DataFrame], title: str) -> bytes:
    """Every model side by side: mean error per region and per income group, with 95 % intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for ax, cat in zip(axes, ("region", "income_group"), strict=True):
        per_model = []
        for model in sorted(disparities):
            table = disparities[model]
            part = table[
                (table["indicator"] == "all")
                & (table["categorization"] == cat)
                & ~table["group"].astype(str).str.startswith("disparity_")
            ]
            per_model.append(part.assign(model=model).sort_values("mean_error"))  # groups in the first's order
        _draw_interval_bars(ax, _finite(pd.concat(per_model), "mean_error"), "mean_error", "mean", "model", "group")
        ax.set_title(cat.replace("_", " "), fontsize=9)
        ax.set_xlabel("mean absolute relative error (95 % interval)")
        ax.set_xlim(0, 1)
    axes[0].legend(fontsize=8, loc="lower right")
    fig.suptitle(title, fontsize=10)
    return figure_png(fig)


def interval_bars(frame: pd.DataFrame, label: str, series: str, groups: str, title: str, xlabel: str) -> bytes:
    """Horizontal bars of ``frame[label]`` per ``groups`` value, one colour per ``series`` value, with the
    ``{label}_ci_low``/``_ci_high`` intervals where they exist; rows without a finite value are not drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = _finite(frame, label)
    bars = max(shown[groups].nunique(), 1) * max(shown[series].nunique(), 1) ** 0.5
    fig, ax = plt.subplots(figsize=(9, 0.45 * bars + 1.2))
    _draw_interval_bars(ax, shown, label, label, series, groups)
    ax.set_xlabel(xlabel)
    ax.set_xlim(0, 100)
    ax.legend(fontsize=PNG_LABEL_PT, loc="best")
    ax.set_title(title, fontsize=10)
    return figure_png(fig)


def breakdown_bars(frame: pd.DataFrame, value: str, groups: str, series: str, title: str) -> bytes:
    """Horizontal bars of ``frame[value]`` per ``groups`` value, one colour per ``series`` value (a model),
    with ``ci_low``/``ci_high`` as the interval; the axis spans the data (differences may be negative)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = _finite(frame, value).rename(columns={"ci_low": f"{value}_ci_low", "ci_high": f"{value}_ci_high"})
    bars = max(shown[groups].nunique(), 1) * max(shown[series].nunique(), 1) ** 0.5
    fig, ax = plt.subplots(figsize=(9, 0.4 * bars + 1.4))
    _draw_interval_bars(ax, shown, value, value, series, groups)
    ax.axvline(0, color="#444", linewidth=0.6)
    ax.set_xlabel(value)
    # Beside the axes, so the legend never covers a bar or the axis label.
    ax.legend(fontsize=PNG_LABEL_PT, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title(title, fontsize=10)
    return figure_png(fig)


REGRESSION_COLOUR = "#c0392b"
DOT_PLOT_LABEL_PT = 10  # every label of a dot plot: 13 px in the page (an SVG point is 4/3 px)


def dot_plot(
    frame: pd.DataFrame, value: str, label: str, title: str, xlabel: str, marked: set[str], why: str = ""
) -> str:
    """One row per ``frame[label]`` (a model), sorted by ``value`` (highest first): a dot with its
    ``ci_low``-``ci_high`` interval as a line, the ``marked`` rows (open regressions) red and named so; as inline
    SVG with its text as text, labels at ``DOT_PLOT_LABEL_PT`` and rows far enough apart not to overlap. Rows
    without a finite value are named under the chart with ``why`` (by default ``EMPTY_REASON``); with none at
    all, the chart says so instead of drawing."""
    import numpy as np
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    shown = _finite(frame, value).sort_values(value, ascending=True, kind="stable")  # drawn bottom-up
    missing = [str(m) for m in frame.loc[~frame.index.isin(shown.index), label]]
    why = html.escape(why or EMPTY_REASON)
    if shown.empty:
        return (
            f"<p class='empty-chart'><b>{html.escape(title)}</b>: no chart — no model has a value "
            f"({html.escape(', '.join(missing)) or 'no model evaluated'}): {why}</p>"
        )
    names = [str(m) for m in shown[label]]
    centre = shown[value].astype(float).to_numpy()
    low = pd.to_numeric(shown.get("ci_low", shown[value]), errors="coerce").fillna(shown[value]).to_numpy(float)
    high = pd.to_numeric(shown.get("ci_high", shown[value]), errors="coerce").fillna(shown[value]).to_numpy(float)
    rows = np.arange(len(names))
    red = np.array([n in marked for n in names])
    # 0.24 in (17 pt) a row: a 10-pt label with room to spare; 12 in (1,152 px) fits the report's column (1,184 px).
    fig = Figure(figsize=(12, 0.24 * len(names) + 1.3), layout="constrained")
    ax = fig.subplots()
    ax.hlines(rows, low, high, color=np.where(red, REGRESSION_COLOUR, "#7f8c8d"), linewidth=2)
    ax.scatter(centre, rows, s=28, color=np.where(red, REGRESSION_COLOUR, "#2c3e50"), zorder=3)
    ax.set_yticks(rows, [f"{n}  ▲ open regression" if n in marked else n for n in names])
    for tick, is_red in zip(ax.get_yticklabels(), red, strict=True):
        tick.set_color(REGRESSION_COLOUR if is_red else "black")
    ax.set_ylim(-0.7, len(names) - 0.3)
    ax.grid(axis="x", color="0.9")
    ax.tick_params(labelsize=DOT_PLOT_LABEL_PT)
    ax.set_xlabel(xlabel, fontsize=DOT_PLOT_LABEL_PT)
    ax.set_title(title, fontsize=DOT_PLOT_LABEL_PT + 1, loc="left")
    if red.any():
        ax.legend(
            [Line2D([], [], color=REGRESSION_COLOUR, marker="o", linewidth=2)],
            ["open regression, in any figure (the table above names it)"],
            fontsize=DOT_PLOT_LABEL_PT,
            loc="lower right",
        )
    note = (
        f"<p class='chart-note'>No value, not drawn: {html.escape(', '.join(missing))} — {why}</p>" if missing else ""
    )
    return f"<figure class='dot-plot' style='margin:0'>{figure_svg(fig)}</figure>{note}"


# Why a figure has no value: said wherever a chart leaves a model out or draws nothing.
EMPTY_REASON = (
    "the figure could not be computed from its sample (no scored answer, or too few to form it; each row's "
    "sample_note and leaderboard.csv say more)"
)


def _finite(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    import numpy as np

    return frame[np.isfinite(pd.to_numeric(frame[column], errors="coerce"))]


def _draw_interval_bars(ax: Any, shown: pd.DataFrame, value: str, interval: str, series: str, groups: str) -> None:
    """One bar per (group, series) row of ``shown``, groups in their order of first appearance, with the
    ``{interval}_ci_low``/``_ci_high`` columns as error bars where they exist."""
    import numpy as np

    categories = list(dict.fromkeys(shown[groups]))
    names = list(dict.fromkeys(shown[series]))
    height = 0.8 / max(len(names), 1)
    for i, name in enumerate(names):
        part = shown[shown[series] == name].set_index(groups).reindex(categories)
        center = part[value].astype(float)
        low = (center - part.get(f"{interval}_ci_low", center).astype(float)).clip(lower=0).fillna(0)
        high = (part.get(f"{interval}_ci_high", center).astype(float) - center).clip(lower=0).fillna(0)
        ax.barh(np.arange(len(categories)) + i * height, center, height=height, xerr=[low, high], capsize=2, label=name)
    ax.set_yticks(np.arange(len(categories)) + height * (len(names) - 1) / 2, categories, fontsize=PNG_LABEL_PT)


def error_by_year_chart(by_year: pd.DataFrame, title: str) -> bytes:
    """Error against each single data year, paired with the default ground truth."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    years = by_year.dropna(subset=["year"])
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.plot(years["year"].astype(int), years["delta_vs_default"], marker="o")
    ax.axhline(0, color="grey", linestyle="--", linewidth=1, label="latest-3-year mean (default)")
    ax.set_xlabel("ground-truth year")
    ax.set_ylabel("error − default error (paired)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return figure_png(fig)


def png_data_uri(png: bytes) -> str:
    return f"data:image/png;base64,{base64.b64encode(png).decode()}"


def png_html(png: bytes) -> str:
    """An HTML ``<img>`` embedding a PNG inline, for the self-contained report pages."""
    return f"<img src='{png_data_uri(png)}'>"


def png_markdown(png: bytes, alt: str) -> str:
    """Markdown embedding a PNG inline, which the Dagster UI renders in metadata."""
    return f"![{alt}]({png_data_uri(png)})"


MARKDOWN_CELL_CHARS = 200


def _safe_cell(value: object) -> object:
    """A text cell that cannot break the table or inject markup: one line, at most ``MARKDOWN_CELL_CHARS``
    characters, HTML escaped, and the characters Markdown reads as structure or emphasis (| [ ] ` * _ ~ !)
    escaped (checked as the Dagster UI renders it: geomon_tests/report/test_browser.py)."""
    if not isinstance(value, str):
        return value
    text = " ".join(value.split())
    if len(text) > MARKDOWN_CELL_CHARS:
        text = text[:MARKDOWN_CELL_CHARS] + "…"
    text = html.escape(text, quote=False)
    return re.sub(r"([|\[\]`\\*_~!])", r"\\\1", text)


# A header cell's text (escaped by pandas: no markup inside), where a column's name may break after an underscore.
HEADER_CELL = re.compile(r"(<th[^>]*>)([^<]*)(</th>)")


def html_table(frame: pd.DataFrame, digits: int = 3, index: bool = False) -> str:
    """A report table: a missing value is "—" (never "nan"), a yes/no column yes or no (never "True"), a whole
    number prints as one (a count is never "10.00"), other numbers with ``digits`` decimals; text escaped; a
    header may wrap after an underscore of its name (never inside a word)."""

    def number(value: float) -> str:
        return f"{value:.0f}" if float(value).is_integer() else f"{value:.{digits}f}"

    flags = [c for c in frame.columns if pd.api.types.is_bool_dtype(frame[c])]
    shown = frame.assign(**{c: frame[c].map({True: "yes", False: "no"}) for c in flags}) if flags else frame
    table = shown.to_html(index=index, na_rep="—", float_format=number)
    return HEADER_CELL.sub(lambda m: m[1] + m[2].replace("_", "_<wbr>") + m[3], table)


def counts_text(counts: dict[Any, Any]) -> str:
    """``{"unanswered": 24, "failed": 3}`` → "24 unanswered, 3 failed" (a report never shows a Python dict);
    "none" when empty."""
    return ", ".join(f"{n:,} {html.escape(str(what))}" for what, n in counts.items()) or "none"


def markdown_table(frame: pd.DataFrame, floatfmt: str = ".3f", index: bool = False) -> str:
    """A Markdown table for Dagster metadata, safe for untrusted text (model answers, prompts, sentences); a
    missing value is "—" (never "nan"), a yes/no column reads yes or no (never "True")."""
    safe = frame.copy()
    for column in safe.columns:
        if pd.api.types.is_bool_dtype(safe[column]):
            safe[column] = safe[column].map({True: "yes", False: "no"})
        elif not pd.api.types.is_numeric_dtype(safe[column]):  # object or pandas' string dtype
            safe[column] = safe[column].map(_safe_cell).astype(object)
        if safe[column].isna().any():  # tabulate writes NaN as "nan"; None is its missing value
            safe[column] = safe[column].astype(object).where(safe[column].notna(), None)
    if index:
        safe.index = safe.index.map(_safe_cell)
    return safe.to_markdown(index=index, floatfmt=floatfmt, missingval="—")


def write_html(path, title: str, sections: list[str]):
    """A self-contained HTML page (inline styles, charts as data URIs) at ``path``; returns the path. Written
    whole, then moved into place: a reader (the browser, another run's index) never sees half a page."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(
        f"<!doctype html><meta charset='utf-8'><title>{title}</title>"
        "<style>body{font-family:sans-serif;max-width:1200px;margin:auto;padding:0 8px}"
        "img,svg{max-width:100%;height:auto}"
        # A wide table scrolls inside its own box: the page stays readable at a laptop's width.
        "table{border-collapse:collapse;font-size:12px;display:block;overflow-x:auto;max-width:100%}"
        # A header wraps between words, never inside one: a column's name may break after its underscores
        # (html_table marks each with <wbr>: mean_error_ci_low has no space).
        "td,th{border:1px solid #ccc;padding:2px 6px}th{overflow-wrap:normal;hyphens:manual}</style>"
        + "\n".join(sections)
    )
    os.replace(partial, path)
    return path
