"""The history of every metric geomon computed, in geomon's database (SQLite default, PostgreSQL by URL).

One *evaluation* is one suite's result for one model in one scope (a table revision, a probe set)
from one materialization: the versions of data, prompts and code it came from, when, which Dagster
run, and its per-item values (countries, territories, probes) so a later run can be compared with it
item by item. Its *metric values* are the scalar numbers with their breakdown (``persona=vanilla``,
``categorization=region``), confidence interval and sample size. Nothing is updated or deleted; a run
records one evaluation (``MetricHistory.record``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import sqlalchemy as sa

from geomon.engine.store import make_engine, normalize_url
from geomon.stats import sufficiency, verdicts
from geomon.stats.values import EvaluationRun, MetricKey, MetricValue, finite

__all__ = ["Evaluation", "EvaluationRun", "MetricHistory", "MetricValue", "StoredComparison"]

metadata = sa.MetaData()
_PROCESS_LOCK = threading.RLock()
_HELD = threading.local()  # per thread: the SQLite lock files it holds

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
    # When the model was evaluated (an imported run's own date; geomon's runs: when recorded).
    sa.Column("evaluated_at", sa.DateTime(timezone=True)),
    # "geomon" for geomon's own runs; "import:<source>:<key>" for evaluations made elsewhere.
    sa.Column("origin", sa.String(300), nullable=False, default="geomon", server_default="geomon"),
    # The model's predecessor when recorded: a later evaluation of the predecessor finds its successors here.
    sa.Column("predecessor", sa.String(200), nullable=False, default="", server_default=""),
    # JSON records: every item as scored (prompt, reply, parsed answer, score, status) for ``geomon items``;
    # never read with the evaluation (``MetricHistory.replies``).
    sa.Column("replies", sa.Text),
    sa.Index("ix_metric_evaluations_lookup", "suite", "model", "scope", "recorded_at"),
)

_READ = [c for c in evaluations.c if c.name != "replies"]  # an evaluation as read (its replies on request)

# The paired test of an evaluation against what it was compared with (its previous run or predecessor), and the
# verdict its family gave it (``geomon.stats.verdicts``).
comparisons = sa.Table(
    "metric_comparisons",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("evaluation_id", sa.String(36), sa.ForeignKey("metric_evaluations.evaluation_id"), nullable=False),
    sa.Column("against_evaluation_id", sa.String(36), nullable=False),
    sa.Column("against", sa.String(300), nullable=False),  # "previous run" or "predecessor <model>"
    sa.Column("metric", sa.String(200), nullable=False),
    sa.Column("before", sa.Float),
    sa.Column("after", sa.Float),
    sa.Column("effect", sa.Float),  # rows recorded before 2026-11-25 only: signed so that positive = worse
    # One-sided in the direction the metric moved: the verdict's claim (rows recorded before 2026-11-26: two-sided).
    sa.Column("p_value", sa.Float),
    sa.Column("items", sa.Integer),
    sa.Column("verdict", sa.String(40), nullable=False),  # geomon.stats.verdicts.VERDICTS
    sa.Column("breakdown", sa.String(300), nullable=False, default="", server_default=""),
    sa.Column("change", sa.Float),  # after − before, in the metric's units
    sa.Column("worse_when", sa.String(10), nullable=False, default="", server_default=""),
    sa.Column("se", sa.Float),  # the change's standard error under no change (the sign-flip null)
    sa.Column("p_adjusted", sa.Float),  # Holm, over the suite's comparisons in this evaluation
    sa.Column("q_value", sa.Float),  # Benjamini–Hochberg, over the same
    sa.Column("mde", sa.Float),  # minimum detectable effect at the first Holm level and the stated power
    sa.Column("clusters", sa.Integer),
    sa.Column("min_effect", sa.Float),
    sa.Column("release", sa.String(400), nullable=False, default="", server_default=""),  # ``release.release_of``
    sa.Column("family_size", sa.Integer),  # the comparisons Holm decided together
    sa.Column("note", sa.String(500), nullable=False, default="", server_default=""),
    sa.Column("alpha", sa.Float),  # the look's α (``ReleasePlan.look``) the comparison was decided at
    sa.Column("power", sa.Float),  # the chance to detect a worsening of min_effect
    sa.Column("level", sa.Float),  # its first (weighted) Holm level: where its MDE and power are stated
    # Why its verdict cannot be read at face value (``verdicts.DECIDABILITIES``; "" none).
    sa.Column("decidability", sa.String(40), nullable=False, default="", server_default=""),
    sa.Column("missing", sa.Integer),  # the baseline's items the evaluation lacks, compared as unanswered
    sa.Index("ix_metric_comparisons_evaluation", "evaluation_id"),
)
# Every message sent about a comparison (a regression, or its withdrawal: "resolved"), per channel: "already
# alerted" is read from here, never assumed.
deliveries = sa.Table(
    "alert_deliveries",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("evaluation_id", sa.String(36), sa.ForeignKey("metric_evaluations.evaluation_id"), nullable=False),
    sa.Column("metric", sa.String(200), nullable=False),
    sa.Column("breakdown", sa.String(300), nullable=False, default=""),
    sa.Column("kind", sa.String(20), nullable=False),  # "regression" or "resolved"
    sa.Column("channel", sa.String(300), nullable=False),  # "webhook", "e-mail to …", or "no channel configured"
    sa.Column("outcome", sa.String(500), nullable=False),  # "sent", or "failed: …" / "not sent: …"
    sa.Column("sent_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("message", sa.Text, nullable=False),  # what was sent (never a secret: channels hold those)
    # The release the comparison was decided in: a finding is (release, metric, breakdown) in a suite's scope,
    # whichever of the model's evaluations holds its decision — one finding, one page.
    sa.Column("release", sa.String(400), nullable=False, default="", server_default=""),
    sa.Index("ix_alert_deliveries_evaluation", "evaluation_id"),
)
# An operator's acknowledgement of a regression verdict: the no_regression check passes again.
acknowledgements = sa.Table(
    "metric_acknowledgements",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("evaluation_id", sa.String(36), sa.ForeignKey("metric_evaluations.evaluation_id"), nullable=False),
    sa.Column("metric", sa.String(200), nullable=False, default=""),  # "" = every regression of the evaluation
    # The breakdown acknowledged ("" = the overall figure); "*" = every breakdown of the metric (rows recorded
    # before acknowledgements named breakdowns).
    sa.Column("breakdown", sa.String(300), nullable=False, default="*", server_default="*"),
    sa.Column("acknowledged_by", sa.String(200), nullable=False),
    sa.Column("acknowledged_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("note", sa.String(1000), nullable=False, default=""),
)
# A release's plan (``verdicts.ReleasePlan`` as JSON), fixed by its first decision: every later suite, scope and
# import of the release is decided against it, whatever the registry or the settings say by then.
release_plans = sa.Table(
    "release_plans",
    metadata,
    sa.Column("release", sa.String(400), primary_key=True),  # "<model> vs <baseline model>"
    sa.Column("plan", sa.Text, nullable=False),
    sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
)
# Each look a release took at one evaluation of a suite's scope against one baseline, and the α it spent: what
# the scopes, the import slots and the reserve are counted from (under the release's lock).
release_looks = sa.Table(
    "release_looks",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("release", sa.String(400), nullable=False),
    sa.Column("suite", sa.String(100), nullable=False),
    sa.Column("scope", sa.String(200), nullable=False),
    sa.Column("evaluation_id", sa.String(36), nullable=False),
    sa.Column("against_evaluation_id", sa.String(36), nullable=False),
    sa.Column("look", sa.String(20), nullable=False),  # verdicts.FIRST, RESERVE or SPENT (no α left: 0)
    sa.Column("alpha", sa.Float, nullable=False),
    sa.Column("note", sa.String(500), nullable=False, default=""),
    sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    sa.Index("ix_release_looks_release", "release"),
)
# Columns renamed after a table's first release (old name → new), with the indexes named after them: renamed in
# place in an older database, before any column is added.
_RENAMED_COLUMNS = {
    "metric_comparisons": {"family": "release"},  # the release's label, beside family_size: the Holm family's
    "release_plans": {"family": "release"},
    "release_looks": {"family": "release"},
}
_RENAMED_INDEXES = {"ix_release_looks_family": "ix_release_looks_release"}
# Columns added after a table's first release: added in place to an older database.
_ADDED_COLUMNS = {
    "metric_evaluations": {
        "evaluated_at": "TIMESTAMP",
        "origin": "VARCHAR(300) NOT NULL DEFAULT 'geomon'",
        "predecessor": "VARCHAR(200) NOT NULL DEFAULT ''",
        "replies": "TEXT",
    },
    "metric_comparisons": {
        "breakdown": "VARCHAR(300) NOT NULL DEFAULT ''",
        "change": "FLOAT",
        "worse_when": "VARCHAR(10) NOT NULL DEFAULT ''",
        "se": "FLOAT",
        "p_adjusted": "FLOAT",
        "q_value": "FLOAT",
        "mde": "FLOAT",
        "clusters": "INTEGER",
        "min_effect": "FLOAT",
        "release": "VARCHAR(400) NOT NULL DEFAULT ''",
        "family_size": "INTEGER",
        "note": "VARCHAR(500) NOT NULL DEFAULT ''",
        "alpha": "FLOAT",
        "power": "FLOAT",
        "level": "FLOAT",
        "decidability": "VARCHAR(40) NOT NULL DEFAULT ''",
        "missing": "INTEGER",
    },
    "metric_acknowledgements": {"breakdown": "VARCHAR(300) NOT NULL DEFAULT '*'"},
    "alert_deliveries": {"release": "VARCHAR(400) NOT NULL DEFAULT ''"},
    "metric_values": {"se": "FLOAT", "declared_as": "VARCHAR(32) NOT NULL DEFAULT ''"},
}

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
    sa.Column("se", sa.Float),  # a declared figure's bootstrap standard error (``MetricValue.se``)
    sa.Column("declared_as", sa.String(32), nullable=False, default="", server_default=""),  # what it was drawn under
    sa.Index("ix_metric_values_series", "suite", "model", "metric", "breakdown"),
)


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
    evaluated_at: datetime | None = None
    origin: str = "geomon"
    reused: bool = False  # ``record`` found this evaluation already there and recorded nothing new
    predecessor: str = ""  # the model's predecessor when recorded

    @property
    def when(self) -> datetime:
        return self.evaluated_at or self.recorded_at


@dataclass(frozen=True)
class StoredComparison:
    """One stored comparison (a row of ``metric_comparisons``) as the surfaces read it: the alerts, the checks'
    text, the verdict tables. Numbers the database holds as NULL read as None (NaN where they came through a
    DataFrame)."""

    metric: str
    breakdown: str = ""
    verdict: str = ""
    decidability: str = ""  # ``verdicts.DECIDABILITIES``
    note: str = ""
    against: str = ""  # "previous run" or "predecessor <model>"
    release: str = ""  # ``release.release_of``: "<model> vs <baseline model>", or a re-run's own
    evaluation_id: str = ""
    against_evaluation_id: str = ""
    before: float | None = None
    after: float | None = None
    change: float | None = None  # after − before, in the metric's units
    worse_when: str = ""  # "higher" or "lower"
    se: float | None = None  # the change's standard error under no change
    p_value: float | None = None  # one-sided, the way the verdict claims
    p_adjusted: float | None = None  # Holm, over the suite's comparisons in the evaluation
    q_value: float | None = None
    mde: float | None = None
    power: float | None = None  # at the minimum effect
    level: float | None = None  # its first Holm level
    min_effect: float | None = None
    alpha: float | None = None  # the look's α
    items: int | None = None
    clusters: int | None = None
    family_size: int | None = None  # the comparisons Holm decided together
    missing: int | None = None  # the baseline's items the evaluation lacks (compared as unanswered)
    # Its evaluation's, where a reader joined them (``views.open_regressions``).
    evaluated_at: datetime | None = None
    origin: str = ""

    @property
    def key(self) -> MetricKey:
        return MetricKey(self.metric, self.breakdown)

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> StoredComparison:
        """A stored row (``MetricHistory.comparisons``' records, or some of its columns): the fields it names, the
        others their defaults; text read NULL as ""; a count read as a float (a column pandas widened because
        another row of the same read holds NULL) as an int, NaN as None."""
        known = {f.name: f for f in fields(cls)}
        given = {name: value for name, value in row.items() if name in known}
        text = {name: str(given.get(name) or "") for name, f in known.items() if f.type == "str" and name in given}
        counts = {
            name: None if value is None or value != value else int(value)
            for name, value in given.items()
            if known[name].type == "int | None"
        }
        return cls(**(given | text | counts))


# One engine per process and database, its tables created and migrated once (a run opens the history about 18
# times): by (process, URL), with the database's identity (an SQLite file's device and inode; PostgreSQL: its
# URL), and reused while its evaluations table answers, so a file removed and made anew (even on a reused inode)
# or a database dropped and created again is set up again. An in-memory database is its own each time: never kept.
_ENGINES: dict[tuple[int, str], tuple[tuple[int, int] | str, sa.Engine]] = {}


def _identity(url: str) -> tuple[int, int] | str | None:
    if not url.startswith("sqlite:"):
        return url
    database = sa.engine.make_url(url).database
    if not database or database == ":memory:":
        return None
    try:
        stat = Path(database).stat()
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino)


def _engine(url: str) -> sa.Engine:
    key = (os.getpid(), normalize_url(url))
    kept = _ENGINES.get(key)
    if kept is not None and kept[0] == _identity(key[1]) and _answers(kept[1]):
        return kept[1]
    engine = make_engine(url, metadata)
    _rename_columns(engine)
    _add_missing_columns(engine)
    identity = _identity(key[1])
    if identity is not None:
        _ENGINES[key] = (identity, engine)
    return engine


def _answers(engine: sa.Engine) -> bool:
    try:
        with engine.connect() as conn:
            conn.execute(sa.select(evaluations.c.evaluation_id).limit(0))
    except sa.exc.DBAPIError:
        return False
    return True


class MetricHistory:
    """Append-only metric history."""

    def __init__(self, url: str) -> None:
        self.engine = _engine(url)

    def record(
        self,
        run: EvaluationRun,
        metrics: list[MetricValue],
        *,
        items: pd.DataFrame | None = None,
        replies: pd.DataFrame | None = None,
    ) -> Evaluation:
        """Append one evaluation, at most one per evaluation: a step that records again in the same Dagster run
        (a retry) gets the evaluation already recorded; and an evaluation identical to the model's latest in
        the scope (the same per-item values from the same data, prompts and code: a re-materialization of
        unchanged answers, two runs at once sharing their answers, an import run twice) gets that one, marked
        ``reused``, so the history holds one point for one evaluation. ``replies``: every item as scored, kept
        for ``geomon items``."""
        suite, model, scope, versions = run.suite, run.model, run.scope, run.versions
        items_json = items.to_json(orient="records", force_ascii=False) if items is not None else None
        same = (evaluations.c.suite == suite, evaluations.c.model == model, evaluations.c.scope == scope)
        with self.engine.begin() as conn:
            if run.dagster_run_id:
                row = (
                    conn.execute(sa.select(*_READ).where(*same, evaluations.c.dagster_run_id == run.dagster_run_id))
                    .mappings()
                    .first()
                )
                if row is not None:
                    return _evaluation(row, reused=True)
            if items_json is not None:
                query = sa.select(*_READ).where(*same, evaluations.c.origin == run.origin)
                if run.evaluated_at is not None:
                    query = query.where(evaluations.c.evaluated_at == run.evaluated_at)
                row = conn.execute(query.order_by(evaluations.c.recorded_at.desc()).limit(1)).mappings().first()
                if row is not None and row["items"] == items_json and _versions(row) == _versions_of(versions):
                    return _evaluation(row, reused=True)
            now = datetime.now(UTC)
            evaluation = Evaluation(
                str(uuid.uuid4()),
                suite,
                model,
                scope,
                now,
                dict(versions),
                run.dagster_run_id,
                items,
                run.evaluated_at or now,
                run.origin,
                predecessor=run.predecessor,
            )
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
                    dagster_run_id=run.dagster_run_id,
                    items=items_json,
                    evaluated_at=evaluation.evaluated_at,
                    origin=run.origin,
                    predecessor=run.predecessor,
                    replies=replies.to_json(orient="records", force_ascii=False) if replies is not None else None,
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
                            "value": finite(m.value),
                            "ci_low": finite(m.ci_low),
                            "ci_high": finite(m.ci_high),
                            "n": m.n,
                            "se": finite(m.se),
                            "declared_as": m.declared_as,
                            "recorded_at": now,
                        }
                        for m in metrics
                    ],
                )
        return evaluation

    def latest(self, suite: str, model: str, scope: str = "", before: Evaluation | None = None) -> Evaluation | None:
        """The newest evaluation of ``model`` in ``suite``/``scope`` by evaluation date (evaluated before
        ``before`` if given; of two on the same date, the one recorded first is the earlier)."""
        when = sa.func.coalesce(evaluations.c.evaluated_at, evaluations.c.recorded_at)
        query = sa.select(*_READ).where(
            evaluations.c.suite == suite, evaluations.c.model == model, evaluations.c.scope == scope
        )
        if before is not None:
            then = before.evaluated_at or before.recorded_at
            query = query.where(evaluations.c.evaluation_id != before.evaluation_id).where(
                sa.or_(when < then, sa.and_(when == then, evaluations.c.recorded_at <= before.recorded_at))
            )
        with self.engine.connect() as conn:
            order = (when.desc(), evaluations.c.recorded_at.desc())
            row = conn.execute(query.order_by(*order).limit(1)).mappings().first()
        return None if row is None else _evaluation(row)

    def evaluations_of(
        self,
        suite: str,
        scope: str,
        model: str | None = None,
        successors_of: str | None = None,
        *,
        items: bool = True,
    ) -> list[Evaluation]:
        """The evaluations in ``suite``/``scope`` (of ``model``; or of the models whose recorded predecessor is
        ``successors_of``), in release order (``release.release_order``: by evaluation date, then origin), with
        their items (``items``; without, their items are
        None and nothing is parsed: the gates and the release order need only who and when)."""
        columns = _READ if items else [c for c in _READ if c.name != "items"]
        query = sa.select(*columns).where(evaluations.c.suite == suite, evaluations.c.scope == scope)
        if model is not None:
            query = query.where(evaluations.c.model == model)
        if successors_of is not None:
            query = query.where(evaluations.c.predecessor == successors_of)
        when = sa.func.coalesce(evaluations.c.evaluated_at, evaluations.c.recorded_at)
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(when, evaluations.c.origin, evaluations.c.recorded_at)).mappings().all()
        return [_evaluation(row) for row in rows]

    def with_items(self, evaluation: Evaluation) -> Evaluation:
        """``evaluation`` with its stored items (read by ``evaluations_of(..., items=False)``)."""
        if evaluation.items is not None:
            return evaluation
        query = sa.select(evaluations.c["items"]).where(evaluations.c.evaluation_id == evaluation.evaluation_id)
        with self.engine.connect() as conn:
            stored = conn.execute(query).scalar_one_or_none()
        return replace(evaluation, items=_items(stored))

    def replies(self, suite: str, model: str) -> tuple[Evaluation, pd.DataFrame] | None:
        """The latest evaluation of ``model`` in ``suite`` (any scope) that kept its replies, and every item as
        it scored them (``record``'s ``replies``); None when none kept them."""
        when = sa.func.coalesce(evaluations.c.evaluated_at, evaluations.c.recorded_at)
        query = (
            sa.select(evaluations)
            .where(evaluations.c.suite == suite, evaluations.c.model == model, evaluations.c.replies.is_not(None))
            .order_by(when.desc(), evaluations.c.recorded_at.desc())
            .limit(1)
        )
        with self.engine.connect() as conn:
            row = conn.execute(query).mappings().first()
        if row is None:
            return None
        return _evaluation(row), pd.read_json(io.StringIO(row["replies"]), orient="records", dtype=False)

    def record_comparisons(self, evaluation: Evaluation, rows: list[dict[str, Any]]) -> None:
        """Store the paired tests of ``evaluation`` (replacing any stored for it: an evaluation is compared again
        when what precedes it changes, e.g. its predecessor's evaluation arrives later)."""
        with self.engine.begin() as conn:
            conn.execute(comparisons.delete().where(comparisons.c.evaluation_id == evaluation.evaluation_id))
            if rows:
                conn.execute(comparisons.insert(), [{"evaluation_id": evaluation.evaluation_id, **r} for r in rows])

    def release_plan(self, release: str, proposed: str) -> str:
        """The plan stored for ``release``, storing ``proposed`` when it has none yet: the first decision fixes
        it. Call under the release's lock."""
        with self.engine.begin() as conn:
            query = sa.select(release_plans.c.plan).where(release_plans.c.release == release)
            stored = conn.execute(query).scalar()
            if stored is not None:
                return str(stored)
            conn.execute(release_plans.insert().values(release=release, plan=proposed, recorded_at=datetime.now(UTC)))
        return proposed

    def release_looks(self, release: str) -> pd.DataFrame:
        """Every look ``release`` took, in the order taken."""
        query = sa.select(release_looks).where(release_looks.c.release == release).order_by(release_looks.c.id)
        with self.engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
        return pd.DataFrame(rows, columns=[c.name for c in release_looks.c])

    def record_look(self, **row: Any) -> None:
        """Store one look of a release (``release_looks``). Call under the release's lock."""
        with self.engine.begin() as conn:
            conn.execute(release_looks.insert().values(**row, recorded_at=datetime.now(UTC)))

    def move_look(self, look_id: int, evaluation_id: str, against_evaluation_id: str, note: str) -> None:
        """Give a look (its row of ``release_looks``, its α unchanged) to another pair: the release-order pair
        that now holds it. Call under the release's lock."""
        with self.engine.begin() as conn:
            conn.execute(
                release_looks.update()
                .where(release_looks.c.id == look_id)
                .values(evaluation_id=evaluation_id, against_evaluation_id=against_evaluation_id, note=note)
            )

    def suite_comparisons(self, suite: str, metric: str, breakdown: str = "") -> pd.DataFrame:
        """Every stored comparison of one metric of ``suite`` (any model), oldest first."""
        query = (
            sa.select(comparisons)
            .join(evaluations, comparisons.c.evaluation_id == evaluations.c.evaluation_id)
            .where(evaluations.c.suite == suite, comparisons.c.metric == metric, comparisons.c.breakdown == breakdown)
            .order_by(comparisons.c.id)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
        return pd.DataFrame(rows, columns=[c.name for c in comparisons.c])

    def acknowledge(self, evaluation_id: str, by: str, metric: str = "", note: str = "", breakdown: str = "") -> None:
        """Record that ``by`` has seen the regression(s) of ``evaluation_id``: one metric's ``breakdown`` (""
        the overall figure, "*" every breakdown), or with no metric all of them; every gate (its no_regression
        check, ``geomon run`` / ``import --fail-on``) passes them again. An unknown evaluation is an error."""
        with self.engine.begin() as conn:
            found = conn.execute(
                sa.select(evaluations.c.evaluation_id).where(evaluations.c.evaluation_id == evaluation_id)
            ).first()
            if found is None:
                raise KeyError(f"no evaluation {evaluation_id!r} in the metric history")
            conn.execute(
                acknowledgements.insert().values(
                    evaluation_id=evaluation_id,
                    metric=metric,
                    breakdown=breakdown if metric else "*",
                    acknowledged_by=by,
                    acknowledged_at=datetime.now(UTC),
                    note=note,
                )
            )

    def record_deliveries(self, rows: list[dict[str, Any]]) -> None:
        """Store what was sent (or tried) about comparisons: one row per comparison and channel."""
        if rows:
            with self.engine.begin() as conn:
                conn.execute(deliveries.insert(), rows)

    def deliveries(self, evaluation_ids: Iterable[str] | None = None) -> pd.DataFrame:
        return self._of_evaluations(deliveries, evaluation_ids)

    def _of_evaluations(self, table: sa.Table, evaluation_ids: Iterable[str] | None, **equal: str) -> pd.DataFrame:
        """A table's rows (of these evaluations; whose columns hold the values ``equal`` names), in the order they
        were stored."""
        query = sa.select(table).where(*(table.c[column] == value for column, value in equal.items()))
        if evaluation_ids is not None:
            query = query.where(table.c.evaluation_id.in_(list(evaluation_ids)))
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(table.c.id)).mappings().all()
        return pd.DataFrame(rows, columns=[c.name for c in table.c])

    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[None]:
        """Serialise the decisions of one suite's series, or one release's budget, across processes (two runs of
        one release at once must not decide on half of each other's records, nor both take its last slot): a
        PostgreSQL advisory lock per name, or for SQLite one lock file beside the database for every name (an
        in-memory database: a lock of this process) — held again by the thread holding it (a release's lock
        taken inside a suite's)."""
        if self.engine.dialect.name == "postgresql":
            key = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)
            with self.engine.connect() as conn:
                conn.execute(sa.text("SELECT pg_advisory_lock(:key)"), {"key": key})
                conn.commit()
                try:
                    yield
                finally:
                    conn.execute(sa.text("SELECT pg_advisory_unlock(:key)"), {"key": key})
                    conn.commit()
            return
        database = self.engine.url.database
        if not database or database == ":memory:":
            with _PROCESS_LOCK:
                yield
            return
        path = f"{database}.lock"
        held = _HELD.__dict__.setdefault("paths", set())
        if path in held:  # this thread holds the one lock file already: every name is serialised by it
            yield
            return
        with Path(path).open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            held.add(path)
            try:
                yield
            finally:
                held.discard(path)
                fcntl.flock(handle, fcntl.LOCK_UN)

    def acknowledgements(self, evaluation_ids: Iterable[str] | None = None) -> pd.DataFrame:
        return self._of_evaluations(acknowledgements, evaluation_ids)

    def evaluations(self, suite: str | None = None, model: str | None = None) -> pd.DataFrame:
        """One row per evaluation (without its items): when, of what, where it came from."""
        columns = [c for c in _READ if c.name != "items"]
        query = sa.select(*columns)
        if suite is not None:
            query = query.where(evaluations.c.suite == suite)
        if model is not None:
            query = query.where(evaluations.c.model == model)
        when = sa.func.coalesce(evaluations.c.evaluated_at, evaluations.c.recorded_at)
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(when, evaluations.c.origin, evaluations.c.recorded_at)).mappings().all()
        return pd.DataFrame(rows, columns=[c.name for c in columns])

    def figures(self, evaluation_id: str) -> pd.DataFrame:
        """One evaluation's recorded figures: ``metric``, ``breakdown``, ``value``, ``ci_low``, ``ci_high``, ``n``,
        ``se`` (NaN where not recorded: a figure no tracked metric declares, or recorded before the column) and
        ``declared_as`` (the declaration it was drawn under; "" where not recorded)."""
        names = ("metric", "breakdown", "value", "ci_low", "ci_high", "n", "se", "declared_as")
        columns = [values.c[c] for c in names]
        query = sa.select(*columns).where(values.c.evaluation_id == evaluation_id).order_by(values.c.id)
        with self.engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
        return pd.DataFrame(rows, columns=[c.name for c in columns]).astype({"value": float, "se": float})

    def comparisons(self, evaluation_ids: Iterable[str] | None = None, verdict: str | None = None) -> pd.DataFrame:
        """Stored comparisons (of these evaluations; with this ``verdict``), in the order they were stored."""
        return self._of_evaluations(comparisons, evaluation_ids, **({"verdict": verdict} if verdict else {}))

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
            sa.func.coalesce(evaluations.c.evaluated_at, evaluations.c.recorded_at).label("evaluated_at"),
            evaluations.c.origin,
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


def _items(stored: str | None) -> pd.DataFrame | None:
    return pd.read_json(io.StringIO(stored), orient="records") if stored else None


def _evaluation(row: Any, reused: bool = False) -> Evaluation:
    items = _items(row.get("items"))
    return Evaluation(
        row["evaluation_id"],
        row["suite"],
        row["model"],
        row["scope"],
        row["recorded_at"],
        _versions(row),
        row["dagster_run_id"],
        items,
        row.get("evaluated_at") or row["recorded_at"],
        row.get("origin") or "geomon",
        reused,
        row.get("predecessor") or "",
    )


# Where a comparison stored before the decidability column said it: the note part each kind began with.
_DECIDABILITY_NOTES = {
    verdicts.UNDECIDABLE_SAMPLE: sufficiency.SAMPLE_PREFIX,
    verdicts.UNDERPOWERED_PROFILE: sufficiency.PROFILE_PREFIX,
    verdicts.UNDERPOWERED_PUBLISHED: sufficiency.PUBLISHED_PREFIX,
    verdicts.UNDERPOWERED_REGRESSION: verdicts.UNDERPOWERED_PAGE,
}


def _backfill_decidability(conn: sa.Connection) -> None:
    """The stored comparisons' decidability, read from their notes once, when the column is added: a note part
    (first, or after a look's note) beginning with a kind's prefix. Run again, it changes nothing."""
    for kind, prefix in _DECIDABILITY_NOTES.items():
        begins = sa.or_(comparisons.c.note.like(f"{prefix}%"), comparisons.c.note.like(f"%; {prefix}%"))
        unset = comparisons.c.decidability == verdicts.DECIDABLE
        conn.execute(comparisons.update().where(unset, begins).values(decidability=kind))


# Added columns whose value the rows stored before them held elsewhere: filled as they are added.
_BACKFILLS = {("metric_comparisons", "decidability"): _backfill_decidability}


def _rename_columns(engine: sa.Engine) -> None:
    """Columns renamed after a database was created are renamed in place (SQLite ≥ 3.25, PostgreSQL), and the
    indexes named after them made again under their new names, in one transaction per table; two processes doing
    it at once: one renames, the other finds the new name there."""
    inspector = sa.inspect(engine)
    for table, renamed in _RENAMED_COLUMNS.items():
        present = {c["name"] for c in inspector.get_columns(table)}
        moved = {old: new for old, new in renamed.items() if old in present and new not in present}
        if not moved:
            continue
        indexes = [i for i in inspector.get_indexes(table) if i["name"] in _RENAMED_INDEXES]
        try:
            with engine.begin() as conn:
                for old, new in moved.items():
                    conn.execute(sa.text(f'ALTER TABLE {table} RENAME COLUMN "{old}" TO "{new}"'))
                for index in indexes:
                    columns = ", ".join(f'"{moved.get(c, c)}"' for c in index["column_names"])
                    conn.execute(sa.text(f'DROP INDEX "{index["name"]}"'))
                    conn.execute(sa.text(f'CREATE INDEX "{_RENAMED_INDEXES[index["name"]]}" ON {table} ({columns})'))
        except sa.exc.DBAPIError:
            if not set(moved.values()) <= {c["name"] for c in sa.inspect(engine).get_columns(table)}:
                raise


def _add_missing_columns(engine: sa.Engine) -> None:
    """Columns added after a database was created are added in place (nothing stored is lost), and filled from
    what older rows held (``_BACKFILLS``) in the same transaction; two processes doing it at once: one adds, the
    other finds the column there."""
    for table, added in _ADDED_COLUMNS.items():
        present = {c["name"] for c in sa.inspect(engine).get_columns(table)}
        for name, ddl in added.items():
            if name in present:
                continue
            exists = "IF NOT EXISTS " if engine.dialect.name == "postgresql" else ""
            try:
                with engine.begin() as conn:
                    conn.execute(sa.text(f'ALTER TABLE {table} ADD COLUMN {exists}"{name}" {ddl}'))
                    if backfill := _BACKFILLS.get((table, name)):
                        backfill(conn)
            except sa.exc.OperationalError:
                if name not in {c["name"] for c in sa.inspect(engine).get_columns(table)}:
                    raise
    verdict = next(c for c in sa.inspect(engine).get_columns("metric_comparisons") if c["name"] == "verdict")
    if engine.dialect.name == "postgresql" and (getattr(verdict["type"], "length", None) or 40) < 40:
        # verdicts grew longer than the first release's 20 characters
        with engine.begin() as conn:
            conn.execute(sa.text("ALTER TABLE metric_comparisons ALTER COLUMN verdict TYPE VARCHAR(40)"))
