"""The alarm watches the groups people care about, through each suite's own declarations and the path that
records, decides and announces (``tracking.track`` with the announcer): a group that gets worse pages by
name; a gap that widens because the best group improved is shown (``disparity widened``) and pages nobody."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from geomon.monitor import alerts, announce, tracking
from geomon.monitor.history import MetricHistory
from geomon.stats import verdicts
from geomon.suites import blend, gapminder, quench, saged, worldbench
from geomon_tests.loopback import Webhook, serve

REGIONS = [f"R{i}" for i in range(4)]


def _worldbench(shift: dict[str, float], silent: str = "") -> pd.DataFrame:
    """40 countries per region, 11 questions each; region i's countries err 0.1 + 0.1 i on average, moved by
    ``shift``; the ``silent`` region's questions go unanswered (no number read)."""
    rows = []
    for r, region in enumerate(REGIONS):
        for c in range(40):
            error = 0.1 + 0.1 * r + 0.002 * c + shift.get(region, 0.0)
            answered = 0 if region == silent else 11
            rows.append((f"{region}-{c}", region, ["low", "high"][c % 2], error * answered, answered, answered, 11))
    columns = ["item", "region", "income_group", "error_sum", "answers", "answered", "asked"]
    return pd.DataFrame(rows, columns=columns)


def _quench(indic_drop: float = 0.0) -> pd.DataFrame:
    rows = []
    for q in range(80):
        indic = q % 2 == 0
        correct = 1.0 if q % 3 else 0.0
        if indic and q % 3 and q < 40 * indic_drop * 2:
            correct = 0.0
        rows.append((f"e{q}|normal", str(q), "normal", correct, indic, "Indic" if indic else "non-Indic"))
    return pd.DataFrame(rows, columns=["item", "question_id", "mode", "correct", "indic", "questions"])


def _saged(worse: str = "", by: float = 0.0) -> pd.DataFrame:
    rows = []
    for root in range(40):
        for concept in ("Kenya", "Peru", "Japan"):
            value = 0.2 + 0.01 * (root % 5) - (by if concept == worse else 0.0)
            rows.append((f"none|r{root}|{concept}", value, concept, "none", f"r{root}"))
    return pd.DataFrame(rows, columns=["item", "value", "concept", "role", "root"])


def _gapminder(silent: str = "") -> pd.DataFrame:
    """40 questions per topic, 10 answers each; in the ``silent`` topic the model commits to no option."""
    rows = []
    for topic in ("sdg-01", "sdg-02"):
        for q in range(40):
            decisive = 0 if topic == silent else 10
            correct = decisive * (q % 3 > 0)
            rows.append((f"{topic}-q{q}", correct, 0, decisive, 10 - decisive, 10, topic))
    return pd.DataFrame(rows, columns=["item", "correct", "very_wrong", "decisive", "indecisive", "n", "topic"])


def _blend(worse: str = "", drop: int = 0) -> pd.DataFrame:
    rows = []
    for country in ("KE", "PE"):
        for q in range(40):
            right = 100.0 if q % 4 else 0.0
            if country == worse and q % 4 and q < drop:
                right = 0.0
            rows.append((f"{country}|{q}|local", f"{country}|{q}", right, country, "local", "local language"))
            rows.append(
                (f"{country}|{q}|english", f"{country}|{q}", 100.0 if q % 4 else 0.0, country, "english", "English")
            )
    return pd.DataFrame(rows, columns=["item", "question", "value", "country", "mode", "asked_in"])


@pytest.fixture
def told(tmp_path, monkeypatch):
    state: dict = {"posts": []}
    with serve(Webhook, state) as url:
        monkeypatch.setenv("GEOMON_TEST_GROUP_HOOK", f"{url}/hook")
        settings = alerts.AlertSettings(webhook_url_env="GEOMON_TEST_GROUP_HOOK", webhook_style="json")
        yield state, announce.announcer(settings)


def _release(tmp_path, suite, tracked, before, after, announcer):
    history = MetricHistory(f"sqlite:///{tmp_path / f'{suite}.sqlite'}")
    settings = verdicts.VerdictSettings(resamples=999)
    common = {"settings": settings, "announcer": announcer}
    tracking.track(history, suite, "old", [], before, tracked, **common)
    out = tracking.track(history, suite, "new", [], after, tracked, predecessor="old", **common)
    return {(v["metric"], v["breakdown"]): v for v in out.verdicts}


@pytest.mark.parametrize(
    ("suite", "tracked", "before", "after", "paged"),
    [
        ("worldbench", worldbench.TRACKED, _worldbench({}), _worldbench({"R1": 0.15}), ("mean_error", "region=R1")),
        ("worldbench", worldbench.TRACKED, _worldbench({}), _worldbench({}, silent="R2"), ("parse_rate", "region=R2")),
        ("quench", quench.TRACKED, _quench(), _quench(0.5), ("correct_answer_score", "questions=Indic")),
        ("saged", saged.TRACKED, _saged(), _saged("Peru", 0.1), ("sentiment_mean_calibrated", "concept=Peru")),
        ("blend", blend.TRACKED, _blend(), _blend("PE", 30), ("sem_b_local", "country=PE")),
        ("gapminder", gapminder.TRACKED, _gapminder(), _gapminder("sdg-02"), ("indecisive_rate", "topic=sdg-02")),
    ],
)
def test_a_group_that_gets_worse_pages_by_name(tmp_path, told, suite, tracked, before, after, paged):
    state, announcer = told
    decided = _release(tmp_path, suite, tracked, before, after, announcer)
    assert decided[paged]["verdict"] == verdicts.REGRESSION, decided[paged]
    (post,) = [p["body"] for p in state["posts"]]
    assert post["kind"] == "regression" and f"{paged[0]} ({paged[1]})" in post["title"]
    disparities = [v for v in decided.values() if v["breakdown"] == "" and v["metric"] != paged[0]]
    assert all(v["verdict"] != verdicts.REGRESSION for v in disparities)  # gaps are shown, never paged


def test_the_best_group_improving_pages_nobody(tmp_path, told):
    """WorldBench's best region (least error) gets 0.10 better: the regional gap widens — shown as
    ``disparity widened``, naming the region that moved — and the region's own test is an improvement."""
    state, announcer = told
    decided = _release(
        tmp_path, "worldbench", worldbench.TRACKED, _worldbench({}), _worldbench({"R0": -0.08}), announcer
    )
    gap = decided[("region_disparity_mean", "")]
    assert gap["verdict"] == verdicts.WIDENED and gap["change"] == pytest.approx(0.08)
    assert "region=R0" in gap["note"]
    assert decided[("mean_error", "region=R0")]["verdict"] == verdicts.IMPROVEMENT
    assert not [v for v in decided.values() if v["verdict"] == verdicts.REGRESSION]
    assert state["posts"] == []
    # `geomon history` shows the comparison's note beside the figure (which group moved).
    history = MetricHistory(f"sqlite:///{tmp_path / 'worldbench.sqlite'}")
    table = tracking.history_table(history, "worldbench", [("region_disparity_mean", "")])
    row = table[table["model"] == "new"].iloc[0]
    assert row["verdict"] == verdicts.WIDENED and "moved most: region=R0" in row["note"] and row["alpha"] > 0


def test_a_gap_rests_on_its_smallest_group_and_is_bootstrapped_within_groups():
    """A range over groups counts its smallest group's clusters (the sample the between-group claim rests on),
    and its bootstrap keeps every group in every resample: never missing a two-country region."""
    from geomon.stats.declared import Mean, Range, TrackedMetric, estimates

    frame = pd.DataFrame(
        {
            "item": [f"c{i}" for i in range(62)],
            "region": ["small"] * 2 + ["big"] * 60,
            "value": [0.9, 0.8, *np.linspace(0.1, 0.3, 60)],
        }
    )
    (gap,) = estimates(TrackedMetric("gap", Range(Mean("value"), "region"), higher_is_worse=True), frame, resamples=500)
    assert gap.clusters == 2  # the small region's two countries, not 62
    assert gap.ci_low > 0.5  # both regions in every resample: the gap never collapses to NaN or 0


def test_an_unchanged_metric_never_states_an_mde_of_zero(tmp_path):
    """Temperature-0 answers that do not change: the sign-flip null has no spread, so the MDE is planned from
    the baseline (its bootstrap spread, or the worst case of a bounded metric). Mutation caught: the MDE read off
    the null alone (0)."""
    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    settings = verdicts.VerdictSettings(resamples=199)
    same = _blend()
    tracking.track(history, "blend", "old", [], same, blend.TRACKED, settings)
    out = tracking.track(history, "blend", "new", [], same.copy(), blend.TRACKED, settings, predecessor="old")
    decided = {(v["metric"], v["breakdown"]): v for v in out.verdicts}
    overall = decided[("sem_b_local", "")]
    assert overall["verdict"] == verdicts.NO_CHANGE and overall["p_value"] == 1.0
    assert overall["mde"] > 5 and "planned from the baseline" in overall["note"]


def test_a_small_groups_interval_is_never_narrower_than_its_clusters_allow():
    """Five questions, all answered right: the percentile bootstrap says [100, 100]; the interval is at least
    the Wilson interval over five clusters (about [57, 100])."""
    from geomon.stats.declared import Mean, TrackedMetric, estimates

    frame = pd.DataFrame({"item": [f"q{i}" for i in range(5)], "value": [100.0] * 5})
    (small,) = estimates(TrackedMetric("acc", Mean("value"), bounds=(0, 100)), frame)
    assert small.value == 100 and small.ci_high == pytest.approx(100) and 50 < small.ci_low < 60


def test_an_undefined_group_carries_its_groups_name(tmp_path, told):
    """A region with no answers left has no mean error: its undefined comparison is recorded under the name its
    value has (``mean_error``, ``region=R2``), not the range's."""
    _, announcer = told
    decided = _release(tmp_path, "worldbench", worldbench.TRACKED, _worldbench({}), _worldbench({}, "R2"), announcer)
    assert decided[("mean_error", "region=R2")]["verdict"] == verdicts.UNDEFINED
    assert ("region_disparity_mean", "region=R2") not in decided
