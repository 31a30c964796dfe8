import numpy as np
import pandas as pd
import pytest

from geomon.stats.disparity import (
    abs_rel_error,
    disparity,
    dixon_q,
    group_errors,
    group_ranks,
    impact_ratio,
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
    assert max_z_score({"a": 1.0, "b": 1.0, "c": 4.0}) == pytest.approx(2 / np.sqrt(3))
    assert dixon_q({"a": 1.0, "b": 2.0, "c": 10.0}) == pytest.approx(8 / 9)
    assert dixon_q({"a": 1.0, "b": 2.0}) == 0.0
