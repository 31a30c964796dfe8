"""The history of every metric geomon computed, in geomon's database (SQLite default, PostgreSQL by URL).

One *evaluation* is one suite's result for one model in one scope (a table revision, a probe set)
from one materialization: the versions of data, prompts and code it came from, when, which Dagster
run, and its per-item values (countries, territories, probes) so a later run can be compared with it
item by item. Its *metric values* are the scalar numbers with their breakdown (``persona=vanilla``,
``categorization=region``), confidence interval and sample size. Nothing is updated or deleted; a run
records one evaluation (``MetricHistory.record``).
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import sqlalchemy as sa

from geomon.engine.store import make_engine

metadata = sa.MetaData()

evaluations = sa.Table(
    "metric_evaluations",
    metadata,
    sa.Column("evaluation_id", sa.String(36), primary_key=True),
    sa.Column("suite", sa.String(100), nullable=False),
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("scope", sa.String(200), nullable=False, default=""),
    sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("data_version", sa.String(200), nullable=False, default=""),
    sa.Column("prompt_version", sa.String(200), nullable=False, default=""),
    sa.Column("code_version", sa.String(200), nullable=False, default=""),
    sa.Column("dagster_run_id", sa.String(100), nullable=False, default=""),
    sa.Column("items", sa.Text),  # JSON records: the per-item values paired tests compare
    sa.Index("ix_metric_evaluations_lookup", "suite", "model", "scope", "recorded_at"),
)

values = sa.Table(
    "metric_values",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("evaluation_id", sa.String(36), sa.ForeignKey("metric_evaluations.evaluation_id"), nullable=False),
    sa.Column("suite", sa.String(100), nullable=False),
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("metric", sa.String(200), nullable=False),
    sa.Column("breakdown", sa.String(300), nullable=False, default=""),
    sa.Column("value", sa.Float),
    sa.Column("ci_low", sa.Float),
    sa.Column("ci_high", sa.Float),
    sa.Column("n", sa.Integer),
    sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    sa.Index("ix_metric_values_series", "suite", "model", "metric", "breakdown"),
)


@dataclass(frozen=True)
class MetricValue:
    metric: str
    value: float | None
    breakdown: str = ""
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None


@dataclass
class Evaluation:
    evaluation_id: str
    suite: str
    model: str
    scope: str
    recorded_at: datetime
    versions: dict[str, str] = field(default_factory=dict)
    dagster_run_id: str = ""
    items: pd.DataFrame | None = None


def _finite(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if x == x and abs(x) != float("inf") else None


class MetricHistory:
    """Append-only metric history."""

    def __init__(self, url: str) -> None:
        self.engine = make_engine(url, metadata)

    def record(
        self,
        suite: str,
        model: str,
        metrics: list[MetricValue],
        *,
        scope: str = "",
        items: pd.DataFrame | None = None,
        versions: dict[str, str] | None = None,
        dagster_run_id: str = "",
        run_started_at: datetime | None = None,
    ) -> Evaluation:
        """Append one evaluation, at most one per run: a step that records again in the same Dagster run (a
        retry) gets the evaluation already recorded; and a run that computed exactly the evaluation another
        run recorded after ``run_started_at`` (two runs of the same model and suite at once, sharing their
        answers) gets that one, so the history holds one point for one evaluation."""
        versions = versions or {}
        items_json = items.to_json(orient="records", force_ascii=False) if items is not None else None
        same = (evaluations.c.suite == suite, evaluations.c.model == model, evaluations.c.scope == scope)
        with self.engine.begin() as conn:
            if dagster_run_id:
                row = (
                    conn.execute(sa.select(evaluations).where(*same, evaluations.c.dagster_run_id == dagster_run_id))
                    .mappings()
                    .first()
                )
                if row is not None:
                    return _evaluation(row)
            if run_started_at is not None and items_json is not None:
                row = (
                    conn.execute(
                        sa.select(evaluations)
                        .where(*same, evaluations.c.recorded_at >= run_started_at)
                        .order_by(evaluations.c.recorded_at.desc())
                        .limit(1)
                    )
                    .mappings()
                    .first()
                )
                if row is not None and row["items"] == items_json and _versions(row) == _versions_of(versions):
                    return _evaluation(row)
            now = datetime.now(UTC)
            evaluation = Evaluation(str(uuid.uuid4()), suite, model, scope, now, versions, dagster_run_id, items)
            conn.execute(
                evaluations.insert().values(
                    evaluation_id=evaluation.evaluation_id,
                    suite=suite,
                    model=model,
                    scope=scope,
                    recorded_at=now,
                    data_version=versions.get("data", ""),
                    prompt_version=versions.get("prompts", ""),
                    code_version=versions.get("code", ""),
                    dagster_run_id=dagster_run_id,
                    items=items_json,
                )
            )
            if metrics:
                conn.execute(
                    values.insert(),
                    [
                        {
                            "evaluation_id": evaluation.evaluation_id,
                            "suite": suite,
                            "model": model,
                            "metric": m.metric,
                            "breakdown": m.breakdown,
                            "value": _finite(m.value),
                            "ci_low": _finite(m.ci_low),
                            "ci_high": _finite(m.ci_high),
                            "n": m.n,
                            "recorded_at": now,
                        }
                        for m in metrics
                    ],
                )
        return evaluation

    def latest(self, suite: str, model: str, scope: str = "", before: Evaluation | None = None) -> Evaluation | None:
        """The newest evaluation of ``model`` in ``suite``/``scope`` (recorded before ``before`` if given)."""
        query = sa.select(evaluations).where(
            evaluations.c.suite == suite, evaluations.c.model == model, evaluations.c.scope == scope
        )
        if before is not None:
            query = query.where(evaluations.c.evaluation_id != before.evaluation_id).where(
                evaluations.c.recorded_at <= before.recorded_at
            )
        with self.engine.connect() as conn:
            row = conn.execute(query.order_by(evaluations.c.recorded_at.desc()).limit(1)).mappings().first()
        return None if row is None else _evaluation(row)

    def series(
        self,
        suite: str | None = None,
        model: str | None = None,
        metric: str | None = None,
        only: Iterable[tuple[str, str, str]] | None = None,
    ) -> pd.DataFrame:
        """Metric values over time (one row per value), joined with the versions they came from; ``only``
        keeps the given (suite, metric, breakdown) series, selected by the database (the trends report
        needs the headlines, not every figure of every evaluation)."""
        query = sa.select(
            values,
            evaluations.c.scope,
            evaluations.c.data_version,
            evaluations.c.prompt_version,
            evaluations.c.code_version,
            evaluations.c.dagster_run_id,
        ).join(evaluations, values.c.evaluation_id == evaluations.c.evaluation_id)
        for column, wanted in ((values.c.suite, suite), (values.c.model, model), (values.c.metric, metric)):
            if wanted is not None:
                query = query.where(column == wanted)
        if only is not None:
            query = query.where(sa.tuple_(values.c.suite, values.c.metric, values.c.breakdown).in_(list(only)))
        with self.engine.connect() as conn:
            return pd.DataFrame(conn.execute(query.order_by(values.c.recorded_at, values.c.id)).mappings().all())


def _versions(row: Any) -> dict[str, str]:
    return {"data": row["data_version"], "prompts": row["prompt_version"], "code": row["code_version"]}


def _versions_of(versions: dict[str, str]) -> dict[str, str]:
    return {key: versions.get(key, "") for key in ("data", "prompts", "code")}


def _evaluation(row: Any) -> Evaluation:
    items = pd.read_json(io.StringIO(row["items"]), orient="records") if row["items"] else None
    return Evaluation(
        row["evaluation_id"],
        row["suite"],
        row["model"],
        row["scope"],
        row["recorded_at"],
        _versions(row),
        row["dagster_run_id"],
        items,
    )


def metrics_from_mapping(numbers: dict[str, Any], breakdown: str = "", n: int | None = None) -> list[MetricValue]:
    """``{"kb_cs": 61.2, "kb_cs_ci_low": 55.0, "kb_cs_ci_high": 67.1, ...}`` → MetricValues with intervals."""
    out = []
    for name, value in numbers.items():
        if name.endswith(("_ci_low", "_ci_high")) or not isinstance(value, int | float) or isinstance(value, bool):
            continue
        out.append(
            MetricValue(
                name,
                float(value),
                breakdown,
                _finite(numbers.get(f"{name}_ci_low")),
                _finite(numbers.get(f"{name}_ci_high")),
                n,
            )
        )
    return out
