"""A tracked metric's declaration: checked against the rows it is given, its minimum effects overridden by
name, its digest what its figures were drawn under."""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd
import pytest

from geomon.stats.bootstrap import estimates
from geomon.stats.declarations import (
    DeclarationError,
    TrackedMetric,
    absent_items,
    answered_rate,
    declaration_digest,
    with_min_effects,
)
from geomon.stats.signflip import paired_test
from geomon.stats.statistics import Mean, Range
from geomon_tests.stats.frames import item_frame


def test_duplicated_items_and_missing_columns_are_errors_naming_them():
    frame = item_frame([1.0, 0.0, 1.0], ["A", "A", "B"])
    metric = TrackedMetric("acc", Mean("value"), by=("country",))
    with pytest.raises(DeclarationError, match=r"item keys appear more than once \(1: q0\)"):
        paired_test(metric, pd.concat([frame, frame.head(1)]), frame)
    with pytest.raises(DeclarationError, match=r"acc needs column\(s\) \['region'\]"):
        estimates(TrackedMetric("acc", Range(Mean("value"), "region")), frame)


def test_minimum_effects_are_overridden_by_name_and_never_change_the_digest():
    """The settings' minimum effects replace a metric's (by its name) and its groups' (by their name); the
    digest recorded with a figure names what it was drawn under, which a minimum effect is not, while another
    clustering is. Mutations caught: the groups' override read from the metric's name; the minimum effect in the
    digest (a baseline's stored spreads never reused after a settings change)."""
    metric = TrackedMetric("gap", Range(Mean("value"), "country"), min_effect=10.0, groups_name="acc")
    (plain,) = with_min_effects([metric], {})
    assert plain == metric
    (both,) = with_min_effects([metric], {"gap": 3.0, "acc": 2.0})
    assert (both.min_effect, both.groups_min_effect) == (3.0, 2.0)
    (groups,) = with_min_effects([metric], {"acc": 2.0})
    assert (groups.min_effect, groups.groups_min_effect) == (10.0, 2.0)
    assert declaration_digest(both) == declaration_digest(metric)
    assert declaration_digest(replace(metric, cluster="question")) != declaration_digest(metric)


def test_an_absent_item_is_an_outcome_where_a_metric_says_what_it_scores():
    """An item the baseline has and the later evaluation lacks comes back as a row: unanswered (0) for an answer
    rate, no value (NaN) for an answered-only mean; with no metric saying what an absent item is, the later rows are
    compared as they are. Mutation caught: the absent item left out (a harness dropping its errors would look
    better)."""
    before = pd.DataFrame({"item": ["a", "b", "c"], "answered": [1.0, 1.0, 1.0], "value": [1.0, 0.0, 1.0]})
    after = before.iloc[:2]
    rate = answered_rate("item")
    score = TrackedMetric("acc", Mean("value"))
    filled = absent_items([rate, score], before, after)
    assert filled["item"].tolist() == ["a", "b", "c"]
    assert filled["answered"].tolist() == [1.0, 1.0, 0.0] and math.isnan(filled["value"].iloc[2])
    assert absent_items([score], before, after) is after
