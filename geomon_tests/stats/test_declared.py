"""A declared headline's bootstrap is drawn once per metric, rows, resamples and seed in a process."""

from __future__ import annotations

import numpy as np
import pandas as pd

from geomon.stats import declared
from geomon.stats.declared import Mean, TrackedMetric, estimates


def test_a_headline_is_bootstrapped_once_for_the_same_rows(monkeypatch):
    """The suite's tracked stage and the recording of its evaluation estimate the same headline on the same rows
    with the same seed: the second reads the first's draw (the same numbers), while other rows, another seed or
    another number of resamples are drawn anew."""
    draws = []
    draw = declared._estimates
    monkeypatch.setattr(declared, "_estimates", lambda *a, **k: draws.append(1) or draw(*a, **k))
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"item": range(60), "value": rng.random(60), "extra": "unused"})
    metric = TrackedMetric("toy_mean", Mean("value"), bounds=(0, 1))
    first = estimates(metric, frame, resamples=200)
    assert estimates(metric, frame.copy(), resamples=200) == first and len(draws) == 1
    assert estimates(metric, frame.assign(extra="read by no statistic"), resamples=200) == first and len(draws) == 1
    other_seed = estimates(metric, frame, resamples=200, seed=1)
    assert len(draws) == 2 and other_seed[0].value == first[0].value and other_seed[0].se != first[0].se
    estimates(metric, frame, resamples=100)
    assert len(draws) == 3
    changed = frame.assign(value=frame["value"].where(frame["item"] != 0, 5.0))
    assert estimates(metric, changed, resamples=200)[0].value != first[0].value and len(draws) == 4
    reordered = frame.iloc[::-1].reset_index(drop=True)
    estimates(metric, reordered, resamples=200)
    assert len(draws) == 5  # the same rows in another order resample other clusters: drawn anew
    assert draw(metric, frame, resamples=200, seed=0) == first  # the kept numbers are the draw's own


def test_a_value_read_back_as_another_number_type_is_not_a_difference():
    """The clusters a sign-flip test enumerates are those whose rows differ: a value recorded as 100 and read back
    from the history as 100.0 is the same value (compared as text it made every cluster "differ", and a test that
    could be exact fell back to random flips when decided again). Text still compares as text."""
    metric = TrackedMetric("acc", Mean("value"), by=("group",))
    old = pd.DataFrame({"item": ["a", "b", "c"], "value": [100, 0, 100], "group": ["x", "y", "z"]})
    new = pd.DataFrame({"item": ["a", "b", "c"], "value": [100.0, 0.0, 0.0], "group": ["x", "y", "q"]})
    assert declared._differing_rows(metric, old, new).tolist() == [False, False, True]
    assert not declared._differing_rows(metric, old, old.astype({"value": float})).any()
