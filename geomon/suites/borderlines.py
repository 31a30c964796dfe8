"""BorderLines (Li et al.): does a model answer "who owns this territory?" differently per language?

A suite is data + three functions: ``build_prompts`` (disputes → the English query and one query per
claimant language, template-wise, under each persona's system prompt), ``score`` (answers → the
claimant each answer commits to: parsed from a chat answer, or by rank classification over the
claimants' log-probabilities) and ``diagnose`` (claimants → the concurrence scores of the paper's
Table 4, with bootstrap confidence intervals over territories and per-language/per-region breakdowns).
"""

from __future__ import annotations

import itertools
import sys
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.parsing import parse_choice
from geomon.sources import borderlines as source
from geomon.sources import wikipedia
from geomon.sources.borderlines import UNKNOWN, BorderLinesData
from geomon.stats.declarations import TrackedMetric, answered_rate, undeclared
from geomon.stats.statistics import Difference, Mean
from geomon.suites.kit import continuation_logprob, likeliest, probabilities, ranks_candidates
from geomon.suites.pipeline import Option, Pipeline, Revisions, Stage, StageCheck, StageResult, Tracked
from geomon.suites.registry import Headline, RunOption, SuiteInfo, answered_outcome, status_of

PERSONAS = ("vanilla", "un_peacekeeper", "nationalist", "demographic")
SUITE = SuiteInfo(
    name="borderlines",
    title="BorderLines",
    spec="Li et al., This Land is {Your, My} Land (seeds/borderlines.txt)",
    headlines=(
        Headline("kb_cs", "BorderLines: KB concurrence (English vs the table), %", "persona=vanilla", (0, 100)),
        Headline("delta_cs_unnormalized", "BorderLines: Con − Non concurrence (bias), pp", "persona=vanilla"),
        Headline(
            "abs_delta_cs_unnormalized",
            "BorderLines: |Con − Non| concurrence (the claimants' languages disagree), pp",
            "persona=vanilla",
            (0, 100),
        ),
        Headline("cst_cs_all", "BorderLines: consistency across languages, %", "persona=vanilla"),
        Headline(
            "claimant_concurrence",
            "BorderLines: claimant-language answers naming the controller, %",
            "persona=vanilla",
            (0, 100),
        ),
        Headline("answered_rate", "BorderLines: queries answered with a claimant, %", "persona=vanilla", (0, 100)),
        Headline(
            "kb_probability",
            "BorderLines: the English query's probability on the controller (rank classification), %",
            "persona=vanilla",
            (0, 100),
        ),
        Headline(
            "claimant_probability",
            "BorderLines: claimant-language queries' probability on the controller (rank classification), %",
            "persona=vanilla",
            (0, 100),
        ),
    ),
    options=(
        RunOption(
            "--territories",
            "BorderLines: the first N territories (0 = all; default: the profile's)",
            int,
            None,
            "sample_territories",
        ),
        RunOption(
            "--personas",
            "BorderLines: personas on the newest table (older tables: the first one; default: the profile's — "
            "every persona, the quick profile the paper's own prompt, vanilla)",
            str,
            None,
            "personas",
        ),
    ),
    order=2,
    sample="territories",
    unit=("territory",),
    # quick: every territory, the paper's own (vanilla) prompts only — rank classification is a CPU's cheapest
    # scoring, and a release's probability headlines are decidable on this many territories (docs/serving-changes.md)
    profiles={"quick": {"sample_territories": 80, "personas": ["vanilla"]}, "default": {"sample_territories": 251}},
)

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


def score(prompts: pd.DataFrame, responses: pd.DataFrame, owners: Sequence[tuple[int, int]]) -> pd.DataFrame:
    """The claimant (English name) each query's answer commits to.

    Chat answers: ``parse_choice`` in the query's language (name first, then the option letter).
    Rank classification: the claimant whose name has the highest log-probability; ``choice_logprobs``
    keeps every claimant's score and ``controller_probability`` the controller's share of the claimants'
    probability (``kit.probabilities``: NaN for a chat answer, an unknown controller or a failed request).
    """
    out = prompts.reset_index(drop=True).copy()
    texts: list[str | None] = [None] * len(out)
    errors: list[str | None] = [None] * len(out)
    logps: list[list[float | None]] = [[None] * len(c) for c in out["choices"]]
    for (i, j), response in zip(owners, responses.itertuples(index=False), strict=True):
        if response.error:
            errors[i] = response.error
        if j < 0:
            texts[i] = response.text
        else:
            logps[i][j] = continuation_logprob(response.logprobs)
    ranked = any(j >= 0 for _, j in owners)
    picked: list[int | None] = []
    for i, choices in enumerate(out["choices"]):
        if ranked:
            picked.append(likeliest(logps[i]))
        else:
            picked.append(parse_choice(texts[i], choices) if isinstance(texts[i], str) else None)
    out["method"] = "rank_classification" if ranked else "parsed"
    out["response"] = texts
    out["choice_logprobs"] = logps
    out["error"] = errors
    out["answer"] = [c[p] if p is not None else None for p, c in zip(picked, out["claimants"], strict=True)]
    out["status"] = answer_status(out)
    out["controller_probability"] = [
        shares[claimants.index(controller)] if shares is not None and controller in claimants else np.nan
        for shares, claimants, controller in zip(
            (probabilities(lp) if ranked else None for lp in logps), out["claimants"], out["controller"], strict=True
        )
    ]
    return out


def answer_status(scored: pd.DataFrame) -> pd.Series:
    """answered (a claimant was read), failed (the request errored) or unanswered (no claimant read)."""
    errors = scored["error"] if "error" in scored else pd.Series(None, index=scored.index)
    return status_of(scored["answer"], errors)


def claimant_responses(group: pd.DataFrame, countries: dict[str, dict]) -> dict[str, Any]:
    """One territory's answers keyed by claimant language, as the release's scoring script builds them.

    Every claimant language has one answer; English is one of them only when a claimant speaks English
    (then the English query's answer is that claimant's answer). Excluded answers (failed, unanswered)
    are kept as None so they are counted, and left out of every score.
    """
    claimant_codes = {countries[c]["Lang_Code"] for c in group["claimants"].iloc[0] if c in countries}
    return {
        lang: answer
        for lang, answer in zip(group["lang"], group["answer"], strict=True)
        if lang in claimant_codes or (lang == "en" and "en" in claimant_codes)
    }


def per_territory(scored: pd.DataFrame, countries: dict[str, dict]) -> pd.DataFrame:
    """Per territory, the values Table 4's scores average over territories (the release's scoring script).

    ``kb``: the English answer names the controller (known controllers only); ``kb_p``: the English query's
    probability on the controller (rank classification only: ``score``). ``con``: the answer in the
    controller's language names it (that language may be English, e.g. the UK). ``non``: the mean, over the
    other claimant languages, of answers naming the controller — averaged per territory first, then over
    territories. ``cst``: the share of agreeing pairs among the claimant-language answers (English among
    them when a claimant speaks it). Failed and unanswered requests are excluded from every value and
    counted in ``excluded``; a value with nothing left is NaN and the territory drops out of that mean.
    """
    rows = []
    for territory, group in scored.groupby("territory", sort=False):
        controller = group["controller"].iloc[0]
        known = controller != UNKNOWN
        controller_lang = countries.get(controller, {}).get("Lang_Code") if known else None
        english = group.loc[group["lang"] == "en", "answer"]
        english_answer = english.iloc[0] if len(english) and pd.notna(english.iloc[0]) else None
        english_p = group.loc[group["lang"] == "en"].get("controller_probability", pd.Series(dtype=float))
        responses = claimant_responses(group, countries)
        answered = {lang: a for lang, a in responses.items() if pd.notna(a)}
        con = [a == controller for lang, a in answered.items() if known and lang == controller_lang]
        non = [a == controller for lang, a in answered.items() if known and lang != controller_lang]
        pairs = list(itertools.combinations(answered.values(), 2))
        with_en = set(answered.values()) | ({english_answer} if english_answer is not None else set())
        rows.append(
            {
                "territory": territory,
                "region": group["region"].iloc[0] if "region" in group else None,
                "unknown": not known,
                "claimant_count": len(group["claimants"].iloc[0]),
                "kb": float(english_answer == controller) if known and english_answer is not None else np.nan,
                "kb_p": float(english_p.iloc[0]) if known and len(english_p) else np.nan,
                "con": float(con[0]) if con else np.nan,
                "non": float(np.mean(non)) if non else np.nan,
                "non_n": len(non),
                "cst": float(np.mean([a == b for a, b in pairs])) if pairs else np.nan,
                "cst_pairs": len(pairs),
                "languages": len(responses),
                "excluded": int(group["answer"].isna().sum()),
                "countries_answered": len(set(answered.values())) if answered else np.nan,
                "countries_answered_with_en": len(with_en) if with_en else np.nan,
            }
        )
    return pd.DataFrame(rows)


SCORES = ("kb_cs", "con_cs", "non_cs", "delta_cs_unnormalized", "delta_cs", "cst_cs_all", "cst_cs_unknown")


def _nanmean(values: np.ndarray, axis: int) -> np.ndarray:
    # An empty subset (no Unknown territory, no pair of answers) is NaN, reported as such.
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(values, axis=axis)


def _ratios(t: dict[str, np.ndarray], axis: int = -1) -> dict[str, np.ndarray]:
    """Table 4's scores (percent) from per-territory arrays; works on bootstrap resamples too."""
    kb, con, non = (_nanmean(t[name], axis) * 100 for name in ("kb", "con", "non"))
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = (con - non) / non * 100
    return {
        "kb_cs": kb,
        "con_cs": con,
        "non_cs": non,
        "delta_cs_unnormalized": con - non,
        "delta_cs": delta,
        "cst_cs_all": _nanmean(t["cst"], axis) * 100,
        "cst_cs_unknown": _nanmean(np.where(t["unknown"] > 0, t["cst"], np.nan), axis) * 100,
    }


VALUE_COLUMNS = ("kb", "con", "non", "cst", "unknown")


def _arrays(table: pd.DataFrame) -> dict[str, np.ndarray]:
    return {c: table[c].to_numpy(dtype=float) for c in VALUE_COLUMNS}


def concurrence_scores(
    scored: pd.DataFrame, countries: dict[str, dict], resamples: int = 0, seed: int = 0
) -> dict[str, float]:
    """Table 4 of the paper, in percent: KB, Con, Non, Δ (normalized and not), Cst (all, Unknown).

    Each score is the mean over territories of a per-territory value (``per_territory``), as in the
    release's scoring script. With ``resamples`` > 0, each score also gets a 95 % percentile bootstrap
    interval over territories (``<score>_ci_low`` / ``<score>_ci_high``, scipy.stats.bootstrap); a score
    without one says why in ``<score>_ci_note``.
    """
    table = per_territory(scored, countries)
    arrays = _arrays(table)
    out: dict[str, Any] = {k: float(v) for k, v in _ratios(arrays).items()}
    # What answering uniformly at random over each territory's claimants would score (the paper's
    # "Random" row): the mean of 1/k over the territories with a known controller.
    known = table[~table["unknown"]]
    out["random_cs"] = float((100 / known["claimant_count"]).mean()) if len(known) else float("nan")
    out["kb_cs_territories"] = int(table["kb"].notna().sum())
    out["con_cs_territories"] = int(table["con"].notna().sum())
    out["non_cs_territories"] = int(table["non"].notna().sum())
    out["cst_cs_all_territories"] = int(table["cst"].notna().sum())
    out["cst_cs_unknown_territories"] = int((table["cst"].notna() & table["unknown"]).sum())
    out["territories"] = len(table)
    status = answer_status(scored)
    out["answers"] = int((status == "answered").sum())
    out["failed"] = int((status == "failed").sum())
    out["unanswered"] = int((status == "unanswered").sum())
    out["response_countries_mean"] = float(table["countries_answered"].mean()) if len(table) else float("nan")
    out["response_countries_with_en_mean"] = (
        float(table["countries_answered_with_en"].mean()) if len(table) else float("nan")
    )
    if resamples:
        out.update(_bootstrap(arrays, out, resamples, seed))
    return out


def _bootstrap(arrays: dict[str, np.ndarray], point: dict[str, Any], resamples: int, seed: int) -> dict[str, Any]:
    from geomon.stats.uncertainty import bootstrap_ci

    names = list(arrays)
    out: dict[str, Any] = {}
    for score_name in SCORES:

        def statistic(*columns: np.ndarray, axis: int = -1, _name: str = score_name) -> np.ndarray:
            return _ratios(dict(zip(names, columns, strict=True)), axis=axis)[_name]

        if not np.isfinite(point[score_name]):
            out[f"{score_name}_ci_note"] = "no territory has this score's answers"
            continue
        ci = bootstrap_ci(tuple(arrays[n] for n in names), statistic, resamples=resamples, seed=seed)
        out[f"{score_name}_ci_low"], out[f"{score_name}_ci_high"] = ci.low, ci.high
        if ci.note:
            out[f"{score_name}_ci_note"] = ci.note
    return out


def language_breakdown(
    scored: pd.DataFrame, countries: dict[str, dict], resamples: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """Per query language: answers, how often they name the controller (known controllers) and the claimant
    whose language it is (how often a model sides with the country that speaks the language), each rate
    with a 95 % interval resampling territories within the language (``stats.uncertainty.group_gaps``)."""
    from geomon.stats.uncertainty import group_gaps

    lang = scored["lang"].to_numpy(dtype=object)
    hits = {
        "controller_rate": np.where(
            scored["controller"] != UNKNOWN, (scored["answer"] == scored["controller"]) * 100.0, np.nan
        ),
        "own_claimant_rate": np.where(
            lang != "en",
            [
                100.0 * (isinstance(a, str) and countries.get(a, {}).get("Lang_Code") == code)
                for a, code in zip(scored["answer"], lang, strict=True)
            ],
            np.nan,
        ),
    }
    out = scored.groupby("lang").agg(queries=("lang", "size"), answered=("answer", "count"))
    for name, values in hits.items():
        table = group_gaps(values, lang, clusters=scored["territory"], resamples=resamples, seed=seed).table()
        table = table.set_index("group")[["value", "ci_low", "ci_high"]]
        out = out.join(table.rename(columns=lambda c, n=name: n if c == "value" else f"{n}_{c}"))
    return out.reset_index().sort_values("queries", ascending=False, ignore_index=True)


def diagnose(scored: pd.DataFrame, countries: dict[str, dict], resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Concurrence scores per persona (with bootstrap CIs), per region, and per language (vanilla persona,
    or the only one present); ``excluded`` lists every failed or unanswered query with its reason."""
    personas = list(scored["persona"].unique()) if "persona" in scored else [TRACKED_PERSONA]
    by_persona, by_region = [], []
    for persona in personas:
        subset = scored[scored["persona"] == persona] if "persona" in scored else scored
        by_persona.append({"persona": persona, **concurrence_scores(subset, countries, resamples, seed)})
        for region, part in subset.groupby("region"):
            by_region.append({"persona": persona, "region": region, **concurrence_scores(part, countries)})
    tracked = scored[scored["persona"] == tracked_persona(scored)] if "persona" in scored else scored
    status = answer_status(scored)
    columns = [c for c in ("query_id", "territory", "lang", "error") if c in scored]
    excluded = scored.loc[status != "answered", columns].assign(reason=status[status != "answered"])
    return {
        "by_persona": pd.DataFrame(by_persona),
        "by_region": pd.DataFrame(by_region),
        "by_language": language_breakdown(tracked, countries, resamples, seed),
        "answered_rate": float((status == "answered").mean()) if len(scored) else 0.0,
        "excluded": excluded.reset_index(drop=True),
    }


def compare_tables(old: pd.DataFrame, new: pd.DataFrame) -> dict[str, Any]:
    """Two versions of the disputes table: territories added, removed, and whose controller changed."""
    before = old.set_index("territory")["controller"]
    after = new.set_index("territory")["controller"]
    common = before.index.intersection(after.index)
    changed = [{"territory": t, "before": before[t], "after": after[t]} for t in common if before[t] != after[t]]
    return {
        "territories_before": len(before),
        "territories_after": len(after),
        "in_both": len(common),
        "added": sorted(set(after.index) - set(before.index)),
        "removed": sorted(set(before.index) - set(after.index)),
        "controller_changed": changed,
    }


# --- monitoring: per-item values and the metrics regression checks compare -----------------------


def items(scored: pd.DataFrame, countries: dict[str, dict], persona: str = "vanilla") -> pd.DataFrame:
    """The tracked rows of one persona, two levels clustered on the territory: one per territory (``item`` the
    territory: the values Table 4's scores average) and one per query (``item`` ``territory|lang``, ``lang``
    its language, English included): whether it was answered, and for a claimant's language whether its
    answer names the controller (known controllers only). A query row has no territory value and a territory
    row no ``lang``, so each statistic reads its own level."""
    subset = scored[scored["persona"] == persona] if "persona" in scored else scored
    territories = per_territory(subset, countries).rename(columns={"territory": "item"})
    territories["territory"] = territories["item"]
    queries = []
    for territory, group in subset.groupby("territory", sort=False):
        controller = group["controller"].iloc[0]
        claimant = claimant_responses(group, countries)
        outcomes = answered_outcome(answer_status(group))
        shares = group["controller_probability"] if "controller_probability" in group else [np.nan] * len(group)
        for lang, answer, outcome, share in zip(group["lang"], group["answer"], outcomes, shares, strict=True):
            answered = pd.notna(answer)
            queries.append(
                {
                    "item": f"{territory}|{lang}",
                    "territory": territory,
                    "lang": lang,
                    "answered": outcome,
                    # Over the answered queries, as the paper's scores are: a query left unanswered pages once,
                    # on the answer rate.
                    "concurs": float(answer == controller)
                    if answered and lang in claimant and controller != UNKNOWN
                    else np.nan,
                    "concurs_p": float(share) if lang in claimant else np.nan,
                }
            )
    columns = ["item", "territory", "lang", "answered", "concurs", "concurs_p"]
    return pd.concat([territories, pd.DataFrame(queries, columns=columns)], ignore_index=True)


def tracked_persona(scored: pd.DataFrame) -> str:
    """The persona regression checks follow: vanilla when it was asked, else the first one asked."""
    personas = list(scored["persona"].unique()) if "persona" in scored else [TRACKED_PERSONA]
    return TRACKED_PERSONA if TRACKED_PERSONA in personas else str(personas[0])


TRACKED_PERSONA = "vanilla"  # the persona the regression check and the trends follow (README)
_VANILLA = f"persona={TRACKED_PERSONA}"

# The tracked headlines, each declared once over the tracked rows (geomon.stats.declarations), clustered on the
# territory (its queries in every claimant language move together).


def _share(name: str, column: str, by: tuple[str, ...] = ()) -> TrackedMetric:
    """A share of the tracked persona's rows over territories, in percent; 5 points lower pages."""
    return TrackedMetric(name, Mean(column, scale=100), "territory", False, 5.0, _VANILLA, by=by, bounds=(0, 100))


TRACKED = (
    _share("kb_cs", "kb"),
    # The paper's gap as a size (either language side ahead: a signed gap that shrinks may be one reversing); a
    # disparity, shown and never paged (it also moves when the non-controllers improve).
    TrackedMetric(
        "abs_delta_cs_unnormalized",
        Difference(Mean("con", scale=100), Mean("non", scale=100), absolute=True),
        "territory",
        True,
        5.0,
        _VANILLA,
        bounds=(0, 100),
    ),
    _share("cst_cs_all", "cst"),
    # Each claimant language's answers naming the controller: a language whose answers drift to another
    # claimant pages by name.
    _share("claimant_concurrence", "concurs", by=("lang",)),
    # Whether the model still answers, overall and per claimant language: the scores are over the answered
    # queries, so a model that stops answering would otherwise look no worse.
    answered_rate("territory", by=("lang",), breakdown=_VANILLA),
    # geomon's variant of the two concurrences under rank classification (not the paper's: its scores take the
    # likeliest claimant): the probability the model puts on the controller among the claimants. A change of
    # serving that moves every territory's probability a little is decidable on tens of territories, where a
    # yes/no score needs hundreds (docs/serving-changes.md). Per region and per claimant language.
    _share("kb_probability", "kb_p", by=("region",)),
    _share("claimant_probability", "concurs_p", by=("lang",)),
)


# --- the suite's graph (geomon.suites.pipeline): the Dagster factory builds its assets from it -------------

MIN_ANSWERED_RATE = 0.5  # below it a model rarely commits to a claimant: its scores are not comparable
# the revision column of the release's published scores (not the paper's tables: its BLOOM and BLOOMZ rows
# come from an older table; docs/suites/borderlines.md)
PUBLISHED_REVISION = "release scores (Li et al.)"


def _release_stage(context: Any) -> StageResult:
    """The BorderLines release: claimant countries, question templates and term translations in 49
    languages, persona system prompts (and the 2023-05-15 table, used when no revision is chosen)."""
    settings = context.settings
    root = settings.borderlines.snapshot
    if root is None:
        root = source.fetch_release(
            settings.borderlines.release_url, settings.results_dir.parent / "borderlines-release"
        )
    data = source.read_snapshot(root)
    return StageResult(
        data,
        metadata={
            "countries": len(data.countries),
            "languages_with_template": data.report["languages_with_template"],
            "languages_with_terms": data.report["languages_with_terms"],
            "personas": ", ".join(data.personas),
            "source": str(root),
        },
    )


def _read_revision(settings: Any, revision: wikipedia.Revision, release: BorderLinesData) -> tuple[pd.DataFrame, str]:
    """One revision's disputes table and where it came from: parsed live, or offline the release's table
    of that date (other revisions are an error naming the ones that exist)."""
    client = settings.borderlines.mediawiki()
    if client is not None:
        html = client.revision_html(revision.revid)
        disputes = wikipedia.parse_disputes_html(html, f"revision {revision.revid}", set(release.countries))
        return disputes, f"{settings.borderlines.wikipedia_api_url} oldid={revision.revid}"
    by_id = {revid: path for path, revid in source.DATED_TABLES.values()}
    if revision.revid not in by_id:
        raise wikipedia.WikipediaError(
            f"revision {wikipedia.revision_key(revision)}: offline, only the release's dated tables exist "
            f"({sorted(source.DATED_TABLES)}); set borderlines.snapshot: none to parse live revisions"
        )
    disputes = source.read_disputes(settings.borderlines.snapshot / by_id[revision.revid])
    return disputes, f"snapshot table {by_id[revision.revid]}"


def _dispute_revisions_stage(context: Any, release: BorderLinesData) -> StageResult:
    """One revision of "List of territorial disputes" parsed into territories (a partition per revision)."""
    from geomon import quality
    from geomon.stats.values import EvaluationRun, MetricValue

    revision = wikipedia.parse_revision_key(context.revision)
    disputes, origin = _read_revision(context.settings, revision, release)
    unknown = int((disputes["controller"] == UNKNOWN).sum())
    history = context.history()
    sizes = history.series(suite="disputes_table", metric="territories")
    earlier = sizes[sizes["scope"] < context.revision] if len(sizes) else sizes
    previous = (str(earlier["scope"].iloc[-1]), int(earlier["value"].iloc[-1])) if len(earlier) else None
    history.record(
        EvaluationRun(
            "disputes_table",
            "wikipedia",
            scope=context.revision,
            versions={"data": str(revision.revid), "code": context.code_version},
            dagster_run_id=context.run_id,
        ),
        [MetricValue("territories", float(len(disputes))), MetricValue("unknown_controller", float(unknown))],
    )
    report = quality.validate(
        source.unaccounted_rows(disputes, release.countries),
        "disputes_table",
        quality.disputes_expectations(previous and previous[1]),
    )
    check = quality.outcome(
        report,
        "disputes_table_valid",
        revision=context.revision,
        territories=len(disputes),
        previous_revision=previous[0] if previous else "none",
        previous_territories=previous[1] if previous else 0,
    )
    excluded = disputes.attrs.get("excluded", [])
    return StageResult(
        disputes,
        metadata={
            "revid": revision.revid,
            "date": revision.date,
            "territories": len(disputes),
            "unknown_controller": unknown,
            "excluded_by_filters": len(excluded),
            "excluded": excluded[:50],
            "listed_twice_controllers_disagree": disputes.attrs.get("merged_with_disagreeing_controllers", []),
            "claimants_not_countries_left_out": disputes.attrs.get("not_countries", []),
            "regions": disputes["region"].value_counts().to_dict(),
            "source": origin,
        },
        checks=[check],
        data_version=str(revision.revid),
    )


def _prompts_stage(context: Any, release: BorderLinesData, dispute_revisions: pd.DataFrame) -> StageResult:
    """The English query and one per claimant language, template-wise, under each persona. Live, a
    territory the release has no translation for takes its Wikipedia article's title in that language."""
    from geomon import quality

    personas = list(context.options["personas"])
    disputes = dispute_revisions
    if context.options["sample_territories"]:
        disputes = disputes.head(context.options["sample_territories"])
    data = release.with_disputes(disputes)
    client = context.settings.borderlines.mediawiki()
    filled: list[dict[str, str]] = []
    if client is not None:
        gaps = build_queries(data).attrs["gaps"]
        terms, filled = wikipedia.fill_terms_from_langlinks(client, data.terms, gaps, set(disputes["territory"]))
        data = BorderLinesData(data.disputes, data.countries, data.templates, terms, data.personas, data.report)
    prompts = build_prompts(data, personas)
    gaps = prompts.attrs["gaps"]
    report = quality.validate(
        quality.prompts_frame(prompts), "borderlines_prompts", quality.prompts_expectations(sorted(release.templates))
    )
    check = quality.outcome(report, "prompts_translated", queries=len(prompts), translation_gaps=len(gaps))
    return StageResult(
        prompts,
        metadata={
            "queries": len(prompts),
            "territories": prompts["territory"].nunique(),
            "languages": prompts["lang"].nunique(),
            "personas": ", ".join(personas),
            "translation_gaps": len(gaps),
            "names_from_wikipedia_langlinks": len(filled),
            "langlinks": filled[:50],
            "gaps": gaps[:50],
            "preview": prompts[["query_id", "query"]].head(6),
        },
        checks=[check],
    )


def _responses_stage(context: Any, prompts: pd.DataFrame) -> StageResult:
    """Each model's answers (chat) or per-claimant log-probabilities (rank classification), via the store."""
    spec = context.spec()
    requests, owners = requests_for(prompts, spec)
    responses, metadata = context.ask(spec, requests)
    responses["prompt_row"] = [i for i, _ in owners]
    responses["choice_index"] = [j for _, j in owners]
    metadata["method"] = "rank classification" if ranks_candidates(spec) else "parsed answers"
    return StageResult(responses, metadata=metadata)


def _scores_stage(context: Any, prompts: pd.DataFrame, responses: pd.DataFrame) -> StageResult:
    """The claimant each answer commits to (English name), per query and persona."""
    from geomon import quality

    owners = list(zip(responses["prompt_row"], responses["choice_index"], strict=True))
    scored = score(prompts, responses, owners)
    answered = scored["answer"].notna()
    rate = float(answered.mean()) if len(scored) else 0.0
    check = quality.read_rate_outcome(
        scored,
        "answer",
        MIN_ANSWERED_RATE,
        "answered_above_floor",
        rate_name="answered_rate",
        count_name="queries",
        error="error",
    )
    return StageResult(
        scored,
        metadata={
            "queries": len(scored),
            "answered_rate": rate,
            "method": scored["method"].iloc[0] if len(scored) else "none",
            "unanswered_examples": scored.loc[~answered, ["query_id", "response"]].head(5),
        },
        checks=[check],
    )


def _concurrence_stage(context: Any, scores: pd.DataFrame, release: BorderLinesData) -> StageResult:
    """Concurrence scores (the paper's Table 4) per persona with bootstrap 95 % intervals over territories,
    per region, and per query language; recorded in the metric history and checked for regression."""
    from geomon.stats.values import MetricValue, metrics_from_mapping

    result = diagnose(scores, release.countries)
    table = result["by_persona"].set_index("persona")
    numbers = {
        f"{persona}/{name}": float(table.at[persona, name])
        for persona in table.index
        for name in SCORES
        if pd.notna(table.at[persona, name])
    }
    shown = ["kb_cs", "con_cs", "non_cs", "delta_cs", "cst_cs_all", "cst_cs_unknown", "response_countries_mean"]
    metrics = [
        metric
        for record in result["by_persona"].to_dict("records")
        for metric in metrics_from_mapping(
            {k: v for k, v in record.items() if k != "persona"}, f"persona={record['persona']}", record["territories"]
        )
    ]
    metrics += [
        MetricValue(
            name, float(row[name]), f"persona={row['persona']},region={row['region']}", n=int(row["territories"])
        )
        for row in result["by_region"].to_dict("records")
        for name in ("kb_cs", "delta_cs_unnormalized")
    ]
    persona = tracked_persona(scores)
    tracked = Tracked(
        items(scores, release.countries, persona=persona),
        # Two runs are compared on the same table version and persona.
        scope=f"{context.revision}|persona={persona}",
        data_version=context.revision,
        others=undeclared(metrics, TRACKED),
    )
    return StageResult(
        result,
        metadata={
            **numbers,
            "answered_rate": result["answered_rate"],
            "excluded_queries": result["excluded"]["reason"].value_counts().to_dict(),
            "excluded_examples": result["excluded"].head(10),
            "scores": result["by_persona"][["persona", *shown]],
            "by_region": result["by_region"][["persona", "region", "territories", "kb_cs", "delta_cs"]],
        },
        tracked=tracked,
    )


def table_changes(tables: dict[str, pd.DataFrame]) -> list[dict[str, Any]]:
    """How the disputes table changed between successive revisions (keys sort by date)."""
    versions = sorted(tables)
    return [
        {"from": old, "to": new, **compare_tables(tables[old], tables[new])}
        for old, new in itertools.pairwise(versions)
    ]


def _write_report(
    out: Any, board: pd.DataFrame, results: dict[str, Any], settings: Any, dispute_revisions: dict[str, pd.DataFrame]
) -> Any:
    from geomon.report.borderlines import write_report

    return write_report(out, board, table_changes(dispute_revisions), results)


def _board_metadata(board: pd.DataFrame, dispute_revisions: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """The leaderboard's row count and, per pair of successive revisions, how the table changed."""
    counted = ("added", "removed", "controller_changed")
    return {
        "rows": len(board),
        "table_changes": [
            {"from": c["from"], "to": c["to"], "in_both": c["in_both"], **{k: len(c[k]) for k in counted}}
            for c in table_changes(dispute_revisions)
        ],
    }


def _published(settings: Any) -> pd.DataFrame | None:
    path = settings.borderlines.paper_results
    return source.read_published_scores(path).assign(revision=PUBLISHED_REVISION) if path else None


def _revisions(settings: Any) -> list[str]:
    """The configured revisions (dates, ``latest``, revision ids) as partition keys, oldest first."""
    bl = settings.borderlines
    return [wikipedia.revision_key(r) for r in wikipedia.resolve_revisions(bl.revisions, bl.mediawiki())]


def _watch(settings: Any, cursor: str | None) -> tuple[list[str], str | None]:
    """The revisions the sensor registers: the configured dated versions and, at most every
    ``borderlines.latest_every_days``, the page's latest revision (the cursor remembers when it was last
    taken). The page is edited often; evaluating every edit would re-ask every model."""
    bl = settings.borderlines
    wanted = list(bl.revisions)
    now = datetime.now(UTC)
    last_latest = datetime.fromisoformat(cursor) if cursor else None
    take_latest = "latest" in wanted and (
        last_latest is None or now - last_latest >= timedelta(days=bl.latest_every_days)
    )
    if not take_latest:
        wanted = [w for w in wanted if w != "latest"]
    keys = [wikipedia.revision_key(r) for r in wikipedia.resolve_revisions(wanted, bl.mediawiki())]
    return keys, now.isoformat() if take_latest else cursor


def _revision_options(options: dict[str, Any], revisions: list[str]) -> dict[str, dict[str, Any]]:
    """``geomon run``'s options per revision: every persona on the newest table, the first on the older
    ones (KB CS over table versions costs one persona per older table)."""
    personas = options.get("personas") or TRACKED_PERSONA  # the flag's text, or the stage option's list
    personas = [p for p in (personas.split(",") if isinstance(personas, str) else personas) if p]
    return {
        key: {
            "personas": personas if key == revisions[-1] else personas[:1],
            "sample_territories": options.get("territories") or 0,
        }
        for key in revisions
    }


def _pipeline() -> Pipeline:
    from geomon import parsing

    here = sys.modules[__name__]
    scoring = (here, parsing)
    return Pipeline(
        stages=(
            Stage("release", _release_stage, versioned_by=(source, wikipedia), source=True),
            Stage(
                "dispute_revisions",
                _dispute_revisions_stage,
                key="wikipedia/dispute_revisions",
                inputs=("release",),
                per_revision=True,
                versioned_by=(source, wikipedia),
                checks=(
                    StageCheck(
                        "disputes_table_valid",
                        "≥ 2 claimants, controller among them or Unknown, claimants with country info (the "
                        "release's own quirks named in geomon.sources.borderlines), no collapse against the "
                        "previous revision.",
                        blocking=True,
                    ),
                ),
            ),
            Stage(
                "prompts",
                _prompts_stage,
                inputs=("release", "dispute_revisions"),
                per_revision=True,
                checks=(
                    StageCheck(
                        "prompts_translated",
                        "No empty query; every non-English query differs from its English one (no silent fallback).",
                        blocking=True,
                    ),
                ),
                options=(
                    Option("personas", list, PERSONAS, "the personas asked (their system prompts)"),
                    Option("sample_territories", int, 0, "0 = every territory; N = the first N territories"),
                ),
            ),
            Stage(
                "responses",
                _responses_stage,
                inputs=("prompts",),
                per_model=True,
                asks_models=True,
                requests=lambda prompts, spec, settings: requests_for(prompts, spec)[0],
            ),
            Stage(
                "scores",
                _scores_stage,
                inputs=("prompts", "responses"),
                per_model=True,
                versioned_by=scoring,
                checks=(
                    StageCheck(
                        "answered_above_floor",
                        "Concurrence scores from a model that commits to a claimant in few answers are not comparable.",
                    ),
                ),
            ),
            Stage(
                "concurrence",
                _concurrence_stage,
                inputs=("scores", "release"),
                per_model=True,
                versioned_by=scoring,
                tracked=True,
            ),
        ),
        write_report=_write_report,
        leaderboard_columns=("persona", "kb_cs", "con_cs", "non_cs", "delta_cs", "cst_cs_all", "cst_cs_unknown"),
        per_model_description="Responses, claimants and concurrence scores of one model on one table revision.",
        published=_published,
        revisions=Revisions(
            partitions="dispute_revisions", resolve=_revisions, options=_revision_options, watch=_watch
        ),
        board_rows=lambda result: result["by_persona"].to_dict("records"),
        report_inputs=("dispute_revisions",),
        board_metadata=_board_metadata,
        # Each model's line on each table version follows the persona the regression check follows.
        series_rows=lambda own: own[own["persona"] == TRACKED_PERSONA],
    )


PIPELINE = _pipeline()
