"""SAGED's branch and generate stages: every root prompt copied for every country (the counterfactual baseline),
a seeded sample of root prompts, and the requests each model gets under each system-prompt role."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.stats.sampling import nested_sample
from geomon.suites.saged.assembly import assemble, keyword_pattern

# The G20's member countries and the European Union (the African Union joined in 2023; the paper's 21
# concepts are these 20 and its invented root country).
G20 = (
    "Argentina",
    "Australia",
    "Brazil",
    "Canada",
    "China",
    "France",
    "Germany",
    "India",
    "Indonesia",
    "Italy",
    "Japan",
    "Mexico",
    "Russia",
    "Saudi Arabia",
    "South Africa",
    "South Korea",
    "Turkey",
    "United Kingdom",
    "United States",
    "European Union",
)

ROLES: dict[str, str | None] = {"none": None, "assistant": "You are a helpful assistant."}
MAX_TOKENS = 48  # a continuation of a sentence or two
TEMPERATURE = 0.0


def sample_roots(assembled: pd.DataFrame, n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` root prompts (a nested seeded sample; all for n = 0), in their original order."""
    if not n or n >= len(assembled):
        return assembled
    picked = set(nested_sample(assembled["root_id"].tolist(), n, seed))
    return assembled[assembled["root_id"].isin(picked)].reset_index(drop=True)


def branch(assembled: pd.DataFrame, countries: Sequence[str] = G20) -> pd.DataFrame:
    """Every root prompt and its baseline sentence for the root concept and for every country, the
    keyword replaced (``prompt_id`` = root_id|concept): the same prompts for every country."""
    rows = []
    for row in assembled.itertuples(index=False):
        pattern = keyword_pattern(row.keyword)
        for concept in dict.fromkeys([row.concept, *countries]):
            name = row.keyword if concept == row.concept else concept
            rows.append(
                {
                    "prompt_id": f"{row.root_id}|{concept}",
                    "root_id": row.root_id,
                    "kind": row.kind,
                    "concept": concept,
                    "branched": concept != row.concept,
                    "source_tag": row.source_tag if concept == row.concept else f"br_{row.source_tag}_{concept}",
                    "prompt": pattern.sub(lambda _, n=name: n, row.prompt),
                    "baseline": pattern.sub(lambda _, n=name: n, row.baseline),
                }
            )
    return pd.DataFrame(rows)


def build_prompts(
    scraped: pd.DataFrame,
    sample: int = 0,
    seed: int = 0,
    countries: Sequence[str] = G20,
    questions: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Assemble (split sentences, plus generated questions if any), sample and branch: (the root prompts,
    with ``attrs["rejected"]``; the branched prompts every model is asked)."""
    assembled = assemble(scraped)
    if questions is not None and len(questions):
        rejected = assembled.attrs["rejected"]
        assembled = pd.concat([assembled, questions], ignore_index=True)
        assembled.attrs["rejected"] = rejected
    return assembled, branch(sample_roots(assembled, sample, seed), countries)


def unequal_prompts(branched: pd.DataFrame) -> dict[str, int]:
    """Concepts that did not get every root prompt (the check: every country gets the same prompts)."""
    roots = branched["root_id"].nunique()
    counts = branched.groupby("concept")["root_id"].nunique()
    return {str(c): int(n) for c, n in counts.items() if n != roots}


def requests_for(prompts: pd.DataFrame, spec: ModelSpec, role: str | None = None) -> list[GenerationRequest]:
    """The prompt as the user message (with the role's system prompt, if any) for chat models; base models
    continue the prompt text itself."""
    params = {**spec.params, "max_tokens": MAX_TOKENS, "temperature": TEMPERATURE}
    if spec.kind == "chat":
        system = ({"role": "system", "content": role},) if role else ()
        return [
            GenerationRequest("chat", messages=(*system, {"role": "user", "content": p}), params=params)
            for p in prompts["prompt"]
        ]
    lead = f"{role}\n\n" if role else ""
    return [GenerationRequest("completion", prompt=f"{lead}{p}", params=params) for p in prompts["prompt"]]
