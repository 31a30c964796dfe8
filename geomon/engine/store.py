"""Content-addressed response store: the same question to the same model is asked once.

The key hashes the model's identity (sha256 of a bundled weights file; name + base URL + served
model id for an endpoint), the full messages or prompt, every sampling parameter, the sample index
and the cache epoch. SQLite by default (WAL, safe for several writer processes), PostgreSQL by URL.
Answers and errors live in separate tables: an error is never served as an answer, and a rerun
asks again for exactly the requests that have no answer yet.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import socket
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from geomon.engine.client import GenerationRequest, GenerationResult
from geomon.untrusted import STORED_MAX_CHARS, clean_text

log = logging.getLogger(__name__)

metadata = sa.MetaData()

responses = sa.Table(
    "responses",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("model", sa.String(200), nullable=False, index=True),
    sa.Column("model_identity", sa.String(500), nullable=False),
    sa.Column("epoch", sa.String(100), nullable=False, default=""),
    sa.Column("request", sa.Text, nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("finish_reason", sa.String(50)),
    sa.Column("prompt_tokens", sa.Integer),
    sa.Column("completion_tokens", sa.Integer),
    sa.Column("latency_s", sa.Float),
    sa.Column("attempts", sa.Integer),
    sa.Column("engine", sa.String(100)),
    sa.Column("logprobs", sa.Text),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)

errors = sa.Table(
    "response_errors",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("key", sa.String(64), nullable=False, index=True),
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("epoch", sa.String(100), nullable=False, default=""),
    sa.Column("request", sa.Text, nullable=False),
    sa.Column("error", sa.Text, nullable=False),
    sa.Column("attempts", sa.Integer),
    sa.Column("engine", sa.String(100)),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)

# Requests a run is asking right now: two runs on one store share the work instead of both asking (a run
# asks only the keys it claimed and picks up the others' answers as they are stored). Claims are released
# when the run's answers are all written, so a run that claims a released key finds its answer stored; a
# claim lives ``lease_s`` unless renewed, so a killed run's claims lapse and another run takes them over.
claims = sa.Table(
    "response_claims",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("owner", sa.String(200), nullable=False, index=True),  # host:pid:token
    sa.Column("expires_at", sa.Float, nullable=False),  # epoch seconds: the same in SQLite and PostgreSQL
)


@dataclass(frozen=True)
class StoredAnswer:
    """One answer (or error) on its way into the store."""

    key: str
    model: str
    model_identity: str
    epoch: str
    request: GenerationRequest
    result: GenerationResult
    engine: str


class StoreWriteError(RuntimeError):
    """Answers could not be written to the response store (they will be asked again by the next run)."""


def response_key(model_identity: str, request: GenerationRequest, epoch: str = "") -> str:
    body = {"model": model_identity, "request": request.payload(), "epoch": epoch}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def answers_fingerprint(keys: Iterable[str], settings_digest: str = "") -> str:
    """What an evaluation read: the stored answers' keys (each holds the model's identity, the request and the
    cache epoch) and the settings it ran under; equal fingerprints read the same answers the same way."""
    digest = hashlib.sha256(settings_digest.encode())
    for key in sorted(set(keys)):
        digest.update(key.encode())
    return digest.hexdigest()[:16]


def _now() -> datetime:
    return datetime.now(UTC)


def normalize_url(url: str) -> str:
    """A plain ``postgresql://`` URL would pick psycopg3, which is not installed (DESIGN.md)."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg2://" + url.split("://", 1)[1]
    return url


def make_engine(url: str, tables: sa.MetaData) -> sa.Engine:
    """An engine for geomon's database (SQLite file or PostgreSQL) with ``tables`` created."""
    url = normalize_url(url)
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url, connect_args={"timeout": 60})
        sa.event.listen(engine, "connect", _sqlite_pragmas)
        tables.create_all(engine)  # SQLite serialises writers itself (busy timeout)
        return engine
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() != "postgresql":
        shown = parsed.render_as_string(hide_password=True)
        raise ValueError(f"database {shown}: only sqlite:///… and postgresql://… URLs are supported")
    engine = sa.create_engine(url, pool_pre_ping=True)
    with engine.begin() as conn:
        # Two runs starting on a fresh database would both CREATE TABLE and one would fail on PostgreSQL's
        # catalogue (UniqueViolation on pg_type): a transaction-scoped advisory lock lets one create, the
        # other then finds the tables.
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK_KEY})
        tables.create_all(conn)
    return engine


SCHEMA_LOCK_KEY = 0x67656F6D6F6E  # "geomon": the advisory lock that serialises schema creation


class ResponseStore:
    """Stored answers of every model geomon asked."""

    def __init__(self, url: str) -> None:
        self.url = normalize_url(url)
        self.engine = make_engine(self.url, metadata)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def safe_url(self) -> str:
        """The store's URL with any password hidden, for messages and metadata."""
        return self.engine.url.render_as_string(hide_password=True)

    def _insert(self, table: sa.Table) -> Any:
        if self.dialect == "postgresql":
            return postgresql.insert(table)
        if self.dialect == "sqlite":
            return sqlite.insert(table)
        raise ValueError(f"response store {self.url!r}: only SQLite and PostgreSQL are supported")

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        with self.engine.connect() as conn:
            for chunk in iter_chunks(list(keys), 2000):
                rows = conn.execute(sa.select(responses).where(responses.c.key.in_(chunk))).mappings()
                found.update({row["key"]: dict(row) for row in rows})
        return found

    def put(
        self,
        key: str,
        model: str,
        model_identity: str,
        epoch: str,
        request: GenerationRequest,
        result: GenerationResult,
        engine: str,
    ) -> None:
        """Keep one answer (or its error) now; ``put_many`` for several, ``StoreWriter`` off the event loop."""
        self.put_many([StoredAnswer(key, model, model_identity, epoch, request, result, engine)])

    def put_many(self, answers: Sequence[StoredAnswer]) -> None:
        """Keep answers and errors in one transaction. An answer already stored under its key is never
        replaced, so writing the same answer twice (a retried batch, two runs at once) stores it once.

        The answer's text is untrusted: control characters (NUL among them, which PostgreSQL cannot
        store) are removed and a runaway answer is cut at ``STORED_MAX_CHARS``, with the cut recorded in
        its finish reason, so one answer can never fail the write of the others.
        """
        rows, error_rows = [], []
        for answer in answers:
            result = answer.result
            common = {
                "key": answer.key,
                "model": answer.model,
                "epoch": answer.epoch,
                "request": json.dumps(answer.request.payload(), ensure_ascii=False),
                "attempts": result.attempts,
                "engine": answer.engine,
                "created_at": _now(),
            }
            if not result.ok:
                error_rows.append({**common, "error": clean_text(result.error)[0]})
                continue
            text, cut = clean_text(result.text or "")
            finish_reason = result.finish_reason
            if cut:
                finish_reason = f"{finish_reason or ''}|cut at {STORED_MAX_CHARS} characters"
            rows.append(
                {
                    **common,
                    "model_identity": answer.model_identity,
                    "text": text,
                    "finish_reason": finish_reason,
                    "prompt_tokens": result.prompt_tokens,
                    "completion_tokens": result.completion_tokens,
                    "latency_s": result.latency_s,
                    "logprobs": json.dumps(result.logprobs) if result.logprobs is not None else None,
                }
            )
        with self.engine.begin() as conn:
            if rows:
                conn.execute(self._insert(responses).on_conflict_do_nothing(index_elements=["key"]), rows)
            if error_rows:
                conn.execute(sa.insert(errors), error_rows)

    def claim(self, keys: Sequence[str], owner: str, lease_s: float) -> set[str]:
        """Claim ``keys`` for ``owner`` for ``lease_s`` seconds; returns the keys now held. A key another owner
        holds is taken only once its lease has lapsed (that run died or hung), or at once when that owner was
        a process on this machine that no longer exists (``ClaimLease`` owners name their host and pid)."""
        now = time.time()
        self._drop_claims_of_dead_local_processes()
        if self.dialect == "postgresql":
            # One array parameter instead of three bound values a key: compiling a 2,000-row VALUES list
            # cost most of the claim's time.
            statement = sa.text(
                "INSERT INTO response_claims (key, owner, expires_at) "
                "SELECT k, :owner, :expires FROM unnest(CAST(:keys AS text[])) AS k "
                "ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at "
                "WHERE response_claims.expires_at < :now OR response_claims.owner = :owner RETURNING key"
            )
            with self.engine.begin() as conn:
                rows = conn.execute(
                    statement, {"keys": list(keys), "owner": owner, "expires": now + lease_s, "now": now}
                )
                return {row.key for row in rows}
        held: set[str] = set()
        for chunk in iter_chunks(list(keys), 2000):  # 6,000 bound values: within SQLite's limit
            statement = self._insert(claims).values(
                [{"key": k, "owner": owner, "expires_at": now + lease_s} for k in chunk]
            )
            # One statement a chunk: rows inserted, or taken over (lapsed, or already ours), come back.
            statement = statement.on_conflict_do_update(
                index_elements=["key"],
                set_={"owner": statement.excluded.owner, "expires_at": statement.excluded.expires_at},
                where=(claims.c.expires_at < now) | (claims.c.owner == owner),
            ).returning(claims.c.key)
            with self.engine.begin() as conn:
                held.update(row.key for row in conn.execute(statement))
        return held

    def _drop_claims_of_dead_local_processes(self) -> None:
        with self.engine.connect() as conn:
            owners = [row.owner for row in conn.execute(sa.select(claims.c.owner).distinct())]
        dead = [owner for owner in owners if _is_dead_local_process(owner)]
        if dead:
            with self.engine.begin() as conn:
                conn.execute(sa.delete(claims).where(claims.c.owner.in_(dead)))

    def renew_claims(self, owner: str, lease_s: float) -> None:
        with self.engine.begin() as conn:
            conn.execute(sa.update(claims).where(claims.c.owner == owner).values(expires_at=time.time() + lease_s))

    def release_claims(self, owner: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(sa.delete(claims).where(claims.c.owner == owner))

    def summary(self) -> pd.DataFrame:
        """Answers and errors per model and epoch."""
        with self.engine.connect() as conn:
            ans = pd.read_sql(
                sa.select(
                    responses.c.model,
                    responses.c.epoch,
                    sa.func.count().label("answers"),
                    sa.func.min(responses.c.created_at).label("first"),
                    sa.func.max(responses.c.created_at).label("last"),
                ).group_by(responses.c.model, responses.c.epoch),
                conn,
            )
            err = pd.read_sql(
                sa.select(errors.c.model, errors.c.epoch, sa.func.count().label("errors")).group_by(
                    errors.c.model, errors.c.epoch
                ),
                conn,
            )
        out = ans.merge(err, on=["model", "epoch"], how="outer")
        out[["answers", "errors"]] = out[["answers", "errors"]].fillna(0).astype(int)
        return out.sort_values(["model", "epoch"]).reset_index(drop=True)

    def _filters(self, table: sa.Table, model: str | None, epoch: str | None, before: datetime | None) -> list[Any]:
        conds = []
        if model is not None:
            conds.append(table.c.model == model)
        if epoch is not None:
            conds.append(table.c.epoch == epoch)
        if before is not None:
            conds.append(table.c.created_at < before)
        return conds

    def export(self, path: str | Path, model: str | None = None, epoch: str | None = None) -> int:
        """Write stored answers as JSON Lines (one object per answer); returns the row count."""
        with self.engine.connect() as conn:
            frame = pd.read_sql(
                sa.select(responses)
                .where(*self._filters(responses, model, epoch, None))
                .order_by(responses.c.created_at),
                conn,
            )
        frame["created_at"] = frame["created_at"].astype(str)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        frame.to_json(path, orient="records", lines=True, force_ascii=False)
        return len(frame)

    def prune(
        self,
        model: str | None = None,
        epoch: str | None = None,
        before: datetime | None = None,
        errors_only: bool = False,
    ) -> dict[str, int]:
        """Delete stored rows matching every given filter; at least one filter is required."""
        if model is None and epoch is None and before is None and not errors_only:
            raise ValueError("prune needs at least one of model, epoch, before or errors_only")
        deleted = {"answers": 0, "errors": 0}
        with self.engine.begin() as conn:
            if not errors_only:
                deleted["answers"] = conn.execute(
                    sa.delete(responses).where(*self._filters(responses, model, epoch, before))
                ).rowcount
            deleted["errors"] = conn.execute(
                sa.delete(errors).where(*self._filters(errors, model, epoch, before))
            ).rowcount
        return deleted

    def recent_answers(self, model: str, limit: int = 500) -> pd.DataFrame:
        """The model's latest stored answers' latency and tokens (``geomon plan``'s measured pace)."""
        query = (
            sa.select(responses.c.latency_s, responses.c.prompt_tokens, responses.c.completion_tokens)
            .where(responses.c.model == model)
            .order_by(responses.c.created_at.desc())
            .limit(limit)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
        return pd.DataFrame(rows, columns=["latency_s", "prompt_tokens", "completion_tokens"])

    def count(self, model: str | None = None) -> int:
        with self.engine.connect() as conn:
            stmt = sa.select(sa.func.count()).select_from(responses)
            if model is not None:
                stmt = stmt.where(responses.c.model == model)
            return int(conn.execute(stmt).scalar_one())

    def error_rows(self, model: str | None = None) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            stmt = sa.select(errors)
            if model is not None:
                stmt = stmt.where(errors.c.model == model)
            return [dict(r) for r in conn.execute(stmt).mappings()]

    def dispose(self) -> None:
        self.engine.dispose()


class StoreWriter:
    """Writes answers to the store on a thread of its own, in batches, so a model's answers never wait on
    the database: ``put`` only queues.

    Durability: a batch is written when ``max_batch`` answers are waiting or ``max_wait_s`` has passed since
    the first of them arrived, so a run killed with SIGKILL loses the requests in flight plus at most the
    answers of the last ``max_wait_s`` (at most ``max_batch``); they are asked again by the next run, and
    nothing stored is ever asked twice. A batch that fails is retried ``retries`` times (the insert ignores
    keys already stored, so a retry never duplicates); answers that still cannot be written are counted and
    ``close`` raises ``StoreWriteError`` naming how many and why. The queue is bounded (``max_queue``): if the
    database falls that far behind, ``put`` waits instead of holding an unbounded window in memory.
    """

    def __init__(
        self,
        store: ResponseStore,
        *,
        max_batch: int = 256,
        max_wait_s: float = 0.05,
        retries: int = 3,
        retry_wait_s: float = 0.5,
        max_queue: int = 10_000,
    ) -> None:
        self.store = store
        self.max_batch, self.max_wait_s = max_batch, max_wait_s
        self.retries, self.retry_wait_s = retries, retry_wait_s
        self.written = 0
        self.batches = 0
        self.unwritten = 0
        self.last_error: str | None = None
        self._queue: queue.Queue[StoredAnswer | None] = queue.Queue(maxsize=max_queue)
        self._thread = threading.Thread(target=self._run, name="geomon-store-writer", daemon=True)
        self._thread.start()

    def put(self, answer: StoredAnswer) -> None:
        self._queue.put(answer)

    def _batch(self) -> tuple[list[StoredAnswer], bool]:
        """The next batch, and whether the writer was told to stop."""
        first = self._queue.get()
        if first is None:
            return [], True
        batch, deadline = [first], time.monotonic() + self.max_wait_s
        while len(batch) < self.max_batch:
            try:
                item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if item is None:
                return batch, True
            batch.append(item)
        return batch, False

    def _write(self, batch: list[StoredAnswer]) -> None:
        for attempt in range(self.retries + 1):
            try:
                self.store.put_many(batch)
                self.written += len(batch)
                self.batches += 1
                return
            except Exception as exc:  # a database error must not kill the thread and strand the queue
                self.last_error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                if attempt < self.retries:
                    log.warning("response store: writing %d answers failed (%s); retrying", len(batch), self.last_error)
                    time.sleep(self.retry_wait_s * 2**attempt)
        self.unwritten += len(batch)

    def _run(self) -> None:
        stop = False
        while not stop:
            batch, stop = self._batch()
            if batch:
                self._write(batch)

    def close(self) -> None:
        """Write everything queued, stop the thread, and raise if any answer could not be written."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        if self.unwritten:
            raise StoreWriteError(
                f"response store {self.store.safe_url}: {self.unwritten} answers could not be written "
                f"({self.last_error}); the next run asks them again"
            )


def _is_dead_local_process(owner: str) -> bool:
    """Whether a claim owner ``host:pid:token`` names a process of this machine that is gone."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it exists, owned by another user
    return False


class ClaimLease:
    """A run's claims on the requests it asks, renewed on a thread of its own every third of ``lease_s``
    and released on exit, once every answer of the run is written."""

    def __init__(self, store: ResponseStore, lease_s: float = 60.0) -> None:
        self.store, self.lease_s = store, lease_s
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="geomon-claim-lease", daemon=True)

    def claim(self, keys: Iterable[str]) -> set[str]:
        return self.store.claim(sorted(keys), self.owner, self.lease_s)

    def _renew(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            try:
                self.store.renew_claims(self.owner, self.lease_s)
            except Exception as exc:  # a failed renewal only risks another run asking the same request
                log.warning("response store: renewing claims failed (%s: %s)", type(exc).__name__, exc)

    def __enter__(self) -> ClaimLease:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        self.store.release_claims(self.owner)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    # WAL lets readers and one writer work at once; busy_timeout makes other writers wait, not fail.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=60000")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def iter_chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
