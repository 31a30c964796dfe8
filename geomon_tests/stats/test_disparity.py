import math

import numpy as np
import pandas as pd
import pytest

from geomon.stats.disparity import (
    abs_rel_error,
    disparity,
    dixon_critical,
    dixon_q,
    dixon_test,
    dixon_variant,
    group_errors,
    group_ranks,
    impact_ratio,
    kl_divergence,
    max_z_score,
    random_baseline,
    selection_rates,
)


def test_abs_rel_error_hand_computed():
    assert abs_rel_error(110, 100) == pytest.approx(10 / 110)
    assert abs_rel_error(100, 110) == pytest.approx(10 / 110)  # symmetric
    assert abs_rel_error(0, 50) == 1.0
    assert abs_rel_error(0, 0) == 0.0
    out = abs_rel_error(np.array([1.0, np.nan]), np.array([2.0, 2.0]))
    assert out[0] == pytest.approx(0.5) and np.isnan(out[1])


def test_groups_disparity_and_ranks():
    items = pd.DataFrame({"g": ["a", "a", "b", "b", "c", None], "error": [0.1, 0.3, 0.5, 0.7, 0.9, 0.0]})
    table = group_errors(items, "g")
    assert table.loc["a", "mean"] == pytest.approx(0.2) and table.loc["b", "median"] == pytest.approx(0.6)
    assert table["count"].to_dict() == {"a": 2, "b": 2, "c": 1}  # the row without a group is left out
    assert disparity(table["mean"]) == pytest.approx(0.9 - 0.2)
    assert group_ranks(table).to_dict() == {"a": 1, "b": 2, "c": 3}


def test_random_baseline_is_seeded_and_below_a_real_split():
    items = pd.DataFrame({"g": ["lo"] * 20 + ["hi"] * 20, "error": [0.1] * 20 + [0.9] * 20})
    base = random_baseline(items, "g", trials=10, seed=3)
    assert base == random_baseline(items, "g", trials=10, seed=3)
    assert base["groups"] == 2 and base["trials"] == 10
    assert base["mean"] < disparity(group_errors(items, "g")["mean"]) == pytest.approx(0.8)


def test_selection_rate_summaries():
    outcomes = pd.DataFrame({"g": ["a"] * 4 + ["b"] * 4, "y": [1, 1, 1, 0, 1, 0, 0, 0]})
    rates = selection_rates(outcomes, "g", "y")
    assert rates.to_dict() == {"a": 0.75, "b": 0.25}
    assert impact_ratio(rates) == pytest.approx(1 / 3)
    # SAGED's Max Z-score (Ap C.5): signed, over the population standard deviation — a group far below the others
    # scores low (mean 3, σ √2: the highest is 1 / √2 above), one far above scores high.
    assert max_z_score({"a": 1.0, "b": 4.0, "c": 4.0}) == pytest.approx(1 / np.sqrt(2))
    assert max_z_score({"a": 1.0, "b": 1.0, "c": 4.0}) == pytest.approx(np.sqrt(2))
    assert dixon_q({"a": 1.0, "b": 2.0, "c": 10.0}) == pytest.approx(8 / 9)
    assert math.isnan(dixon_q({"a": 1.0, "b": 2.0}))  # two groups: nothing to test


# The Q-test's textbook example (Dean & Dixon 1951 data as reproduced in Rorabacher 1991 and Wikipedia):
# ten determinations, the low 0.167 suspect.
TEXTBOOK = [0.189, 0.167, 0.187, 0.183, 0.186, 0.182, 0.181, 0.184, 0.181, 0.177]


def test_dixon_q_textbook_example_and_variants():
    assert dixon_q(TEXTBOOK, "r10") == pytest.approx(0.010 / 0.022, abs=1e-9)  # 0.455
    assert dixon_q(TEXTBOOK) == pytest.approx(0.010 / 0.020, abs=1e-9)  # r11 for 8-10 values: 0.500
    assert [dixon_variant(n) for n in (3, 7, 8, 10, 11, 13, 14, 25)] == ["r10"] * 2 + ["r11"] * 2 + ["r21"] * 2 + [
        "r22"
    ] * 2
    # SAGED's code returns 0 for 4-7 values; the ratio is the gap over the range.
    assert dixon_q({"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0, "e": 10.0}) == pytest.approx(6 / 9)
    assert dixon_q([5.0, 5.0, 5.0, 5.0]) == 0.0
    with pytest.raises(ValueError, match="at least 3 values"):
        dixon_variant(2)


def test_dixon_critical_values_match_the_published_table():
    # Rorabacher (1991), r10 at the 95 % level (and 90 % for n = 10): the simulation reproduces them.
    for n, published in ((3, 0.970), (4, 0.829), (5, 0.710), (6, 0.625), (7, 0.568), (10, 0.466)):
        assert dixon_critical(n, "r10") == pytest.approx(published, abs=0.005), n
    assert dixon_critical(10, "r10", alpha=0.10) == pytest.approx(0.412, abs=0.005)
    # The textbook verdict: 0.455 is an outlier at 90 % (Q > 0.412), not at 95 % (Q < 0.466).
    groups = {f"run{i}": v for i, v in enumerate(TEXTBOOK)}
    test = dixon_test(groups)
    assert test is not None and test.variant == "r11" and test.suspect == "run1" and test.groups == 10
    assert test.critical > dixon_critical(10, "r11", alpha=0.10)
    assert dixon_test({"a": 1.0, "b": 2.0}) is None


def test_kl_divergence_known_values():
    assert kl_divergence([0.5, 0.5], [0.9, 0.1]) == pytest.approx(0.5 * math.log(0.5 / 0.9) + 0.5 * math.log(5))
    # Wikipedia's example: P = (9, 12, 4)/25 against the uniform Q: 0.0852996 nats.
    assert kl_divergence([9, 12, 4], [1, 1, 1]) == pytest.approx(0.0852996, abs=1e-7)
    assert kl_divergence([0.2, 0.8], [0.2, 0.8]) == 0.0
    assert kl_divergence([0.5, 0.5], [1.0, 0.0]) == math.inf  # q rules out what p allows
    with pytest.raises(ValueError, match="equal-length"):
        kl_divergence([0.5, 0.5], [1.0])
    with pytest.raises(ValueError, match="non-negative"):
        kl_divergence([-0.1, 1.1], [0.5, 0.5])


def test_permutation_test_permutes_group_labels_exactly():
    from geomon.stats.disparity import disparity_permutation_test

    # {1,2,3} vs {4,5,6}: of the C(6,3) = 20 relabellings, 2 give a mean gap of 3 (this split and its
    # mirror), so the exact one-sided p-value is 2/20.
    result = disparity_permutation_test({"a": [1, 2, 3], "b": [4, 5, 6]})
    assert result.statistic == 3.0 and result.permutations == 20 and result.p_value == pytest.approx(0.1)
    assert 0 < result.null_95 <= 3.0
    # Identical groups: every relabelling is at least as extreme.
    assert disparity_permutation_test({"a": [1, 2], "b": [1, 2]}).p_value == pytest.approx(1.0)
    # Three groups, a real gap, Monte Carlo over 9,999 relabellings: small p.
    rng = np.random.default_rng(0)
    groups = {"a": rng.normal(0, 1, 30), "b": rng.normal(0, 1, 30), "c": rng.normal(1.5, 1, 30)}
    assert disparity_permutation_test(groups).p_value < 0.01
    assert math.isnan(disparity_permutation_test({"a": [1.0]}).p_value)
