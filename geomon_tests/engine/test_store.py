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


# --- the write path of ask(): a writer thread, batches, and every answer exactly once --------------


def _scripted_spec(url: str):
    from geomon.engine.registry import ModelSpec

    return ModelSpec(name="scripted", kind="chat", base_url=f"{url}/v1", model_id="scripted")


def _questions(n: int) -> list[GenerationRequest]:
    return [_request(f"question {i}") for i in range(n)]


class _FlakyStore(ResponseStore):
    """A real store whose first ``failures`` batch writes raise, as a dropped database connection would."""

    def __init__(self, url: str, failures: int) -> None:
        super().__init__(url)
        self.failures, self.batches = failures, []

    def put_many(self, answers) -> None:
        self.batches.append(len(answers))
        if self.failures:
            self.failures -= 1
            raise ConnectionError("database connection lost")
        super().put_many(answers)


def test_a_failed_batch_write_is_retried_and_stores_every_answer_once(tmp_path):
    from geomon.engine.runner import ask
    from geomon_tests.loopback import ScriptedModel, serve

    state = {"answer": lambda messages: messages[-1]["content"].upper()}
    with serve(ScriptedModel, state) as url:
        store = _FlakyStore(f"sqlite:///{tmp_path / 'flaky.sqlite'}", failures=2)
        frame, stats = ask(_scripted_spec(url), _questions(30), store)
    assert stats.answered == 30 and store.count() == 30 and state["calls"] == 30
    assert frame["text"].tolist() == [f"QUESTION {i}" for i in range(30)]
    assert len(store.batches) >= 3  # two failed attempts, then the writes that went through


def test_a_store_that_stays_down_fails_the_run_and_the_rerun_asks_only_what_is_missing(tmp_path):
    from geomon.engine.runner import ask
    from geomon.engine.store import StoreWriteError
    from geomon_tests.loopback import ScriptedModel, serve

    url = f"sqlite:///{tmp_path / 'down.sqlite'}"
    state = {"answer": lambda messages: "ok"}
    with serve(ScriptedModel, state) as server:
        healthy = ResponseStore(url)
        ask(_scripted_spec(server), _questions(10), healthy)  # ten answers stored before the outage
        down = _FlakyStore(url, failures=10**6)
        with pytest.raises(StoreWriteError, match=r"10 answers could not be written \(ConnectionError"):
            ask(_scripted_spec(server), _questions(20), down)
        assert healthy.count() == 10 and state["calls"] == 20
        _, stats = ask(_scripted_spec(server), _questions(20), healthy)
    assert stats.cached == 10 and stats.model_calls == 10 and healthy.count() == 20


def _ask_in_a_process(store_url: str, server: str, n: int, out: str) -> None:
    from geomon.engine.runner import ask

    frame, stats = ask(_scripted_spec(server), _questions(n), ResponseStore(store_url))
    with open(out, "w") as handle:
        json.dump({"texts": frame["text"].tolist(), "answered": stats.answered, "cached": stats.cached}, handle)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_two_runs_at_once_keep_every_answer_exactly_once(backend, tmp_path, request):
    """Two processes ask the same 60 questions through one store at the same time: the store ends with 60
    answers, one per key (the primary key and ON CONFLICT DO NOTHING), and both runs get all 60."""
    import sqlalchemy as sa

    from geomon.engine.store import responses
    from geomon_tests.loopback import ScriptedModel, serve

    store_url = (
        f"sqlite:///{tmp_path / 'shared.sqlite'}" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    )
    ResponseStore(store_url)  # the schema, once (creating it concurrently is issue 15's business)
    state = {"answer": lambda messages: messages[-1]["content"][::-1]}
    ctx = multiprocessing.get_context("spawn")
    with serve(ScriptedModel, state) as server:
        outs = [str(tmp_path / f"run{i}.json") for i in range(2)]
        procs = [ctx.Process(target=_ask_in_a_process, args=(store_url, server, 60, out)) for out in outs]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
            assert p.exitcode == 0
    runs = []
    for out in outs:
        with open(out) as handle:
            runs.append(json.load(handle))
    expected = [f"question {i}"[::-1] for i in range(60)]
    assert all(run["texts"] == expected for run in runs)
    store = ResponseStore(store_url)
    with store.engine.connect() as conn:
        keys = [row[0] for row in conn.execute(sa.select(responses.c.key))]
    assert len(keys) == len(set(keys)) == 60
    assert sum(run["answered"] for run in runs) >= 60  # each asked what it did not find; none stored twice
    store.dispose()
