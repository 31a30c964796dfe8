"""The values every layer passes around: a figure's key, its reading from a mapping, and the scope protocol that
makes a series one benchmark (a changed part of what the figures mean starts a new series, named)."""

from __future__ import annotations

import math

from geomon.stats.values import (
    MetricKey,
    breakdown_by,
    finite,
    last_group,
    metrics_from_mapping,
    series_change,
    series_key,
    series_scope,
    unit,
)


def test_a_metric_key_reads_the_one_way_every_surface_shows_it():
    assert str(MetricKey("correct_rate")) == "correct_rate"
    assert str(MetricKey("correct_rate", "language=en")) == "correct_rate (language=en)"


def test_a_percentage_changes_in_points_and_any_other_metric_in_its_own_units():
    assert unit((0, 100)) == " pts"
    assert unit((0, 1)) == "" and unit(None) == ""


def test_finite_reads_missing_nan_and_infinite_as_none():
    assert finite(None) is None and finite(math.nan) is None and finite(math.inf) is None
    assert finite(-math.inf) is None and finite("2.5") == 2.5 and finite(3) == 3.0


def test_a_mapping_of_figures_becomes_values_with_their_intervals_and_nothing_else():
    numbers = {"kb_cs": 61.2, "kb_cs_ci_low": 55.0, "kb_cs_ci_high": math.nan, "n_items": 40, "ok": True, "who": "x"}
    values = metrics_from_mapping(numbers, breakdown="persona=vanilla", n=40)
    assert [(v.metric, v.value, v.ci_low, v.ci_high) for v in values] == [
        ("kb_cs", 61.2, 55.0, None),
        ("n_items", 40.0, None, None),
    ]  # a bool and a text are not figures; a NaN bound is no bound
    assert {v.breakdown for v in values} == {"persona=vanilla"} and {v.n for v in values} == {40}


def test_a_changed_part_of_a_scope_starts_a_new_series_that_names_it():
    before = series_scope("sample=60", {"data": "wdi-2024", "prompt": "v1", "code": "a"})
    after = series_scope("sample=60", {"data": "wdi-2024", "prompt": "v2", "code": "b"})
    assert series_key(before) == series_key(after) == "sample=60"
    assert before != after
    assert series_change(before, after) == "new series: prompt, code changed"
    assert series_change(before, before) == ""
    # Another key (a table revision, another sample) is another line, not a new series of this one.
    assert series_change(before, series_scope("sample=120", {"data": "wdi-2024"})) == ""
    # A part that appears or disappears is a change too; a scope without versions is its own key.
    assert series_change(before, series_scope("sample=60", {"data": "wdi-2024", "prompt": "v1"})) == (
        "new series: code changed"
    )
    assert series_key("rev 1155 sample=all") == "rev 1155 sample=all"


def test_a_breakdown_is_written_one_way_and_read_back():
    """Every breakdown is written by ``breakdown_by`` (the declarations' groups, ``geomon plan``'s) and its last
    group read back by ``last_group`` (``geomon plan``'s blind lines): a group of the overall figure, a group
    within a breakdown, and a breakdown without a group."""
    assert breakdown_by("", "country", "Peru") == "country=Peru"
    within = breakdown_by("persona=vanilla", "country", "Peru")
    assert within == "persona=vanilla,country=Peru"
    assert last_group(within) == ("persona=vanilla,country", "Peru")
    assert last_group("") == ("", "") and last_group("overall") == ("overall", "")
