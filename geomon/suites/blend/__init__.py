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

The benchmark's folder: ``source.py`` (the release), ``prompts.py``, ``lemmatisers.py``, ``scoring.py`` (the soft
exact match), ``diagnostics.py`` and ``report.py``; this module declares the suite (``SUITE``, ``TRACKED``,
``PIPELINE``) and its stages.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from geomon import parsing, untrusted
from geomon.stats import uncertainty
from geomon.stats.declarations import TrackedMetric, answered_rate, undeclared
from geomon.stats.statistics import Mean, Range
from geomon.stats.values import metrics_from_mapping
from geomon.suites.blend import diagnostics, lemmatisers, prompts, scoring, source
from geomon.suites.blend.diagnostics import diagnose
from geomon.suites.blend.lemmatisers import lemmatiser
from geomon.suites.blend.prompts import build_prompts, requests_for, unfilled_placeholders
from geomon.suites.blend.scoring import items, score
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
from geomon.suites.registry import Headline, RunOption, SuiteInfo


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


# A stage is versioned by the benchmark's code it runs (the folder's rooms, not its report page); what scores a reply
# (the soft exact match, the hedge and text rules it reads with) versions the stages that score: an edit to any of
# them marks what they built stale.
CODE = (sys.modules[__name__], prompts, lemmatisers, scoring, diagnostics)
SCORING = (*CODE, parsing, untrusted, uncertainty)

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
            versioned_by=CODE,
            checks=(StageCheck("prompts_filled", "Every prompt has its question filled in.", blocking=True),),
            options=(
                Option("sample_questions", int, 0, "0 = all 500 per country; N = a seeded sample per country"),
                SEED,
            ),
        ),
        dataclasses.replace(responses_stage(requests_for, "prompt_id"), versioned_by=CODE),
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
    from geomon.suites.blend.report import write_report

    return write_report(out, SUITE.title, __doc__.split("\n\n")[1], board, results, PIPELINE.leaderboard_columns)
