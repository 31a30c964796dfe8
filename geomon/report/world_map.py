"""A world map of a per-country value (WorldBench's Figure 1), drawn offline as inline SVG.

The country outlines are pygal_maps_world's ``worldmap.svg`` (each country a group classed by its ISO
3166-1 alpha-2 code), read from the installed package: no tile server, no CDN. World Bank codes are ISO
alpha-3 and are mapped with pycountry; the World Bank's own codes that ISO lacks (Kosovo, the Channel
Islands) are mapped or listed as not drawn. Each country carries a ``<title>``: hovering shows its value.
"""

from __future__ import annotations

import html
import importlib.resources
import re
from functools import cache

# World Bank economy codes that are not ISO 3166-1 alpha-3 codes → the map's alpha-2 class, where it has one.
WORLD_BANK_ONLY = {"XKX": "xk", "CHI": None}
NO_DATA = "#d9d9d9"


@cache
def _outline() -> str:
    return (importlib.resources.files("pygal_maps_world") / "worldmap.svg").read_text(encoding="utf-8")


def alpha2(iso3: str) -> str | None:
    """The map's class for a World Bank economy code (lower-case ISO alpha-2), or None."""
    if iso3 in WORLD_BANK_ONLY:
        return WORLD_BANK_ONLY[iso3]
    import pycountry

    country = pycountry.countries.get(alpha_3=iso3)
    return country.alpha_2.lower() if country is not None else None


def _colour(value: float, low: float, high: float) -> str:
    from matplotlib import colormaps

    share = 0.0 if high <= low else min(max((value - low) / (high - low), 0.0), 1.0)
    r, g, b, _ = colormaps["viridis_r"](share)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def world_map_svg(
    values: dict[str, tuple[str, float]], title: str, label: str, low: float = 0.0, high: float = 1.0
) -> tuple[str, list[str]]:
    """An SVG map with each country (World Bank code → (name, value)) filled by its value on a viridis scale
    from ``low`` to ``high``, a legend, and countries without a value in grey; also the codes not drawn
    (no outline on the map)."""
    by_class: dict[str, tuple[str, float]] = {}
    not_drawn = []
    for iso3, (name, value) in values.items():
        code = alpha2(iso3)
        if code is None:
            not_drawn.append(iso3)
        else:
            by_class[code] = (name, value)
    present = set(re.findall(r'<g class="(\w\w) country map-element">', _outline()))
    not_drawn += sorted(iso3 for iso3 in values if alpha2(iso3) in by_class.keys() - present)

    def fill(match: re.Match[str]) -> str:
        code = match.group(1)
        if code not in by_class:
            return f'<g class="{code} country" style="fill:{NO_DATA}"><title>no value</title>'
        name, value = by_class[code]
        tip = html.escape(f"{name}: {value:.3f}")
        return f'<g class="{code} country" style="fill:{_colour(value, low, high)}"><title>{tip}</title>'

    body = re.sub(r'<g class="(\w\w) country map-element">', fill, _outline())
    body = re.sub(r"<\?xml[^>]*\?>", "", body)
    swatch = "<span style='display:inline-block;width:22px;height:10px;background:{}'></span>"
    legend = "".join(swatch.format(_colour(low + (high - low) * i / 9, low, high)) for i in range(10))
    caption = (
        f"<div style='font-size:12px'>{html.escape(title)} — {html.escape(label)}: {low:.2f} {legend} {high:.2f}"
        f" {swatch.format(NO_DATA)} no value</div>"
    )
    svg = body.replace("<svg ", "<svg style='width:100%;height:auto;stroke:#fff;stroke-width:0.5' ", 1)
    return f"<figure style='margin:0'>{caption}{svg}</figure>", sorted(set(not_drawn))
