"""The response store on SQLite and on the real PostgreSQL server."""

from __future__ import annotations

import json
import multiprocessing
from datetime import UTC, datetime, timedelta

import pytest

from geomon.engine.client import GenerationRequest, GenerationResult
from geomon.engine.store import ResponseStore, response_key


def _request(text: str = "hi", **params) -> GenerationRequest:
    return GenerationRequest("chat", messages=({"role": "user", "content": text},), params={"temperature": 0, **params})


def test_key_covers_model_messages_params_sample_and_epoch():
    base = response_key("m1", _request())
    assert base == response_key("m1", _request())
    assert base != response_key("m2", _request())
    assert base != response_key("m1", _request("other"))
    assert base != response_key("m1", _request(max_tokens=5))
    assert base != response_key(
        "m1", GenerationRequest("chat", messages=_request().messages, params=_request().params, sample_index=1)
    )
    assert base != response_key("m1", _request(), epoch="drift-1")


def _exercise(store: ResponseStore) -> None:
    req = _request()
    key = response_key("m", req)
    store.put(
        key,
        "m",
        "m",
        "",
        req,
        GenerationResult(text="first", finish_reason="stop", prompt_tokens=3, completion_tokens=1, latency_s=0.2),
        "test",
    )
    # A second answer under the same key never replaces the first.
    store.put(key, "m", "m", "", req, GenerationResult(text="second"), "test")
    # Errors are kept apart and never served as answers.
    err_req = _request("boom")
    err_key = response_key("m", err_req)
    store.put(err_key, "m", "m", "", err_req, GenerationResult(text=None, error="APIStatusError: 500"), "test")
    found = store.get_many([key, err_key])
    assert set(found) == {key}
    row = found[key]
    assert row["text"] == "first" and row["finish_reason"] == "stop" and row["prompt_tokens"] == 3
    assert row["engine"] == "test" and row["created_at"] is not None
    assert [e["error"] for e in store.error_rows("m")] == ["APIStatusError: 500"]
    summary = store.summary()
    assert summary.to_dict("records") == [
        {"model": "m", "epoch": "", "answers": 1, "errors": 1, "first": summary["first"][0], "last": summary["last"][0]}
    ]


def _hostile(store: ResponseStore) -> None:
    """A NUL byte fails a PostgreSQL insert and a runaway answer has no end: both are stored, cleaned."""
    from geomon.untrusted import STORED_MAX_CHARS

    nul, long = _request("nul"), _request("long")
    store.put(response_key("m", nul), "m", "m", "", nul, GenerationResult(text="Par\x00is", finish_reason="stop"), "t")
    store.put(response_key("m", long), "m", "m", "", long, GenerationResult(text="x" * (STORED_MAX_CHARS + 5)), "t")
    found = store.get_many([response_key("m", nul), response_key("m", long)])
    assert found[response_key("m", nul)]["text"] == "Paris"
    assert len(found[response_key("m", long)]["text"]) == STORED_MAX_CHARS
    assert found[response_key("m", long)]["finish_reason"].endswith(f"cut at {STORED_MAX_CHARS} characters")


def test_sqlite_store(sqlite_store):
    _exercise(sqlite_store)
    _hostile(sqlite_store)


def test_postgres_store(postgres_url):
    store = ResponseStore(postgres_url)
    assert store.dialect == "postgresql"
    _exercise(store)
    _hostile(store)
    store.dispose()


def test_plain_postgresql_url_uses_psycopg2(postgres_url):
    store = ResponseStore(postgres_url.replace("postgresql+psycopg2://", "postgresql://"))
    assert store.engine.dialect.driver == "psycopg2"
    store.dispose()


def test_export_and_prune(sqlite_store, tmp_path):
    for model in ("a", "b"):
        for i in range(3):
            req = _request(str(i))
            sqlite_store.put(response_key(model, req), model, model, "", req, GenerationResult(text=str(i)), "t")
    out = tmp_path / "a.jsonl"
    assert sqlite_store.export(out, model="a") == 3
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["model"] for r in rows} == {"a"} and sorted(r["text"] for r in rows) == ["0", "1", "2"]
    with pytest.raises(ValueError, match="at least one"):
        sqlite_store.prune()
    assert sqlite_store.prune(before=datetime.now(UTC) - timedelta(days=1))["answers"] == 0
    assert sqlite_store.prune(model="a")["answers"] == 3
    assert sqlite_store.count() == 3


def _writer(url: str, worker: int, n: int) -> None:
    store = ResponseStore(url)
    for i in range(n):
        req = _request(f"{worker}-{i}")
        store.put(response_key("m", req), "m", "m", "", req, GenerationResult(text="x"), "t")


def test_sqlite_is_safe_with_several_writer_processes(tmp_path):
    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    ResponseStore(url)  # create the schema once
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(url, w, 60)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert ResponseStore(url).count() == 180


def _create_schema(url: str, barrier) -> None:
    from geomon.monitor.history import MetricHistory

    barrier.wait(60)  # every process creates the tables at the same moment
    ResponseStore(url)
    MetricHistory(url)


def test_runs_starting_together_on_a_fresh_postgresql_database_all_start(postgres_url):
    """Without a lock the second CREATE TABLE on a fresh database fails (UniqueViolation on pg_type)."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(4)
    procs = [ctx.Process(target=_create_schema, args=(postgres_url, barrier)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    assert ResponseStore(postgres_url).count() == 0


def test_an_unsupported_database_is_named_without_its_password():
    with pytest.raises(ValueError, match=r"database mysql://u:\*\*\*@db/x: only sqlite") as caught:
        ResponseStore("mysql://u:hunter2@db/x")
    assert "hunter2" not in str(caught.value)
