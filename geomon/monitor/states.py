"""Each model's state across suites, as its own catalog entry (``models/<name>``) shows it: its latest evaluation
in each suite and the open regressions there. Reads the metric history; decides nothing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pandas as pd

from geomon.monitor.history import MetricHistory
from geomon.monitor.views import origin_label
from geomon.stats.verdicts import Comparison

LATEST_BY_MODEL_COLUMNS = ["model", "suite", "evaluated", "source", "origin", "evaluation_id", "open"]


def latest_by_model(history: MetricHistory, found: Sequence[tuple[str, str, Comparison]]) -> pd.DataFrame:
    """Each model's latest evaluation in each suite (of any scope), newest first per model: ``model``, ``suite``,
    ``evaluated`` (its date), ``source`` (``origin_label``), ``origin``, ``evaluation_id`` and ``open``, how many
    of the open regressions ``found`` (``views.open_regressions``) are that model's in that suite."""
    every = history.evaluations()
    if every.empty:
        return pd.DataFrame(columns=LATEST_BY_MODEL_COLUMNS)
    latest = every.groupby(["model", "suite"], sort=False).tail(1)  # oldest first: the last is the latest
    open_per = Counter((suite, model) for suite, model, _ in found)
    when = pd.to_datetime(latest["evaluated_at"].fillna(latest["recorded_at"]), utc=True)
    frame = pd.DataFrame(
        {
            "model": latest["model"],
            "suite": latest["suite"],
            "when": when,
            "evaluated": when.dt.strftime("%Y-%m-%d"),
            "source": latest["origin"].map(origin_label),
            "origin": latest["origin"],
            "evaluation_id": latest["evaluation_id"],
            "open": [open_per[(s, m)] for s, m in zip(latest["suite"], latest["model"], strict=True)],
        }
    )
    frame = frame.sort_values(["model", "when", "suite"], ascending=[True, False, True], kind="stable")
    return frame[LATEST_BY_MODEL_COLUMNS].reset_index(drop=True)
