"""The one definition per metric (declared statistics: value, interval, paired test) and the one verdict
engine (Holm, Benjamini–Hochberg, the minimum detectable effect, the sufficiency rule)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from geomon.stats import verdicts
from geomon.stats.declared import (
    DeclarationError,
    Difference,
    ImpactRatio,
    Mean,
    PairedTest,
    Range,
    Ratio,
    TrackedMetric,
    estimates,
    paired_test,
)
from geomon.stats.verdicts import VerdictSettings, decide


def _frame(values, countries, clusters=None):
    return pd.DataFrame(
        {
            "item": [f"q{i}" for i in range(len(values))],
            "value": values,
            "country": countries,
            "cluster": clusters if clusters is not None else [f"q{i}" for i in range(len(values))],
        }
    )


def test_declared_statistics_compute_what_they_say():
    frame = pd.DataFrame(
        {
            "item": ["a", "b", "c", "d"],
            "num": [1.0, 3.0, 0.0, 2.0],
            "den": [2.0, 4.0, 0.0, 2.0],
            "group": ["x", "x", "y", "y"],
            "flag": [True, False, True, False],
        }
    )
    one = lambda s: estimates(TrackedMetric("m", s), frame, resamples=0)[0].value  # noqa: E731
    assert one(Ratio("num", "den")) == pytest.approx(6 / 8)
    # A per-row rate: c (den 0) has none; mean of 0.5, 0.75, 1.0 — not the pooled 6/8.
    assert one(Mean("num", per="den", scale=100)) == pytest.approx(75.0)
    assert one(Range(Mean("num"), "group")) == pytest.approx(2.0 - 1.0)
    assert one(Difference(Mean("num", where=(("flag", True),)), Mean("num", where=(("flag", False),)))) == -2.0
    # Larger-than standard: mean 1.5; x selects b (3 ≥ 1.5) of 2, y selects d of 2 → 0.5 / 0.5.
    assert one(ImpactRatio("num", "group")) == pytest.approx(1.0)
    assert math.isnan(one(Range(Mean("num", where=(("group", "x"),)), "group")))  # one group: no range


def test_an_interval_and_a_sample_from_the_clusters():
    rng = np.random.default_rng(0)
    frame = _frame(rng.binomial(1, 0.6, 300) * 100.0, ["A", "B", "C"] * 100, [f"c{i // 3}" for i in range(300)])
    metric = TrackedMetric("acc", Mean("value"), "cluster", by=("country",))
    overall, *groups = estimates(metric, frame)
    assert overall.clusters == 100 and overall.items == 300 and overall.ci_low < overall.value < overall.ci_high
    assert [g.breakdown for g in groups] == ["country=A", "country=B", "country=C"]
    assert all(g.clusters == 100 and g.items == 100 for g in groups)


def test_identical_evaluations_give_p_one_and_a_planted_drop_is_found():
    rng = np.random.default_rng(1)
    before = _frame(rng.binomial(1, 0.7, 400) * 100.0, ["A", "B", "C", "D"] * 100)
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
    assert decided[""].family_size == 5


def test_duplicated_items_and_missing_columns_are_errors_naming_them():
    frame = _frame([1.0, 0.0, 1.0], ["A", "A", "B"])
    metric = TrackedMetric("acc", Mean("value"), by=("country",))
    with pytest.raises(DeclarationError, match=r"item keys appear more than once \(1: q0\)"):
        paired_test(metric, pd.concat([frame, frame.head(1)]), frame)
    with pytest.raises(DeclarationError, match=r"acc needs column\(s\) \['region'\]"):
        estimates(TrackedMetric("acc", Range(Mean("value"), "region")), frame)


def test_an_undefined_statistic_has_no_p_value():
    """One country on either side: the range is NaN — ``undefined``, never p = 0.001."""
    frame = _frame([1.0] * 40, ["A"] * 40)
    (test,) = paired_test(TrackedMetric("gap", Range(Mean("value"), "country"), higher_is_worse=True), frame, frame)
    assert test.p_value is None and test.note == "undefined before"
    (verdict,) = decide([test], VerdictSettings())
    assert verdict.verdict == verdicts.UNDEFINED and verdict.family_size == 0


def _test(p, change, *, min_effect=1.0, clusters=100, higher_is_worse=False):
    return PairedTest("m", "", 50.0, 50.0 + change, change, p, 1.0, clusters, clusters, higher_is_worse, min_effect)


def test_the_family_is_decided_by_holm_and_bh():
    """p = 0.01 alone is a regression; in a family of ten it is not (Holm needs 0.005), but BH flags it as
    watch when its neighbours are small too. A significant worsening smaller than the minimum effect is a
    regression below the alert threshold; a significant improvement an improvement."""
    settings = VerdictSettings()
    assert decide([_test(0.01, -5)], settings)[0].verdict == verdicts.REGRESSION
    family = [_test(0.01, -5), _test(0.012, -5), _test(0.015, 5), *[_test(0.9, 0.1)] * 7]
    decided = decide(family, settings)
    assert [v.verdict for v in decided[:3]] == [verdicts.WATCH] * 3
    assert decided[0].p_adjusted == pytest.approx(0.1) and decided[0].family_size == 10
    small = decide([_test(0.001, -0.5, min_effect=1.0), _test(0.001, 3.0)], settings)
    assert [v.verdict for v in small] == [verdicts.BELOW_THRESHOLD, verdicts.IMPROVEMENT]
    assert not small[0].alerts
    few = decide([_test(0.0001, -20, clusters=12)], settings)[0]
    assert few.verdict == verdicts.INSUFFICIENT and "n = 12 < 30" in few.note


def test_holm_matches_its_definition():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted: 0.005×4, 0.01×3, 0.03×2, 0.04×1 → 0.02, 0.03, 0.06, 0.06 (monotone)
    assert list(verdicts.holm(p)) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_the_minimum_detectable_effect_and_the_power_it_claims():
    mde = verdicts.minimum_detectable_effect(2.0, 0.05, 0.8)
    assert mde == pytest.approx((1.959964 + 0.841621) * 2.0, rel=1e-5)
    assert verdicts.power_at(mde, 2.0, 0.05) == pytest.approx(0.8, abs=1e-3)


def test_settings_are_checked():
    with pytest.raises(ValueError, match=r"verdicts\.alpha: 1\.5 must lie strictly between 0 and 1"):
        VerdictSettings(alpha=1.5)
    with pytest.raises(ValueError, match=r"verdicts\.resamples: 10 is too few"):
        VerdictSettings(resamples=10)


class _Broken:
    """A statistic with a bug: its error must reach the caller, never read as "no items in common"."""

    def columns(self):
        return {"value"}

    def weighted(self, frame, weights):
        raise ZeroDivisionError("a bug in the statistic")


def test_an_error_in_a_statistic_is_not_swallowed():
    frame = _frame([1.0, 0.0] * 20, ["A", "B"] * 20)
    with pytest.raises(ZeroDivisionError, match="a bug in the statistic"):
        paired_test(TrackedMetric("broken", _Broken()), frame, frame)
