"""A hand-made World Bank snapshot the WorldBench tests share: four countries, one indicator, values for 2018–2022,
and the scores of answers to its prompts."""

from __future__ import annotations

import pandas as pd

from geomon.sources.worldbank import WorldBankSnapshot
from geomon.suites.worldbench.prompts import build_prompts
from geomon.suites.worldbench.scoring import score


def tiny_snapshot() -> WorldBankSnapshot:
    """Four countries, one indicator, values for 2018–2022 (some missing)."""
    economies = pd.DataFrame(
        {
            "iso3": ["CHE", "AAA", "BBB", "CCC", "DDD"],
            "name": ["Switzerland", "Aland", "Bland", "Cland", "Dland"],
            "region": ["Europe", "Europe", "Africa", "Africa", "Asia"],
            "income_group": ["High income", "High income", "Low income", "Low income", pd.NA],
        }
    )
    rows = []
    for iso3, series in {
        "CHE": {2020: 8_600_000, 2021: 8_700_000, 2022: 8_800_000},
        "AAA": {2018: 90, 2020: 100, 2021: 110, 2022: 120},  # mean of latest three = 110
        "BBB": {2019: 50, 2021: 200},  # only 2021 in the window = 200
        "CCC": {2018: 10, 2019: 20},  # nothing in 2020-2022: left out, counted
        "DDD": {2022: 1000},
    }.items():
        rows += [{"indicator": "SP.POP.TOTL", "iso3": iso3, "year": y, "value": float(v)} for y, v in series.items()]
    return WorldBankSnapshot(
        values=pd.DataFrame(rows),
        economies=economies,
        indicators=pd.DataFrame(
            {"indicator": ["SP.POP.TOTL"], "name": ["Population, total"], "last_updated": ["2023-12-18"]}
        ),
        last_updated="2023-12-18",
        source="test",
    )


def scored(texts: list[str | None]) -> pd.DataFrame:
    prompts = build_prompts(tiny_snapshot())
    responses = pd.DataFrame({"text": texts, "error": [None if t is not None else "boom" for t in texts]})
    return score(prompts, responses)
