"""The open regressions a page opens with: every suite's report (its own), the results index (all of them).

The table is made from the metric history by ``monitor.views.open_regressions_frame`` (one row per
unacknowledged regression of a model's latest evaluation, geomon's runs and imported ones alike); a suite's
leaderboard writes its suite's rows to ``open_regressions.csv`` beside the report, which the report reads.
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from geomon.report import charts

FILE = "open_regressions.csv"  # beside a suite's report: its open regressions, as the leaderboard found them

# What the columns a reader may misread mean, said once under each table.
EXPLAINED = (
    "<p class='explain'><b>change</b>: after − before, with its 95 % interval (from the paired test); "
    "<b>min effect</b>: the smallest worsening worth paging anyone about; <b>MDE</b> (minimum detectable "
    "effect) and <b>power at the minimum effect</b> are planned from the pair's paired differences with a "
    "worsening of the minimum effect added: the MDE is the change the test would catch at the settings' power "
    "(80 % by default), the power the chance it would catch a worsening of only the minimum effect. A "
    "regression below the MDE, found at low planned power, is no contradiction: whether the change is real "
    "is said by its interval and "
    "its <b>adjusted p</b> (Holm, over the suite's comparisons of that evaluation); low power says a smaller "
    "worsening could have gone unseen. <code>geomon alerts ack</code> acknowledges a regression (it then leaves "
    "this list).</p>"
)


def read(out_dir: Path) -> pd.DataFrame | None:
    """The open regressions the leaderboard wrote beside a suite's report; None where it wrote none (a report
    written without the history, as a suite's own unit tests do)."""
    path = out_dir / FILE
    return pd.read_csv(path, dtype=str, keep_default_na=False) if path.is_file() else None


def by_model(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per regressed model (and suite and baseline), in the table's order: its lead regression (the
    overall figure where that regressed, else its first group) with that regression's columns, and how many
    more of its groups regressed."""
    keys = ["suite", "model", "baseline"]
    rows = []
    for _, part in frame.groupby(keys, sort=False):
        overall = part[part["group"] == "overall"]
        lead = (overall if len(overall) else part).iloc[0].to_dict()
        rows.append({**lead, "more regressions": len(part) - 1})
    return pd.DataFrame(rows, columns=[*frame.columns, "more regressions"])


def sentence(frame: pd.DataFrame) -> str:
    """``2 models regressed (19 open regressions): o3-mini vs o1 — correct_rate −17.2 pts and 17 more; …``"""
    if frame.empty:
        return "No open regression."
    leads = by_model(frame)
    said = [
        f"{r['model']} vs {r['baseline'].removesuffix(' (predecessor)')}: {r['metric']}"
        + ("" if r["group"] == "overall" else f" ({r['group']})")
        + f" {r['change']}"
        + (f" and {r['more regressions']} more" if r["more regressions"] else "")
        for r in leads.to_dict("records")
    ]
    models = f"{len(leads)} model{'s' if len(leads) != 1 else ''} regressed"
    return f"{models} ({len(frame)} open regression{'s' if len(frame) != 1 else ''}): {'; '.join(said)}."


def section(frame: pd.DataFrame | None, scope: str, show_suite: bool = False) -> list[str]:
    """An "Open regressions" heading, the sentence, one row per regressed model (its lead regression), every
    open regression (folded when there are many; ``show_suite``: with the suite column, for the index) and what
    the columns mean; ``scope`` says where they were looked for ("in Gapminder …")."""
    if frame is None:
        return []
    head = f"<h2 id='open-regressions'>Open regressions {html.escape(scope)} ({len(frame)})</h2>"
    if frame.empty:
        return [head, "<p>No open regression: every model's latest evaluation passed its comparisons.</p>"]
    shown = frame if show_suite else frame.drop(columns=["suite"])
    leads = by_model(shown.assign(suite="")).drop(columns=["suite"]) if not show_suite else by_model(shown)
    return [
        head,
        f"<p class='lead'><b>{html.escape(sentence(frame))}</b></p>",
        charts.html_table(leads),
        f"<details{' open' if len(frame) <= 12 else ''}><summary>every open regression ({len(frame)}), each "
        "group its own row</summary>",
        charts.html_table(shown),
        "</details>",
        EXPLAINED,
    ]
