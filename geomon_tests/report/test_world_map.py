"""The offline world map: every country with a value filled and named, nothing fetched."""

from __future__ import annotations

import re

from geomon.report import world_map


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
