"""SAGED's page: what it says where a figure has no value."""

from __future__ import annotations

import pandas as pd

from geomon.suites.saged import report as saged


def test_sageds_impact_ratio_without_a_value_says_its_own_reason(tmp_path):
    """SAGED's first chart at the quick profile: no model has an impact ratio, and the report says why in the
    suite's terms (two countries with scored responses, one at the selection standard) instead of drawing
    nothing. Mutation caught: SAGED's reason not passed (the generic one said)."""
    board = pd.DataFrame({"model": ["smollm2", "gemma3"], "sentiment_impact_ratio_calibrated": float("nan")})
    page = saged.write_report(tmp_path, board, {}, ()).read_text()
    assert "no chart — no model has a value (smollm2, gemma3): the impact ratio needs two countries" in page
