"""BLEnD's prompts: every (sampled) question in the country's language and in English with the paper's templates
(``inst-4`` by default; ``pers-3`` too when configured), and the requests a chat and a base model get."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.stats.sampling import nested_sample
from geomon.suites.blend.source import BlendError, BlendRelease

MAX_TOKENS = 32  # "a single answer without any explanations"
TEMPERATURE = 0.0  # the reference code's default


def sample_questions(questions: pd.DataFrame, n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` questions per country, a nested seeded sample (all for n = 0), in the release's order: n + 1
    per country keeps the n drawn before and adds one."""
    if not n:
        return questions
    keep = []
    for country, group in questions.groupby("country", sort=False):
        picked = set(nested_sample(group["question_id"].tolist(), n, seed, group=country))
        keep.extend(group.index[group["question_id"].isin(picked)])
    return questions.loc[keep]


def build_prompts(
    release: BlendRelease, templates: Sequence[str] = ("inst-4",), sample: int = 0, seed: int = 0
) -> pd.DataFrame:
    """One prompt per (country, question, language asked in, template): the local-language template with the
    local question, and (for a country whose language is not English) the English template with the English
    question, as the reference's ``make_prompt`` does. A template a country lacks is an error naming both."""
    rows = []
    skipped: list[str] = []
    chosen = sample_questions(release.questions, sample, seed)
    for q in chosen.itertuples(index=False):
        modes = [("local", q.language, q.question)]
        if q.language != "English":
            modes.append(("english", "English", q.en_question))
        skipped += [f"{q.country}|{q.question_id}|{mode}" for mode, _, text in modes if not text]
        modes = [m for m in modes if m[2]]  # the release's empty question texts are not asked (counted)
        for template in templates:
            pair = release.templates[q.country].get(template)
            if pair is None:
                raise BlendError(f"BLEnD: country {q.country} has no prompt template {template!r}")
            if any("{q}" not in text for text in pair):
                raise BlendError(f"BLEnD: country {q.country}'s template {template!r} has no {{q}} placeholder")
            for mode, asked_in, question in modes:
                text = (pair[0] if asked_in == "English" else pair[1]).replace("{q}", question)
                rows.append(
                    {
                        "prompt_id": f"{q.country}|{q.question_id}|{mode}|{template}",
                        "country": q.country,
                        "language": q.language,
                        "mode": mode,
                        "asked_in": asked_in,
                        "template": template,
                        "question_id": q.question_id,
                        "topic": q.topic,
                        "prompt": text,
                        "annotations": q.annotations,
                        "idks": q.idks,
                    }
                )
    prompts = pd.DataFrame(rows)
    prompts.attrs["not_asked_empty_question"] = skipped
    return prompts


def unfilled_placeholders(prompts: pd.DataFrame) -> list[str]:
    return [pid for pid, text in zip(prompts["prompt_id"], prompts["prompt"], strict=True) if "{q}" in text]


def requests_for(prompts: pd.DataFrame, spec: ModelSpec) -> list[GenerationRequest]:
    """Chat models get the prompt as the user message; base models continue it (a template that does not end
    on "Answer:" gets one, so a completion model answers instead of writing more questions)."""
    params = {"max_tokens": MAX_TOKENS, "temperature": TEMPERATURE, **spec.params}
    if spec.kind == "chat":
        return [
            GenerationRequest("chat", messages=({"role": "user", "content": p},), params=params)
            for p in prompts["prompt"]
        ]
    params["stop"] = ["\n\n", "\nQuestion"]
    return [
        GenerationRequest("completion", prompt=p if p.rstrip().endswith(":") else f"{p}\nAnswer:", params=params)
        for p in prompts["prompt"]
    ]
