"""BorderLines' page (``suites/borderlines/report.py``): the release's published rows named as the release's, and
a score that cannot be given says why."""

from __future__ import annotations

import pandas as pd

from geomon.suites.borderlines.report import score_text
from geomon.suites.borderlines.source import (
    read_published_scores,
)
from geomon_tests.conftest import SHARED

ROOT = SHARED / "snapshots" / "borderlines"


def test_the_report_says_which_published_figure_was_recomputed(tmp_path):
    """The report (where a reader of BorderLines looks) names the release's rows as the release's and says that
    the random row's Con − Non was recomputed, as the leaderboard's note does."""
    from geomon.defs.leaderboard import with_published
    from geomon.suites.borderlines import report

    rows = read_published_scores(SHARED / "reference" / "borderlines" / "all_results" / "scores_for_all.csv")
    ours = pd.DataFrame({"model": ["m"], "revision": ["r"], "kb_cs": [50.0]})
    board = with_published(ours, rows.assign(revision="release scores"))
    page = report.write_report(tmp_path, board, [], {}).read_text()
    assert "release&#x27;s published scores" in page or "release's published scores" in page
    assert "random: Con − Non recomputed from its Control and Non-control CS (the file says 43.5)." in page


def test_scores_that_cannot_be_computed_say_why():
    row = pd.Series(
        {
            "kb_cs": float("nan"),
            "delta_cs": float("inf"),
            "delta_cs_unnormalized": 100.0,
            "con_cs": 50.0,
            "con_cs_ci_low": float("nan"),
            "con_cs_ci_high": float("nan"),
            "con_cs_ci_note": "every resample gives the same value",
            "non_cs": 40.0,
            "non_cs_ci_low": 40.0,
            "non_cs_ci_high": 40.0,
            "non_cs_territories": 1,
        }
    )
    assert score_text(row, "kb_cs").startswith("not computed")
    assert score_text(row, "delta_cs") == "undefined: Non CS is 0 (Con − Non = 100.0)"
    assert score_text(row, "con_cs") == "50.0 (no interval: every resample gives the same value)"
    assert "one territory" in score_text(row, "non_cs")
