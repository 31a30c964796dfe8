"""The pages of the results folder made from the whole metric history, written the same way by ``geomon run``,
``geomon trends`` and the Dagster assets: the trends report, and the index that opens with every open
regression across the suites."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from geomon.monitor import views
from geomon.monitor.history import MetricHistory
from geomon.monitor.views import open_regressions, open_regressions_frame
from geomon.report import index, trends
from geomon.suites import registry


def write_index(results_dir: Path, store_url: str, changes: Mapping[str, str] | None = None) -> Path:
    """``<results_dir>/index.html``: every open regression in the history first, then what each serving-change
    release decided against its predecessor (``changes``: by variant, its change, ``Settings.serving_changes``;
    those evaluated), then each suite's report."""
    history = MetricHistory(store_url)
    evaluated = set(history.evaluations()["model"]) if changes else set()
    releases = [
        views.release_decided(history, model, change, {})
        for model, change in (changes or {}).items()
        if model in evaluated
    ]
    return index.write_index(results_dir, registry.titles(), open_regressions_frame(history), releases)


def regressed_groups(history: MetricHistory) -> list[tuple[str, str, str]]:
    """(suite, metric, breakdown) of every open regression in a group whose model's overall figure of that
    metric did not regress too (o3's indecisive rate under the ideology wording): what the headline charts
    cannot show, so the trends report draws that group's own chart."""
    found = open_regressions(history)
    overall = {(suite, model, row.metric) for suite, model, row in found if not row.breakdown}
    keys = [
        (suite, row.metric, row.breakdown)
        for suite, model, row in found
        if row.breakdown and (suite, model, row.metric) not in overall
    ]
    return list(dict.fromkeys(keys))


def write_trends(
    results_dir: Path, store_url: str, breakdowns: Sequence[str] = (), changes: Mapping[str, str] | None = None
) -> tuple[Path, pd.DataFrame, pd.DataFrame]:
    """The trends report and the index from the whole history; returns the page, the series read and their
    trend table. Besides the headlines, the report draws the groups with an open regression of their own
    (``regressed_groups``) and each of ``breakdowns`` (``family=ideology``) of every headline metric; the index
    shows the releases of ``changes`` (``write_index``)."""
    history = MetricHistory(store_url)
    catalog = registry.headline_catalog()
    asked = [(suite, metric, group) for suite, metric, _, _, _ in catalog for group in breakdowns]
    groups = list(dict.fromkeys([*regressed_groups(history), *asked]))
    series = history.series(only=[*trends.headline_keys(catalog), *groups])
    page = trends.write_report(
        results_dir / "trends", series, history.comparisons(), catalog=catalog, breakdowns=groups
    )
    write_index(results_dir, store_url, changes)
    return page, series, trends.trend_table(series, catalog, groups)
