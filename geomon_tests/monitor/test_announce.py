"""Everyone told, once (``monitor/announce.py``): a regression is sent when it is first decided and then read back
as already alerted from the record of what was sent, never assumed; an attempt that reached nobody, or whose every
channel failed, is tried again; an acknowledged regression is not sent. The decision itself is made as ``geomon
import`` makes it; here ``announce`` is called on its own, as ``release.track`` calls it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from geomon.monitor import alerts, announce, imports
from geomon.monitor.history import Evaluation, MetricHistory
from geomon.stats import verdicts
from geomon.stats.values import MetricKey
from geomon_tests.loopback import Webhook, serve

QUESTIONS = 80
PLAN = verdicts.ReleasePlan(0.05, {"geo": 1.0}, 0)


def _items(path: Path, model: str, when: str, seed: int, peru: float, predecessor: str = "") -> Path:
    """One model's outcomes on ``QUESTIONS`` questions, half of them Peru's (correct at rate ``peru``), the
    others Kenya's (correct at 0.9)."""
    rng = np.random.default_rng(seed)
    rows = [
        {
            "model": model,
            "item": f"q{q}",
            "country": "Peru" if q % 2 == 0 else "Kenya",
            "evaluated_at": when,
            "correct": int(rng.random() < (peru if q % 2 == 0 else 0.9)),
            "predecessor": predecessor,
        }
        for q in range(QUESTIONS)
    ]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.fixture
def decided(tmp_path) -> tuple[MetricHistory, Evaluation, Evaluation]:
    """A release decided with no one told: ``new`` (Peru's questions much worse) against its predecessor ``old``."""
    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    found = []
    for path in (
        _items(tmp_path / "old.csv", "old", "2026-11-20", seed=1, peru=0.9),
        _items(tmp_path / "new.csv", "new", "2026-11-25", seed=2, peru=0.3, predecessor="old"),
    ):
        runs = imports.item_runs(path, "geo", ["country"], verdicts.VerdictSettings(), "")
        (recorded,) = imports.record_runs(history, runs, plan=PLAN)
        assert recorded.tracked.told == {}  # no announcer: nothing told yet
        found.append(recorded.tracked.evaluation)
    old, new = found
    assert _regressions(history, new), "the fixture's release should regress"
    return history, old, new


def _regressions(history: MetricHistory, evaluation: Evaluation) -> set[tuple[str, str]]:
    rows = history.comparisons([evaluation.evaluation_id])
    regressed = rows[rows["verdict"] == verdicts.REGRESSION]
    return set(zip(regressed["metric"], regressed["breakdown"].fillna(""), strict=True))


def _recorded(history: MetricHistory, evaluation: Evaluation) -> pd.DataFrame:
    return history.deliveries([evaluation.evaluation_id])


def test_a_regression_is_sent_once_then_read_back_as_already_alerted(decided, webhook):
    """The first call sends one message naming every regressed comparison and records one row per comparison and
    channel; the second sends nothing and says when it was sent, from that record. Mutation caught: "already
    alerted" not read from the record (a second page on every re-run or re-decision)."""
    history, old, new = decided
    state, settings = webhook
    first = announce.announce(history, [old, new], settings)
    assert first == {old.evaluation_id: [], new.evaluation_id: ["webhook: sent"]}
    [post] = [p["body"] for p in state["posts"]]
    assert (post["kind"], post["suite"], post["model"]) == ("regression", "geo", "new")
    assert "country=Peru" in post["title"]
    record = _recorded(history, new)
    assert set(zip(record["metric"], record["breakdown"].fillna(""), strict=True)) == _regressions(history, new)
    assert set(record["kind"]) == {"regression"} and set(record["outcome"]) == {"sent"}
    assert set(record["channel"]) == {"webhook"} and len(record) == len(_regressions(history, new))
    assert record["message"].str.contains("country=Peru").all()

    again = announce.announce(history, [new], settings)
    [line] = again[new.evaluation_id]
    assert line.startswith("already alerted: webhook at ") and line.endswith(" UTC")
    assert len(state["posts"]) == 1 and len(_recorded(history, new)) == len(record)  # nothing sent, nothing added


def test_an_alert_that_reached_nobody_or_failed_everywhere_is_tried_again(decided, webhook, monkeypatch):
    """No channel configured, then a channel that answers HTTP 500: each attempt is recorded with its outcome and
    neither counts as told, so the next call sends; once sent, it is not sent again. Mutation caught: a failed or
    channel-less attempt taken for a delivery (the regression never reaches anyone)."""
    history, _, new = decided
    state, settings = webhook
    monkeypatch.delenv("GEOMON_TEST_HOOK")
    assert announce.announce(history, [new], settings) == {new.evaluation_id: [alerts.NO_CHANNEL]}
    nowhere = _recorded(history, new)
    assert set(nowhere["channel"]) == {"none"} and nowhere["outcome"].str.startswith("not sent: ").all()

    with serve(Webhook, state) as url:
        monkeypatch.setenv("GEOMON_TEST_HOOK", f"{url}/hook")
        state["status"] = 500
        failed = announce.announce(history, [new], settings)[new.evaluation_id]
        assert failed == ["webhook: failed: webhook answered HTTP 500"]
        state["status"] = 200
        assert announce.announce(history, [new], settings)[new.evaluation_id] == ["webhook: sent"]
        assert announce.announce(history, [new], settings)[new.evaluation_id][0].startswith("already alerted: ")
    assert len(state["posts"]) == 2  # the failed attempt and the delivery; nothing after it
    outcomes = _recorded(history, new).drop_duplicates("sent_at")["outcome"].tolist()
    assert outcomes == ["not sent: no channel configured", "failed: webhook answered HTTP 500", "sent"]


def test_an_acknowledged_regression_is_left_out_of_the_message(decided, webhook):
    """A regression acknowledged before anyone was told is left out of the message and the record. Mutation
    caught: acknowledgements ignored by the announcer (an operator paged for what they have already seen)."""
    history, _, new = decided
    state, settings = webhook
    regressed = sorted(_regressions(history, new))
    assert len(regressed) >= 2, regressed  # the overall figure and Peru's
    (metric, breakdown), rest = regressed[0], set(regressed[1:])
    history.acknowledge(new.evaluation_id, "on-call", metric, "seen", breakdown)
    assert announce.announce(history, [new], settings)[new.evaluation_id] == ["webhook: sent"]
    record = _recorded(history, new)
    assert set(zip(record["metric"], record["breakdown"].fillna(""), strict=True)) == rest
    [post] = [p["body"] for p in state["posts"]]
    assert str(MetricKey(metric, breakdown)) not in post["title"].split(" regressed on ")[1].split(", ")


def test_with_every_regression_acknowledged_nothing_is_sent(decided, webhook):
    """Nothing sent, nothing recorded, nothing said."""
    history, _, new = decided
    state, settings = webhook
    history.acknowledge(new.evaluation_id, "on-call")
    assert announce.announce(history, [new], settings) == {new.evaluation_id: []}
    assert state["posts"] == [] and _recorded(history, new).empty


def test_what_was_told_reads_as_a_sentence_and_a_table():
    """The import's ``alerts`` entry: who was told what, by model and date, never a record keyed by evaluation
    id."""
    from datetime import UTC, datetime

    from geomon.monitor.announce import told_summary
    from geomon.monitor.release import Tracked

    def evaluation(uid: str, model: str, day: int) -> Evaluation:
        return Evaluation(uid, "gapminder", model, "", datetime(2025, 3, day, tzinfo=UTC))

    o3_mini, o1 = evaluation("9f1c-uuid", "o3-mini", 6), evaluation("77ab-uuid", "o1", 1)
    decided = [
        Tracked(o3_mini, told={"9f1c-uuid": ["webhook: sent", "none: not sent: no channel configured"]}),
        Tracked(o1, told={"77ab-uuid": []}),
    ]
    text = told_summary(decided)
    sentence, table = text.split("\n\n")
    assert sentence.startswith("2 alert outcome(s) for 1 model(s): 1 sent, 1 reached no channel")
    assert "uuid" not in text
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    assert rows == [
        ["o3-mini", "2025-03-06", "gapminder", "webhook: sent"],
        ["o3-mini", "2025-03-06", "gapminder", "none: not sent: no channel configured"],
    ]
    assert told_summary([Tracked(o1)]) == "No alert was due."
