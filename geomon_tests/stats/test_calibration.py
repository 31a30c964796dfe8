"""The fast fixed-seed tier of bench/alert_calibration.py: null releases recorded through the production path
(``tracking.track`` for the registered suites; per-item CSV files through ``imports.item_runs`` and
``imports.record_runs`` for imported ones), each suite decided at its share of the release's α, the
announcer posting to a loopback webhook: what the webhook receives is what is counted. A release's
false-alarm promise is α = 0.05 (each suite spends α/8 of it); the count over a few dozen null releases
stays within a bound consistent with that, and the same releases decided at the full α per suite exceed it
(the bench can tell the plan's shares from their absence)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from geomon.stats import verdicts

BENCH = Path(__file__).resolve().parents[2] / "bench" / "alert_calibration.py"
RELEASES = 32
BOUND = 3  # false alarms allowed in RELEASES null releases: 5 % of 32 is 1.6, P(X > 3) < 8 % even at α itself


def _bench():
    spec = importlib.util.spec_from_file_location("alert_calibration", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _clean(rows):
    """The webhook received exactly what the history stored, and only about successors."""
    assert sum(r["undelivered"] for r in rows) == 0
    assert sum(r["unstored"] for r in rows) == 0
    assert sum(r["about_old"] for r in rows) == 0
    assert any(r["late"] for r in rows) and not all(r["late"] for r in rows)


def test_registered_null_releases_rarely_alarm():
    """The suites whose comparisons are testable at `geomon run`'s default sizes (the others' samples are
    insufficient and never page), recorded with tracking.track in shuffled order across midnight."""
    bench = _bench()
    job = {
        "kind": "registered",
        "size": "default",
        "suites": ("worldbench", "borderlines", "blend"),
        "seed": 11,
        "resamples": 4999,
        "first": 0,
        "last": 24,
    }
    rows, _ = bench.run_job(job)
    _clean(rows)
    assert {"worldbench", "borderlines", "blend"} <= set().union(*(r["family_sizes"] for r in rows))
    alarms = sum(r["alarm"] for r in rows)
    assert alarms <= 2, f"{alarms} of 24 null releases delivered a regression alert"


@pytest.fixture(scope="module")
def imported_job():
    bench = _bench()
    job = {
        "kind": "imported",
        "shock": bench.SHOCK,  # the clustered null: a question's variations share a shock in each draw
        "clusters": ("question",),
        "seed": 11,
        "resamples": 4999,
        "first": 0,
        "last": RELEASES,
    }
    return bench, job


def test_imported_null_releases_stay_within_alpha_and_would_not_at_full_alpha(imported_job, monkeypatch):
    """Three imported suites, suite by suite, on two days, some with the predecessor after the successor: the
    clustered null stays within the bound; decided at the full α per suite (the mutation: no α-sharing) the
    same releases exceed it."""
    bench, job = imported_job
    rows, _ = bench.run_job(job)
    shared = [r["question"] for r in rows]
    _clean(shared)
    alarms = sum(r["alarm"] for r in shared)
    assert alarms <= BOUND, f"{alarms} of {RELEASES} null releases delivered a regression alert"

    monkeypatch.setattr(verdicts.ReleasePlan, "share", lambda plan, suite: plan.alpha)
    rows, _ = bench.run_job(job)
    mutated = sum(r["question"]["alarm"] for r in rows)
    assert mutated > BOUND, f"at the full α per suite only {mutated} of {RELEASES} releases alarmed"
    assert mutated > alarms
