"""WorldBench's prompts: one question per World Bank indicator and country, with its ground truth (the mean of
the snapshot's latest three years), in chat form (the paper's Figure 4) and as a completion prompt."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.sources.worldbank import DEFAULT_INDICATORS, GROUND_TRUTH_YEARS, WorldBankSnapshot

EXAMPLE_COUNTRIES = {"CHE": "Switzerland", "COL": "Colombia", "MLI": "Mali"}
MAX_TOKENS = 20  # a number, maybe with a unit or a citation; the paper asks for the number only

BASE_INSTRUCTION = (
    "I will ask you factual questions about countries. Specifically, I will ask you for the {indicator}. "
    "You will answer as concisely as possible - only answer with the number! First I will give an example "
    "with the answer. Then I will ask you my question, and you will provide the answer in the same way."
)
ACK = "Sounds good, will do."
QUESTION = (
    "What is the {indicator} for the country {country}{year}? Do not answer in a complete sentence "
    "- only provide the number!"
)


class PromptError(ValueError):
    pass


def ground_truth(snapshot: WorldBankSnapshot, year: int | None = None) -> pd.DataFrame:
    """(indicator, iso3, ground_truth, gt_years): mean of the values in the snapshot's latest three
    years, or the single value of ``year``. Pairs without data are absent (counted by the caller)."""
    values = snapshot.values
    if year is None:
        first = snapshot.latest_year - GROUND_TRUTH_YEARS + 1
        window = values[values["year"] >= first]
    else:
        window = values[values["year"] == year]
    grouped = window.groupby(["indicator", "iso3"])
    out = grouped["value"].mean().rename("ground_truth").to_frame()
    out["gt_years"] = grouped["year"].apply(lambda y: ",".join(str(v) for v in sorted(y)))
    return out.reset_index()


def prompt_variant(example_country: str = "CHE", year: int | None = None) -> str:
    """The prompt variant a run asked: regression checks compare runs of the same variant only."""
    return f"example={example_country},year={year or 'latest'}"


def format_value(value: float) -> str:
    """How the example answer is written: thousands separators for large numbers."""
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.2f}".rstrip("0").rstrip(".")


def build_prompts(
    snapshot: WorldBankSnapshot,
    indicators: dict[str, str] | None = None,
    example_country: str = "CHE",
    year: int | None = None,
    countries: list[str] | None = None,
) -> pd.DataFrame:
    """One row per (indicator, iso3) with ground truth (public, DESIGN.md).

    Columns: question_id, indicator, iso3, country, region, income_group, ground_truth, gt_years,
    year, variant (``prompt_variant``), messages (chat form, Figure 4 of the paper) and prompt (the
    equivalent completion prompt for base models). ``year`` asks "… in 2016" and takes that year's value
    as ground truth. ``attrs["skipped"]`` counts the pairs left out for lack of data; ``attrs["indicators_left_out"]``
    names the indicators a year variant cannot ask (no example value that year).
    """
    indicators = indicators or {c: DEFAULT_INDICATORS.get(c, c) for c in snapshot.indicators["indicator"]}
    missing = set(indicators) - set(snapshot.indicators["indicator"])
    if missing:
        raise PromptError(f"indicator(s) {sorted(missing)} are not in snapshot {snapshot.source}")
    economies = snapshot.economies.set_index("iso3")
    if example_country not in economies.index:
        raise PromptError(f"example country {example_country!r} is not an economy of the snapshot")
    truth = ground_truth(snapshot, year)
    truth = truth[truth["indicator"].isin(list(indicators))]
    example_name = economies.loc[example_country, "name"]
    rows = []
    skipped: dict[str, int] = {}
    indicators_left_out: dict[str, str] = {}
    wanted = economies.index if countries is None else pd.Index(countries)
    unknown = set(wanted) - set(economies.index)
    if unknown:
        raise PromptError(f"countries {sorted(unknown)} are not economies of the snapshot")
    year_text = f" in {year}" if year else ""
    variant = prompt_variant(example_country, year)
    for code, phrase in indicators.items():
        by_iso = truth[truth["indicator"] == code].set_index("iso3")
        if example_country not in by_iso.index:
            if year is None:
                raise PromptError(
                    f"example country {example_country} has no value for {code}; choose another example country"
                )
            # A named year may predate or postdate an indicator's data (WDI 2023-12 has no 2021 CO2):
            # that indicator is left out of this variant and reported, not the whole prompt set.
            indicators_left_out[code] = f"{example_country} has no value in {year}"
            continue
        example_value = format_value(float(by_iso.loc[example_country, "ground_truth"]))
        instruction = BASE_INSTRUCTION.format(indicator=phrase)
        example_q = QUESTION.format(indicator=phrase, country=example_name, year=year_text)
        skipped[code] = int(sum(iso not in by_iso.index for iso in wanted if iso != example_country))
        for iso3 in wanted:
            if iso3 == example_country or iso3 not in by_iso.index:
                continue
            econ = economies.loc[iso3]
            question = QUESTION.format(indicator=phrase, country=econ["name"], year=year_text)
            messages = (
                {"role": "user", "content": instruction},
                {"role": "assistant", "content": ACK},
                {"role": "user", "content": example_q},
                {"role": "assistant", "content": example_value},
                {"role": "user", "content": question},
            )
            prompt = f"{instruction}\n\nQuestion: {example_q}\nAnswer: {example_value}\n\nQuestion: {question}\nAnswer:"
            rows.append(
                {
                    "question_id": f"{code}|{iso3}|{year or 'latest'}",
                    "indicator": code,
                    "iso3": iso3,
                    "country": econ["name"],
                    "region": econ["region"],
                    "income_group": econ["income_group"],
                    "ground_truth": float(by_iso.loc[iso3, "ground_truth"]),
                    "gt_years": by_iso.loc[iso3, "gt_years"],
                    "year": year,
                    "variant": variant,
                    "messages": messages,
                    "prompt": prompt,
                }
            )
    if not rows:
        raise PromptError(f"no questions: {indicators_left_out or 'no country has ground truth'}")
    frame = pd.DataFrame(rows)
    frame.attrs["skipped"] = skipped
    frame.attrs["indicators_left_out"] = indicators_left_out
    return frame


def requests_for(prompts: pd.DataFrame, spec: ModelSpec) -> list[GenerationRequest]:
    """Chat models get the messages; base models the completion prompt, stopped at the line's end."""
    params = {"max_tokens": MAX_TOKENS, **spec.params}
    if spec.kind == "chat":
        return [GenerationRequest("chat", messages=m, params=params) for m in prompts["messages"]]
    params["stop"] = ["\n", "Question:"]
    return [GenerationRequest("completion", prompt=p, params=params) for p in prompts["prompt"]]


def prompts_expectations() -> list[Any]:
    """Every question has a prompt text, a country and finite ground truth; ids are unique."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectColumnValuesToBeUnique(column="question_id"),
        gxe.ExpectColumnValuesToMatchRegex(column="prompt", regex=r"\S"),
        gxe.ExpectColumnValuesToMatchRegex(column="country", regex=r"\S"),
        gxe.ExpectColumnValuesToNotBeNull(column="ground_truth"),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
    ]


def sample_countries(snapshot: WorldBankSnapshot, n: int, seed: int = 0) -> list[str]:
    """``n`` countries spread over the regions (round-robin, seeded) for quick looks and tests."""
    rng = np.random.default_rng(seed)
    by_region = {
        region: list(rng.permutation(sorted(group["iso3"]))) for region, group in snapshot.economies.groupby("region")
    }
    picked: list[str] = []
    while len(picked) < n and any(by_region.values()):
        for region in sorted(by_region):
            if by_region[region] and len(picked) < n:
                picked.append(str(by_region[region].pop(0)))
    return sorted(picked)
