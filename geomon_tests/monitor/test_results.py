"""The results folder's pages made from the whole history: the index shows what each serving-change release
decided, in the closing screen's words."""

from __future__ import annotations

from geomon.monitor import release, results
from geomon.monitor.history import EvaluationRun, MetricHistory
from geomon.stats import verdicts
from geomon_tests.stats import test_compare as toy


def test_the_index_shows_each_serving_change_release_as_the_run_closes_with_it(tmp_path):
    """A variant decided against its base: the index has a section naming the release, its change and its
    decisions per suite (``views.release_decided``); with no serving change known there is no such section.
    Mutation caught: the releases not handed to the page (``write_index`` dropping ``changes``)."""
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    history = MetricHistory(url)
    settings = verdicts.VerdictSettings(resamples=199)
    plan = verdicts.ReleasePlan(0.05, {"toy": 1.0}, import_slots=0)
    for model, items in (("base", toy._items(0)), ("base-q3", toy._items(20))):
        run = EvaluationRun("toy", model, predecessor="base" if model == "base-q3" else "")
        figures = release.declared_figures("toy", (toy.ACC,), items)
        release.track(history, run, figures, items, (toy.ACC,), settings, plan=plan)
    change = "weights re-quantized Q4_K_M → Q3_K_S"
    page = results.write_index(tmp_path / "results", url, {"base-q3": change, "never-run": "a system prompt"})
    text = page.read_text()
    assert "Serving-change releases" in text
    assert f"Release base-q3 vs base (predecessor) — {change}:" in text and "comparisons decidable" in text
    assert "never-run" not in text  # a variant not evaluated yet has nothing to show
    assert "Serving-change releases" not in results.write_index(tmp_path / "results", url).read_text()


def test_a_later_rerun_of_the_variant_does_not_hide_its_release_decision(tmp_path):
    """After a code change a re-run records the variant again, compared with its own previous run: the release's
    section still shows the decision against the predecessor (the audit found "vs previous run — engine flags …"
    with 0 decidable after a pull). Mutation caught: ``release_decided`` taking the latest evaluation per scope."""
    from geomon.monitor import views

    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    settings = verdicts.VerdictSettings(resamples=199)
    plan = verdicts.ReleasePlan(0.05, {"toy": 1.0}, import_slots=0)
    for i, (model, items) in enumerate(
        (("base", toy._items(0)), ("base-kv", toy._items(20)), ("base-kv", toy._items(20)))
    ):
        run = EvaluationRun("toy", model, predecessor="base" if model == "base-kv" else "", versions={"code": str(i)})
        figures = release.declared_figures("toy", (toy.ACC,), items)
        release.track(history, run, figures, items, (toy.ACC,), settings, plan=plan)
    assert len(history.evaluations(model="base-kv")) == 2  # the re-run is an evaluation of its own
    lines = views.release_decided(history, "base-kv", "engine flags --x", {})
    assert lines[0] == "Release base-kv vs base (predecessor) — engine flags --x:"


def test_a_decided_comparison_without_a_regression_states_how_much_worse_the_data_allow():
    """ "No change as large as the MDE" is what the test could see; the line also says what the data allow: the
    change plus 1.645 standard errors toward worse (the audit: the power statement read as a bound). Mutation
    caught: the bound taken toward better."""
    from geomon.monitor import views
    from geomon.stats.verdicts import Comparison

    lower_is_worse = Comparison("p", verdict=verdicts.NO_CHANGE, change=0.68, se=0.5, worse_when="lower")
    higher_is_worse = Comparison("e", verdict=verdicts.NO_CHANGE, change=-0.2, se=1.0, worse_when="higher")
    assert views._worst(lower_is_worse, " pts") == "; at worst −0.142 pts (one-sided 95 %)"
    assert views._worst(higher_is_worse, "") == "; at worst +1.44 (one-sided 95 %)"
    assert views._worst(Comparison("x", change=1.0), "") == ""  # no standard error: no claim
