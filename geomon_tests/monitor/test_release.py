"""One release, one decision, and everyone told — through ``geomon import items --cluster``, the path users run:
each suite decided at its look's α whatever the order and the days its evaluations arrive on, a late
predecessor's regression delivered once to a real (loopback) webhook, a withdrawn one resolved, and
acknowledgements that name the breakdown honoured by every gate."""

from __future__ import annotations

import itertools
import math
import sqlite3
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from geomon.monitor import alerts, announce, imports, release, views
from geomon.monitor.history import EvaluationRun, MetricHistory
from geomon.stats import compare, verdicts
from geomon.stats.declarations import TrackedMetric
from geomon.stats.statistics import Mean
from geomon_tests.loopback import Webhook, serve
from geomon_tests.stats import test_compare as toy

QUESTIONS = 80
VARIATIONS = 3


def _items(path: Path, model: str, when: str, correct: np.ndarray, predecessor: str = "", first: int = 0) -> Path:
    """One model's per-item outcomes: each question asked in three prompt variations (one cluster), the
    questions split between two countries; ``first``: the first question's number (another item set)."""
    rows = [
        {
            "model": model,
            "item": f"q{q + first}-v{v}",
            "question": f"q{q + first}",
            "country": "Kenya" if q % 2 else "Peru",
            "evaluated_at": when,
            "correct": int(correct[q, v]),
            "predecessor": predecessor,
        }
        for q, v in itertools.product(range(QUESTIONS), range(VARIATIONS))
    ]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _outcomes(seed: int, rate: float, peru_drop: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rates = np.full(QUESTIONS, rate)
    rates[::2] -= peru_drop  # Peru's questions
    return rng.random((QUESTIONS, VARIATIONS)) < rates[:, None]


def _import(history, path, suite, plan, settings, cluster="question"):
    runs = imports.item_runs(path, suite, ["country"], verdicts.VerdictSettings(), cluster)
    return imports.record_runs(history, runs, plan=plan, announcer=announce.announcer(settings))


PLAN = verdicts.ReleasePlan(0.05, {"geo-a": 1.0, "geo-b": 1.0, "geo-c": 1.0}, 0)


def _release_files(tmp_path: Path) -> list[tuple[str, Path]]:
    """Three suites of one release (old → new); geo-b's Peru questions much worse in the new model."""
    out = []
    for i, suite in enumerate(["geo-a", "geo-b", "geo-c"]):
        old = _items(tmp_path / f"{suite}-old.csv", "old", "2026-11-20", _outcomes(10 + i, 0.9))
        drop = 0.6 if suite == "geo-b" else 0.0
        day = "2026-11-24" if i % 2 else "2026-11-25"  # the release's suites on two days
        new = _items(tmp_path / f"{suite}-new.csv", "new", day, _outcomes(20 + i, 0.9, drop), predecessor="old")
        out += [(suite, old), (suite, new)]
    return out


def _decisions(history: MetricHistory) -> pd.DataFrame:
    evaluations = history.evaluations()[["evaluation_id", "suite", "model"]]
    rows = history.comparisons().merge(evaluations, on="evaluation_id")
    columns = ["suite", "model", "metric", "breakdown", "verdict", "p_value", "p_adjusted", "alpha", "release"]
    return rows[columns].sort_values(["suite", "metric", "breakdown"]).reset_index(drop=True)


def test_each_suite_is_decided_at_its_share_whatever_the_order_and_day(tmp_path, webhook):
    """The same release imported suite by suite in three orders — forward, successors first (every
    predecessor late), interleaved — gives the same stored decisions, each suite at its first look (80 % of its share
    α/3), and the
    webhook receives the one regression (geo-b, Peru) once in every order. Mutations caught: a family split
    by day or baseline, or a decision that depends on what has arrived (the shares, the stored p-values)."""
    state, settings = webhook
    files = _release_files(tmp_path)
    orders = {
        "forward": files,
        "successors first": [f for f in files if "new" in f[1].name] + [f for f in files if "old" in f[1].name],
        "interleaved": [files[1], files[2], files[5], files[0], files[4], files[3]],
    }
    seen = []
    for name, order in orders.items():
        history = MetricHistory(f"sqlite:///{tmp_path / f'{name}.sqlite'}")
        state["posts"].clear()
        for suite, path in order:
            _import(history, path, suite, PLAN, settings)
        decided = _decisions(history)
        assert np.allclose(decided["alpha"], 0.05 / 3 * 0.8), name  # each suite's first look: 80 % of its share
        assert set(decided["release"]) == {"new vs old"}, name
        regressions = decided[decided["verdict"] == verdicts.REGRESSION]
        assert set(zip(regressions["suite"], regressions["breakdown"], strict=True)) >= {("geo-b", "country=Peru")}
        assert set(regressions["suite"]) == {"geo-b"}, name
        posts = [p["body"] for p in state["posts"]]
        assert [(p["kind"], p["suite"], p["model"]) for p in posts] == [("regression", "geo-b", "new")], name
        assert "accuracy (country=Peru)" in posts[0]["title"]
        seen.append(decided)
    for other in seen[1:]:
        pd.testing.assert_frame_equal(other, seen[0])


def test_a_late_predecessor_alerts_once_and_a_withdrawn_regression_resolves(tmp_path, webhook, monkeypatch, capsys):
    """The successor arrives first (nothing to compare with: nothing sent); its predecessor's evaluation
    arrives late and makes it a regression: delivered then, once — importing either again sends nothing.
    Then the predecessor's later evaluation, as weak as the successor, becomes the successor's baseline:
    the regression is withdrawn and a "resolved" message is sent."""
    state, settings = webhook
    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    new = _items(tmp_path / "new.csv", "new", "2026-11-25", _outcomes(2, 0.9, 0.6), predecessor="old")
    old = _items(tmp_path / "old.csv", "old", "2026-11-20", _outcomes(1, 0.9))
    (first,) = _import(history, new, "geo-b", PLAN, settings)
    assert first.tracked.verdicts == [] and state["posts"] == []
    (late,) = _import(history, old, "geo-b", PLAN, settings)
    assert [e.model for e in late.tracked.redecided] == ["new"]
    assert [(p["body"]["kind"], p["body"]["model"]) for p in state["posts"]] == [("regression", "new")]
    _import(history, old, "geo-b", PLAN, settings)
    _import(history, new, "geo-b", PLAN, settings)
    assert len(state["posts"]) == 1  # "already alerted", read from the record of what was sent
    evaluation = history.evaluations(model="new").iloc[0]["evaluation_id"]
    record = history.deliveries([evaluation])
    assert set(record["kind"]) == {"regression"} and set(record["outcome"]) == {"sent"}
    assert record["message"].str.contains("country=Peru").all()
    # A weaker evaluation of the predecessor, between the two: the successor's baseline now, and no regression.
    weaker = _items(tmp_path / "old2.csv", "old", "2026-11-22", _outcomes(2, 0.9, 0.6))
    _import(history, weaker, "geo-b", PLAN, settings)
    kinds = [(p["body"]["kind"], p["body"]["model"]) for p in state["posts"]]
    assert kinds[1:].count(("resolved", "new")) == 1, kinds
    assert release.failing(history, release.stored(history, late.tracked.evaluation).evaluation) == []
    resolved = history.deliveries([evaluation])
    assert resolved.iloc[-1]["kind"] == "resolved" and resolved.iloc[-1]["outcome"] == "sent"


def test_an_alert_that_reached_nobody_is_tried_again(tmp_path, monkeypatch):
    """No channel configured: the attempt is recorded as not sent, and the next decision or re-run tries again
    (nothing claims it was alerted)."""
    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    nowhere = alerts.AlertSettings(webhook_url_env="GEOMON_TEST_NO_HOOK")
    monkeypatch.delenv("GEOMON_TEST_NO_HOOK", raising=False)
    old = _items(tmp_path / "old.csv", "old", "2026-11-20", _outcomes(1, 0.9))
    new = _items(tmp_path / "new.csv", "new", "2026-11-25", _outcomes(2, 0.9, 0.6), predecessor="old")
    _import(history, old, "geo-b", PLAN, nowhere)
    (recorded,) = _import(history, new, "geo-b", PLAN, nowhere)
    told = recorded.tracked.told[recorded.tracked.evaluation.evaluation_id]
    assert told == [alerts.NO_CHANNEL]
    state: dict = {"posts": []}
    with serve(Webhook, state) as url:
        monkeypatch.setenv("GEOMON_TEST_NO_HOOK", f"{url}/hook")
        (again,) = _import(history, new, "geo-b", PLAN, nowhere)
    assert again.tracked.evaluation.reused and len(state["posts"]) == 1
    outcomes = history.deliveries([again.tracked.evaluation.evaluation_id])["outcome"]
    assert outcomes.str.startswith("not sent").any() and (outcomes == "sent").any()


def test_acknowledgements_name_the_breakdown_and_every_gate_honours_them(tmp_path, monkeypatch, capsys):
    """An acknowledgement names a regression: a breakdown without its metric, or a metric with no regression, is
    refused; acknowledging the overall accuracy does not silence Peru's; acknowledging every regression makes
    ``geomon import --fail-on regression`` exit 0 on the next import of the release, as the check passes."""
    from geomon.cli import main

    store = tmp_path / "h.sqlite"
    monkeypatch.setenv("GEOMON_STORE_URL", f"sqlite:///{store}")
    monkeypatch.delenv("GEOMON_ALERT_WEBHOOK_URL", raising=False)
    old = _items(tmp_path / "old.csv", "old", "2026-11-20", _outcomes(1, 0.9))
    new = _items(tmp_path / "new.csv", "new", "2026-11-25", _outcomes(2, 0.9, 0.6), predecessor="old")
    args = ["import", "items", "--suite", "geo-b", "--group", "country", "--cluster", "question"]
    assert main([*args, str(old), "--fail-on", "regression"]) == 0
    assert main([*args, str(new), "--fail-on", "regression"]) == 3
    err = capsys.readouterr().err
    assert "geo-b new: accuracy (country=Peru) regression" in err
    history = MetricHistory(f"sqlite:///{store}")
    evaluation = release.stored(history, _evaluation(history, "new"))
    regressions = {r.key for r in evaluation.regressions}
    assert ("accuracy", "country=Peru") in regressions
    eid = evaluation.evaluation.evaluation_id
    capsys.readouterr()
    # A breakdown without its metric, or a metric and breakdown with no regression, acknowledge nothing: refused.
    assert main(["alerts", "ack", eid, "--breakdown", "country=Peru", "--by", "a"]) == 2
    assert main(["alerts", "ack", eid, "--metric", "acuracy", "--by", "a"]) == 2
    err = capsys.readouterr().err
    assert "--breakdown needs --metric" in err and "has no regression on acuracy; its regressions: accuracy" in err
    assert main(["alerts", "ack", eid, "--metric", "accuracy", "--breakdown", "country=Kenya", "--by", "a"]) == 2
    assert history.acknowledgements([eid]).empty
    assert main(["alerts", "ack", eid, "--metric", "answered_rate", "--breakdown", "*", "--by", "a"]) == 2
    # The overall figure acknowledged: Peru's own regression still fails the gates.
    assert main(["alerts", "ack", eid, "--metric", "accuracy", "--by", "a"]) == 0
    assert ("accuracy", "country=Peru") in {r.key for r in release.failing(history, evaluation.evaluation)}
    for metric, breakdown in regressions:
        main(["alerts", "ack", eid, "--metric", metric, "--breakdown", breakdown, "--by", "on-call"])
    assert release.failing(history, evaluation.evaluation) == []
    assert main([*args, str(new), "--fail-on", "regression"]) == 0  # the same release again: acknowledged


def _evaluation(history: MetricHistory, model: str):
    row = history.evaluations(model=model).iloc[-1]
    return next(e for e in history.evaluations_of(row["suite"], row["scope"], model=model))


def test_an_inspect_epoch_and_an_items_cluster_are_one_unit(tmp_path):
    """``--cluster question``: three variations of a question are one cluster (40 clusters, not 120); the
    declared metrics say so."""
    path = _items(tmp_path / "new.csv", "new", "2026-11-25", _outcomes(2, 0.9))
    (run,) = imports.item_runs(path, "geo-b", ["country"], None, "question")
    assert {m.cluster for m in run.tracked} == {"cluster"}
    overall = next(m for m in run.metrics if m.metric == "accuracy" and not m.breakdown)
    assert overall.n == QUESTIONS
    (flat,) = imports.item_runs(path, "geo-b", ["country"], None)
    assert next(m for m in flat.metrics if m.metric == "accuracy" and not m.breakdown).n == QUESTIONS * VARIATIONS
    with pytest.raises(imports.ImportError_, match=r"no cluster column 'topic'"):
        imports.item_runs(path, "geo-b", [], None, "topic")


@pytest.mark.postgres
def test_one_suites_decisions_are_serialised_across_processes(postgres_url):
    """Two recorders of one suite at once: the second waits for the first's lock (PostgreSQL advisory lock). No
    wall-clock ordering: the first holds the lock until told to let go, and the second cannot get in before."""
    history = MetricHistory(postgres_url)
    order = []
    held, let_go, second_in = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with history.lock("geomon decisions: geo-b"):
            order.append("first in")
            held.set()
            let_go.wait(30)
            order.append("first out")

    def second() -> None:
        with MetricHistory(postgres_url).lock("geomon decisions: geo-b"):
            order.append("second in")
            second_in.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    assert held.wait(30)
    threads[1].start()
    assert not second_in.wait(1.0)  # still held: the second is waiting (a slow machine only waits longer)
    let_go.set()
    for thread in threads:
        thread.join(30)
    assert order == ["first in", "first out", "second in"]
    with history.lock("geomon decisions: geo-a"):  # another suite's lock is not held
        pass


def test_a_release_never_spends_more_than_its_alpha_on_unplanned_imports(tmp_path, webhook):
    """Three imported suites the plan does not name, each much worse, and two import slots: the first two to
    arrive take the slots and page; the third is decided at α = 0 — shown, saying how to plan it (in its own
    column) — so the release's α is never overspent (mutation caught: every unplanned suite its own slot share)."""
    state, settings = webhook
    plan = verdicts.ReleasePlan(0.05, {"registered": 1.0}, 2)
    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    for i, suite in enumerate(["imp-x", "imp-y", "imp-z"]):
        old = _items(tmp_path / f"{suite}-old.csv", "old", "2026-11-20", _outcomes(30 + i, 0.9))
        new = _items(tmp_path / f"{suite}-new.csv", "new", "2026-11-25", _outcomes(40 + i, 0.9, 0.6), "old")
        _import(history, old, suite, plan, settings)
        _import(history, new, suite, plan, settings)
    decided = _decisions(history)
    alphas = decided.groupby("suite")["alpha"].max().to_dict()
    first = 0.05 / 3 * 0.8
    assert alphas == {"imp-x": pytest.approx(first), "imp-y": pytest.approx(first), "imp-z": 0.0}
    assert sorted({p["body"]["suite"] for p in state["posts"]}) == ["imp-x", "imp-y"]
    stored = history.comparisons()
    spent = stored[stored["look"] == verdicts.LookKind.SPENT]  # why α is 0: its own column, never the note
    assert set(spent["alpha_zero"].str[:38]) == {"no α left: the release's 2 import slot"}
    assert not stored["note"].str.contains("no α left").any()


def test_a_changed_baseline_takes_the_first_look_over_and_one_finding_pages_once(tmp_path, webhook):
    """The successor is decided against its predecessor's first evaluation (nothing worse: nothing sent). A
    stronger evaluation of the predecessor, dated between the two, then becomes its release-order baseline, and
    against it the successor is worse: the first look moves to that pair (its α counted once: a look belongs to the
    release-order pair, not to the decision that arrived first) and it pages. A third baseline, as strong, dated
    later still, takes the look over again: the same finding, no second page. The release's looks never sum above
    the suite's share (the moved look one row, its α counted once)."""
    state, settings = webhook
    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    weak = _outcomes(1, 0.9, 0.6)
    _import(history, _items(tmp_path / "old.csv", "old", "2026-11-20", weak), "geo-b", PLAN, settings)
    new = _items(tmp_path / "new.csv", "new", "2026-11-25", _outcomes(2, 0.9, 0.6), predecessor="old")
    (first,) = _import(history, new, "geo-b", PLAN, settings)
    assert not first.tracked.regressions and state["posts"] == []
    strong = _items(tmp_path / "old2.csv", "old", "2026-11-22", _outcomes(3, 0.9))
    _import(history, strong, "geo-b", PLAN, settings)
    now = release.stored(history, first.tracked.evaluation)
    assert [v.alpha for v in now.verdicts] == pytest.approx([0.05 / 3 * 0.8] * len(now.verdicts))
    assert ("accuracy", "country=Peru") in {v.key for v in now.regressions}
    assert [p["body"]["model"] for p in state["posts"] if p["body"]["kind"] == "regression"] == ["new"]
    assert release.failing(history, now.evaluation)
    stronger = _items(tmp_path / "old3.csv", "old", "2026-11-23", _outcomes(4, 0.9))
    _import(history, stronger, "geo-b", PLAN, settings)
    now = release.stored(history, first.tracked.evaluation)
    assert ("accuracy", "country=Peru") in {v.key for v in now.regressions}
    assert [p["body"]["kind"] for p in state["posts"]] == ["regression"]  # one finding, one page
    looks = history.release_looks("new vs old")
    assert list(looks["look"]) == [verdicts.LookKind.FIRST]
    assert looks["against_evaluation_id"].iloc[0] == history.evaluations(model="old").iloc[-1]["evaluation_id"]
    assert looks["alpha"].sum() == pytest.approx(0.05 / 3 * 0.8)


def _cli(tmp_path: Path, monkeypatch, **extra) -> tuple[list[str], MetricHistory]:
    """``geomon import items`` with a settings file of its own (the bundled models: ``old`` and ``new`` only arrive
    by import) and its store."""
    from geomon_tests.conftest import write_settings

    monkeypatch.delenv("GEOMON_STORE_URL", raising=False)
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = write_settings(tmp_path, tmp_path, **extra)
    args = ["--config", str(path), "import", "items", "--group", "country", "--cluster", "question"]
    return args, MetricHistory(f"sqlite:///{tmp_path / 'store.sqlite'}")


def test_a_releases_looks_are_its_scopes_whichever_evaluation_takes_them_and_each_re_run_is_a_release(
    tmp_path, webhook, monkeypatch
):
    """Through ``geomon import``: a second evaluation of the model dated before its first (arriving late) is the
    release-order pair's now: the first look moves to it (no second first look, no reserve spent), so the release
    ``new vs old`` never spends more than the suite's share; each later re-run of the model, compared with its own
    previous evaluation, is a release of its own (one look each), never a fresh first look inside ``new vs old``.
    Mutation caught: looks counted per evaluation (two first looks in one release: 0.04 > the share 0.025)."""
    from geomon.cli import main

    args, history = _cli(tmp_path, monkeypatch)
    share = 0.05 / 2  # an imported-only model's release: two import slots
    old = _items(tmp_path / "old.csv", "old", "2026-11-20", _outcomes(60, 0.9))
    assert main([*args, "--suite", "geo-r", str(old)]) == 0
    for i, day in enumerate(["2026-11-25", "2026-11-22", "2026-11-26", "2026-11-27"]):
        new = _items(tmp_path / f"new{i}.csv", "new", day, _outcomes(61 + i, 0.9), "old")
        main([*args, "--suite", "geo-r", "--fail-on", "never", str(new)])
    looks = history.release_looks("new vs old")
    assert list(looks["look"]) == [verdicts.LookKind.FIRST], (
        looks
    )  # held by the release-order pair: the 11-22 evaluation's
    assert looks["alpha"].sum() <= share * (1 + 1e-9)
    reruns = history.comparisons(history.evaluations(model="new")["evaluation_id"])
    releases = reruns.drop_duplicates("evaluation_id")["release"].tolist()
    assert len(releases) == len(set(releases)), releases  # no two evaluations share a re-run's release
    for rerun in {r for r in releases if r != "new vs old"}:
        assert rerun.startswith("new re-run ")
        assert history.release_looks(rerun)["alpha"].sum() <= share * (1 + 1e-9)


def test_one_budget_per_release_whatever_the_scopes_slots_and_days_through_geomon_import(
    tmp_path, webhook, monkeypatch, capsys
):
    """A model that only arrives by import reserves nothing for suites that never run for it: its release's α is
    shared by the two import slots (0.025 each, 80 % of it at the first look). Three unplanned suites, each much
    worse, arriving on three days: the first two take the slots, the third is decided at α 0 and says so on the
    terminal; a second item set under the first suite's name (a second scope) finds its share spent. The release's
    looks never sum above α. ``verdicts.shares`` names the third suite: it is planned, and pages. Mutations
    caught: import slots counted per evaluation day; a suite's share spent again per scope; the registered suites
    reserved for an imported-only model."""
    from geomon.cli import main

    state, _ = webhook
    args, history = _cli(tmp_path, monkeypatch, alerts={"webhook_url_env": "GEOMON_TEST_HOOK", "webhook_style": "json"})
    for i, suite in enumerate(["imp-x", "imp-y", "imp-z"]):
        old = _items(tmp_path / f"{suite}-old.csv", "old", "2026-11-20", _outcomes(30 + i, 0.9))
        new = _items(tmp_path / f"{suite}-new.csv", "new", f"2026-11-2{4 + i}", _outcomes(40 + i, 0.9, 0.6), "old")
        assert main([*args, "--suite", suite, str(old)]) == 0
        assert main([*args, "--suite", suite, str(new)]) == (3 if suite != "imp-z" else 0)
    out = capsys.readouterr().out
    assert "α 0: no α left: the release's 2 import slot(s) are taken by imp-x, imp-y" in out
    other = _items(tmp_path / "x2-old.csv", "old", "2026-11-20", _outcomes(50, 0.9), first=500)
    worse = _items(tmp_path / "x2-new.csv", "new", "2026-11-27", _outcomes(51, 0.9, 0.6), "old", first=500)
    assert main([*args, "--suite", "imp-x", str(other)]) == 0
    assert main([*args, "--suite", "imp-x", str(worse)]) == 0
    assert "α 0: no α left: suite imp-x's share covers 1 scope(s) per release" in capsys.readouterr().out
    looks = history.release_looks("new vs old")
    assert list(looks["alpha"]) == pytest.approx([0.05 / 2 * 0.8] * 2 + [0.0, 0.0])
    assert looks["alpha"].sum() <= 0.05
    assert sorted({p["body"]["suite"] for p in state["posts"]}) == ["imp-x", "imp-y"]
    summary = state["posts"][0]["body"]["summary"]  # the claim a page makes, and what the test could see
    assert "a significant worsening, estimated at least the minimum effect 5" in summary
    assert "where a worsening of exactly that size pages with probability" in summary
    # verdicts.shares plans the third suite for a model that only arrives by import: it pages at its share.
    planned, history = _cli(tmp_path / "planned", monkeypatch, verdicts={"shares": {"imp-z": 2}})
    z = [tmp_path / "imp-z-old.csv", tmp_path / "imp-z-new.csv"]
    assert main([*planned, "--suite", "imp-z", str(z[0])]) == 0
    assert main([*planned, "--suite", "imp-z", str(z[1])]) == 3
    assert list(history.release_looks("new vs old")["alpha"]) == pytest.approx([0.05 * 2 / 4 * 0.8])


def test_the_same_files_in_any_order_give_the_same_verdicts_and_exit_codes(tmp_path, monkeypatch, capsys):
    """The predecessor evaluated before and after its successor, and the successor 60 points worse in Peru,
    imported in three orders through ``geomon import``: the same stored verdicts, each decided against the
    predecessor's evaluation made before it (at the first look), and the last import of each order exits 3. A
    decision against the later evaluation, while the earlier is missing, is provisional (the reserve); the
    late predecessor's import that makes the page gates on it."""
    from geomon.cli import main

    files = {
        "old-early": _items(tmp_path / "old1.csv", "old", "2026-11-20", _outcomes(1, 0.9)),
        "new": _items(tmp_path / "new.csv", "new", "2026-11-25", _outcomes(2, 0.9, 0.6), predecessor="old"),
        "old-late": _items(tmp_path / "old2.csv", "old", "2026-11-26", _outcomes(3, 0.9)),
    }
    orders = {
        "release order": ["old-early", "new", "old-late"],
        "late first": ["old-late", "new", "old-early"],
        "successor first": ["new", "old-early", "old-late"],
    }
    seen = {}
    for name, order in orders.items():
        args, history = _cli(tmp_path / name.replace(" ", "-"), monkeypatch)
        codes = [main([*args, "--suite", "geo-b", str(files[f]), "--fail-on", "regression"]) for f in order]
        capsys.readouterr()
        assert codes[-1] == 3, (name, codes)
        if name == "successor first":
            assert codes[1] == 3  # the late predecessor's import made the page: it gates on it
        if name == "late first":
            provisional = history.release_looks("new vs old")
            assert list(provisional["look"]) == [verdicts.LookKind.RESERVE, verdicts.LookKind.FIRST], provisional
        decided = _decisions(history)
        assert np.allclose(decided[decided["model"] == "new"]["alpha"], 0.05 / 2 * 0.8), name
        seen[name] = decided.drop(columns=["release"])
    first = seen.pop("release order")
    for other in seen.values():
        pd.testing.assert_frame_equal(other, first)


def test_a_published_history_takes_the_release_order_first_look_whatever_its_dates(tmp_path):
    """Issue 60's Gapminder case: a published history evaluated the predecessor on a later day than its successor
    (o1 after o3-mini). Its source published every evaluation at once, so no earlier evaluation of the predecessor
    is to come: the release-order pair is final and takes the first look (not the reserve, which left o3-mini vs o1
    "provisional" forever), in either order of arrival. The same files imported as ordinary items files stay
    provisional at the reserve until an earlier predecessor's evaluation arrives. A published history's earlier
    predecessor evaluation arriving later still takes the look over (moved, its α counted once). Mutation caught:
    the exception removed from ``release.provisional`` (the published pair at the reserve: 0.0033, not 0.0133)."""
    settings = verdicts.VerdictSettings(resamples=199, max_resamples=999)
    files = {
        "new": _items(tmp_path / "new.csv", "new", "2026-11-20", _outcomes(2, 0.9, 0.3), predecessor="old"),
        "old-late": _items(tmp_path / "old.csv", "old", "2026-11-26", _outcomes(1, 0.9)),
        "old-early": _items(tmp_path / "old0.csv", "old", "2026-11-18", _outcomes(3, 0.9)),
    }
    runs = {name: imports.item_runs(path, "geo-b", ["country"], settings, "question") for name, path in files.items()}
    share = 0.05 / 3

    def looks(order: list[str], published: bool) -> list[tuple[str, float]]:
        store = tmp_path / f"{'-'.join(order)}-{published}.sqlite"
        history = MetricHistory(f"sqlite:///{store}")
        for name in order:
            imports.record_runs(history, runs[name], settings, plan=PLAN, published_history=published)
        stored = history.comparisons()
        assert set(stored["look"]) == {verdicts.LookKind.FIRST if published else verdicts.LookKind.RESERVE}
        return [(str(r.look), r.alpha) for r in history.release_looks("new vs old").itertuples()]

    first = (verdicts.LookKind.FIRST, pytest.approx(share * 0.8))
    assert looks(["new", "old-late"], published=True) == [first]
    assert looks(["old-late", "new"], published=True) == [first]
    assert looks(["old-late", "new"], published=False) == [(verdicts.LookKind.RESERVE, pytest.approx(share * 0.2))]
    history = MetricHistory(f"sqlite:///{tmp_path / 'old-late-new-True.sqlite'}")
    imports.record_runs(history, runs["old-early"], settings, plan=PLAN, published_history=True)
    taken = history.release_looks("new vs old")
    assert list(taken["look"]) == [verdicts.LookKind.FIRST] and taken["alpha"].sum() == pytest.approx(share * 0.8)
    early = history.evaluations(model="old").iloc[0]["evaluation_id"]
    assert set(history.comparisons(history.evaluations(model="new")["evaluation_id"])["against_evaluation_id"]) == {
        early
    }


def _stored(history: MetricHistory) -> pd.DataFrame:
    """Every stored decision by evaluation date, with its release (a re-run's by its day: its label's id is the
    evaluation's, another in every history) and its look's α and level."""
    evaluations = history.evaluations()[["evaluation_id", "model", "evaluated_at"]]
    rows = history.comparisons().merge(evaluations, on="evaluation_id")
    rows["release"] = rows["release"].str.replace(r" \(\w+\)$", "", regex=True)
    columns = ["evaluated_at", "model", "against", "release", "metric", "breakdown", "verdict", "p_value"]
    columns += ["p_adjusted", "alpha", "level", "family_size", "missing"]
    return rows[columns].sort_values(columns[:6]).reset_index(drop=True)


def test_the_first_look_is_the_release_orders_in_all_24_orders_of_four_files(tmp_path, webhook):
    """Issue 60's four files — the predecessor (11-20), the successor (11-25, Peru 14.2 points worse: Holm-adjusted p
    0.013, between the reserve's 0.005 and the first look's 0.02), a re-run of it (11-26) and an earlier-dated copy
    of it (11-24) — imported through ``imports.record_runs`` (what ``geomon import items`` calls) with the webhook
    announcer, in all 24 orders: the same stored verdicts (the copy, the successor's first evaluation in release
    order, decided against the predecessor at the first look: a regression; the successor and the re-run each a
    re-run of the one before), the same single page and no ``resolved``, the first look held by the copy's pair
    and spent once, and the same exit codes (``import_gate``: the last import exits 3; each evaluation's gate
    0 for the predecessor, 3 for each of the successor's). Mutations caught: the first look to whichever decision
    arrives first (``ReleasePlan.take_look`` taking the reserve when the first is held: the copy arriving last is
    ``watch``, the gate exits 0); findings told per evaluation (the copy pages again, the re-based successor sends
    ``resolved``). About 30 s on this shared machine: each order's history is its prefix's, copied."""
    from geomon.cli.imports import import_gate

    state, alert_settings = webhook
    settings = verdicts.VerdictSettings(resamples=999, max_resamples=9999)  # the production code, fewer flips
    new = _outcomes(8, 0.9, 0.12)
    files = {
        "predecessor": _items(tmp_path / "p.csv", "old", "2026-11-20", _outcomes(1, 0.9)),
        "successor": _items(tmp_path / "s.csv", "new", "2026-11-25", new, predecessor="old"),
        "re-run": _items(tmp_path / "r.csv", "new", "2026-11-26", new, predecessor="old"),
        "earlier copy": _items(tmp_path / "c.csv", "new", "2026-11-24", new, predecessor="old"),
    }
    runs = {name: imports.item_runs(path, "geo-o", ["country"], settings, "question") for name, path in files.items()}
    tell = announce.announcer(alert_settings)
    seen = {}

    def imported(order: tuple[str, ...], store: Path, posts: list, last: int) -> None:
        """Each order as a walk down the tree of orders: an order's history is its prefix's, copied (64 imports
        for the 24 orders, not 96)."""
        history = MetricHistory(f"sqlite:///{store}")
        if len(order) == len(runs):
            looks = history.release_looks("new vs old")
            first = looks[looks["look"] == verdicts.LookKind.FIRST]
            when = history.evaluations().set_index("evaluation_id").loc[first["evaluation_id"], "evaluated_at"]
            series = history.evaluations_of("geo-o", runs["successor"][0].scope, items=False)
            # Each evaluation's gate as a re-import of its file reads it (its stored decisions, nothing new).
            again = [import_gate(history, [imports.Recorded(None, release.stored(history, e), None)], "check")
                     for e in series]  # fmt: skip
            seen[order] = (_stored(history), posts, (last, again), [f"{d:%m-%d}" for d in when], list(looks["look"]))
            return
        for name in (n for n in runs if n not in order):
            child = store.with_name(f"{store.stem}-{len(order)}{name[0]}.sqlite")
            if store.exists():  # SQLite's backup: what its write-ahead log holds too
                with sqlite3.connect(store) as source, sqlite3.connect(child) as copy:
                    source.backup(copy)
            history = MetricHistory(f"sqlite:///{child}")
            state["posts"].clear()
            code = import_gate(history, imports.record_runs(history, runs[name], settings, announcer=tell), "check")
            told = [(p["body"]["kind"], p["body"]["model"], p["body"]["title"]) for p in state["posts"]]
            imported((*order, name), child, posts + told, code)

    imported((), tmp_path / "h.sqlite", [], 0)
    assert len(seen) == 24
    reference = seen.popitem()[1]
    decided, posts, codes, holder, looks = reference
    assert posts == [("regression", "new", "geo-o: new regressed on accuracy (country=Peru)")]
    assert codes == (3, [0, 3, 3, 3]) and holder == ["11-24"] and looks == [verdicts.LookKind.FIRST]
    copy = decided[decided["against"] == "predecessor old"]
    assert set(copy["evaluated_at"].dt.strftime("%m-%d")) == {"11-24"}
    assert copy["alpha"].tolist() == pytest.approx([0.05 / 2 * 0.8] * len(copy))
    peru = copy[(copy["metric"] == "accuracy") & (copy["breakdown"] == "country=Peru")].iloc[0]
    assert peru["verdict"] == verdicts.REGRESSION and 0.005 < peru["p_adjusted"] < 0.02
    for order, (stored, told, exits, held, kinds) in seen.items():
        pd.testing.assert_frame_equal(stored, decided, obj=str(order))
        assert (told, exits, held, kinds) == (posts, codes, holder, looks), order


def test_the_predecessor_evaluated_twice_on_its_successors_day_is_one_baseline_in_every_order(tmp_path):
    """The predecessor evaluated twice on the successor's day (a strong and a weak file) and the successor, imported
    in all 6 orders: the same baseline, verdicts and looks — two evaluations of one day are ordered by their source,
    never by which arrived first (issue 60: 2 of 3 orders differed). Mutation caught: release order broken by the
    time of recording alone."""
    settings = verdicts.VerdictSettings(resamples=999, max_resamples=9999)
    files = {
        "strong": _items(tmp_path / "old-a.csv", "old", "2026-11-25", _outcomes(1, 0.9)),
        "weak": _items(tmp_path / "old-b.csv", "old", "2026-11-25", _outcomes(3, 0.9, 0.6)),
        "successor": _items(tmp_path / "new.csv", "new", "2026-11-25", _outcomes(2, 0.9, 0.6), predecessor="old"),
    }
    runs = {name: imports.item_runs(path, "geo-d", ["country"], settings, "question") for name, path in files.items()}
    seen = []
    for n, order in enumerate(itertools.permutations(runs)):
        history = MetricHistory(f"sqlite:///{tmp_path / f'{n}.sqlite'}")
        for name in order:
            imports.record_runs(history, runs[name], settings)
        against = history.comparisons()["against_evaluation_id"].iloc[0]
        origin = history.evaluations().set_index("evaluation_id").loc[against, "origin"]
        seen.append((order, _stored(history).drop(columns="evaluated_at"), origin))
    for order, decided, origin in seen:
        # Both dated after the successor's source on its day (o > n): the predecessor's first, by source — old-a.
        assert origin == "import:items:old-a.csv", order
        pd.testing.assert_frame_equal(decided, seen[0][1], obj=str(order))


def test_a_re_import_never_turns_the_gate_green_and_an_ack_of_every_breakdown_does(tmp_path, monkeypatch, capsys):
    """The successor's regression against its predecessor stands when the same model is imported again a day
    later (compared with its own previous run: no change): the import still exits 3, naming the evaluation to
    acknowledge, and ``geomon run``'s closing screen lists it. ``geomon alerts ack --breakdown '*'`` (the
    documented form) on the re-import acknowledges the metric's every breakdown where it was decided: the next
    import exits 0. Mutations caught: the gate reading only the evaluation's own verdicts; '*' refused."""
    from geomon.cli import main

    args, history = _cli(tmp_path, monkeypatch)
    outcomes = _outcomes(2, 0.9, 0.6)
    old = _items(tmp_path / "old.csv", "old", "2026-11-20", _outcomes(1, 0.9))
    assert main([*args, "--suite", "geo-b", str(old)]) == 0
    assert (
        main([*args, "--suite", "geo-b", str(_items(tmp_path / "b1.csv", "new", "2026-11-25", outcomes, "old"))]) == 3
    )
    again = _items(tmp_path / "b2.csv", "new", "2026-11-26", outcomes, "old")
    capsys.readouterr()
    assert main([*args, "--suite", "geo-b", str(again)]) == 3
    captured = capsys.readouterr()
    assert "recorded vs previous run: 8 no detectable change" in captured.out  # the re-import's own verdicts
    first = history.evaluations(model="new").iloc[0]["evaluation_id"]
    assert "accuracy (country=Peru) regression -55.8 against predecessor old" in captured.err
    assert f"geomon alerts ack {first}" in captured.err
    assert ("geo-b", "new") in {(s, m) for s, m, _ in views.open_regressions(history, imported_only=True)}
    latest = history.evaluations(model="new").iloc[-1]["evaluation_id"]
    ack = ["--config", args[1], "alerts", "ack", latest, "--breakdown", "*", "--by", "a"]
    assert main([*ack, "--metric", "accuracy"]) == 0
    acks = history.acknowledgements()
    assert set(acks["evaluation_id"]) == {first, latest} and set(acks["breakdown"]) == {"*"}
    still_open = {r[2].metric for r in views.open_regressions(history, imported_only=True)}
    assert still_open == {"accuracy_itt"}  # not acknowledged yet
    assert main([*ack, "--metric", "accuracy_itt"]) == 0
    assert views.open_regressions(history, imported_only=True) == []
    later = _items(tmp_path / "b3.csv", "new", "2026-11-27", outcomes, "old")
    assert main([*args, "--suite", "geo-b", str(later)]) == 0


def test_track_takes_the_suites_lock(tmp_path):
    """``release.track`` records and decides under the suite's lock: while another holder has it (the lock file
    beside the SQLite database, as another process would), an import of that suite waits, and goes on when it is
    let go. Mutation caught: ``track`` not taking the lock."""
    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    runs = imports.item_runs(
        _items(tmp_path / "old.csv", "old", "2026-11-20", _outcomes(1, 0.9)), "geo-b", ["country"], None, "question"
    )
    held, let_go, done = threading.Event(), threading.Event(), threading.Event()

    def holder() -> None:
        with MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}").lock("geomon decisions: geo-b"):
            held.set()
            let_go.wait(30)

    def importer() -> None:
        imports.record_runs(history, runs, plan=PLAN)
        done.set()

    threads = [threading.Thread(target=holder), threading.Thread(target=importer)]
    threads[0].start()
    assert held.wait(30)
    threads[1].start()
    assert not done.wait(1.0)  # waiting for the lock (a slow machine only waits longer)
    assert history.evaluations().empty
    let_go.set()
    for thread in threads:
        thread.join(30)
    assert done.is_set() and len(history.evaluations()) == 1


def test_a_missing_row_still_compares_on_the_shared_items_with_a_warning(tmp_path, monkeypatch, capsys, caplog):
    """The successor's file lacks one of its 240 rows: it is the same benchmark, compared on the 239 items it
    shares with its predecessor's evaluation — the regression pages, the import exits 3 — and the terminal and the
    log say what is missing; in either order. Half the items another set: a new series, nothing compared.
    Mutations caught: the scope keyed on the exact item set (one missing row starting a new series); only the
    model's own and its predecessor's series searched (the reverse order compares nothing)."""
    from geomon.cli import main

    args, history = _cli(tmp_path, monkeypatch)
    old = _items(tmp_path / "old.csv", "old", "2026-11-20", _outcomes(1, 0.9))
    new = _items(tmp_path / "new.csv", "new", "2026-11-25", _outcomes(2, 0.9, 0.6), predecessor="old")
    pd.read_csv(new).drop(index=7).to_csv(new, index=False)
    assert main([*args, "--suite", "geo-b", str(old)]) == 0
    assert main([*args, "--suite", "geo-b", str(new)]) == 3
    out = capsys.readouterr().out
    said = "compared with old's evaluation of 2026-11-20 (239 items shared): 1 of its items missing here, counted"
    assert said in out and said in caplog.text
    assert "vs old: " in out
    half = _items(tmp_path / "half.csv", "new", "2026-11-26", _outcomes(3, 0.9), predecessor="old", first=40)
    assert main([*args, "--suite", "geo-b", str(half)]) == 0
    assert len(set(history.evaluations(suite="geo-b")["scope"])) == 2
    # The other order: the successor's file, one row short, arrives first; its predecessor's full file joins the
    # successor's series, and the late predecessor's decision pages and gates the same way.
    args, history = _cli(tmp_path / "reversed", monkeypatch)
    assert main([*args, "--suite", "geo-b", str(new)]) == 0
    assert main([*args, "--suite", "geo-b", str(old)]) == 3
    assert len(set(history.evaluations(suite="geo-b")["scope"])) == 1


def test_an_absent_item_is_an_unanswered_one_and_fails_the_check(tmp_path, monkeypatch, capsys):
    """Issue 60's case: the successor as good as its predecessor item for item, except that its file leaves out 24
    Peru items the predecessor got right (216 of 240 rows, each its own unit). Each absent item is compared as
    unanswered: ``answered_rate (country=Peru)`` and ``accuracy_itt`` fall, it pages, and the import exits 3 — it
    said "8 no detectable change" and exited 0 when the absent items were left out of the pairing. The missing count
    is stored with the comparisons and named on the terminal; one absent row alone (no regression) still fails
    ``--fail-on check``, not ``--fail-on regression``. Mutations caught: the absent rows not added
    (``declarations.absent_items`` returning its input); the missing count not gating ``--fail-on check``."""
    from geomon.cli import main

    args, history = _cli(tmp_path, monkeypatch)
    args = args[: args.index("--cluster")]  # every row its own unit, as in the issue
    outcomes = _outcomes(1, 0.9)
    old = _items(tmp_path / "old.csv", "old", "2026-11-20", outcomes)
    new = _items(tmp_path / "new.csv", "new", "2026-11-25", outcomes, predecessor="old")
    rows = pd.read_csv(new)
    dropped = rows[(rows["country"] == "Peru") & (rows["correct"] == 1)].index[:24]
    rows.drop(index=dropped).to_csv(new, index=False)
    assert main([*args, "--suite", "geo-m", str(old)]) == 0
    capsys.readouterr()
    assert main([*args, "--suite", "geo-m", str(new)]) == 3
    err = capsys.readouterr().err
    assert "24 of its baseline's items missing" in err
    decided = release.stored(history, history.evaluations_of("geo-m", history.evaluations()["scope"].iloc[0])[-1])
    regressed = {v.key for v in decided.regressions}
    assert ("answered_rate", "country=Peru") in regressed, regressed
    assert {v.missing for v in decided.verdicts} == {24}
    peru = next(vars(v) for v in decided.verdicts if v.key == ("answered_rate", "country=Peru"))
    assert peru["before"] == 100 and peru["after"] == pytest.approx(100 * 96 / 120)
    # One absent row, nothing else changed: no regression, and still a failed check.
    one = _items(tmp_path / "one.csv", "new", "2026-11-26", outcomes, predecessor="old")
    pd.read_csv(one).drop(index=[3]).to_csv(one, index=False)
    args, _ = _cli(tmp_path / "one", monkeypatch)
    args = args[: args.index("--cluster")]
    assert main([*args, "--suite", "geo-m", str(old)]) == 0
    assert main([*args, "--suite", "geo-m", "--fail-on", "regression", str(one)]) == 0
    assert main([*args, "--suite", "geo-m", "--fail-on", "check", str(one)]) == 3


@pytest.mark.postgres
def test_a_releases_slots_are_taken_under_its_own_lock(postgres_url, tmp_path):
    """On PostgreSQL each suite has its own lock, so two unplanned suites of one release can be decided at once:
    the release's plan and looks are read, the look taken and the decision written under the model's release
    lock. While another holder has it, an import of a suite of that release records its evaluation (the suite's
    lock) but takes no look until it is let go. Mutation caught: ``compare_and_decide`` outside the release lock
    (two suites both taking the last slot)."""
    history = MetricHistory(postgres_url)
    old = _items(tmp_path / "old.csv", "old", "2026-11-20", _outcomes(1, 0.9))
    new = _items(tmp_path / "new.csv", "new", "2026-11-25", _outcomes(2, 0.9, 0.6), predecessor="old")
    imports.record_runs(history, imports.item_runs(old, "imp-q", ["country"], None, "question"), plan=PLAN)
    runs = imports.item_runs(new, "imp-q", ["country"], None, "question")
    held, let_go, done = threading.Event(), threading.Event(), threading.Event()

    def holder() -> None:
        with MetricHistory(postgres_url).lock("geomon release: new"):
            held.set()
            let_go.wait(30)

    def importer() -> None:
        imports.record_runs(history, runs, plan=verdicts.ReleasePlan(0.05, {}, 1))
        done.set()

    threads = [threading.Thread(target=holder), threading.Thread(target=importer)]
    threads[0].start()
    assert held.wait(30)
    threads[1].start()
    deadline = time.monotonic() + 30
    while len(history.evaluations(model="new")) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)  # recorded under the suite's lock, which nobody holds
    assert not done.wait(1.0) and history.release_looks("new vs old").empty
    let_go.set()
    for thread in threads:
        thread.join(30)
    assert done.is_set() and list(history.release_looks("new vs old")["look"]) == [verdicts.LookKind.FIRST]


def test_what_the_history_stores_is_what_compare_returns(tmp_path):
    """``release`` reads the baseline, spends the look and stores ``compare``'s verdicts as they are."""
    settings = verdicts.VerdictSettings(resamples=199)
    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    plan = verdicts.ReleasePlan(0.05, {"toy": 1.0}, import_slots=0)
    for model, items in (("old", toy._items(0)), ("new", toy._items(20))):
        figures = release.declared_figures("toy", (toy.ACC,), items)
        run = EvaluationRun("toy", model, predecessor="old" if model == "new" else "")
        out = release.track(history, run, figures, items, (toy.ACC,), settings, plan=plan)
    (old,) = history.evaluations_of("toy", "", model="old")
    _, decided, _ = compare.compare((toy.ACC,), old.items, out.evaluation.items, plan.look("toy"), settings)

    def number(x: float | None) -> float:
        return math.nan if x is None else float(x)

    stored = {r.key: (r.verdict, number(r.p_adjusted), r.mde, r.decidability) for r in out.verdicts}
    assert stored.keys() == {(v.metric, v.breakdown) for v in decided}
    for v in decided:
        verdict, p_adjusted, mde, decidability = stored[(v.metric, v.breakdown)]
        assert verdict == v.verdict and mde == v.mde and decidability == v.decidability
        assert p_adjusted == number(v.p_adjusted) or (math.isnan(p_adjusted) and math.isnan(number(v.p_adjusted)))


def test_a_decision_draws_nothing_of_its_baseline_and_the_plan_reads_what_it_recorded(tmp_path, monkeypatch):
    """Each evaluation's tracked figures are bootstrapped once, when it is recorded; a later decision plans from the
    pair's paired differences (``power.paired_se``) and draws nothing of its baseline. ``geomon plan``, before any
    pair exists, reads the baseline's recorded spreads (``compare.stored_spreads``) — the same numbers a draw from
    its items gives — except where they were recorded under another declaration (another statistic, or the same
    value under another clustering), where it draws them again. Mutations caught: a baseline drawn again by the
    decision (the count); the declaration's digest not compared (a reclustered metric planned from the old
    spread)."""
    from geomon.stats import bootstrap, compare

    settings = verdicts.VerdictSettings(resamples=199)
    plan = verdicts.ReleasePlan(0.05, {"toy": 1.0}, import_slots=0)
    old_items, new_items = toy._items(0), toy._items(20)
    drawn: list[pd.DataFrame] = []
    original = bootstrap._estimates

    def counted(metric, frame, **kw):
        drawn.append(frame)
        return original(metric, frame, **kw)

    monkeypatch.setattr(bootstrap, "_estimates", counted)
    history = MetricHistory(f"sqlite:///{tmp_path / 'a.sqlite'}")
    old = release.track(history, EvaluationRun("toy", "old"), release.declared_figures("toy", (toy.ACC,), old_items),
                        old_items, (toy.ACC,), settings, plan=plan)  # fmt: skip
    bootstrap._DRAWN.clear()  # a later process: nothing drawn in memory
    drawn.clear()
    figures = release.declared_figures("toy", (toy.ACC,), new_items)
    out = release.track(history, EvaluationRun("toy", "new", predecessor="old"), figures, new_items, (toy.ACC,),
                        settings, plan=plan)  # fmt: skip
    assert len(drawn) == 1  # the new evaluation's figures; none of the baseline
    assert all(r.mde == r.mde and r.mde > 0 for r in out.verdicts)
    recorded = history.figures(old.evaluation.evaluation_id)
    stored = compare.stored_spreads((toy.ACC,), recorded)
    assert stored == pytest.approx(compare.baseline_spreads((toy.ACC,), old_items))
    # The same value under another clustering (questions paired into clusters of two): not this metric's spread.
    reclustered = TrackedMetric("acc", Mean("value"), cluster="pair", min_effect=5.0, bounds=(0, 100), by=("group",))
    assert compare.stored_spreads((reclustered,), recorded) is None


def _weak_items(new: bool) -> pd.DataFrame:
    """40 questions in group a, 40 in b, 8 in c, 70 % right; in the new evaluation 30 of b's turn wrong, and in a two
    right turn wrong and one wrong turns right. Against a minimum effect of 1 point every test is weak."""
    group = np.array(["a"] * 40 + ["b"] * 40 + ["c"] * 8)
    value = np.where(np.arange(group.size) % 10 < 7, 100.0, 0.0)
    if new:
        value[np.flatnonzero(group == "b")[:30]] = 0.0
        value[[0, 1, 7]] = [0.0, 0.0, 100.0]
    return pd.DataFrame({"item": [f"q{i}" for i in range(group.size)], "group": group, "value": value})


@pytest.mark.parametrize(
    ("origin", "weak"),
    [
        ("geomon", verdicts.Decidability.UNDERPOWERED_PROFILE),
        ("import:toy:x", verdicts.Decidability.UNDERPOWERED_PUBLISHED),
    ],
)
def test_each_comparisons_decidability_is_stored_in_its_column(tmp_path, origin, weak):
    """What ``decide`` says of each comparison's decidability is stored with it: a page below the stated power, a
    "no detectable change" too weak at the run's profile (or, imported, as published), a group too small to be
    tested. Mutation caught: the column left out of the stored row (every comparison then reads decidable)."""
    from geomon.stats.declarations import TrackedMetric
    from geomon.stats.statistics import Mean

    acc = TrackedMetric("acc", Mean("value"), min_effect=1.0, bounds=(0, 100), by=("group",))
    settings = verdicts.VerdictSettings(resamples=199)
    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    plan = verdicts.ReleasePlan(0.05, {"toy": 1.0}, import_slots=0)
    old, new = EvaluationRun("toy", "old", origin=origin), EvaluationRun("toy", "new", predecessor="old", origin=origin)
    release.track(history, old, [], _weak_items(False), (acc,), settings, plan=plan)
    out = release.track(history, new, [], _weak_items(True), (acc,), settings, plan=plan)
    stored = {r.breakdown: (r.verdict, r.decidability) for r in out.verdicts}
    assert stored == {
        "": (verdicts.REGRESSION, verdicts.Decidability.UNDERPOWERED_REGRESSION),
        "group=a": (verdicts.NO_CHANGE, weak),
        "group=b": (verdicts.REGRESSION, verdicts.Decidability.UNDERPOWERED_REGRESSION),
        "group=c": (verdicts.INSUFFICIENT, verdicts.Decidability.UNDECIDABLE_SAMPLE),
    }
    assert {r.decidability for r in release.failing(history, out.evaluation)} == {
        verdicts.Decidability.UNDERPOWERED_REGRESSION
    }


def test_a_tracked_headline_has_one_definition_its_declared_statistic_over_the_items():
    """The figures recorded for an evaluation are its declarations' estimates over its items, then the figures no
    tracked metric declares; a figure of a tracked metric handed in beside the items (its headline, or one of its
    groups) is refused, naming it, whatever its value. Mutation caught: ``declared_figures`` keeping or replacing
    such a figure instead of refusing it."""
    from geomon.stats import bootstrap, declarations
    from geomon.stats.values import MetricValue

    items = toy._items(20)
    count = MetricValue("questions", 60.0)
    figures = release.declared_figures("toy", (toy.ACC,), items, [count])
    expected = bootstrap.estimates(toy.ACC, items)
    assert [(f.metric, f.breakdown, f.value, f.ci_low, f.ci_high, f.n) for f in figures] == [
        *((e.metric, e.breakdown, e.value, e.ci_low, e.ci_high, e.clusters) for e in expected),
        ("questions", "", 60.0, None, None, None),
    ]
    headline = next(f for f in figures if not f.breakdown)
    for second in (headline, MetricValue("acc", 50.0, "group=b")):
        with pytest.raises(release.TrackingError, match=rf"suite toy: {second.metric}.*one definition"):
            release.declared_figures("toy", (toy.ACC,), items, [count, second])
    assert declarations.undeclared([count, headline, MetricValue("acc", 1.0, "other=x")], (toy.ACC,)) == [
        count,
        MetricValue("acc", 1.0, "other=x"),
    ]


def test_a_serving_change_regression_alert_names_what_changed(tmp_path, webhook):
    """A variant's release (``Settings.serving_changes``, handed to the announcer as `geomon run` hands it) pages
    saying what changed before its numbers; another model's alert does not. Mutation caught: the change not
    passed on to ``regression_alert``."""
    state, settings = webhook
    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    changes = {"new": "weights re-quantized Q4_K_M → Q3_K_S"}
    for path in (
        _items(tmp_path / "old.csv", "old", "2026-11-20", _outcomes(1, 0.9)),
        _items(tmp_path / "new.csv", "new", "2026-11-25", _outcomes(2, 0.9, 0.6), predecessor="old"),
    ):
        runs = imports.item_runs(path, "geo-b", ["country"], verdicts.VerdictSettings(), "question")
        imports.record_runs(history, runs, plan=PLAN, announcer=announce.announcer(settings, changes=changes))
    [post] = [p["body"] for p in state["posts"]]
    assert post["kind"] == "regression" and post["model"] == "new"
    assert post["summary"].startswith("A serving change of old: weights re-quantized Q4_K_M → Q3_K_S. new vs "), post[
        "summary"
    ]
