"""A declared metric's cluster bootstrap: interval and sample from the clusters, drawn once per metric, rows,
resamples and seed in a process."""

from __future__ import annotations

import numpy as np
import pandas as pd

from geomon.stats import bootstrap
from geomon.stats.bootstrap import estimates
from geomon.stats.declarations import TrackedMetric
from geomon.stats.statistics import Mean
from geomon_tests.stats.frames import item_frame


def test_an_interval_and_a_sample_from_the_clusters():
    rng = np.random.default_rng(0)
    frame = item_frame(rng.binomial(1, 0.6, 300) * 100.0, ["A", "B", "C"] * 100, [f"c{i // 3}" for i in range(300)])
    metric = TrackedMetric("acc", Mean("value"), "cluster", by=("country",))
    overall, *groups = estimates(metric, frame)
    assert overall.clusters == 100 and overall.items == 300 and overall.ci_low < overall.value < overall.ci_high
    assert [g.breakdown for g in groups] == ["country=A", "country=B", "country=C"]
    assert all(g.clusters == 100 and g.items == 100 for g in groups)


def test_a_headline_is_bootstrapped_once_for_the_same_rows(monkeypatch):
    """The suite's tracked stage and the recording of its evaluation estimate the same headline on the same rows
    with the same seed: the second reads the first's draw (the same numbers), while other rows, another seed or
    another number of resamples are drawn anew."""
    draws = []
    draw = bootstrap._estimates
    monkeypatch.setattr(bootstrap, "_estimates", lambda *a, **k: draws.append(1) or draw(*a, **k))
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
