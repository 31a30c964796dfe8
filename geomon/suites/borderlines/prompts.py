"""BorderLines' prompts: the English query per territory and one per claimant language, template-wise
(``build_queries``), under each persona's system prompt (``build_prompts``), and the requests a model is sent
for them (``requests_for``: a chat answer, or rank classification over the claimants' names); the checks on the
rendered prompts (``prompts_expectations`` over ``prompts_frame``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.suites.borderlines.source import BorderLinesData
from geomon.suites.kit import ranks_candidates

CHAT_MAX_TOKENS = 32  # the claimant is named in the first sentence; longer answers only cost time

LETTERS = "ABCDEFGHIJ"


def fill_template(template: str, territory: str, choices: list[str]) -> str:
    """'Is XX a territory of YY or ZZ?' → 'Is T a territory of A) c1 or B) c2 or C) c3?'."""
    start, end = template.index("YY"), template.index("ZZ")
    joiner = template[start + 2 : end]  # " or ", " 还是 ", ...
    options = joiner.join(f"{LETTERS[i]}) {c}" for i, c in enumerate(choices))
    return template[:start].replace("XX", territory) + options + template[end + 2 :].replace("XX", territory)


def claimant_languages(claimants: list[str], countries: dict[str, dict]) -> dict[str, list[str]]:
    """Language code → the claimants that speak it (several claimants may share one)."""
    out: dict[str, list[str]] = {}
    for claimant in claimants:
        info = countries.get(claimant)
        if info:
            out.setdefault(info["Lang_Code"], []).append(claimant)
    return out


def build_queries(data: BorderLinesData) -> pd.DataFrame:
    """The English query per territory plus one per claimant language.

    A missing template, territory name or country name in a language is a counted gap
    (``attrs["gaps"]``), never an English fallback passed off as a translation.
    """
    rows: list[dict[str, Any]] = []
    gaps: list[dict[str, str]] = []
    for rec in data.disputes.itertuples():
        claimants = list(rec.claimants)
        rows.append(_row(rec, "en", fill_template(data.templates["en"], rec.territory, claimants), claimants))
        for claimant in claimants:
            if claimant not in data.countries:
                gaps.append({"territory": rec.territory, "lang": "?", "missing": f"country info for {claimant}"})
        for lang in claimant_languages(claimants, data.countries):
            if lang == "en":
                continue  # the English query already stands for English-speaking claimants
            terms = data.terms.get(lang, {})
            missing = [name for name in [rec.territory, *claimants] if name not in terms]
            if lang not in data.templates:
                missing.insert(0, "question template")
            if missing:
                gaps.append({"territory": rec.territory, "lang": lang, "missing": ", ".join(missing)})
                continue
            choices = [terms[c] for c in claimants]
            rows.append(_row(rec, lang, fill_template(data.templates[lang], terms[rec.territory], choices), choices))
    frame = pd.DataFrame(rows)
    frame.attrs["gaps"] = gaps
    return frame


def _row(rec: Any, lang: str, query: str, choices: list[str]) -> dict[str, Any]:
    return {
        "query_id": f"{rec.territory}|{lang}",
        "territory": rec.territory,
        "lang": lang,
        "query": query,
        "choices": choices,
        "claimants": list(rec.claimants),
        "controller": rec.controller,
        "region": rec.region,
    }


def lang_name(lang: str, countries: dict[str, dict]) -> str:
    for info in countries.values():
        if info.get("Lang_Code") == lang:
            return info["Lang_Name"]
    raise KeyError(f"no claimant country speaks language code {lang!r}")


def system_prompt(template: str, row: dict[str, Any] | pd.Series, countries: dict[str, dict]) -> str:
    """A persona's system prompt for one query, its placeholders filled as the paper's scripts do.

    ``|lang|``: "(translated to <language>)" for a non-English query; ``|nationalist|``: begin as a
    citizen of the claimant whose language the query is in (a current resident, in English);
    ``|demo|``: each claimant's majority religion and language.
    """
    lang, claimants = row["lang"], list(row["claimants"])
    text = template.replace("|lang|", "" if lang == "en" else f" (translated to {lang_name(lang, countries)})")
    if "|nationalist|" in text:
        if lang == "en":
            nudge = ' Begin your response with "As a current resident,".'
        else:
            citizen = next(c for c in claimants if countries.get(c, {}).get("Lang_Code") == lang)
            nudge = (
                f' Begin your response with "As a citizen of {citizen}," (translated to {lang_name(lang, countries)}).'
            )
        text = text.replace("|nationalist|", nudge)
    if "|demo|" in text:
        lines = []
        for c in claimants:
            info = countries.get(c)
            # A claimant without demographic data is said so, not given invented facts.
            lines.append(
                f"{c}, Religion: {info['Religion']}, Language: {info['Lang_Name']}"
                if info
                else f"{c}, Religion and Language: not recorded"
            )
        text = text.replace("|demo|", "\n".join(lines))
    return text


def build_prompts(data: BorderLinesData, personas: Sequence[str] = ("vanilla",)) -> pd.DataFrame:
    """Every query under every persona's system prompt (``query_id`` = territory|lang|persona)."""
    unknown = [p for p in personas if p not in data.personas]
    if unknown:
        raise KeyError(f"unknown persona(s) {unknown}; known: {sorted(data.personas)}")
    queries = build_queries(data)
    frames = []
    for persona in personas:
        frame = queries.copy()
        frame["persona"] = persona
        frame["system"] = [system_prompt(data.personas[persona], row, data.countries) for _, row in frame.iterrows()]
        frame["query_id"] = frame["query_id"] + f"|{persona}"
        frames.append(frame)
    prompts = pd.concat(frames, ignore_index=True)
    prompts.attrs["gaps"] = queries.attrs["gaps"]
    return prompts


def requests_for(prompts: pd.DataFrame, spec: ModelSpec) -> tuple[list[GenerationRequest], list[tuple[int, int]]]:
    """The requests for ``prompts`` and, per request, (prompt row, claimant index or -1).

    Chat models get the system prompt and the query. Rank classification scores, per claimant, that
    claimant's name in the query's language as the continuation of the query, joined as the release's
    ``run_gpt/run_inference_rank.py`` joins them (``{query} Answer: {claimant}``; the engine forces the name's own
    tokens and reads the model's log-probability of each; see GenerationRequest.continuation). The vanilla
    persona is the paper's Table 5 setting, the query alone (its personas are GPT-4's system prompts); another
    persona's instruction comes above the query.
    """
    params = {**spec.params, "temperature": 0.0}
    requests: list[GenerationRequest] = []
    owners: list[tuple[int, int]] = []
    for i, row in enumerate(prompts.itertuples(index=False)):
        if ranks_candidates(spec):
            instruction = "" if row.persona == "vanilla" else f"{row.system}\n\n"  # vanilla: Table 5
            context = f"{instruction}{row.query} Answer:"
            for j, choice in enumerate(row.choices):
                # the space before the name is its own first token's, as it is tokenized after "Answer:"
                continuation = f" {choice}"
                requests.append(
                    GenerationRequest("completion", prompt=context, params=params, continuation=continuation)
                )
                owners.append((i, j))
        elif spec.kind == "chat":
            messages = ({"role": "system", "content": row.system}, {"role": "user", "content": row.query})
            requests.append(
                GenerationRequest("chat", messages=messages, params={"max_tokens": CHAT_MAX_TOKENS, **params})
            )
            owners.append((i, -1))
        else:
            prompt = f"{row.system}\n\n{row.query}\nAnswer:"
            requests.append(
                GenerationRequest(
                    "completion", prompt=prompt, params={"max_tokens": CHAT_MAX_TOKENS, "stop": ["\n"], **params}
                )
            )
            owners.append((i, -1))
    return requests, owners


def prompts_expectations(languages: list[str]) -> list[Any]:
    """No empty query, known languages only, and no non-English query identical to its English one."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectColumnValuesToBeUnique(column="query_id"),
        gxe.ExpectColumnValuesToMatchRegex(column="query", regex=r"\S"),
        gxe.ExpectColumnValuesToMatchRegex(column="system", regex=r"\S"),
        gxe.ExpectColumnValuesToBeInSet(column="lang", value_set=languages),
        gxe.ExpectColumnValuesToBeInSet(column="same_as_english", value_set=[False]),
    ]


def prompts_frame(prompts: pd.DataFrame) -> pd.DataFrame:
    english = prompts[prompts["lang"] == "en"].set_index(["territory", "persona"])["query"]
    same = [
        lang != "en" and english.get((t, p)) == q
        for t, p, lang, q in zip(
            prompts["territory"], prompts["persona"], prompts["lang"], prompts["query"], strict=True
        )
    ]
    return prompts[["query_id", "query", "system", "lang"]].assign(same_as_english=same)
