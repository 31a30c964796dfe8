"""BLEnD's diagnostics: SEM per country with intervals (local language and English), the country gap, the local
language against English paired on questions, and topics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from geomon.stats import sufficiency, uncertainty
from geomon.suites.blend.scoring import scored_rows


def _groups_table(gaps: uncertainty.GroupGaps, view: str) -> pd.DataFrame:
    table = gaps.table().rename(columns={"group": "group"})
    best = max(gaps.groups, key=lambda g: gaps.groups[g].point) if gaps.groups else None
    behind = [gaps.difference(g, best) if best else None for g in table["group"]]
    table["vs_best"] = [d.point if d else np.nan for d in behind]
    table["vs_best_ci_low"] = [d.interval.low if d else np.nan for d in behind]
    table["vs_best_ci_high"] = [d.interval.high if d else np.nan for d in behind]
    # The one sufficiency rule, the verdicts' own: a country's figure over fewer questions carries no conclusion.
    table["insufficient_sample"] = table["items"] < sufficiency.MIN_SAMPLE
    return table.assign(view=view)


def diagnose(scores: pd.DataFrame, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """SEM-B/SEM-W overall and per country with intervals over questions; the disparity across countries
    (max − min, each country vs the best) in the local language and in English; local − English per
    country, paired on questions; per topic. Every group statistic goes through ``stats.group_gaps``."""
    scored = scored_rows(scores)
    summary: dict[str, Any] = {
        "prompts": len(scores),
        "scored": len(scored),
        "answered": int((scores["status"] == "answered").sum()),
        "unanswered": int((scores["status"] == "unanswered").sum()),
        "failed": int((scores["status"] == "failed").sum()),
        "invalid_questions": int((scores["status"] == "invalid").sum()),
        "countries": int(scored["country"].nunique()),
    }
    views = {"local": scored[scored["mode"] == "local"], "english": scored[scored["asked_in"] == "English"]}
    countries, topics = [], []
    for view, frame in views.items():
        for metric in ("sem_b", "sem_w"):
            overall = uncertainty.mean_interval(frame[metric], resamples=resamples, seed=seed)
            summary[f"{metric}_{view}"] = overall.point
            summary[f"{metric}_{view}_ci_low"] = overall.interval.low
            summary[f"{metric}_{view}_ci_high"] = overall.interval.high
            gaps = uncertainty.group_gaps(frame[metric], frame["country"], resamples=resamples, seed=seed)
            summary[f"country_gap_{metric}_{view}"] = gaps.disparity.point
            summary[f"country_gap_{metric}_{view}_ci_low"] = gaps.disparity.interval.low
            summary[f"country_gap_{metric}_{view}_ci_high"] = gaps.disparity.interval.high
            countries.append(_groups_table(gaps, view).assign(metric=metric))
        by_topic = uncertainty.group_gaps(frame["sem_b"], frame["topic"], resamples=resamples, seed=seed)
        topics.append(by_topic.table().assign(view=view, metric="sem_b"))
    summary["n_local"] = len(views["local"])
    summary["n_english"] = len(views["english"])
    return {
        "summary": summary,
        "countries": pd.concat(countries, ignore_index=True),
        "topics": pd.concat(topics, ignore_index=True),
        "local_vs_english": local_vs_english(scored, resamples, seed),
    }


def local_vs_english(scored: pd.DataFrame, resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Per non-English country: SEM-B in the local language − in English, the same questions resampled for
    both (paired); positive = the local language does better."""
    rows = []
    for country, frame in scored[scored["language"] != "English"].groupby("country"):
        gaps = uncertainty.group_gaps(
            frame["sem_b"], frame["mode"], clusters=frame["question_id"], paired=True, resamples=resamples, seed=seed
        )
        diff = gaps.difference("local", "english")
        rows.append(
            {
                "country": country,
                "language": frame["language"].iloc[0],
                "local": gaps.groups["local"].point if "local" in gaps.groups else np.nan,
                "english": gaps.groups["english"].point if "english" in gaps.groups else np.nan,
                "difference": diff.point,
                "ci_low": diff.interval.low,
                "ci_high": diff.interval.high,
                "questions": diff.clusters,
                "insufficient_sample": diff.clusters < sufficiency.MIN_SAMPLE,
            }
        )
    columns = [
        "country",
        "language",
        "local",
        "english",
        "difference",
        "ci_low",
        "ci_high",
        "questions",
        "insufficient_sample",
    ]
    return pd.DataFrame(rows, columns=columns)
