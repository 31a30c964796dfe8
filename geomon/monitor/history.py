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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import sqlalchemy as sa

from geomon.engine.store import make_engine, normalize_url
from geomon.stats import sufficiency, verdicts
from geomon.stats.values import EvaluationRun, MetricValue, finite
from geomon.stats.verdicts import FIELD_TYPES, STORED, Comparison, Decidability, Look, LookKind

__all__ = ["DecisionInputs", "Evaluation", "EvaluationRun", "MetricHistory", "MetricValue"]

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
    # Recorded from a published history (``EvaluationRun.published_history``): its source holds all its evaluations.
    sa.Column("published_history", sa.Boolean, nullable=False, default=False, server_default=sa.false()),
    sa.Index("ix_metric_evaluations_lookup", "suite", "model", "scope", "recorded_at"),
)

_READ = [c for c in evaluations.c if c.name != "replies"]  # an evaluation as read (its replies on request)


def _column(f: Any) -> sa.Column:
    """The column of one of ``Comparison``'s stored fields: text of its declared length ("" where none, never
    NULL), a number, or a count."""
    hint = FIELD_TYPES[f.name]
    if "chars" in f.metadata:
        return sa.Column(f.name, sa.String(f.metadata["chars"]), nullable=False, default="", server_default="")
    return sa.Column(f.name, sa.Integer if hint == int | None else sa.Float)


# The paired test of an evaluation against what it was compared with (its previous run or predecessor), and the
# verdict its family gave it: one row per ``Comparison``, its columns derived from the record's stored fields.
comparisons = sa.Table(
    "metric_comparisons",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    *(_column(f) for f in STORED if f.name != "evaluation_id"),
    sa.Column("evaluation_id", sa.String(36), sa.ForeignKey("metric_evaluations.evaluation_id"), nullable=False),
    sa.Column("effect", sa.Float),  # rows recorded before 2026-11-25 only: signed so that positive = worse
    sa.Index("ix_metric_comparisons_evaluation", "evaluation_id"),
)
# Its columns in the first release: every other column was added to older databases in place (``_ADDED_COLUMNS``).
_FIRST_COMPARISON_COLUMNS = {"id", "evaluation_id", "against_evaluation_id", "against", "metric", "before", "after"}
_FIRST_COMPARISON_COLUMNS |= {"effect", "p_value", "items", "verdict"}
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
    sa.Column("look", sa.String(20), nullable=False),  # verdicts.LookKind.FIRST, RESERVE or SPENT (no α left: 0)
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
# Columns added after a table's first release: added in place to an older database (as the table declares them).
_ADDED_COLUMNS = {
    "metric_evaluations": ("evaluated_at", "origin", "predecessor", "replies", "published_history"),
    "metric_comparisons": tuple(c.name for c in comparisons.c if c.name not in _FIRST_COMPARISON_COLUMNS),
    "metric_acknowledgements": ("breakdown",),
    "alert_deliveries": ("release",),
    "metric_values": ("se", "declared_as"),
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
    published_history: bool = False  # ``EvaluationRun.published_history``

    @property
    def when(self) -> datetime:
        return self.evaluated_at or self.recorded_at

    @property
    def release_order(self) -> tuple[pd.Timestamp, str, pd.Timestamp]:
        """Its place in release order: the evaluation date, then its origin (two imports dated the same day — the
        predecessor evaluated twice on its successor's day — are ordered by their source, never by which arrived
        first: arrival order must not choose a baseline), then when it was recorded."""
        return _utc(self.when), self.origin, _utc(self.recorded_at)

    def release_against(self, model: str) -> str:
        """The release a comparison of it with ``model``'s evaluation belongs to: its model identity against its
        predecessor; or, compared with its own previous evaluation (an API model asked again, a new epoch, a
        re-import), that re-run — a release of its own, labelled by the evaluation's day and id, so each re-run
        spends one α and two re-runs never share a look."""
        if model != self.model:
            return f"{self.model} vs {model}"
        return f"{self.model} re-run {_utc(self.when):%Y-%m-%d} ({self.evaluation_id[:8]})"


def _utc(moment: datetime) -> pd.Timestamp:
    stamp = pd.Timestamp(moment)
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp


def before_in_release_order(evaluations_: Sequence[Evaluation], evaluation: Evaluation) -> list[Evaluation]:
    """Those of ``evaluations_`` (other than ``evaluation``) no later than it in release order."""
    mine = evaluation.release_order
    return [e for e in evaluations_ if e.evaluation_id != evaluation.evaluation_id and e.release_order <= mine]


@dataclass(frozen=True)
class DecisionInputs:
    """What deciding an evaluation rests on, read at once (``MetricHistory.decision_inputs``): its baseline in
    release order (with its items) and what it is to it, the release the decision belongs to, the plan stored with
    the release's first decision (None: this is its first) and the looks the release took, in the order taken."""

    baseline: Evaluation
    against: str  # "previous run" or "predecessor <model>"
    release: str
    plan: str | None
    looks: list[Look]


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
                published_history=run.published_history,
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
                    published_history=run.published_history,
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
        ``successors_of``), in release order (``Evaluation.release_order``: by evaluation date, then origin), with
        their items (``items``; without, their items are None and nothing is parsed: the gates and the release
        order need only who and when)."""
        with self.engine.connect() as conn:
            return _evaluations_of(conn, suite, scope, model, successors_of, items=items)

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

    def decision_inputs(self, evaluation: Evaluation) -> DecisionInputs | None:
        """What deciding ``evaluation`` rests on, read once (one connection): its baseline in release order — the
        model's previous evaluation in the suite's scope, or, for its first there, its predecessor's (its latest
        evaluation no later than this one, else its first: evaluated after its successor, still its predecessor) —
        with its items, and the release's stored plan and looks; None when there is nothing to compare with. Call
        under the model's release lock (``release.compare_and_decide``), and write with ``record_decision``."""
        with self.engine.connect() as conn:
            own = _evaluations_of(conn, evaluation.suite, evaluation.scope, evaluation.model, items=False)
            earlier = before_in_release_order(own, evaluation)
            if earlier:
                found, against = earlier[-1], "previous run"
            elif not evaluation.predecessor:
                return None
            else:
                theirs = _evaluations_of(conn, evaluation.suite, evaluation.scope, evaluation.predecessor, items=False)
                if not theirs:
                    return None
                found = (before_in_release_order(theirs, evaluation) or theirs[:1])[-1]
                against = f"predecessor {evaluation.predecessor}"
            query = sa.select(evaluations.c["items"]).where(evaluations.c.evaluation_id == found.evaluation_id)
            found = replace(found, items=_items(conn.execute(query).scalar_one_or_none()))
            release = evaluation.release_against(found.model)
            plan = conn.execute(sa.select(release_plans.c.plan).where(release_plans.c.release == release)).scalar()
            looks = conn.execute(
                sa.select(release_looks).where(release_looks.c.release == release).order_by(release_looks.c.id)
            ).mappings()
            taken = [
                Look(r["suite"], r["scope"], r["evaluation_id"], r["against_evaluation_id"], LookKind(r["look"]),
                     r["alpha"], r["note"], r["id"])
                for r in looks
            ]  # fmt: skip
        return DecisionInputs(found, against, release, None if plan is None else str(plan), taken)

    def record_decision(
        self,
        evaluation: Evaluation,
        decided: Sequence[Comparison],
        release: str = "",
        look: Look | None = None,
        plan: str | None = None,
    ) -> None:
        """Store one decision of ``evaluation`` in one transaction: the release's ``plan`` when it has none yet (its
        first decision fixes it), the ``look`` it took (a new row, or its stored row given to this pair: a look
        moves, its α counted once), and its comparisons, replacing any stored for it (an evaluation is decided
        again when what precedes it changes, e.g. its predecessor's evaluation arrives later). Nothing to compare
        with: ``decided`` empty, no release."""
        now = datetime.now(UTC)
        rows = [
            {
                f.name: finite(value) if FIELD_TYPES[f.name] == float | None else value
                for f in STORED
                for value in [getattr(c, f.name)]
            }
            | {"evaluation_id": evaluation.evaluation_id}
            for c in decided
        ]
        with self.engine.begin() as conn:
            if plan is not None:
                stored = conn.execute(sa.select(release_plans.c.plan).where(release_plans.c.release == release))
                if stored.first() is None:
                    conn.execute(release_plans.insert().values(release=release, plan=plan, recorded_at=now))
            if look is not None:
                taken = {
                    "evaluation_id": look.evaluation_id,
                    "against_evaluation_id": look.against_evaluation_id,
                    "note": look.why,
                }
                if look.id is None:
                    conn.execute(
                        release_looks.insert().values(
                            release=release, suite=look.suite, scope=look.scope, look=str(look.kind),
                            alpha=look.alpha, recorded_at=now, **taken,
                        )
                    )  # fmt: skip
                else:
                    conn.execute(release_looks.update().where(release_looks.c.id == look.id).values(**taken))
            conn.execute(comparisons.delete().where(comparisons.c.evaluation_id == evaluation.evaluation_id))
            if rows:
                conn.execute(comparisons.insert(), rows)

    def release_plan(self, release: str) -> str | None:
        """The plan stored with ``release``'s first decision (``verdicts.ReleasePlan`` as JSON), or None."""
        with self.engine.connect() as conn:
            stored = conn.execute(sa.select(release_plans.c.plan).where(release_plans.c.release == release)).scalar()
        return None if stored is None else str(stored)

    def release_looks(self, release: str) -> pd.DataFrame:
        """Every look ``release`` took, in the order taken."""
        query = sa.select(release_looks).where(release_looks.c.release == release).order_by(release_looks.c.id)
        with self.engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
        return pd.DataFrame(rows, columns=[c.name for c in release_looks.c])

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
        bool(row.get("published_history")),
    )


def _evaluations_of(
    conn: sa.Connection, suite: str, scope: str, model: str | None, successors_of: str | None = None, *, items: bool
) -> list[Evaluation]:
    """``MetricHistory.evaluations_of`` on an open connection."""
    columns = _READ if items else [c for c in _READ if c.name != "items"]
    query = sa.select(*columns).where(evaluations.c.suite == suite, evaluations.c.scope == scope)
    if model is not None:
        query = query.where(evaluations.c.model == model)
    if successors_of is not None:
        query = query.where(evaluations.c.predecessor == successors_of)
    when = sa.func.coalesce(evaluations.c.evaluated_at, evaluations.c.recorded_at)
    rows = conn.execute(query.order_by(when, evaluations.c.origin, evaluations.c.recorded_at)).mappings().all()
    return [_evaluation(row) for row in rows]


# Where a comparison stored before the decidability column said it: the note part each kind began with.
_DECIDABILITY_NOTES = {
    Decidability.UNDECIDABLE_SAMPLE: sufficiency.SAMPLE_PREFIX,
    Decidability.UNDERPOWERED_PROFILE: sufficiency.PROFILE_PREFIX,
    Decidability.UNDERPOWERED_PUBLISHED: sufficiency.PUBLISHED_PREFIX,
    Decidability.UNDERPOWERED_REGRESSION: verdicts.UNDERPOWERED_PAGE,
}


def _backfill_decidability(conn: sa.Connection) -> None:
    """The stored comparisons' decidability, read from their notes once, when the column is added: a note part
    (first, or after a look's note) beginning with a kind's prefix. Run again, it changes nothing."""
    for kind, prefix in _DECIDABILITY_NOTES.items():
        begins = sa.or_(comparisons.c.note.like(f"{prefix}%"), comparisons.c.note.like(f"%; {prefix}%"))
        unset = comparisons.c.decidability == Decidability.DECIDABLE
        conn.execute(comparisons.update().where(unset, begins).values(decidability=str(kind)))


# How a decision's look was said in its note before the look had columns: a reserve's note opened with
# "provisional:" (the words changed over releases: the current ones are removed from the note, older ones stay), and
# a look with no α left ended its part with this mark.
_OLD_PROVISIONAL = "provisional:"
_OLD_PROVISIONAL_NOTE = (
    "provisional: decided at the scope's reserve against the predecessor's evaluation made on a later day; decided "
    "again at its first look when one made before it arrives"
)
_OLD_NEVER_PAGED = " (shown, never paged)"


def _old_look(note: str, alpha: float | None) -> tuple[str, str, str]:
    """(look, why α is 0, the reason alone) of a note stored before the look had columns."""
    if note.startswith(_OLD_PROVISIONAL):
        return LookKind.RESERVE, "", note.replace(_OLD_PROVISIONAL_NOTE, "").removeprefix("; ")
    parts = note.split("; ")
    spent = [p for p in parts if p.endswith(_OLD_NEVER_PAGED)]
    if spent:
        reason = "; ".join(p for p in parts if p not in spent)
        return LookKind.SPENT, spent[0].removesuffix(_OLD_NEVER_PAGED), reason
    return (LookKind.FIRST if alpha else ""), "", note  # no α recorded: decided before looks were kept


def _backfill_looks(conn: sa.Connection) -> None:
    """The stored comparisons' look and why its α was 0, read once from their notes when the columns are added
    (the look's words moved out of the note, the verdict's reason kept), and the release's looks' notes made the
    same: only why α is 0 (a reserve's kind says it is provisional). Run again, it changes nothing."""
    unset = sa.select(comparisons.c.id, comparisons.c.note, comparisons.c.alpha).where(comparisons.c.look == "")
    updates = [
        {"row": row.id, "kind": str(look), "why": why, "reason": reason}
        for row in conn.execute(unset)
        for look, why, reason in [_old_look(row.note or "", row.alpha)]
        if look
    ]
    if updates:
        conn.execute(
            comparisons.update()
            .where(comparisons.c.id == sa.bindparam("row"))
            .values(look=sa.bindparam("kind"), alpha_zero=sa.bindparam("why"), note=sa.bindparam("reason")),
            updates,
        )
    conn.execute(release_looks.update().where(release_looks.c.look == LookKind.RESERVE).values(note=""))
    spent = release_looks.c.note.like(f"%{_OLD_NEVER_PAGED}")
    trimmed = sa.func.substr(release_looks.c.note, 1, sa.func.length(release_looks.c.note) - len(_OLD_NEVER_PAGED))
    conn.execute(release_looks.update().where(spent).values(note=trimmed))


def _backfill_published(conn: sa.Connection) -> None:
    """Evaluations recorded by a suite's importer of published results (``import:<kind>:…``) marked as such once,
    when the column is added."""
    from geomon.suites import registry

    kinds = list(registry.importers())
    if kinds:
        published = sa.or_(*(evaluations.c.origin.like(f"import:{kind}:%") for kind in kinds))
        conn.execute(evaluations.update().where(published).values(published_history=True))


# Added columns whose value the rows stored before them held elsewhere: filled as they are added (after every
# column of its table is, so a fill may read any of them).
_BACKFILLS = {
    ("metric_comparisons", "decidability"): _backfill_decidability,
    ("metric_comparisons", "look"): _backfill_looks,
    ("metric_evaluations", "published_history"): _backfill_published,
}


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
    """Columns added after a database was created are added in place as their table declares them (nothing stored
    is lost), and filled from what older rows held (``_BACKFILLS``), one transaction per table; two processes doing
    it at once: one adds, the other finds the columns there (PostgreSQL: adds nothing, fills nothing new)."""
    for name, added in _ADDED_COLUMNS.items():
        table = metadata.tables[name]
        missing = [c for c in added if c not in {c["name"] for c in sa.inspect(engine).get_columns(name)}]
        if not missing:
            continue
        exists = "IF NOT EXISTS " if engine.dialect.name == "postgresql" else ""
        try:
            with engine.begin() as conn:
                for column in missing:
                    spec = sa.schema.CreateColumn(table.c[column]).compile(dialect=engine.dialect)
                    conn.execute(sa.text(f"ALTER TABLE {name} ADD COLUMN {exists}{spec}"))
                for column in missing:
                    if backfill := _BACKFILLS.get((name, column)):
                        backfill(conn)
        except sa.exc.OperationalError:
            if not set(missing) <= {c["name"] for c in sa.inspect(engine).get_columns(name)}:
                raise
    verdict = next(c for c in sa.inspect(engine).get_columns("metric_comparisons") if c["name"] == "verdict")
    if engine.dialect.name == "postgresql" and (getattr(verdict["type"], "length", None) or 40) < 40:
        # verdicts grew longer than the first release's 20 characters
        with engine.begin() as conn:
            conn.execute(sa.text("ALTER TABLE metric_comparisons ALTER COLUMN verdict TYPE VARCHAR(40)"))
