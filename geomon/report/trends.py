"""The cross-model trends report: every headline metric over time per model, and knowledge recency
(WorldBench's best-matching data year) per model over time, from the metric history."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from geomon.report import charts

DRIFT_HEADLINES = [("drift", "change_rate", "", "Drift probes: share of answers changed vs baseline")]


def headlines() -> list[tuple[str, str, str, str]]:
    """(suite, metric, breakdown, title) of every registered suite's headline metrics, then drift's."""
    from geomon.suites.registry import suites

    return [
        *((info.name, h.metric, h.breakdown, h.title) for info in suites().values() for h in info.headlines),
        *DRIFT_HEADLINES,
    ]


def trend_table(series: pd.DataFrame) -> pd.DataFrame:
    """One row per (suite, metric, model, time) for the headline metrics."""
    if series.empty:
        return pd.DataFrame(columns=["suite", "metric", "model", "scope", "recorded_at", "value", "ci_low", "ci_high"])
    wanted = {(s, m, b) for s, m, b, _ in headlines()}
    keep = [(s, m, b) in wanted for s, m, b in zip(series["suite"], series["metric"], series["breakdown"], strict=True)]
    columns = ["suite", "metric", "model", "scope", "recorded_at", "value", "ci_low", "ci_high"]
    return series.loc[keep, columns].sort_values(["suite", "metric", "model", "recorded_at"], ignore_index=True)


def _chart(frame: pd.DataFrame, title: str) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3))
    for model, part in frame.groupby("model"):
        ax.plot(pd.to_datetime(part["recorded_at"]), part["value"], marker="o", label=model)
        if part["ci_low"].notna().any():
            ax.fill_between(pd.to_datetime(part["recorded_at"]), part["ci_low"], part["ci_high"], alpha=0.15)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    fig.autofmt_xdate()
    return charts.figure_png(fig)


def write_report(out_dir: Path, series: pd.DataFrame) -> Path:
    """trends.csv and report.html (a chart and the latest values per headline metric)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    table = trend_table(series)
    table.to_csv(out_dir / "trends.csv", index=False)
    sections = ["<h1>geomon — trends</h1>", "<p>Every evaluation geomon recorded, per model, over time.</p>"]
    for suite, metric, _, title in headlines():
        part = table[(table["suite"] == suite) & (table["metric"] == metric)]
        if part.empty:
            continue
        latest = part.groupby("model").tail(1)[["model", "scope", "recorded_at", "value", "ci_low", "ci_high"]]
        sections += [
            f"<h2>{html.escape(title)}</h2>",
            f"<img src='{charts.png_data_uri(_chart(part, title))}'>",
            latest.to_html(index=False, float_format=lambda v: f"{v:.3f}"),
        ]
    return charts.write_html(out_dir / "report.html", "geomon trends", sections)
