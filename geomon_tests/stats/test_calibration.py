"""The fast fixed-seed tier of bench/alert_calibration.py: null releases recorded through the production path
(``tracking.track`` for the registered suites; per-item CSV files through ``imports.item_runs`` and
``imports.record_runs`` for imported ones), each suite decided at its share of the release's α, the
announcer posting to a loopback webhook: what the webhook receives is what is counted. A release's
false-alarm promise is α = 0.05 (each suite spends α/8 of it): the count over a few dozen null releases
stays within a bound consistent with that (24 releases: ≤ 2; P(X > 2) < 12 % even at α itself, the suites
here spend 3α/8), and a clustered null imported with its cluster ignored (the mutation) exceeds it: the
bench tells a clustered test from an unclustered one."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "alert_calibration.py"


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


def test_imported_clustered_null_stays_within_alpha_and_ignoring_the_cluster_would_not():
    """Three imported suites, CSV files imported suite by suite on two days, some with the predecessor after
    the successor, under a clustered null (a question's eight prompt variations share a shock in each draw).
    Imported with ``cluster="question"`` the webhook gets at most the bound; the same files imported without
    the cluster (the mutation: clustering ignored, each row its own unit) exceed it."""
    bench = _bench()
    job = {
        "kind": "imported",
        "shock": 3.0,
        "questions": 60,
        "variations": 8,
        "clusters": ("question", ""),
        "seed": 11,
        "resamples": 4999,
        "first": 0,
        "last": 12,
    }
    rows, _ = bench.run_job(job)
    clustered, flat = [r["question"] for r in rows], [r[""] for r in rows]
    _clean(clustered)
    _clean(flat)
    alarms, mutated = sum(r["alarm"] for r in clustered), sum(r["alarm"] for r in flat)
    assert alarms <= 2, f"{alarms} of 12 clustered null releases delivered a regression alert"
    assert mutated > 2 and mutated > alarms, f"ignoring the cluster alarmed in only {mutated} of 12 releases"
