"""The offline world map and the reports' explanations where a number cannot be given."""

from __future__ import annotations

import re

import pandas as pd

from geomon.report import borderlines, world_map


def test_every_country_with_a_value_is_filled_and_named_on_hover():
    svg, not_drawn = world_map.world_map_svg(
        {"FRA": ("France", 0.2), "KEN": ("Kenya", 0.9), "XKX": ("Kosovo", 0.5), "CHI": ("Channel Islands", 0.4)},
        "t",
        "error",
    )
    filled = {
        code: (fill, tip)
        for code, fill, tip in re.findall(r'<g class="(\w\w) country" style="fill:(#[0-9a-f]{6})"><title>([^<]*)', svg)
    }
    assert filled["fr"][1] == "France: 0.200" and filled["ke"][1] == "Kenya: 0.900"
    assert filled["fr"][0] != filled["ke"][0] and filled["de"] == (world_map.NO_DATA, "no value")
    assert "CHI" in not_drawn and "FRA" not in not_drawn
    assert "http" not in svg.replace("http://www.w3.org/2000/svg", "")  # nothing fetched from anywhere


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
    assert borderlines.score_text(row, "kb_cs").startswith("not computed")
    assert borderlines.score_text(row, "delta_cs") == "undefined: Non CS is 0 (Con − Non = 100.0)"
    assert borderlines.score_text(row, "con_cs") == "50.0 (no interval: every resample gives the same value)"
    assert "one territory" in borderlines.score_text(row, "non_cs")
