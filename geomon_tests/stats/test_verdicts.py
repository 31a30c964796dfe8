"""The one definition per metric (declared statistics: value, interval, paired test) and the one verdict
engine (Holm, Benjamini–Hochberg, the minimum detectable effect, the sufficiency rule)."""

from __future__ import annotations

import math
from dataclasses import replace
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

from geomon.stats import power, sufficiency, verdicts
from geomon.stats.declared import (
    DeclarationError,
    Difference,
    ImpactRatio,
    Mean,
    PairedTest,
    Precision,
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
    # A tracked gap is its size (BorderLines' |Con − Non|): the same whichever side is ahead.
    flagged, unflagged = Mean("num", where=(("flag", True),)), Mean("num", where=(("flag", False),))
    assert one(Difference(flagged, unflagged, absolute=True)) == one(Difference(unflagged, flagged)) == 2.0
    # A gap rests on its smaller side: 40 clusters with the flag, 3 without → 3 (a mutation counting both: 43).
    sides = pd.DataFrame({"item": [f"c{i}" for i in range(43)], "num": 1.0, "flag": [True] * 40 + [False] * 3})
    gap = TrackedMetric("gap", Difference(flagged, unflagged, absolute=True))
    assert estimates(gap, sides, resamples=0)[0].clusters == 3
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
    # B, C and D unchanged (no cluster differs: p = 1 both ways) leave the family: the overall figure and A's.
    assert decided[""].family_size == 2 and decided["country=B"].note == verdicts.UNCHANGED_NOTE


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


def _test(p, change, *, min_effect=1.0, clusters=100, higher_is_worse=False, p_better=None, se=1.0, differing=None):
    """A paired test: ``p`` one-sided toward worse, ``p_better`` toward better (1 − p unless given); ``differing``:
    the clusters that differ (0: none, the one case that leaves the Holm family)."""
    better = 1.0 - p if p_better is None else p_better
    return PairedTest(
        "m", "", 50.0, 50.0 + change, change, p, se, clusters, clusters, higher_is_worse, min_effect, p_better=better,
        differing=differing,
    )  # fmt: skip


def test_one_suite_is_decided_by_holm_and_bh_on_one_sided_p_values():
    """p = 0.01 toward worse alone is a regression; among ten comparisons it is not (Holm needs 0.005), but BH
    flags it as watch when its neighbours are small too. A significant worsening smaller than the minimum
    effect is a regression below the alert threshold; a significant change for the better an improvement,
    shown with its own one-sided p-value."""
    settings = VerdictSettings()
    assert decide([_test(0.01, -5)], settings)[0].verdict == verdicts.REGRESSION
    family = [_test(0.01, -5), _test(0.012, -5), _test(0.99, 5, p_better=0.015), *[_test(0.5, 0.1)] * 7]
    decided = decide(family, settings)
    assert [v.verdict for v in decided[:3]] == [verdicts.WATCH, verdicts.WATCH, verdicts.NO_CHANGE]
    assert decided[0].p_adjusted == pytest.approx(0.1) and decided[0].family_size == 10
    assert decided[2].p_value == 0.015  # what is shown is the claim the change makes: toward better
    small = decide([_test(0.001, -0.5, min_effect=1.0), _test(0.999, 3.0, p_better=0.001)], settings)
    assert [v.verdict for v in small] == [verdicts.BELOW_THRESHOLD, verdicts.IMPROVEMENT]
    assert not small[0].alerts
    few = decide([_test(0.0001, -20, clusters=12)], settings)[0]
    assert few.verdict == verdicts.INSUFFICIENT and "n = 12 < 30" in few.note
    # A worsening that is only significant toward better never pages, whatever its size.
    assert decide([_test(0.6, -5, p_better=0.001)], settings)[0].verdict == verdicts.NO_CHANGE


def test_holm_and_the_suites_share_of_alpha_decide():
    """Mutations caught here: Holm removed (0.03 among five comparisons is a regression without it), and α not
    the suite's share (0.01 is a regression at the release's 0.05, not at a share of 0.00625)."""
    settings = VerdictSettings()
    five = decide([_test(0.03, -5), *[_test(0.5, 0.0)] * 4], settings)
    assert five[0].verdict == verdicts.NO_CHANGE and five[0].p_adjusted == pytest.approx(0.15)
    assert decide([_test(0.03, -5)], settings)[0].verdict == verdicts.REGRESSION
    shared = decide([_test(0.01, -5)], settings, alpha=0.05 / 8)[0]
    assert shared.verdict == verdicts.WATCH and not shared.alerts and shared.alpha == 0.05 / 8
    assert decide([_test(0.005, -5)], settings, alpha=0.05 / 8)[0].verdict == verdicts.REGRESSION


def test_holm_matches_its_definition():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted: 0.005×4, 0.01×3, 0.03×2, 0.04×1 → 0.02, 0.03, 0.06, 0.06 (monotone)
    assert list(verdicts.holm(p)) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_the_minimum_detectable_effect_is_one_sided_at_the_first_holm_level():
    """Mutation caught: the MDE at the release's α, at the suite's share without Holm's first step, or
    two-sided."""
    mde = power.minimum_detectable_effect(2.0, 0.05, 0.8)
    assert mde == pytest.approx((1.644854 + 0.841621) * 2.0, rel=1e-5)
    assert power.power_at(mde, 2.0, 0.05) == pytest.approx(0.8, abs=1e-3)
    decided = decide([_test(0.5, 0.0, se=2.0)] * 4, VerdictSettings(), alpha=0.0125)
    first_level = 0.0125 / 4
    z = NormalDist().inv_cdf(1 - first_level) + NormalDist().inv_cdf(0.8)
    assert decided[0].mde == pytest.approx(z * 2.0, rel=1e-9)
    assert decided[0].power == pytest.approx(power.power_at(1.0, 2.0, first_level), rel=1e-9)


def test_the_release_plan_shares_alpha_among_its_suites():
    plan = verdicts.ReleasePlan.of(VerdictSettings(shares={"blend": 2.0, "saged": 0}), ["worldbench", "blend", "saged"])
    assert plan.total == 1 + 2 + 0 + 2  # two import slots
    assert plan.share("blend") == pytest.approx(0.05 * 2 / 5) and plan.share("saged") == 0
    assert plan.share("someone-elses") == pytest.approx(0.05 / 5)  # an import slot
    full = sum(plan.share(s) for s in ["worldbench", "blend", "saged"]) + 2 * plan.share("x")
    assert full == pytest.approx(0.05)
    assert verdicts.ReleasePlan.of(VerdictSettings(import_slots=0), ["a"]).share("b") == 0.0
    with pytest.raises(ValueError, match=r"verdicts\.shares\.blend: -1 must be a number ≥ 0"):
        VerdictSettings(shares={"blend": -1})


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


def test_a_comparison_too_weak_for_its_minimum_effect_keeps_its_verdict_and_says_so():
    """MDE (at the stated power) above the minimum effect: "no detectable change" says it is not decidable at this
    profile (so it is never read as "no regression"), while a regression still pages and says it is underpowered;
    a test strong enough for its minimum effect says nothing. Mutation caught: the rule removed from
    ``sufficiency.underpowered`` or loosened (the earlier 2× rule), or the note dropped from ``decide``."""
    settings = VerdictSettings()
    weak = decide([_test(0.5, 0.0, min_effect=1.0, se=1.0)], settings)[0]
    assert weak.verdict == verdicts.NO_CHANGE and weak.mde > 2.0
    assert weak.note == f"not decidable at this profile: MDE {weak.mde:.3g} > min effect 1 (`geomon plan --detect`)"
    # Power 51 % at the minimum effect (MDE 1.5): undecidable now, "decidable" under the 2× rule.
    (half,) = decide([_test(0.5, 0.0, min_effect=1.0, se=0.6)], settings)
    assert 1.0 < half.mde < 2.0 and 0.4 < half.power < 0.8 and half.note.startswith("not decidable at this profile")
    paged = decide([_test(0.0001, -20.0, min_effect=1.0, se=1.0)], settings)[0]
    assert paged.verdict == verdicts.REGRESSION and paged.alerts
    assert paged.note.startswith(verdicts.UNDERPOWERED_PAGE) and "not decidable" not in paged.note
    strong = decide([_test(0.5, 0.0, min_effect=1.0, se=0.2)], settings)[0]
    assert strong.mde <= 1.0 and strong.power >= 0.8 and strong.note == ""
    # The rule, on its own: an MDE above the minimum effect; nothing to say without one.
    assert sufficiency.underpowered(1.01, 1.0) and not sufficiency.underpowered(1.0, 1.0)
    assert not sufficiency.underpowered(5.0, 0.0) and not sufficiency.underpowered(float("nan"), 1.0)


def test_a_page_from_an_underpowered_comparison_says_so():
    """A regression still pages when its test had little power at the minimum effect (the false-alarm control does
    not rest on power), but its note says how little it could see; a well-powered one says nothing of the kind. A
    worsening of exactly the minimum effect pages at most half the time (significant *and* estimated at least
    that): the chance the alert states. Mutation caught: the note removed."""
    settings = VerdictSettings()
    (weak,) = decide([_test(0.001, -5, se=1.0)], settings)
    assert weak.verdict == verdicts.REGRESSION and weak.power < 0.8
    assert weak.note.startswith(f"{verdicts.UNDERPOWERED_PAGE} ({weak.power:.0%} power at the minimum effect)")
    (strong,) = decide([_test(0.001, -5, se=0.1)], settings)
    assert strong.verdict == verdicts.REGRESSION and strong.power > 0.99 and not strong.note
    assert power.page_probability(strong.power) == 0.5 and power.page_probability(0.3) == 0.3


def test_each_decision_names_its_decidability_apart_from_its_note():
    """Why a verdict cannot be read at face value is a field of its own (stored in its own column), one value per
    kind, while the note keeps its words: too few clusters to be tested, too weak at the run's profile, too weak
    as published (an imported evaluation), a page below the stated power; nothing for a strong test. Mutation
    caught: a kind left unset in ``decide`` (the surfaces that read the column would stop naming it)."""
    settings = VerdictSettings()
    weak = _test(0.5, 0.0, min_effect=1.0, se=1.0)
    (profile,) = decide([weak], settings)
    (published,) = decide([weak], settings, profiled=False)
    (paged,) = decide([_test(0.0001, -20.0, min_effect=1.0, se=1.0)], settings)
    (small,) = decide([_test(0.5, 0.0, clusters=8)], settings)
    (strong,) = decide([_test(0.5, 0.0, min_effect=1.0, se=0.2)], settings)
    assert [v.decidability for v in (profile, published, paged, small, strong)] == [
        verdicts.UNDERPOWERED_PROFILE,
        verdicts.UNDERPOWERED_PUBLISHED,
        verdicts.UNDERPOWERED_REGRESSION,
        verdicts.UNDECIDABLE_SAMPLE,
        verdicts.DECIDABLE,
    ]
    assert profile.note.startswith(sufficiency.PROFILE_PREFIX)
    assert published.note.startswith(sufficiency.PUBLISHED_PREFIX)
    assert paged.note.startswith(verdicts.UNDERPOWERED_PAGE) and small.note.startswith(sufficiency.SAMPLE_PREFIX)
    assert small.verdict == verdicts.INSUFFICIENT and set(verdicts.DECIDABILITIES) == {
        v.decidability for v in (profile, published, paged, small, strong)
    }


def test_comparisons_where_no_cluster_differs_leave_the_holm_family():
    """Ten comparisons, nine with no cluster differing from the baseline (p = 1 both ways: an answer rate at 100 %
    before and after): the tenth is decided in a family of one, at the suite's whole share; the nine are ``no
    detectable change`` outside it, saying why. Mutation caught: the unchanged comparisons counted by Holm (the
    tenth then needs p < 0.005); the exclusion on p = 1 toward worse alone."""
    settings = VerdictSettings()
    family = [_test(0.01, -5), *[_test(1.0, 0.0, p_better=1.0, differing=0)] * 9]
    decided = decide(family, settings)
    assert decided[0].verdict == verdicts.REGRESSION and decided[0].family_size == 1
    assert {v.verdict for v in decided[1:]} == {verdicts.NO_CHANGE}
    assert decided[1].note == verdicts.UNCHANGED_NOTE and decided[1].p_adjusted is None
    # p = 1 toward worse alone is an outcome (every differing cluster improved), not an unchanged comparison: it
    # stays in the family, or leaving it out would look at the data. Mutation caught: excluding on p = 1 alone.
    improved = [_test(0.01, -5), *[_test(1.0, 5.0, p_better=0.2)] * 9]
    decided = decide(improved, settings)
    assert {v.family_size for v in decided} == {10} and decided[0].verdict != verdicts.REGRESSION


def test_a_zero_change_among_differing_clusters_stays_in_the_family_with_its_p_and_label():
    """Country A: 20 of its 40 items differ, 10 better and 10 worse (net zero); country B: none differ. A's change of
    0 is an outcome: its true one-sided p (about 0.59: the flips that move it at least as far toward worse), in the
    Holm family with the overall figure, labelled by its power; only B, where no cluster differs, leaves the
    family. Mutations caught: ``_one_sided`` returning p = 1 for a change of 0; the exclusion on a change of 0
    (A left the family with the false note "no cluster differs")."""
    values = np.array([100.0, 0.0] * 20 + [100.0, 0.0] * 20)
    before = _frame(values, ["A"] * 40 + ["B"] * 40)
    after = before.copy()
    after.loc[:19, "value"] = 100.0 - values[:20]  # 10 right → wrong, 10 wrong → right
    metric = TrackedMetric("acc", Mean("value"), min_effect=5.0, by=("country",))
    tests = {t.breakdown: t for t in paired_test(metric, before, after, resamples=1999)}
    a, b = tests["country=A"], tests["country=B"]
    assert a.change == 0 and a.differing == 20 and b.differing == 0
    assert 0.5 < a.p_value < 0.7 and 0.5 < a.p_better < 0.7
    assert b.p_value == b.p_better == 1.0
    decided = {v.breakdown: v for v in decide(list(tests.values()), VerdictSettings())}
    assert decided["country=A"].family_size == 2 and decided["country=A"].p_adjusted is not None
    assert decided["country=A"].p_value == pytest.approx(a.p_value)
    assert decided["country=A"].note != verdicts.UNCHANGED_NOTE
    assert decided["country=A"].decidability == verdicts.UNDERPOWERED_PROFILE
    assert decided["country=B"].note == verdicts.UNCHANGED_NOTE and decided["country=B"].p_adjusted is None


def _planned(test, planned_se, weighing_se=None):
    """The test with the standard error its baseline planned (its MDE's) and the one planned from the pair pooled
    (its weight's; the same unless given)."""
    return replace(test, planned_se=planned_se, weighing_se=planned_se if weighing_se is None else weighing_se)


def test_weighted_holm_is_holm_with_equal_weights_and_tests_each_at_its_weight():
    """Equal weights give Holm's adjusted p-values; a comparison of weight w among a total weight W is first tested
    at α·w/W (adjusted p = p·W/w), later steps over the weight still left."""
    p = [0.01, 0.04, 0.03, 0.5]
    assert np.allclose(verdicts.holm(p, [2.0] * 4), verdicts.holm(p))
    adjusted = verdicts.holm([0.01, 0.01, 0.3], [1.0, 0.25, 0.25])
    # Steps: 0.01/1 first (× 1.5), then 0.01/0.25 (× 0.5/0.25), then 0.3/0.25 (× 0.25/0.25).
    assert adjusted == pytest.approx([0.015, 0.02, 0.3])


def test_comparisons_their_baseline_calls_undecidable_weigh_less_in_holm():
    """One comparison its baseline plans with the power to find its minimum effect, nine it plans without: the
    nine weigh ``undecidable_weight`` (0.25), so the decidable one is tested at α / 3.25 (0.0154) instead of
    α / 10, and pages at p 0.012; the undecidable ones still page a large worsening, saying they are
    underpowered. The weights come from the planned standard errors alone, never the new data's. Mutations
    caught: the weights dropped from Holm (p 0.012 × 10 = 0.12: no page), ``undecidable_weight`` ignored
    (1: the same), the weights read from the null's SE instead of the plan (every comparison here has the same
    null SE: equal weights), or from the baseline's planned SE instead of the pooled pair's (the last case)."""
    settings = VerdictSettings()
    decidable = _planned(_test(0.012, -5, min_effect=1.0, se=1.0), planned_se=0.2)
    hopeless = [_planned(_test(0.5, 0.1, min_effect=1.0, se=1.0), planned_se=2.0)] * 9
    decided = decide([decidable, *hopeless], settings)
    assert decided[0].verdict == verdicts.REGRESSION and decided[0].power >= 0.8 and not decided[0].note
    assert decided[0].mde == pytest.approx(power.minimum_detectable_effect(0.2, 0.05 / 3.25, 0.8))
    assert decided[1].mde == pytest.approx(power.minimum_detectable_effect(2.0, 0.05 * 0.25 / 3.25, 0.8))
    assert all(v.note.startswith("not decidable at this profile") for v in decided[1:])
    unweighted = decide([decidable, *hopeless], VerdictSettings(undecidable_weight=1.0))
    assert unweighted[0].verdict != verdicts.REGRESSION and unweighted[0].p_adjusted == pytest.approx(0.12)
    # A 20-point drop where the plan said the test is hopeless still pages (at α·0.25/3.25 = 0.0038), and says so.
    large = _planned(_test(0.001, -20, min_effect=1.0, se=1.0), planned_se=2.0)
    decided = decide([decidable, large, *hopeless[1:]], settings)
    assert decided[1].verdict == verdicts.REGRESSION and decided[1].note.startswith(verdicts.UNDERPOWERED_PAGE)
    # The weight is the pooled pair's, never the baseline's alone: a baseline that plans a small error (high by
    # chance) does not weigh its comparison up when the pair says it cannot decide.
    lucky = _planned(_test(0.012, -5, min_effect=1.0, se=1.0), planned_se=0.2, weighing_se=2.0)
    assert decide([lucky, *hopeless], settings)[0].verdict != verdicts.REGRESSION


def test_a_look_with_no_alpha_is_decided_without_an_error():
    """α 0 (a spent look, a share of 0): shown, never paged — it raised in the weights' planning."""
    decided = decide([_test(0.001, -5), _test(0.5, 0.1)], VerdictSettings(), 0.0)
    assert not any(v.alerts for v in decided)


def test_the_stored_level_is_the_level_holm_tested_at():
    """An unchanged comparison (no cluster differs) leaves the Holm family and its weights' total: the decidable
    comparison is tested at α / 3.25 (1 + 9 × 0.25) and its stored level (where its MDE and power are stated) is
    that level — issue 60 found 0.0036 stored for a comparison tested at 0.008. The unchanged one states the level
    it would get joining the family (α / 4.25). Mutation caught: the unchanged comparisons counted in the weights'
    total (stored α / 4.25)."""
    settings = VerdictSettings()
    decidable = _planned(_test(0.012, -5, min_effect=1.0, se=1.0), planned_se=0.2)
    hopeless = [_planned(_test(0.5, 0.1, min_effect=1.0, se=1.0), planned_se=2.0)] * 9
    unchanged = _planned(_test(1.0, 0.0, p_better=1.0, differing=0), planned_se=0.2)
    decided = decide([decidable, *hopeless, unchanged], settings)
    assert decided[0].level == pytest.approx(0.05 / 3.25) and decided[0].verdict == verdicts.REGRESSION
    assert decided[0].p_adjusted == pytest.approx(0.012 * 3.25)  # = p / level × α: the level Holm used
    assert decided[-1].level == pytest.approx(0.05 / 4.25) and decided[-1].p_adjusted is None


def test_tied_comparisons_weigh_the_same():
    """Two comparisons with the same ratio of minimum effect to planned error (accuracy and accuracy_itt when every
    item is answered) get the same weight, whatever their order: issue 60 found 1 and 0.25 in 46 of 150 releases,
    the cut between the decidable and the rest falling between the two. Mutation caught: the tie not kept together
    in ``power.paging_weights``."""
    # Three comparisons: the two tied ones decide alone at α / 2 but not at α / 3 (with the third at 1).
    z = NormalDist().inv_cdf
    ratio = z(1 - 0.05 / 2) + z(0.8) + 0.01
    weights = power.paging_weights([ratio, ratio, ratio - 3], 0.05, 0.8, 0.25)
    assert weights[0] == weights[1]
    weights = power.paging_weights([ratio, ratio, float("nan")], 0.05, 0.8, 0.25)
    assert weights[0] == weights[1]
