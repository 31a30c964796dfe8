"""The paired sign-flip test: exact over clusters, refined near a threshold, p = 1 on identical evaluations, no
p-value for an undefined statistic, errors not swallowed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from geomon.stats import signflip, verdicts
from geomon.stats.declarations import TrackedMetric
from geomon.stats.signflip import Precision, paired_test
from geomon.stats.statistics import Mean, Range
from geomon.stats.verdicts import VerdictSettings, decide
from geomon_tests.stats.frames import item_frame


def test_identical_evaluations_give_p_one_and_a_planted_drop_is_found():
    rng = np.random.default_rng(1)
    before = item_frame(rng.binomial(1, 0.7, 400) * 100.0, ["A", "B", "C", "D"] * 100)
    metric = TrackedMetric("acc", Mean("value"), min_effect=5.0, by=("country",))
    same = paired_test(metric, before, before.copy(), resamples=999)
    assert all(t.p_value == 1.0 and t.change == 0.0 for t in same)
    after = before.copy()
    drop = (after["country"] == "A") & (after["value"] == 100) & (rng.random(400) < 0.6)
    after.loc[drop, "value"] = 0.0
    tests = {t.breakdown: t for t in paired_test(metric, before, after, resamples=1999)}
    assert tests["country=A"].change < -30 and tests["country=A"].p_value < 0.001
    assert tests["country=B"].p_value == 1.0
    decided = {v.breakdown: v for v in decide(list(tests.values()), VerdictSettings())}
    assert decided["country=A"].verdict == verdicts.REGRESSION and decided["country=A"].change < 0
    assert decided["country=B"].verdict == verdicts.NO_CHANGE and decided["country=B"].clusters == 100
    # B, C and D unchanged (no cluster differs: p = 1 both ways) leave the family: the overall figure and A's.
    assert decided[""].family_size == 2 and decided["country=B"].note == verdicts.UNCHANGED_NOTE


def test_an_undefined_statistic_has_no_p_value():
    """One country on either side: the range is NaN — ``undefined``, never p = 0.001."""
    frame = item_frame([1.0] * 40, ["A"] * 40)
    (test,) = paired_test(TrackedMetric("gap", Range(Mean("value"), "country"), higher_is_worse=True), frame, frame)
    assert test.p_value is None and test.note == "undefined before"
    (verdict,) = decide([test], VerdictSettings())
    assert verdict.verdict == verdicts.UNDEFINED and verdict.family_size == 0


def _clustered(shifts, size=5):
    """Clusters of ``size`` identical items (a shock shared by a cluster): each cluster's value moves by its
    shift."""
    rows = [(f"c{c}-{i}", f"c{c}", shift) for c, shift in enumerate(shifts) for i in range(size)]
    before = pd.DataFrame({"item": [r[0] for r in rows], "cluster": [r[1] for r in rows], "value": 50.0})
    after = before.assign(value=[50.0 + r[2] for r in rows])
    return before, after


def test_the_sign_flip_test_is_exact_over_clusters():
    """Ten of twelve clusters worse: the exact one-sided p is P(Binomial(12, ½) ≥ 10) = 79/4096 over the 2^12
    flips of whole clusters. Mutation caught: flipping items instead of clusters (60 items: p ≈ 1e-7)."""
    before, after = _clustered([-10.0] * 10 + [10.0] * 2)
    metric = TrackedMetric("score", Mean("value"), "cluster")
    (test,) = paired_test(metric, before, after)
    assert test.exact and test.null_size == 4096
    assert test.p_value == pytest.approx(79 / 4096, abs=1e-12)
    assert test.p_better == pytest.approx(1 - (12 + 1) / 4096, abs=1e-12)  # P(Binomial(12, ½) ≤ 10)
    items = TrackedMetric("score", Mean("value"), "item")
    (unclustered,) = paired_test(items, before, after)
    assert unclustered.p_value < 0.001  # the same data with each item its own unit: wrongly confident


def test_p_values_near_a_threshold_are_computed_again_with_more_flips():
    rng = np.random.default_rng(3)
    before, after = _clustered(list(rng.normal(-1.0, 5.0, 40)), size=2)
    metric = TrackedMetric("score", Mean("value"), "cluster")
    (coarse,) = paired_test(metric, before, after, resamples=999)
    assert not coarse.exact and coarse.null_size == 999
    precise = Precision(thresholds=(coarse.p_value,), max_resamples=20_000)
    (fine,) = paired_test(metric, before, after, resamples=999, precision=precise)
    assert fine.null_size == 20_000
    (far,) = paired_test(metric, before, after, resamples=999, precision=Precision(thresholds=(0.9999,)))
    assert far.null_size == 999


class _Broken:
    """A statistic with a bug: its error must reach the caller, never read as "no items in common"."""

    def columns(self):
        return {"value"}

    def weighted(self, frame, weights):
        raise ZeroDivisionError("a bug in the statistic")


def test_an_error_in_a_statistic_is_not_swallowed():
    frame = item_frame([1.0, 0.0] * 20, ["A", "B"] * 20)
    with pytest.raises(ZeroDivisionError, match="a bug in the statistic"):
        paired_test(TrackedMetric("broken", _Broken()), frame, frame)


def test_a_value_read_back_as_another_number_type_is_not_a_difference():
    """The clusters a sign-flip test enumerates are those whose rows differ: a value recorded as 100 and read back
    from the history as 100.0 is the same value (compared as text it made every cluster "differ", and a test that
    could be exact fell back to random flips when decided again). Text still compares as text."""
    metric = TrackedMetric("acc", Mean("value"), by=("group",))
    old = pd.DataFrame({"item": ["a", "b", "c"], "value": [100, 0, 100], "group": ["x", "y", "z"]})
    new = pd.DataFrame({"item": ["a", "b", "c"], "value": [100.0, 0.0, 0.0], "group": ["x", "y", "q"]})
    assert signflip._differing_rows(metric, old, new).tolist() == [False, False, True]
    assert not signflip._differing_rows(metric, old, old.astype({"value": float})).any()
