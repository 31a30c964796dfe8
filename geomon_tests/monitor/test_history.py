"""The metric history on SQLite and on the real PostgreSQL server."""

from __future__ import annotations

import pandas as pd
import pytest

from geomon.monitor.history import MetricHistory
from geomon.stats.values import EvaluationRun, MetricValue, metrics_from_mapping
from geomon.stats.verdicts import Comparison


@pytest.fixture(params=["sqlite", "postgresql"])
def history(request, tmp_path):
    if request.param == "sqlite":
        return MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    return MetricHistory(request.getfixturevalue("postgres_url"))


def test_evaluations_keep_values_versions_and_items(history):
    items = pd.DataFrame({"item": ["A", "B"], "error_sum": [0.5, 0.25], "answers": [1, 1]})
    first = history.record(
        EvaluationRun(
            "worldbench",
            "m",
            scope="wdi-1",
            versions={"data": "wdi-1", "prompts": "p1", "code": "c1"},
            dagster_run_id="run-1",
        ),
        metrics_from_mapping({"mean_error": 0.4, "mean_error_ci_low": 0.3, "mean_error_ci_high": 0.5, "flag": True}),
        items=items,
    )
    second = history.record(
        EvaluationRun("worldbench", "m", scope="wdi-1"), [MetricValue("mean_error", float("nan"))], items=items
    )
    latest = history.latest("worldbench", "m", "wdi-1")
    assert latest.evaluation_id == second.evaluation_id
    before = history.latest("worldbench", "m", "wdi-1", before=second)
    assert before.evaluation_id == first.evaluation_id and before.versions == {
        "data": "wdi-1",
        "prompts": "p1",
        "code": "c1",
    }
    pd.testing.assert_frame_equal(before.items, items)
    series = history.series(suite="worldbench", metric="mean_error")
    assert list(series["value"].isna()) == [False, True]  # NaN stored as NULL, not dropped
    assert series.iloc[0][["ci_low", "ci_high", "data_version", "dagster_run_id"]].tolist() == [
        0.3,
        0.5,
        "wdi-1",
        "run-1",
    ]
    assert history.latest("worldbench", "other-model", "wdi-1") is None
    assert "flag" not in set(history.series()["metric"])  # booleans are not metrics


def test_series_can_be_limited_to_given_series(history):
    """The trends report reads only the headline series; the database does the selection."""
    history.record(
        EvaluationRun("worldbench", "m"),
        [MetricValue("mean_error", 0.4), MetricValue("mean_error", 0.2, breakdown="region=Asia")],
    )
    history.record(EvaluationRun("borderlines", "m"), [MetricValue("kb_cs", 50.0), MetricValue("mean_error", 9.0)])
    picked = history.series(only=[("worldbench", "mean_error", ""), ("borderlines", "kb_cs", "")])
    assert sorted(zip(picked["suite"], picked["metric"], picked["value"], strict=True)) == [
        ("borderlines", "kb_cs", 50.0),
        ("worldbench", "mean_error", 0.4),
    ]
    assert history.series(only=[]).empty


def test_one_evaluation_per_run(history):
    """A retried step records nothing new; a run that evaluated exactly what a concurrent run recorded after
    it started reuses that evaluation; a later run with the same numbers is a new point in the history."""
    items = pd.DataFrame({"item": ["FRA", "DEU"], "error": [0.1, 0.2]})
    versions = {"data": "wdi-1", "prompts": "p1", "code": "c1"}
    metric = [MetricValue("mean_error", 0.15)]

    def run(dagster_run_id: str) -> EvaluationRun:
        return EvaluationRun("wb", "m", versions=versions, dagster_run_id=dagster_run_id)

    first = history.record(run("run-a"), metric, items=items)
    retried = history.record(run("run-a"), metric, items=items)
    assert retried.evaluation_id == first.evaluation_id
    concurrent = history.record(run("run-b"), metric, items=items)
    assert concurrent.evaluation_id == first.evaluation_id and concurrent.dagster_run_id == "run-a"
    different = history.record(run("run-c"), metric, items=items.assign(error=[0.1, 0.3]))
    later = history.record(run("run-d"), metric, items=items)
    assert len({first.evaluation_id, different.evaluation_id, later.evaluation_id}) == 3
    assert len(history.series(suite="wb")) == 3


def test_one_engine_per_database_and_process_checked_once(tmp_path, monkeypatch):
    """A run opens the history about 18 times: one engine per database in a process, its tables created and
    migrated once; a database file removed and made anew, or emptied, is set up again."""
    import sqlite3

    from geomon.monitor import history as module

    checks = []
    check = module._add_missing_columns
    monkeypatch.setattr(module, "_add_missing_columns", lambda engine: checks.append(1) or check(engine))
    path = tmp_path / "history.sqlite"
    first = MetricHistory(f"sqlite:///{path}")
    assert MetricHistory(f"sqlite:///{path}").engine is first.engine and len(checks) == 1
    first.record(EvaluationRun("toy", "m"), [MetricValue("mean", 0.5)])
    path.unlink()  # the engine's pooled connection still reads the removed file
    again = MetricHistory(f"sqlite:///{path}")
    assert again.engine is not first.engine and len(checks) == 2
    assert again.latest("toy", "m") is None  # the new file's tables, created
    with sqlite3.connect(path) as conn:  # the same file emptied: its tables are created again
        conn.executescript("".join(f"DROP TABLE {t};" for t in reversed(module.metadata.sorted_tables)))
    assert MetricHistory(f"sqlite:///{path}").latest("toy", "m") is None and len(checks) == 3
    memory = MetricHistory("sqlite:///:memory:")  # each in-memory database is its own
    assert MetricHistory("sqlite:///:memory:").engine is not memory.engine


def _database(request, tmp_path) -> str:
    """An empty database: a SQLite file, or a fresh one on the real PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'old.sqlite'}"
    return request.getfixturevalue("postgres_url")


@pytest.fixture(params=["sqlite", "postgresql"])
def old_url(request, tmp_path):
    """A database an older geomon wrote: its comparisons' decidability only in their notes, the release in columns
    named ``family``."""
    import sqlalchemy as sa

    url = _database(request, tmp_path)
    serial = "SERIAL PRIMARY KEY" if url.startswith("postgresql") else "INTEGER PRIMARY KEY"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "CREATE TABLE metric_evaluations (evaluation_id VARCHAR(36) PRIMARY KEY, suite VARCHAR(100) NOT NULL, "
                "model VARCHAR(200) NOT NULL, scope VARCHAR(200) NOT NULL, recorded_at TIMESTAMP NOT NULL, "
                "data_version VARCHAR(200) NOT NULL, prompt_version VARCHAR(200) NOT NULL, "
                "code_version VARCHAR(200) NOT NULL, dagster_run_id VARCHAR(100) NOT NULL, items TEXT)"
            )
        )
        conn.execute(
            sa.text(
                f"CREATE TABLE metric_comparisons (id {serial}, evaluation_id VARCHAR(36) NOT NULL, "
                "against_evaluation_id VARCHAR(36) NOT NULL, against VARCHAR(300) NOT NULL, "
                "metric VARCHAR(200) NOT NULL, before FLOAT, after FLOAT, effect FLOAT, p_value FLOAT, items INTEGER, "
                "verdict VARCHAR(40) NOT NULL, "
                "family VARCHAR(400) NOT NULL DEFAULT '', note VARCHAR(500) NOT NULL DEFAULT '')"
            )
        )
        conn.execute(
            sa.text(
                "CREATE TABLE release_plans (family VARCHAR(400) PRIMARY KEY, plan TEXT NOT NULL, "
                "recorded_at TIMESTAMP NOT NULL)"
            )
        )
        conn.execute(
            sa.text(
                f"CREATE TABLE release_looks (id {serial}, family VARCHAR(400) NOT NULL, suite VARCHAR(100) NOT NULL, "
                "scope VARCHAR(200) NOT NULL, evaluation_id VARCHAR(36) NOT NULL, "
                "against_evaluation_id VARCHAR(36) NOT NULL, look VARCHAR(20) NOT NULL, alpha FLOAT NOT NULL, "
                "note VARCHAR(500) NOT NULL, recorded_at TIMESTAMP NOT NULL)"
            )
        )
        conn.execute(sa.text("CREATE INDEX ix_release_looks_family ON release_looks (family)"))
        conn.execute(sa.text("INSERT INTO release_plans VALUES ('new vs old', '{}', '2026-11-20 00:00:00')"))
        conn.execute(
            sa.text(
                "INSERT INTO release_looks (family, suite, scope, evaluation_id, against_evaluation_id, look, alpha, "
                "note, recorded_at) VALUES ('new vs old', 'toy', '', 'e1', 'e0', 'first', 0.04, '', "
                "'2026-11-20 00:00:00'), ('new vs old', 'toy', 'b', 'e2', 'e0', 'reserve', 0.01, :provisional, "
                "'2026-11-20 00:00:00'), ('new vs old', 'toy', 'c', 'e3', 'e0', 'spent', 0.0, :spent, "
                "'2026-11-20 00:00:00')"
            ),
            {"provisional": PROVISIONAL, "spent": f"{NO_SCOPE} (shown, never paged)"},
        )
        conn.execute(
            sa.text(
                "INSERT INTO metric_evaluations VALUES ('e1', 'toy', 'new', '', '2026-11-20 00:00:00', '', '', '', '', "
                "NULL)"
            )
        )
        for metric, verdict, note in OLD_NOTES:
            conn.execute(
                sa.text(
                    "INSERT INTO metric_comparisons (evaluation_id, against_evaluation_id, against, metric, verdict, "
                    "family, note) VALUES ('e1', 'e0', 'predecessor old', :metric, :verdict, 'new vs old', :note)"
                ),
                {"metric": metric, "verdict": verdict, "note": note},
            )
    engine.dispose()
    return url


# How an older geomon said a look in a comparison's note: a reserve's provisional baseline, a look with no α left.
PROVISIONAL = (
    "provisional: decided at the scope's reserve against the predecessor's evaluation made on a later day; decided "
    "again at its first look when one made before it arrives"
)
NO_SCOPE = "no α left: suite toy's share covers 1 scope(s) per release, taken by a: raise verdicts.scopes.toy to page"
OLD_NOTES = [  # (metric, verdict, note) as an older geomon stored them, each with the decidability it meant
    ("a", "no detectable change", "not decidable at this profile: MDE 12 > min effect 5 (`geomon plan --detect`)"),
    ("b", "no detectable change", "too few shared items to detect the minimum effect: MDE 12 > min effect 5"),
    ("c", "insufficient sample", "not decidable at this sample (n = 8 < 30; `geomon plan --detect`)"),
    ("d", "regression", "paged by an underpowered comparison (6% power at the minimum effect)"),
    ("e", "no detectable change", "provisional: decided at the scope's reserve; not decidable at this profile: MDE 9"),
    ("f", "regression", ""),
    ("g", "no detectable change", "no cluster differs from the baseline: left out of the Holm family"),
    ("h", "watch", f"{PROVISIONAL}; not decidable at this profile: MDE 9 > min effect 5"),
    ("i", "watch", f"{NO_SCOPE} (shown, never paged); not decidable at this profile: MDE 9 > min effect 5"),
]


def test_an_older_database_gets_the_decidability_column_filled_from_its_notes(old_url):
    """An older history, its comparisons' decidability only in their notes, opened by this geomon: the column is
    added in place and each stored comparison's decidability read once from its note (a note part, first or after
    the look's note), so the old history reads as a new one would; the notes stay. Mutation caught: the backfill
    removed (every old comparison then reads decidable: the blind line and the underpowered flag lose them)."""
    from geomon.monitor import views
    from geomon.stats import verdicts

    history = MetricHistory(old_url)
    stored = history.comparisons().sort_values("metric")
    assert list(stored["decidability"]) == [
        verdicts.Decidability.UNDERPOWERED_PROFILE,
        verdicts.Decidability.UNDERPOWERED_PUBLISHED,
        verdicts.Decidability.UNDECIDABLE_SAMPLE,
        verdicts.Decidability.UNDERPOWERED_REGRESSION,
        verdicts.Decidability.UNDERPOWERED_PROFILE,
        verdicts.Decidability.DECIDABLE,
        verdicts.Decidability.DECIDABLE,
        verdicts.Decidability.UNDERPOWERED_PROFILE,
        verdicts.Decidability.UNDERPOWERED_PROFILE,
    ]
    blind = views.profile_blind([Comparison.of(row) for row in stored.to_dict("records")])
    assert "not decidable at this profile" in blind and ": a, e, h, i;" in blind and "sample" in blind


def test_an_older_database_gets_the_look_columns_filled_from_its_notes(old_url):
    """An older history said the look a comparison was decided at in its note (a reserve's provisional baseline;
    why a look had no α, ending "(shown, never paged)"): opened by this geomon, the look and why α was 0 are read
    from the notes once into their own columns and the look's words leave the note, the verdict's reason staying
    (older words of a reserve stay in it: nothing stored is lost); the release's looks' notes keep only why α was
    0. Readers never parse the note again. Mutation caught: the backfill removed (the reserve reads as the first
    look, the α-0 comparison says nothing of why)."""
    from geomon.monitor import views
    from geomon.stats import verdicts

    history = MetricHistory(old_url)
    stored = {row["metric"]: Comparison.of(row) for row in history.comparisons().to_dict("records")}
    assert {m: c.look for m, c in stored.items() if c.look} == {
        "e": verdicts.LookKind.RESERVE,
        "h": verdicts.LookKind.RESERVE,
        "i": verdicts.LookKind.SPENT,
    }
    reason = "not decidable at this profile: MDE 9 > min effect 5"
    assert (stored["h"].note, stored["i"].note, stored["i"].alpha_zero) == (reason, reason, NO_SCOPE)
    assert stored["e"].note == OLD_NOTES[4][2]  # an older reserve's words: kept
    assert views.look_text(stored["i"]) == f"none, never paged: {NO_SCOPE}"
    assert views.look_text(stored["h"]).startswith("reserve: provisional baseline")
    assert views.unpaged(stored["i"]) == f"{NO_SCOPE} (shown, never paged)"
    assert list(history.release_looks("new vs old")["note"]) == ["", "", NO_SCOPE]
    from geomon.monitor import history as store

    with history.engine.begin() as conn:  # filled again: nothing changes
        store._backfill_looks(conn)
    again = {row["metric"]: Comparison.of(row) for row in history.comparisons().to_dict("records")}
    assert again == stored


def test_an_older_database_keeps_its_releases_under_the_renamed_column(old_url):
    """An older history's ``family`` columns (the release's label, beside ``family_size``: the Holm family's) are
    renamed ``release`` in place — the comparisons', the release plans' key and the looks' with their index — and
    every row stays: the stored plan still fixes the release, its looks still count. Mutation caught: the rename
    removed (the tables' ``release`` column is then missing: every read fails)."""
    import sqlalchemy as sa

    history = MetricHistory(old_url)
    assert set(history.comparisons()["release"]) == {"new vs old"}
    assert history.release_plan("new vs old") == "{}"
    assert list(history.release_looks("new vs old")["alpha"]) == [0.04, 0.01, 0.0]
    inspector = sa.inspect(history.engine)
    for table in ("metric_comparisons", "release_plans", "release_looks"):
        assert "family" not in {c["name"] for c in inspector.get_columns(table)}, table
    assert [(i["name"], i["column_names"]) for i in inspector.get_indexes("release_looks")] == [
        ("ix_release_looks_release", ["release"])
    ]


def test_evaluations_read_without_their_items_parse_none_and_get_them_on_request(history):
    """The gates and the release order read who and when, not the items (parsing every evaluation's items on each
    gate was most of a stored ``geomon run``'s machinery): ``items=False`` leaves them unread, ``with_items`` reads
    one evaluation's."""
    items = pd.DataFrame({"item": ["A", "B"], "error": [0.5, 0.25]})
    recorded = history.record(
        EvaluationRun("worldbench", "m", scope="s"), [MetricValue("mean_error", 0.4)], items=items
    )
    (light,) = history.evaluations_of("worldbench", "s", model="m", items=False)
    assert light.evaluation_id == recorded.evaluation_id and light.items is None
    pd.testing.assert_frame_equal(history.with_items(light).items, items)
    (full,) = history.evaluations_of("worldbench", "s", model="m")
    pd.testing.assert_frame_equal(full.items, items)


def test_a_stored_count_reads_as_a_count_whatever_other_rows_of_the_read_hold():
    """One read of many evaluations' comparisons (the open-regression tables') widens an integer column to floats
    where an older row holds NULL: each comparison still reads its counts as ints (NULL as None), so "over 12
    comparisons" never reads "over 12.0"."""
    import pandas as pd

    rows = pd.DataFrame({"metric": ["a", "b"], "family_size": [12, None], "clusters": [40, None]})
    first, second = (Comparison.of(r) for r in rows.to_dict("records"))
    assert (first.family_size, first.clusters) == (12, 40) and isinstance(first.family_size, int)
    assert (second.family_size, second.clusters) == (None, None)


def _every_field(evaluation_id: str) -> Comparison:
    """A comparison with every stored field set to a value of its own."""
    from dataclasses import fields

    from geomon.stats import verdicts

    values = {}
    for i, f in enumerate(fields(Comparison)):
        if not f.metadata.get("stored", True):
            continue
        kind = verdicts.FIELD_TYPES[f.name]
        values[f.name] = f"{f.name}-{i}"[: f.metadata.get("chars", 40)] if "chars" in f.metadata else i + 0.5
        if kind == int | None:
            values[f.name] = i
    values["decidability"] = verdicts.Decidability.UNDERPOWERED_PUBLISHED
    return Comparison(**values | {"evaluation_id": evaluation_id})


def test_a_comparison_is_one_record_its_columns_derived_from_its_fields(history):
    """A comparison is one record, ``verdicts.Comparison``: the table's columns are its stored fields (and the
    rows' id, and ``effect`` of rows before 2026-11-25), and what ``record_decision`` writes reads back equal, field
    by field (the decidability as its enum). Mutation caught: a field left out of the table or the writer (its
    value reads back as its default)."""
    from geomon.monitor import history as store
    from geomon.stats import verdicts

    evaluation = history.record(EvaluationRun("toy", "m"), [])
    written = _every_field(evaluation.evaluation_id)
    history.record_decision(evaluation, [written])
    (row,) = history.comparisons([evaluation.evaluation_id]).to_dict("records")
    assert Comparison.of(row) == written
    assert isinstance(Comparison.of(row).decidability, verdicts.Decidability)
    assert {c.name for c in store.comparisons.c} == {f.name for f in verdicts.STORED} | {"id", "effect"}


def test_a_decision_writes_its_look_and_its_comparisons_in_one_transaction(history):
    """``record_decision`` writes the release's plan, the look and the comparisons in one transaction: a comparison
    that cannot be stored leaves no look spent and no plan fixed, and the comparisons stored before stand. Mutation
    caught: the look written in a transaction of its own (the release's α spent by a decision never stored)."""
    from geomon.stats import verdicts

    evaluation = history.record(EvaluationRun("toy", "new"), [])
    before = _every_field(evaluation.evaluation_id)
    history.record_decision(evaluation, [before])
    look = verdicts.Look("toy", "", evaluation.evaluation_id, "e0", verdicts.LookKind.FIRST, 0.02)
    import sqlalchemy as sa

    with pytest.raises(sa.exc.IntegrityError):  # a comparison without a metric (the column is NOT NULL)
        history.record_decision(evaluation, [Comparison(None)], "new vs old", look, plan="{}")
    assert history.release_looks("new vs old").empty and history.release_plan("new vs old") is None
    (kept,) = history.comparisons([evaluation.evaluation_id]).to_dict("records")
    assert Comparison.of(kept) == before
    history.record_decision(evaluation, [before], "new vs old", look, plan="{}")
    assert list(history.release_looks("new vs old")["alpha"]) == [0.02] and history.release_plan("new vs old") == "{}"
