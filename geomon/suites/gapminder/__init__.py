"""Gapminder's AI Worldview Benchmark: SDG fact questions × prompt variations, graded by a jury.

Spec: ``../shared/seeds/gapminder-ai-worldview.txt``. Each question has three options (correct, wrong,
very wrong); each is asked inside every prompt variation of its language; each answer is graded correct /
wrong / very wrong / indecisive — deterministically where the answer names exactly one option, otherwise
by a jury of judge models with the data's judge prompt (``geomon.jury``). The correct rate is Gapminder's:
per question and model, correct ÷ (answers − indecisive) × 100, averaged over the questions.
"""

from __future__ import annotations

import re
import string
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geomon import jury
from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.parsing import options_named
from geomon.stats.declarations import TrackedMetric, undeclared
from geomon.stats.sampling import nested_sample
from geomon.stats.statistics import Mean, Range
from geomon.stats.uncertainty import group_gaps, mean_interval
from geomon.suites.gapminder import source
from geomon.suites.gapminder.source import CORRECTNESS, CORRECTNESS_LABEL, GapminderData
from geomon.suites.kit import likeliest, probabilities, ranked_responses_stage, ranks_candidates
from geomon.suites.pipeline import (
    SEED,
    CheckOutcome,
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
class GapminderSettings:
    """The ``gapminder:`` section of geomon.yaml."""

    snapshot: Path | None = None  # the question-bank directory; None = fetch the release from release_url
    release_url: str = source.DEFAULT_RELEASE_URL
    languages: tuple[str, ...] = ("en-US", "zh-CN")
    jury: jury.JurySettings = field(default_factory=jury.JurySettings)


SUITE = SuiteInfo(
    name="gapminder",
    title="Gapminder AI worldview",
    spec="Gapminder, AI Worldview Benchmark (seeds/gapminder-ai-worldview.txt)",
    headlines=(
        Headline(
            "correct_rate", "Gapminder: correct rate (% of decisive answers, mean over questions)", bounds=(0, 100)
        ),
        Headline("very_wrong_rate", "Gapminder: very-wrong rate (%)", bounds=(0, 100)),
        Headline(
            "correct_probability",
            "Gapminder: probability on the correct option (rank classification, mean over questions), %",
            bounds=(0, 100),
        ),
        Headline(
            "family_gap_correct_rate", "Gapminder: range of the prompt families' correct rates, pp", bounds=(0, 100)
        ),
        Headline(
            "indecisive_rate", "Gapminder: indecisive rate (% of answers no option was read from)", bounds=(0, 100)
        ),
        Headline(
            "family_gap_indecisive_rate",
            "Gapminder: range of the prompt families' indecisive rates, pp",
            bounds=(0, 100),
        ),
        Headline("judge_fleiss_kappa", "Gapminder: judges' agreement (Fleiss' kappa)"),
    ),
    options=(
        # All 365 × 109 = 39,785 prompts per model take days on a laptop CPU: the default is a seeded sample.
        RunOption(
            "--questions",
            "Gapminder: N questions, a seeded sample (0 = all 365; default: the profile's)",
            int,
            None,
            "sample_questions",
        ),
        RunOption(
            "--variations",
            "Gapminder: N prompt variations per language (0 = all; default: the profile's)",
            int,
            None,
            "sample_variations",
        ),
    ),
    order=3,
    settings=GapminderSettings,
    sample="questions",
    unit=("question_id",),
    profiles={
        # quick: 60 questions in one wording — a base model ranks the three options (180 scored continuations, a
        # minute here), and a release's correct_probability is decidable on this many (docs/serving-changes.md)
        "quick": {"sample_questions": 60, "sample_variations": 1},
        "default": {"sample_questions": 365, "sample_variations": 5},
    },
)

LANGUAGES = ("en-US", "zh-CN")
TEMPERATURE = 0.01  # the data's model configurations (and the paper): 0.01, not 0
MAX_TOKENS = 160  # enough for an answer with a short explanation; the variations ask for more at times
LETTERS = "abc"
_FIELDS = {"question_text", "option_a", "option_b", "option_c", "question"}


class PromptError(ValueError):
    pass


def _placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def sample(ids: Sequence[str], n: int, seed: int) -> list[str]:
    """``n`` of ``ids`` drawn with a seed (all of them for n = 0), in their original order: a nested sample (a
    question id asked in two languages is drawn in both)."""
    return nested_sample(ids, n, seed)


def build_prompts(
    data: GapminderData,
    languages: Sequence[str] = LANGUAGES,
    sample_questions: int = 0,
    sample_variations: int = 0,
    seed: int = 0,
) -> pd.DataFrame:
    """Every question × every prompt variation of its language (``prompt_id`` = question|variation).

    A language with variations but no questions in that language (the snapshot's zh-CN) is a counted gap
    in ``attrs["gaps"]``, never English questions inside Chinese templates passed off as Chinese. A
    template with a placeholder other than the data's fields is an error naming the variation.
    """
    rows: list[dict[str, Any]] = []
    gaps: dict[str, str] = {}
    for language in languages:
        variations = data.variations[data.variations["language"] == language]
        questions = data.questions[data.questions["language"] == language]
        if variations.empty or questions.empty:
            gaps[language] = (
                f"{len(variations)} prompt variations, {questions['question_id'].nunique()} questions in {language}"
            )
            continue
        chosen_q = set(sample(questions["question_id"].tolist(), sample_questions, seed))
        chosen_v = set(sample(variations["variation_id"].tolist(), sample_variations, seed))
        options = data.options[data.options["language"] == language].sort_values("letter")
        by_question = {qid: group for qid, group in options.groupby("question_id")}
        for variation in variations[variations["variation_id"].isin(chosen_v)].itertuples():
            unknown = (
                _placeholders(variation.question_template) | _placeholders(variation.question_prompt_template)
            ) - _FIELDS
            if unknown:
                raise PromptError(
                    f"prompt variation {variation.variation_id}: unknown placeholder(s) {sorted(unknown)}"
                )
            for question in questions[questions["question_id"].isin(chosen_q)].itertuples():
                opts = by_question.get(question.question_id)
                if opts is None or len(opts) != 3:
                    gaps[f"{question.question_id}|{language}"] = "not exactly three options"
                    continue
                fields = {f"option_{LETTERS[i]}": text for i, text in enumerate(opts["text"])}
                question_text = variation.question_template.format(question_text=question.text, **fields)
                prompt = variation.question_prompt_template.format(question=question_text, **fields)
                rows.append(
                    {
                        "prompt_id": f"{question.question_id}|{variation.variation_id}",
                        "question_id": question.question_id,
                        "prompt_variation_id": variation.variation_id,
                        "family": variation.family,
                        "language": language,
                        "topic": question.topic,
                        "question_text": question.text,
                        "options": list(opts["text"]),
                        "correctness": [int(c) for c in opts["correctness"]],
                        "prompt": prompt,
                        "completion": f"{prompt}\nAnswer:",  # a base model's: the answer follows "Answer:"
                    }
                )
    frame = pd.DataFrame(rows)
    frame.attrs["gaps"] = gaps
    return frame


def unfilled_placeholders(prompts: pd.DataFrame) -> list[str]:
    """Prompt ids whose text still holds one of the data's placeholders (a template that did not fill)."""
    pattern = "|".join(f"{{{name}}}" for name in sorted(_FIELDS))
    return prompts.loc[prompts["prompt"].str.contains(pattern, regex=True), "prompt_id"].tolist()


def requests_for(prompts: pd.DataFrame, spec: ModelSpec) -> list[GenerationRequest]:
    """The variation's prompt as the user message (no system prompt, as Gapminder runs models); base
    models get it as a completion, stopped at a blank line (a base model with log-probabilities ranks the
    options instead: ``_responses``)."""
    params = {"max_tokens": MAX_TOKENS, **spec.params, "temperature": TEMPERATURE}
    if spec.kind == "chat":
        return [
            GenerationRequest("chat", messages=({"role": "user", "content": p},), params=params)
            for p in prompts["prompt"]
        ]
    return [
        GenerationRequest("completion", prompt=p, params={**params, "stop": ["\n\n"]}) for p in prompts["completion"]
    ]


# Words that make an answer naming one option equivocal or a refusal ("It is definitely not 44%", "some sources
# say 44% but that is unverified", "Error: … 44% quota"): such an answer goes to the judges, who grade it by the
# rubric (an equivocal answer is indecisive). English and Chinese, the languages of Gapminder's prompts.
DOUBT = re.compile(
    r"\b(?:not|no|never|none|cannot|unsure|uncertain|unknown|unclear|unverified|unlikely|incorrect|wrong|false"
    r"|doubt\w*|maybe|perhaps|possibly|might|depends|error|sorry|impossible|guess)\b|n['\u2019]t\b"
    r"|不|没|无法|可能|也许|或许|未知|大概",
    re.IGNORECASE,
)


def pre_grade(prompts: pd.DataFrame, answers: Sequence[str | None]) -> list[str | None]:
    """The grade of a plain answer — it names exactly one option's text and, outside that text, no negation or
    doubt (``DOUBT``) — by that option's correctness; None where the answer needs the judges (no option named,
    several, an equivocal or negated one, or no answer). Gapminder has three AIs grade every answer; a plain one
    is graded here as they grade it, without the asks."""
    grades: list[str | None] = []
    for options, correctness, answer in zip(prompts["options"], prompts["correctness"], answers, strict=True):
        named = options_named(answer, options) if isinstance(answer, str) else []
        plain = len(named) == 1 and not DOUBT.search(_without(answer, options[named[0]]))
        grades.append(CORRECTNESS[correctness[named[0]]] if plain else None)
    return grades


def ranked_grades(prompts: pd.DataFrame, scores: Sequence[Sequence[float | None]]) -> list[str | None]:
    """Rank classification's grades: the option whose text the model finds likeliest after "Answer:" (each
    option's log-probability in ``scores``), graded by its correctness — never indecisive, as the model is not
    asked to commit (a named variant of the paper's generated answers: docs/suites/gapminder.md); None where a
    request failed."""
    picks = [likeliest(list(s)) if isinstance(s, Sequence) else None for s in scores]
    return [
        CORRECTNESS[correctness[pick]] if pick is not None else None
        for correctness, pick in zip(prompts["correctness"], picks, strict=True)
    ]


def correct_probability(prompts: pd.DataFrame, scores: Sequence[Sequence[float | None]]) -> list[float]:
    """Per prompt, the share of the three options' probability on the correct one (``kit.probabilities``: a
    softmax of their log-probabilities); NaN without a ranking (a generated answer, a failed request)."""
    out = []
    for correctness, ranked in zip(prompts["correctness"], scores, strict=True):
        shares = probabilities(list(ranked)) if isinstance(ranked, Sequence) else None
        out.append(float(shares[list(correctness).index(1)]) if shares is not None else np.nan)
    return out


def _without(text: str, option: str) -> str:
    """``text`` with the option's own words taken out (an option may itself say "no change" or "not at all")."""
    return re.sub(re.escape(option), " ", text, flags=re.IGNORECASE)


def judge_prompts(prompts: pd.DataFrame, answers: Sequence[str], judge_template: str) -> list[str]:
    """The data's judge prompt filled with the question, each option's correctness and the answer."""
    out = []
    for row, answer in zip(prompts.itertuples(index=False), answers, strict=True):
        fields = {"question_text": row.question_text, "raw_output": answer}
        for i, (text, level) in enumerate(zip(row.options, row.correctness, strict=True)):
            fields[f"option_{LETTERS[i]}"] = text
            fields[f"option_{LETTERS[i]}_correctness"] = CORRECTNESS_LABEL[level]
        out.append(judge_template.format(**fields))
    return out


def score(
    prompts: pd.DataFrame,
    responses: pd.DataFrame,
    pre: Sequence[str | None],
    jury: pd.DataFrame,
    model: str,
    ranked: bool = False,
) -> pd.DataFrame:
    """One row per answer: grade and how it was reached (``graded_by``: pre-graded, ranked, jury, or failed),
    and with ``ranked`` (``responses``' ``logprobs`` are each option's log-probability) ``correct_p``, the
    probability on the correct option (NaN otherwise).

    ``jury`` holds the jury's decisions (grade, reason) for the answers that were not pre-graded, in
    order. A failed request has no grade and ``status`` failed: excluded and counted, like every suite.
    """
    out = prompts[["prompt_id", "question_id", "prompt_variation_id", "family", "language", "topic"]].copy()
    out.insert(0, "model", model)
    out["response"] = responses["text"].to_numpy()
    out["grade"], out["graded_by"], out["reason"] = None, None, None
    decisions = iter(jury.itertuples(index=False))
    for i, (error, pre_grade_) in enumerate(zip(responses["error"], pre, strict=True)):
        if isinstance(error, str) and error:
            out.iat[i, out.columns.get_loc("graded_by")] = "failed"
            out.iat[i, out.columns.get_loc("reason")] = error
        elif pre_grade_ is not None:
            out.iat[i, out.columns.get_loc("grade")] = pre_grade_
            out.iat[i, out.columns.get_loc("graded_by")] = "ranked" if ranked else "pre-graded"
            out.iat[i, out.columns.get_loc("reason")] = (
                "the likeliest option after 'Answer:'" if ranked else "names exactly one option, plainly"
            )
        else:
            decision = next(decisions)
            out.iat[i, out.columns.get_loc("grade")] = decision.grade
            out.iat[i, out.columns.get_loc("graded_by")] = "jury"
            out.iat[i, out.columns.get_loc("reason")] = decision.reason
    out["status"] = np.where(out["graded_by"] == "failed", "failed", "answered")
    out["correct_p"] = correct_probability(prompts, responses["logprobs"]) if ranked else np.nan
    return out


def _per_question(graded: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    valid = graded[graded["grade"].notna()]
    # groupby().size() rather than crosstab: the same counts, ten times faster on 40,000 answers a model
    counts = valid.groupby([*by, "question_id", "grade"], sort=True).size().unstack("grade", fill_value=0)
    for g in ("correct", "wrong", "very_wrong", "indecisive"):
        if g not in counts:
            counts[g] = 0
    counts["n"] = counts[["correct", "wrong", "very_wrong", "indecisive"]].sum(axis=1)
    counts["decisive"] = counts["n"] - counts["indecisive"]
    with np.errstate(invalid="ignore", divide="ignore"):
        counts["q_correct_rate"] = counts["correct"] / counts["decisive"] * 100
        counts["q_very_wrong_rate"] = counts["very_wrong"] / counts["decisive"] * 100
        counts["q_indecisive_rate"] = counts["indecisive"] / counts["n"] * 100
    return counts.reset_index()


def correct_rates(graded: pd.DataFrame, by: Sequence[str] = ("model",)) -> pd.DataFrame:
    """Gapminder's rates per model (public; DESIGN.md): n, indecisive, correct, correct_rate.

    ``correct_rate``: per question, correct ÷ (answers − indecisive) × 100, then the mean over questions
    (the paper: "for each combination of questions and model configurations, and aggregate all
    questions"; questions with no decisive answer are left out). Also ``very_wrong_rate`` the same way,
    ``indecisive_rate`` and ``correct_rate_pooled`` (correct ÷ decisive over all answers, a named variant).
    """
    per_q = _per_question(graded, list(by))
    totals = per_q.groupby(list(by))[["n", "correct", "wrong", "very_wrong", "indecisive", "decisive"]].sum()
    means = per_q.groupby(list(by))[["q_correct_rate", "q_very_wrong_rate", "q_indecisive_rate"]].mean()
    out = totals.join(means.rename(columns=lambda c: c[2:]))
    out["questions"] = per_q.groupby(list(by))["question_id"].nunique()
    with np.errstate(invalid="ignore", divide="ignore"):
        out["correct_rate_pooled"] = out["correct"] / out["decisive"] * 100
    return out[
        [
            "n",
            "questions",
            "indecisive",
            "correct",
            "wrong",
            "very_wrong",
            "correct_rate",
            "very_wrong_rate",
            "indecisive_rate",
            "correct_rate_pooled",
        ]
    ]


def language_gap(graded: pd.DataFrame, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """English minus Chinese correct rate, with a bootstrap interval resampling questions (each question's
    per-language rates move together). Undefined, with the reason, unless both languages were asked."""
    per_q = _per_question(graded, ["language"]).pivot_table(
        index="question_id", columns="language", values="q_correct_rate"
    )
    if not {"en-US", "zh-CN"} <= set(per_q.columns):
        asked = ", ".join(sorted(graded["language"].dropna().unique())) or "none"
        return {"en_minus_zh": float("nan"), "note": f"needs answers in en-US and zh-CN; asked: {asked}"}
    both = per_q[["en-US", "zh-CN"]].dropna().stack().rename("rate").reset_index()
    gap = group_gaps(
        both["rate"], both["language"], clusters=both["question_id"], paired=True, resamples=resamples, seed=seed
    ).difference("en-US", "zh-CN")
    return {
        "en_minus_zh": gap.point,
        "en_minus_zh_ci_low": gap.interval.low,
        "en_minus_zh_ci_high": gap.interval.high,
        "questions": gap.clusters,
        "note": gap.interval.note,
    }


def _correct_probability(graded: pd.DataFrame) -> float:
    """The mean over questions of each question's mean probability on its correct option, in percent (the
    ``correct_probability`` headline's point); NaN without rank classification."""
    if "correct_p" not in graded or graded["correct_p"].isna().all():
        return float("nan")
    return float(graded.groupby("question_id")["correct_p"].mean().mean() * 100)


def diagnose(graded: pd.DataFrame, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Rates per model, per language, prompt family and topic (SDG); the language gap; how answers were
    graded; the correct rate's bootstrap interval over questions."""
    rates = correct_rates(graded)
    per_q = _per_question(graded, ["model"])
    ci = mean_interval(per_q["q_correct_rate"], resamples=resamples, seed=seed).interval
    summary = {
        **({k: float(v) for k, v in rates.iloc[0].items()} if len(rates) else {}),
        "correct_rate_ci_low": ci.low,
        "correct_rate_ci_high": ci.high,
        "failed": int((graded["status"] == "failed").sum()) if "status" in graded else 0,
        "pre_graded": int((graded["graded_by"] == "pre-graded").sum()) if "graded_by" in graded else 0,
        "jury_graded": int((graded["graded_by"] == "jury").sum()) if "graded_by" in graded else 0,
        "ranked": int((graded["graded_by"] == "ranked").sum()) if "graded_by" in graded else 0,
        "correct_probability": _correct_probability(graded),
    }
    gap = language_gap(graded, resamples=resamples, seed=seed)
    summary.update({k: v for k, v in gap.items() if k != "note"})
    return {
        "summary": summary,
        "language_gap_note": gap.get("note", ""),
        "by_language": correct_rates(graded, ["language"]).reset_index(),
        "by_family": correct_rates(graded, ["family"]).reset_index(),
        "by_topic": correct_rates(graded, ["topic"]).reset_index(),
        "reasons": graded.groupby(["graded_by", "reason"], dropna=False).size().rename("answers").reset_index()
        if "graded_by" in graded
        else pd.DataFrame(),
    }


# --- monitoring ------------------------------------------------------------------------------------


# The prompt-family level of ``items``: empty (NaN) in a row of the question level, and where rates were published
# per question without their families.
FAMILY_COLUMNS = ("family", "family_correct", "family_decisive", "family_indecisive", "family_n")


def items(graded: pd.DataFrame) -> pd.DataFrame:
    """The tracked rows, two levels clustered on the question: per question (``item`` the question id): correct,
    very wrong and decisive answers, so rates are recomputed exactly, and its topic (SDG), by which the correct
    rate is tested group by group; and per question and prompt family (``item`` ``question|family``): its
    ``family_correct``, ``family_decisive`` and ``family_indecisive`` answers of its ``family_n``, by which each
    family's correct and indecisive rates are tested. A row
    of one level has nothing in the other's columns."""
    per_q = _per_question(graded, ["model"])
    columns = ["question_id", "correct", "very_wrong", "decisive", "indecisive", "n"]
    out = per_q[columns].rename(columns={"question_id": "item"})
    topics = graded.drop_duplicates("question_id").set_index("question_id")["topic"] if "topic" in graded else {}
    out = out.assign(question=out["item"].astype(str), topic=[str(topics.get(q, "unknown")) for q in out["item"]])
    # the mean over a question's answers of the probability on its correct option (rank classification only)
    shares = graded.groupby("question_id")["correct_p"].mean() if "correct_p" in graded else {}
    out["correct_p"] = [float(shares.get(q, np.nan)) for q in out["item"]]
    # rank classification never leaves an answer indecisive: its indecisive rate is no figure (not a 0 to compare)
    ranked = "graded_by" in graded and bool(len(graded)) and graded["graded_by"].isin(("ranked", "failed")).all()
    if ranked:
        out["indecisive"] = np.nan
    if "family" not in graded:  # no prompt families (rates published per question): their comparisons undefined
        return out.assign(**dict.fromkeys(FAMILY_COLUMNS, np.nan))
    per_family = _per_question(graded, ["model", "family"])
    families = pd.DataFrame(
        {
            "item": per_family["question_id"].astype(str) + "|" + per_family["family"].astype(str),
            "question": per_family["question_id"].astype(str),
            "family": per_family["family"].astype(str),
            "family_correct": per_family["correct"],
            "family_decisive": per_family["decisive"],
            "family_indecisive": np.nan if ranked else per_family["indecisive"],
            "family_n": per_family["n"],
        }
    )
    return pd.concat([out, families], ignore_index=True)


def _family_gap(rate: str, count: str, per: str, higher_is_worse: bool) -> TrackedMetric:
    """``rate`` tested prompt family by prompt family (``rate (family=…)``, 5 points), and the range between the
    families (``family_gap_<rate>``, 10 points: shown, never paged), over the family-level rows."""
    return TrackedMetric(
        f"family_gap_{rate}",
        Range(Mean(count, per=per, scale=100), "family"),
        "question",
        True,
        10.0,
        by=("family",),
        groups_higher_is_worse=higher_is_worse,
        groups_name=rate,
        groups_min_effect=5.0,
        groups_bounds=(0, 100),
        bounds=(0, 100),
    )


# The tracked headlines, each declared once over the per-question counts (geomon.stats.declarations): the mean
# over questions of each question's rate among its decisive answers.
TRACKED = (
    # Each topic's (SDG's) correct rate is tested too: a topic the model gets worse on pages by name.
    TrackedMetric(
        "correct_rate",
        Mean("correct", per="decisive", scale=100),
        "question",
        False,
        5.0,
        by=("topic",),
        bounds=(0, 100),
    ),
    TrackedMetric(
        "very_wrong_rate", Mean("very_wrong", per="decisive", scale=100), "question", True, 5.0, bounds=(0, 100)
    ),
    # Rank classification's own confidence in the right answer (a base model's; undefined for generated answers):
    # a serving change that moves every question's probability a little is decidable on tens of questions, where
    # the argmax's correct rate needs hundreds (docs/serving-changes.md).
    TrackedMetric("correct_probability", Mean("correct_p", scale=100), "question", False, 5.0, bounds=(0, 100)),
    # Whether the model still commits to an option: the correct rate is over decisive answers only, so a model
    # that stops answering the questions it gets wrong would look better; this pages, per topic too.
    TrackedMetric(
        "indecisive_rate",
        Mean("indecisive", per="n", scale=100),
        "question",
        True,
        5.0,
        by=("topic",),
        bounds=(0, 100),
    ),
    # Each prompt family's correct rate (``correct_rate``, ``family=…``, as the suite reports it) is tested too: a
    # wording the model gets worse under pages by name. The gap between families is shown, never paged.
    _family_gap("correct_rate", "family_correct", "family_decisive", higher_is_worse=False),
    # And each family's indecisive rate: a wording under which the model stops committing to an option pages by
    # name (the correct rate, over decisive answers, would not move).
    _family_gap("indecisive_rate", "family_indecisive", "family_n", higher_is_worse=True),
)


# --- the suite's graph (built into Dagster assets by geomon.defs.factory) ------------------------------


def _question_bank_stage(context: Any) -> StageResult:
    """Gapminder's questions, options with correctness levels, prompt variations and judge prompt."""
    settings = context.settings
    root = settings.gapminder.snapshot
    if root is None:
        root = source.fetch_release(settings.gapminder.release_url, settings.results_dir.parent / "gapminder-release")
    data = source.read_snapshot(root)
    return StageResult(data, metadata={**data.report, "source": str(root)})


def _one_correct_option(context: Any, question_bank: GapminderData) -> Any:
    """Every question has three options and exactly one correct option."""
    from geomon import quality

    frame = quality.question_bank_frame(question_bank.options).reset_index()
    report = quality.validate(frame, "gapminder_question_bank", quality.question_bank_expectations())
    return quality.outcome(report, "one_correct_option", questions=int(frame["question_id"].nunique()))


def _prompts_stage(context: Any, question_bank: GapminderData) -> StageResult:
    """Every question × prompt variation of its language; languages without questions are counted gaps."""
    options = context.options
    prompts = build_prompts(
        question_bank,
        context.settings.gapminder.languages,
        options["sample_questions"],
        options["sample_variations"],
        seed=options["seed"],
    )
    check = filled_outcome("prompts_filled", len(prompts), unfilled_placeholders(prompts))
    return StageResult(
        prompts,
        metadata={
            "prompts": len(prompts),
            "questions": int(prompts["question_id"].nunique()) if len(prompts) else 0,
            "variations": int(prompts["prompt_variation_id"].nunique()) if len(prompts) else 0,
            "languages": prompts["language"].value_counts().to_dict() if len(prompts) else {},
            "gaps": prompts.attrs["gaps"],
            "preview": prompts[["prompt_id", "prompt"]].head(3),
        },
        checks=[check],
    )


def _judgements_stage(
    context: Any, prompts: pd.DataFrame, responses: pd.DataFrame, question_bank: GapminderData
) -> StageResult:
    """Answers naming exactly one option are pre-graded; the jury grades the rest with the data's judge
    prompt (every judge's reply through the store)."""
    settings = context.settings
    jury_settings = settings.gapminder.jury
    judges = settings.judges(jury_settings)
    texts = [t if isinstance(t, str) else None for t in responses["text"]]
    failed = [isinstance(e, str) and bool(e) for e in responses["error"]]
    ranked = ranks_candidates(context.spec())
    pre = ranked_grades(prompts, responses["logprobs"]) if ranked else pre_grade(prompts, texts)
    to_judge = [i for i, (p, f) in enumerate(zip(pre, failed, strict=True)) if p is None and not f]
    task = jury.JuryTask(
        "grade",
        ids=to_judge,
        prompts=judge_prompts(prompts.iloc[to_judge], [texts[i] for i in to_judge], question_bank.judge_prompt),
        read=jury.letter_reader(question_bank.judge_choices),
        choices=tuple(question_bank.judge_choices),
    )
    ask = lambda spec, requests: context.ask(spec, requests)[0]  # noqa: E731
    result = jury.convene(judges, [task], ask, jury_settings.max_tokens, jury_settings.quorum, jury_settings.constrain)
    verdicts = result.verdicts.assign(prompt_id=[prompts["prompt_id"].iloc[i] for i in result.verdicts["id"]])
    decisions = result.decisions["grade"].rename(columns={"id": "answer_row"})
    readable, numbers = jury.readable_replies(result.verdicts)
    check = CheckOutcome("judge_replies_readable", passed=readable, severity="warn", metadata=numbers)
    return StageResult(
        {"pre_grades": pre, "verdicts": verdicts, "decisions": decisions, "agreement": result.agreement},
        metadata={
            "answers": len(prompts),
            "method": "rank classification" if ranked else "generated answers",
            "pre_graded": sum(p is not None for p in pre),
            "sent_to_jury": len(to_judge),
            "failed_requests": sum(failed),
            "judges": ", ".join(j.name for j in judges),
            "decision_reasons": decisions["reason"].value_counts().to_dict(),
            **jury.agreement_metadata(result.agreement),
        },
        checks=[check],
    )


def _grades_stage(context: Any, prompts: pd.DataFrame, responses: pd.DataFrame, judgements: dict) -> StageResult:
    """One grade per answer: correct / wrong / very_wrong / indecisive, and how it was reached."""
    ranked = ranks_candidates(context.spec())
    graded = score(prompts, responses, judgements["pre_grades"], judgements["decisions"], context.model, ranked)
    return StageResult(
        graded,
        metadata={
            "grades": graded["grade"].value_counts(dropna=False).to_dict(),
            "graded_by": graded["graded_by"].value_counts().to_dict(),
        },
    )


def _rates_stage(context: Any, grades: pd.DataFrame, judgements: dict) -> StageResult:
    """Correct, very-wrong and indecisive rates (Gapminder's formula) with a bootstrap interval, by
    language, prompt family and topic; the English − Chinese gap; judge agreement; history and regression."""
    from geomon.stats.values import metrics_from_mapping

    result = diagnose(grades)
    summary = result["summary"]
    kappa = float(judgements["agreement"]["fleiss_kappa"])
    summary["judge_fleiss_kappa"] = kappa
    numbers = {k: float(v) for k, v in summary.items() if isinstance(v, int | float) and pd.notna(v)}
    settings = context.settings
    judges = ",".join(j.name for j in settings.judges(settings.gapminder.jury))
    # Runs compare only on the same sample and the same jury: a new jury grades differently, which is not the
    # model's change.
    scope = (
        f"questions={grades['question_id'].nunique()},variations={grades['prompt_variation_id'].nunique()}"
        f"|judges={judges}"
    )
    agreement_check = jury.agreement_outcome(context, "gapminder", kappa)
    return StageResult(
        {**result, "agreement": judgements["agreement"]},
        metadata={
            **numbers,
            "language_gap_note": result["language_gap_note"] or "computed",
            "by_family": result["by_family"][["family", "n", "correct_rate", "very_wrong_rate"]],
            "by_topic": result["by_topic"][["topic", "n", "correct_rate"]].head(20),
        },
        checks=[agreement_check],
        tracked=Tracked(items(grades), scope, others=undeclared(metrics_from_mapping(numbers, n=len(grades)), TRACKED)),
    )


def _write_report(out: Any, board: pd.DataFrame, results: dict[str, dict[str, Any]], settings: Any) -> Any:
    from geomon.suites.gapminder.report import write_report

    return write_report(out, board, results, PIPELINE.leaderboard_columns)


def _pipeline() -> Pipeline:
    from geomon import parsing
    from geomon.stats import agreement

    judging = (sys.modules[__name__], jury, parsing, agreement)
    per_model = {"per_model": True}
    return Pipeline(
        stages=(
            Stage(
                "question_bank",
                _question_bank_stage,
                versioned_by=(source,),
                source=True,
                checks=(StageCheck("one_correct_option", blocking=True, evaluate=_one_correct_option),),
            ),
            Stage(
                "prompts",
                _prompts_stage,
                inputs=("question_bank",),
                checks=(StageCheck("prompts_filled", "Every prompt rendered with no unfilled placeholder.", True),),
                options=(
                    Option("sample_questions", int, 0, "0 = all 365; N = a seeded sample"),
                    Option("sample_variations", int, 0, "0 = every variation; N = a seeded sample per language"),
                    SEED,
                ),
            ),
            # a base model with log-probabilities ranks the three options (BorderLines' rank classification)
            ranked_responses_stage(
                responses_stage(requests_for, "prompt_id"), "prompt_id", lambda prompts: list(prompts["options"])
            ),
            Stage(
                "judgements",
                _judgements_stage,
                inputs=("prompts", "responses", "question_bank"),
                asks_models=True,
                versioned_by=judging,
                checks=(
                    StageCheck(
                        "judge_replies_readable",
                        f"At least {jury.MIN_READ_RATE:.0%} of the judges' replies name a verdict.",
                    ),
                ),
                **per_model,
            ),
            Stage(
                "grades",
                _grades_stage,
                inputs=("prompts", "responses", "judgements"),
                versioned_by=judging,
                **per_model,
            ),
            Stage(
                "rates",
                _rates_stage,
                inputs=("grades", "judgements"),
                versioned_by=judging,
                tracked=True,
                checks=(
                    StageCheck(
                        "judge_agreement_stable",
                        "The judges' Fleiss' kappa did not fall by 0.2 or more since the model's previous run.",
                    ),
                ),
                **per_model,
            ),
        ),
        write_report=_write_report,
        leaderboard_columns=(
            "n",
            "correct_rate",
            "correct_rate_ci_low",
            "correct_rate_ci_high",
            "very_wrong_rate",
            "indecisive_rate",
            "correct_probability",
            "pre_graded",
            "ranked",
            "jury_graded",
            "judge_fleiss_kappa",
        ),
        per_model_description="Responses, jury judgements, grades and rates of one model.",
    )


PIPELINE = _pipeline()
