"""The fast fixed-seed tier of bench/alert_calibration.py: null releases recorded through the production path
(``release.track`` for the registered suites; per-item CSV files through ``imports.item_runs`` and
``imports.record_runs`` for imported ones), each suite decided at its look's α, the
announcer posting to a loopback webhook: what the webhook receives is what is counted. A release's
false-alarm promise is α = 0.05 (each suite spends α/8 of it): the count over a few dozen null releases
stays within a bound consistent with that (24 releases: ≤ 2; P(X > 2) < 12 % even at α itself, the suites
here spend 3α/8), and a clustered null imported with its cluster ignored (the mutation) exceeds it: the
bench tells a clustered test from an unclustered one. BorderLines' rows under a clustered null (a territory's
queries share a shock) keep standard errors that fit their changes only when clustered on the territory. And one
release of every tier the bench reports runs, Gapminder included, each suite's rows made by its own ``items()``
from simulated answers (so a column a new declaration needs cannot go missing from the bench unnoticed)."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import numpy as np
import pytest

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


# The sizes the fast tiers draw at (the default profile's before it was fitted, 2026-11-26): their verdicts rest on
# the clustering and the correction, not on the size; `bench/alert_calibration.py` runs today's default profile.
FAST_SIZES = {"worldbench": 40, "borderlines": 60, "gapminder": 40, "quench": 40, "saged": 30, "blend": 8}


def test_registered_null_releases_rarely_alarm():
    """The suites whose comparisons are testable at the fast sizes (the others' samples are insufficient and
    never page), recorded with release.track in shuffled order across midnight."""
    bench = _bench()
    job = {
        "kind": "registered",
        "size": FAST_SIZES,
        "suites": ("worldbench", "borderlines", "blend"),
        "seed": 11,
        "resamples": 4999,
        "first": 0,
        "last": 24,
    }
    rows = [r[bench.DECLARED] for r in bench.run_job(job)[0]]
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
        "shape": (60, 8),
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


def test_borderlines_clustered_null_needs_its_territory_clusters():
    """BorderLines at 60 territories under a clustered null (every rate of a territory, its queries' in
    every language included, moved by a shock they share, drawn afresh per model), recorded with its
    declarations and again with every row its own unit. Its pooled query metrics (every claimant language's
    concurrence, every query's answer rate) have standard errors that fit the changes (mean squared z about 1)
    only when clustered on the territory; ignoring it (the mutation) makes them too small. Alarms are too rare
    here (a territory has four queries) to tell the two apart in a fast test: the z-scores can."""
    bench = _bench()
    job = {
        "kind": "registered",
        "suites": ("borderlines",),
        "size": FAST_SIZES,
        "shock": bench.REGISTERED_SHOCK,
        "clusters": (bench.DECLARED, "item"),
        "seed": 11,
        "resamples": 4999,
        "first": 0,
        "last": 16,
    }
    rows, _ = bench.run_job(job)
    pooled = [("borderlines", "claimant_concurrence"), ("borderlines", "answered_rate")]
    z2 = {c: np.mean([r[c]["z"][key] ** 2 for r in rows for key in pooled]) for c in job["clusters"]}
    _clean([r[bench.DECLARED] for r in rows])
    assert z2[bench.DECLARED] < 1.4, f"clustered on the territory, mean squared z {z2[bench.DECLARED]:.2f}"
    assert z2["item"] > 1.4, f"each row its own unit, mean squared z only {z2['item']:.2f}"


ALPHA = 0.05


@pytest.fixture(scope="module")
def every_tier():
    """One release of every tier (two of the planted ones), at the fast sizes: {tier: [rows by cluster]}."""
    bench = _bench()
    releases = dict.fromkeys(bench.QUICK, 1) | {"planted": 2}
    args = argparse.Namespace(seed=3, resamples=999, **releases)
    tiers = bench.tiers_of(args, 1, FAST_SIZES)
    return bench, {tier: [row for job in jobs for row in bench.run_job(job)[0]] for tier, jobs in tiers.items()}


def test_one_release_of_every_tier_runs_through_the_product_path(every_tier):
    """Every tier the bench reports records its release, each suite decided and nothing lost between the
    history and the webhook; the whole release has all its decisions (BorderLines on three scopes, two
    imports); two late predecessor evaluations decide the successor on both; the planted comparisons state an
    MDE and a planned standard error a claimed power is computed from."""
    bench, results = every_tier
    expected = set(bench.tiers_of(argparse.Namespace(seed=3, resamples=999, **dict.fromkeys(bench.QUICK, 1)), 1))
    assert set(results) == expected and all(results.values())
    registered = set(FAST_SIZES)
    for tier, suites in (("default", registered), ("paper", registered), ("late twice", registered)):
        rows = [r[bench.DECLARED] for r in results[tier]]
        assert all(set(r["family_sizes"]) == suites for r in rows), tier
    whole = results["scopes"][0][bench.DECLARED]
    assert set(whole["family_sizes"]) == registered | set(bench.IMPORTED[:2])
    assert whole["decisions"] == len(registered) + 2 + 2  # BorderLines decided on each of its three scopes
    assert all(r[bench.DECLARED]["late"] for r in results["late twice"])
    assert {"gapminder"} <= set(results["clustered"][0]["item"]["family_sizes"])
    assert set(results["imported only"][0]["question"]["family_sizes"]) == {bench.COUNTRY_SUITE}
    for tier, cluster in (("planted", bench.DECLARED), ("imported only, planted", "question")):
        for row in (r[cluster] for r in results[tier]):
            target = row["target"]
            assert np.isfinite(target["planned_se"]) and target["planned_se"] > 0, tier
            assert row["target_verdict"], tier
    for rows in results.values():
        for by_cluster in rows:
            for row in by_cluster.values():
                assert row["undelivered"] == 0 and row["unstored"] == 0


def test_a_whole_release_spends_at_most_alpha(every_tier):
    """Six suites, BorderLines on three scopes and two imported suites: the α their decisions were taken at sums
    to at most the release's α: one budget per release, fixed at its first decision (mutation: a share spent per
    scope or per import fails it)."""
    bench, results = every_tier
    spent = results["scopes"][0][bench.DECLARED]["spent"]
    assert spent <= ALPHA * (1 + 1e-9), f"the release's decisions were taken at α {spent:.4g} in all"


def test_claimed_power_reads_the_stated_mde(capsys):
    """The claimed power is the stated MDE's: at the MDE itself, the power the MDE is stated at (0.8), whatever
    the new data's null standard error (here half the planned one: read instead, it would claim 0.99); and a
    measured power far below the claim is printed as such."""
    bench = _bench()
    level = 0.05 / 8 / 20
    se = bench.stated_se(4.0, level)
    assert bench.power.power_at(4.0, se, level) == pytest.approx(0.8, abs=1e-6)
    assert np.isnan(bench.stated_se(float("nan"), level))
    target = {"se": se / 2, "planned_se": se, "level": level, "family_size": 20, "alpha": 0.05 / 8, "mde": 4.0}
    target |= {"min_effect": 1.0}  # below the MDE: the chance of a page at the MDE is its power
    row = {"target_alerted": False, "target_verdict": "no detectable change", "suites": [], "late": False}
    row |= {"undelivered": 0, "unstored": 0, "about_old": 0, "resolved": 0}
    rows = [row | {"target": target | {"change": -4.0, "power": 0.5}}] * 20
    bench.report_planted("planted", "s", "m", rows, -4.0, 0.0)
    printed = capsys.readouterr().out
    assert "claimed by the stated MDE 0.80" in printed
    assert "POWER BELOW CLAIM: measured 0.00" in printed
    # A change of exactly the minimum effect (here the MDE): a page needs the estimate at least that too, so the
    # claim is ½, as the alert says (page_probability), not the test's power. Mutation caught: claiming power_at.
    rows = [row | {"target": target | {"min_effect": 4.0, "change": -4.0, "power": 0.8}}] * 20
    bench.report_planted("planted", "s", "m", rows, -4.0, 0.0)
    assert "claimed by the stated MDE 0.50" in capsys.readouterr().out
    assert bench.power.page_chance(4.0, se, level, 4.0) == pytest.approx(bench.power.page_probability(0.8))
