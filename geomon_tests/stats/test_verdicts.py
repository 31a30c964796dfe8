"""The one definition per metric (declared statistics: value, interval, paired test) and the one verdict
engine (Holm, Benjamini–Hochberg, the minimum detectable effect, the sufficiency rule)."""

from __future__ import annotations

from dataclasses import replace
from statistics import NormalDist

import numpy as np
import pytest

from geomon.stats import power, sufficiency, verdicts
from geomon.stats.declarations import TrackedMetric
from geomon.stats.signflip import PairedTest, paired_test
from geomon.stats.statistics import Mean
from geomon.stats.verdicts import VerdictSettings, decide
from geomon_tests.stats.frames import item_frame


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


def test_settings_are_checked():
    with pytest.raises(ValueError, match=r"verdicts\.alpha: 1\.5 must lie strictly between 0 and 1"):
        VerdictSettings(alpha=1.5)
    with pytest.raises(ValueError, match=r"verdicts\.resamples: 10 is too few"):
        VerdictSettings(resamples=10)


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
        verdicts.Decidability.UNDERPOWERED_PROFILE,
        verdicts.Decidability.UNDERPOWERED_PUBLISHED,
        verdicts.Decidability.UNDERPOWERED_REGRESSION,
        verdicts.Decidability.UNDECIDABLE_SAMPLE,
        verdicts.Decidability.DECIDABLE,
    ]
    assert profile.note.startswith(sufficiency.PROFILE_PREFIX)
    assert published.note.startswith(sufficiency.PUBLISHED_PREFIX)
    assert paged.note.startswith(verdicts.UNDERPOWERED_PAGE) and small.note.startswith(sufficiency.SAMPLE_PREFIX)
    assert small.verdict == verdicts.INSUFFICIENT and set(verdicts.Decidability) == {
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
    assert decided[1].note.endswith(verdicts.UNCHANGED_NOTE) and decided[1].p_adjusted is None
    # Unchanged is no claim of power: its MDE (2.8 here) above the minimum effect (1) labels it as any other.
    # Mutation caught: the label skipped for the unchanged (it read "decidable" at 6 % power).
    assert decided[1].mde > 1 and decided[1].decidability == verdicts.Decidability.UNDERPOWERED_PROFILE
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
    before = item_frame(values, ["A"] * 40 + ["B"] * 40)
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
    assert decided["country=A"].decidability == verdicts.Decidability.UNDERPOWERED_PROFILE
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


def test_a_summary_shown_alone_says_what_its_terse_verdicts_mean():
    """A partition's metadata shows the verdicts' counts without the comparisons table's legend: ``watch`` and
    ``undefined`` are said in words there, once each, and only where they occur."""
    rows = [{"verdict": v} for v in (verdicts.WATCH, verdicts.UNDEFINED, verdicts.UNDEFINED, verdicts.NO_CHANGE)]
    assert verdicts.summary(rows) == "1 watch, 1 no detectable change, 2 undefined"
    said = verdicts.summary(rows, explained=True)
    assert said.startswith("1 watch, 1 no detectable change, 2 undefined; watch: significant before Holm")
    assert "undefined: its statistic cannot be computed on a side" in said
    assert verdicts.summary([{"verdict": verdicts.NO_CHANGE}], explained=True) == "1 no detectable change"
