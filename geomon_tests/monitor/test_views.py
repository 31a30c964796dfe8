"""How stored decisions read (``monitor.views``): verdict tables in the metric's units, the blind line, the power
column's flag, and what ``geomon items`` says when a suite keeps no items."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from geomon.monitor import release, views
from geomon.monitor.history import EvaluationRun, MetricHistory
from geomon.stats import verdicts
from geomon.stats.verdicts import Comparison


def test_a_verdict_reads_in_the_metric_units_worst_first():
    """What the no_regression check and the import's catalog entries show: percentage points for a percentage,
    the metric's own units otherwise, a 95 % interval of ± 1.96 standard errors, p values rounded (tiny ones as
    < 0.001), the MDE in the same units, "—" where a figure is undefined, and each verdict's note (a comparison not
    decidable at the run's profile says so), and the look it was decided at, read from its own columns."""
    rows = [
        {
            "metric": "correct_rate",
            "breakdown": "topic=other",
            "against": "predecessor o1",
            "change": 1.0,
            "se": 1.0,
            "p_value": 0.2,
            "p_adjusted": 0.4,
            "mde": 3.0,
            "power": 0.5,
            "verdict": verdicts.NO_CHANGE,
            "note": "not decidable at this profile: MDE 3 > min effect 1 (`geomon plan --detect`)",
            "look": verdicts.LookKind.RESERVE,
        },
        {
            "metric": "correct_rate",
            "breakdown": "",
            "against": "predecessor o1",
            "change": -17.19,
            "se": 2.0,
            "p_value": 0.00001,
            "p_adjusted": 0.0004,
            "mde": 5.123,
            "power": 0.912,
            "verdict": verdicts.REGRESSION,
        },
        {
            "metric": "mean_error",
            "breakdown": "",
            "against": "previous run",
            "change": float("nan"),
            "se": None,
            "p_value": None,
            "p_adjusted": None,
            "mde": 0.0123,
            "verdict": verdicts.UNDEFINED,
            "look": verdicts.LookKind.SPENT,
            "alpha_zero": "α 0: its weight in verdicts.shares is 0",
        },
    ]
    rows = [Comparison.of(row) for row in rows]
    table = views.verdict_table(rows, {"correct_rate": (0, 100), "mean_error": None})
    assert table.to_dict("records") == [
        {
            "metric": "correct_rate",
            "baseline": "o1 (predecessor)",
            "change": "−17.2 pts",
            "95 % interval": "[−21.1, −13.3] pts",
            "p": "< 0.001",
            "adjusted p": "< 0.001",
            "MDE": "5.12 pts",
            views.POWER: "91%",
            "verdict": "regression",
            "note": "",
            "look": "first look",
        },
        {
            "metric": "correct_rate (topic=other)",
            "baseline": "o1 (predecessor)",
            "change": "+1 pts",
            "95 % interval": "[−0.96, 2.96] pts",
            "p": "0.2",
            "adjusted p": "0.4",
            "MDE": "3 pts",
            views.POWER: "50%",
            "verdict": "no detectable change",
            "note": "not decidable at this profile: MDE 3 > min effect 1 (`geomon plan --detect`)",
            "look": "reserve: provisional baseline (decided again when the release's own arrives)",
        },
        {
            "metric": "mean_error",
            "baseline": "previous run",
            "change": "—",
            "95 % interval": "—",
            "p": "—",
            "adjusted p": "—",
            "MDE": "0.0123",
            views.POWER: "—",
            "verdict": "undefined",
            "note": "",
            "look": "none, never paged: α 0: its weight in verdicts.shares is 0",
        },
    ]
    assert views.verdict_phrase("o3-mini", rows[1], (0, 100)) == (
        "o3-mini vs o1: correct_rate −17.2 pts (p < 0.001, adjusted < 0.001), regression"
    )


def test_geomon_items_says_why_a_suite_has_no_items(tmp_path):
    """A built-in suite's evaluation keeps no items as scored: `geomon items` says so, and where its answers are,
    instead of claiming the evaluated model has none."""
    from geomon.suites import quench

    history = MetricHistory(f"sqlite:///{tmp_path / 'h.sqlite'}")
    items = pd.DataFrame(
        {
            "item": [f"e{i}|normal" for i in range(4)],
            "question_id": ["1", "2", "3", "4"],
            "mode": "normal",
            "correct": [1.0, 0.0, 1.0, 1.0],
            "answered": 1.0,
            "indic": [True, False, True, False],
            "questions": ["Indic", "non-Indic", "Indic", "non-Indic"],
        }
    )
    figures = release.declared_figures("quench", quench.TRACKED, items)
    settings = verdicts.VerdictSettings(resamples=99)
    release.track(history, EvaluationRun("quench", "m"), figures, items, quench.TRACKED, settings)
    with pytest.raises(release.TrackingError, match=r"keep no items as scored.*per-model CSVs"):
        views.item_rows(history, "quench", "m")
    with pytest.raises(release.TrackingError, match=r"no evaluation of n \(models evaluated: m\)"):
        views.item_rows(history, "quench", "n")


def test_the_blind_line_names_comparisons_too_small_to_test_and_too_weak_to_decide():
    """A leaderboard's "blind" line names both kinds of comparison whose "no detectable change" is not "no
    regression": too few clusters to be tested at all (a small group), and an MDE above the minimum effect.
    Mutation caught: the line naming only the profile-blind ones (the small groups were left out)."""
    from geomon.stats import sufficiency

    profile, sample = f"{sufficiency.PROFILE_PREFIX}MDE 12 > min effect 5", f"{sufficiency.SAMPLE_PREFIX} (8 < 30)"
    rows = [
        {"metric": "acc", "breakdown": "", "decidability": verdicts.Decidability.UNDERPOWERED_PROFILE, "note": profile},
        {
            "metric": "acc",
            "breakdown": "country=Kenya",
            "decidability": verdicts.Decidability.UNDECIDABLE_SAMPLE,
            "note": sample,
        },
        {"metric": "acc", "breakdown": "country=Peru", "decidability": verdicts.Decidability.DECIDABLE, "note": ""},
    ]
    rows = [Comparison.of(row) for row in rows]
    line = views.profile_blind(rows)
    assert (
        line.startswith("not decidable at this profile (power below the stated power at the minimum effect")
        and ": acc;" in line
    )
    assert "not decidable at this sample (fewer than 30 clusters, or a value" in line and "acc (country=Kenya)" in line
    assert "Peru" not in line and views.profile_blind(rows[2:]) == ""


def test_a_page_from_an_underpowered_comparison_says_so_in_the_power_column():
    """Where the open regressions are listed (the check's table, ``monitor/open_regressions``, the reports), the
    power of a page from a test below the stated power reads "6 % (underpowered)"; a well-powered page's does not.
    Mutation caught: the flag dropped from ``verdict_table``."""
    row = {"metric": "acc", "breakdown": "", "against": "predecessor a", "change": -20.0, "se": 2.0, "p_value": 1e-4,
           "p_adjusted": 1e-3, "mde": 30.0, "power": 0.06, "verdict": verdicts.REGRESSION,
           "note": f"{verdicts.UNDERPOWERED_PAGE} (6% power at the minimum effect)",
           "decidability": verdicts.Decidability.UNDERPOWERED_REGRESSION}  # fmt: skip
    strong = {**row, "power": 0.95, "note": "", "decidability": verdicts.Decidability.DECIDABLE}
    weak, strong = views.verdict_table([Comparison.of(row), Comparison.of(strong)], {}).to_dict("records")
    assert weak[views.POWER] == "6% (underpowered)" and strong[views.POWER] == "95%"


def test_a_metric_key_reads_one_way_and_keys_like_its_pair():
    """Every surface names a figure as ``MetricKey`` renders it (``metric (breakdown)``, or the metric alone for the
    overall figure), and the key finds what a (metric, breakdown) pair keys."""
    from geomon.stats.values import MetricKey

    assert str(MetricKey("correct_rate", "language=en")) == "correct_rate (language=en)"
    assert f"{MetricKey('correct_rate')}" == "correct_rate"
    assert views.verdict_text(Comparison("acc", "country=Peru", verdicts.WATCH)) == "acc (country=Peru) watch"
    assert {("acc", "country=Peru"): 1}[MetricKey("acc", "country=Peru")] == 1


def test_a_release_says_what_would_decide_its_undecidable_headlines():
    """The closing screen of a serving-change release names, for each undecidable headline, the clusters that
    would decide it: at least the sufficiency rule's 30, and n × (MDE / minimum effect)² for a tested one (its
    paired standard error falls as 1/√n). Mutation caught: the ratio not squared (≈ 60 instead of 120)."""
    tested = Comparison("acc", "", verdicts.NO_CHANGE, mde=10.0, min_effect=5.0, clusters=30)
    assert views.clusters_needed(tested) == "acc MDE 10 > 5 at 30 clusters: ≈120"
    few = Comparison("acc", "", verdicts.INSUFFICIENT, clusters=8)
    assert views.clusters_needed(few) == "acc 8 clusters, needs at least 30"
    assert views.clusters_needed(replace(tested, mde=4.0)) == ""  # decidable already
