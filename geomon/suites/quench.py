"""QUENCH: masked-entity quiz questions, judged and embedded; the gap between Indic and non-Indic context.

Spec: ``../shared/seeds/quench.txt`` (prompts in Appendix B-C, aggregation in section 4) and the release's
``LLM_Inference/*.py``, whose prompt texts are the ones the paper's models got:

1. Entity prediction, one request per masked entity: the quizmaster system prompt (+ " Let's think step by
   step." for CoT) and "…provide me with the answer for variable X. …" followed by the question.
2. Rationales: "The prediction for variable X is …" (the model's own answer) and "The correct answer for
   the variable X is …" (the gold answer), each followed by the question, in the same mode.
3. A jury scores each entity correct / incorrect (binary) and each rationale 1-5 against the gold
   rationale (Appendix C prompts); an entity's score is the judges' mean, and a subset's score the mean
   over its entities (the paper's Σ over questions and entities, divided by the entities).
4. Beside the jury: cosine similarity of all-MiniLM-L6-v2 embeddings (answer vs gold answer, rationale vs
   gold rationale) and an exact match after normalisation, a cheap lower bound.

Named variants (where geomon differs, and why):
- The release passes the model's whole reply as "the prediction" and to the judges; geomon passes the
  entity read from the reply. Replies with no entity in the requested format are ``unanswered``: counted,
  excluded from every score, and given no rationale-from-prediction request (the paper would have the
  judges mark most of them incorrect; here a format failure is not a knowledge failure).
- The paper's appendix repeats the entity prompt under "rationale using gold labels" (a copy error);
  the release's code sends the gold-rationale prompt used here.
- Semantic similarity is MiniLM cosine, not BERTScore (roberta-large cannot be fetched offline): its
  scale is not the paper's BS column.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geomon import jury
from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.jury import parse_label, parse_likert
from geomon.sources import quench as source
from geomon.sources.quench import load_items
from geomon.stats.declarations import TrackedMetric, answered_rate, undeclared
from geomon.stats.power import minimum_detectable_effect, planned_mde
from geomon.stats.sampling import nested_sample
from geomon.stats.statistics import Mean, Range
from geomon.stats.uncertainty import Estimate, Interval, group_gaps
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
)
from geomon.suites.registry import Headline, RunOption, SuiteInfo, answered_outcome, status_of
from geomon.untrusted import clean_text

__all__ = ["SUITE", "load_items"]


@dataclass
class QuenchSettings:
    """The ``quench:`` section of geomon.yaml."""

    snapshot: Path | None = None  # the release directory; None = fetch the archive from archive_url
    archive_url: str = source.DEFAULT_ARCHIVE_URL
    # The paper's judges answer "correct"/"incorrect" or a 1-5 score: a few tokens are enough.
    jury: jury.JurySettings = field(default_factory=lambda: jury.JurySettings(max_tokens=16))
    expected_questions: int | None = 400  # the release's counts; the blocking check compares (None: skip)
    expected_entities: int | None = 459
    paper_results: Path | None = None  # the paper's Results/ folder: its table goes beside geomon's in the report


SUITE = SuiteInfo(
    name="quench",
    title="QUENCH (Indic vs non-Indic quiz reasoning)",
    spec="QUENCH, Measuring the gap between Indic and Non-Indic contextual general reasoning (seeds/quench.txt)",
    headlines=(
        Headline("correct_answer_score", "QUENCH: entity correctness by the jury (0-1, no CoT)", bounds=(0, 1)),
        Headline("indic_gap_correct_answer_score", "QUENCH: Indic − non-Indic entity correctness (no CoT)"),
        Headline(
            "questions_gap_correct_answer_score",
            "QUENCH: gap between Indic and non-Indic entity correctness, either ahead (no CoT)",
            bounds=(0, 1),
        ),
        Headline("answered_rate", "QUENCH: entities answered (%, no CoT)", bounds=(0, 100)),
        Headline(
            "pred_rationale_score", "QUENCH: rationale score for the predicted entity (1-5, no CoT)", bounds=(1, 5)
        ),
    ),
    options=(
        # 400 questions × 2 modes × 3 generations + the jury take hours on a laptop CPU: a seeded sample.
        RunOption(
            "--quench-questions",
            "QUENCH: N questions, half of them Indic (seeded; 0 = all; default: the profile's)",
            int,
            None,
            "sample_questions",
        ),
    ),
    order=4,
    settings=QuenchSettings,
    sample="answered",
    unit=("question_id",),
    profiles={"quick": {"sample_questions": 2}, "default": {"sample_questions": 400}},
)

MODES = ("normal", "cot")  # the paper's "without" and "with" chain-of-thought
SUBSETS = ("Indic", "Non-Indic", "All")
SYSTEM = (
    "Consider yourself a participant in a quiz show where I am the quizmaster. I will ask you a question that "
    "can be from any general theme. You need to provide me with the correct answer."
)
COT = " Let's think step by step."
ANSWER_PROMPT = (
    "The question can have multiple variables to answer, and you need to provide me with the answer for "
    "variable {variable}. Hence, use the following format strictly in your response: `The answer is <X answer>`. "
    "You lose points if you fail to follow the format."
)
PREDICTED_RATIONALE_PROMPT = (
    "The prediction for variable {variable} is {entity}, provide me with the rationale followed for your answer. "
    "Use the following format in your response: `The rationale is <rationale>`. You lose points if you fail to "
    "follow the format."
)
GOLD_RATIONALE_PROMPT = (
    "The correct answer for the variable {variable} is {entity}, provide me with the rationale that can be "
    "followed to arrive at the answer. Use the following format in your response: `The rationale is "
    "<rationale>`. You lose points if you fail to follow the format."
)
_JUDGE_INTRO = (
    "You are the host of a quiz show where you ask complex and tricky questions to the contestants. Now, once you "
    "ask one such question, the contestant gives "
)
ENTITY_JUDGE_PROMPT = (
    _JUDGE_INTRO
    + "an answer that might not be the exact answer but is still correct. For instance, the answer provided to you "
    "might be 'U.S.A' while the actual answer is 'United States of America' or 'United States' or 'America', etc. "
    "Use your wise judgment to decide, based on the question given, whether the answer is correct or not. YOU ARE "
    "THE JUDGE AND YOUR WORD IS FINAL. Be fair and just in your judgment. Always respond with 'correct' or "
    "'incorrect' based on the answer provided by the contestant. You will be provided the question, the true "
    "answer, and the answer provided by the contestant, and you need to decide whether the answer is correct or "
    "not.\n## Question\n{question}\n## True Answer\n{true}\n## Answer Given by contestant\n{given}\n"
    "## Your Judgement (correct/incorrect)"
)
RATIONALE_JUDGE_PROMPT = (
    _JUDGE_INTRO
    + "an answer as well as the rationale behind that answer. You need to decide whether the rationale provided is "
    "correct or not by comparing it with the true rationale. Use your wise judgment to decide based on the "
    "question given whether the rationale is correct or not. YOU ARE THE JUDGE AND YOUR WORD IS FINAL. Be fair and "
    "just in your judgment. Provide a score between 1 to 5 based on the rationale provided by the contestant. 1 "
    "being the least and 5 being the highest score.\n## Question\n{question}\n## True Rationale\n{true}\n"
    "## Rationale Given by contestant\n{given}\n## Your Judgement (Score between 1 to 5 do not provide any other "
    "score or text)"
)
ENTITY_LABELS = {"correct": 1.0, "incorrect": 0.0}
# Reasoning needs room; an answer alone does not. Rationales are a few sentences.
MAX_TOKENS = {"normal": 64, "cot": 320, "rationale": 192}
TEMPERATURE = 0.0  # the release leaves the APIs' defaults; geomon answers deterministically so reruns compare
MAX_REPLY_CHARS = 20_000  # longer replies are cut before parsing (and the cut is recorded)
MAX_ENTITY_CHARS = 200  # an "answer" longer than this is prose, not an entity
SCORES = (
    "correct_answer_score",
    "pred_rationale_score",
    "gold_rationale_score",
    "exact_match",
    "answer_similarity",
    "pred_rationale_similarity",
    "gold_rationale_similarity",
)
PAPER_SCORES = ("correct_answer_score", "pred_rationale_score", "gold_rationale_score")
PAPER_TABLE = "Aggregated Scores  - aggregated_scores.csv"  # in the release's Results/ (reference/quench/)
_PLACEHOLDER = re.compile(r"\{[a-z_]+\}")


# --- prompts ---------------------------------------------------------------------------------------


def sample_questions(items: pd.DataFrame, n: int, seed: int = 0) -> list[str]:
    """``n`` question ids, half Indic and half not (a nested seeded sample of each half; the Indic half is capped
    at the Indic questions there are); every question for n = 0. Balanced halves give the Indic gap its best
    precision."""
    questions = items.drop_duplicates("question_id")
    if not n or n >= len(questions):
        return questions["question_id"].tolist()
    indic = questions.loc[questions["indic"].astype(bool), "question_id"].tolist()
    other = questions.loc[~questions["indic"].astype(bool), "question_id"].tolist()
    n_indic = min(len(indic), n // 2 + n % 2)
    picked = set(nested_sample(indic, n_indic, seed, group="indic")) | set(
        nested_sample(other, min(len(other), n - n_indic), seed, group="other")
    )
    return [q for q in questions["question_id"] if q in picked]


def build_prompts(items: pd.DataFrame, sample: int = 0, seed: int = 0) -> pd.DataFrame:
    """One row per (masked entity, mode): ``prompt_id`` = question|variable|mode, the system and user
    messages of the entity-prediction request, and the gold answer and rationale it is scored against."""
    chosen = set(sample_questions(items, sample, seed))
    rows = []
    for item in items[items["question_id"].isin(chosen)].itertuples(index=False):
        for mode in MODES:
            rows.append(
                {
                    "prompt_id": f"{item.question_id}|{item.variable}|{mode}",
                    "entity_id": f"{item.question_id}|{item.variable}",
                    "question_id": item.question_id,
                    "variable": item.variable,
                    "mode": mode,
                    "indic": bool(item.indic),
                    "questions": question_group(item.indic),  # the group its comparisons are tested by
                    "themes": list(item.themes),
                    "question": item.question,
                    "gold_answer": item.answer,
                    "gold_rationale": item.rationale,
                    "system": SYSTEM + (COT if mode == "cot" else ""),
                    "user": f"{ANSWER_PROMPT.format(variable=item.variable)} {item.question}",
                }
            )
    return pd.DataFrame(rows)


def question_group(indic: Any) -> str:
    """The group a question is tested by: ``Indic`` or ``non-Indic`` (the paper's subsets)."""
    return "Indic" if bool(indic) else "non-Indic"


def unfilled_placeholders(prompts: pd.DataFrame, id_column: str = "prompt_id") -> list[str]:
    """Ids of the prompts whose user message still holds a ``{placeholder}`` (a template that did not fill)."""
    if prompts.empty:
        return []
    return prompts.loc[prompts["user"].str.contains(_PLACEHOLDER), id_column].tolist()


def _completion_lead(stage: str) -> str:
    return "The rationale is" if stage == "rationale" else "The answer is"


def _requests(prompts: pd.DataFrame, spec: ModelSpec, stage: str) -> list[GenerationRequest]:
    requests = []
    for row in prompts.itertuples(index=False):
        budget = MAX_TOKENS["rationale" if stage == "rationale" else row.mode]
        params = {**spec.params, "max_tokens": budget, "temperature": TEMPERATURE}
        if spec.kind == "chat":
            messages = ({"role": "system", "content": row.system}, {"role": "user", "content": row.user})
            requests.append(GenerationRequest("chat", messages=messages, params=params))
        else:
            # A base model continues text: the instruction, then the reply's opening words (read back below).
            lead = "" if stage == "answer" and row.mode == "cot" else f" {_completion_lead(stage)}"
            requests.append(
                GenerationRequest("completion", prompt=f"{row.system}\n\n{row.user}\n\nReply:{lead}", params=params)
            )
    return requests


def requests_for(prompts: pd.DataFrame, spec: ModelSpec) -> list[GenerationRequest]:
    """The entity-prediction requests: the quizmaster as system prompt, the variable's instruction and the
    question as the user message (the release's chat layout); base models get it as a completion."""
    return _requests(prompts, spec, "answer")


# --- reading replies -------------------------------------------------------------------------------

_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">", "“": "”", "‘": "’", "«": "»"}
_ANSWER_IS = re.compile(
    r"\banswer\s+(?:(?:for|to)\s+(?:the\s+|this\s+)?(?:variable\s+|question\s+)?[^\n:]{0,20}?\s*)?is\s*:?\s*", re.I
)


def clean_reply(text: Any) -> tuple[str, bool]:
    """Untrusted model text made safe to parse (``geomon.untrusted``), capped at MAX_REPLY_CHARS.
    Returns (text, truncated)."""
    return clean_text(text, MAX_REPLY_CHARS)


def _unwrap(text: str, trailing: str = ".,;:") -> str:
    """Strip quotes, brackets and markdown around an entity, keeping those that belong to it
    ("Apollo 11 Astronauts (Neil Armstrong, …)", 'explosion in "The Dark Knight Rises"')."""
    while True:
        before = text
        text = text.strip(" \t*_`").rstrip(trailing).strip()
        for opener, closer in (*_PAIRS.items(), ('"', '"'), ("'", "'")):
            if len(text) >= 2 and text[0] == opener and text[-1] == closer:
                text = text[1:-1]
            elif opener != closer and text.startswith(opener) and text.count(opener) > text.count(closer):
                text = text[1:]
            elif opener != closer and text.endswith(closer) and text.count(closer) > text.count(opener):
                text = text[:-1]
            elif opener == closer and text.count(opener) % 2 and (text[:1] == opener or text[-1:] == opener):
                text = text[1:] if text[:1] == opener else text[:-1]
        if text == before:
            return text


def _strip_label(candidate: str, variable: str) -> str:
    candidate = _unwrap(candidate)
    label = rf"^(?:variable\s+)?{re.escape(variable)}\s*(?:answer)?\s*(?:[:=\-–]|\bis\b)\s*"
    candidate = re.sub(label, "", candidate, flags=re.I)
    return _unwrap(re.sub(r"\s+", " ", candidate))


def _first_clause(rest: str) -> str:
    line = rest.strip().split("\n", 1)[0]
    # An entity ends where a sentence starts: ". The question …" (not "St. Paul's" or "U.S. Open").
    return re.split(r"\.\s+(?=[A-Z][a-z]+\s+\w)", line, maxsplit=1)[0]


def _json_answer(text: str, variable: str) -> str | None:
    for blob in re.findall(r"\{[^{}]{1,2000}\}|\[[^\[\]]{1,2000}\]", text):
        try:
            value = json.loads(blob)
        except ValueError:
            continue
        if isinstance(value, dict):
            for key, entity in value.items():
                if str(key).strip().lower() in (variable.lower(), "answer") and isinstance(entity, str | int | float):
                    return str(entity)
        elif isinstance(value, list) and value:
            for entry in value:
                if isinstance(entry, str) and re.match(rf"\s*{re.escape(variable)}\s*[:=]", entry):
                    return entry
            if len(value) == 1 and isinstance(value[0], str):
                return value[0]
    return None


def _entity(candidate: str, variable: str) -> tuple[str | None, str]:
    """The entity in a candidate span, or None and why it is not one."""
    entity = _strip_label(candidate, variable)
    if not entity:
        return None, "empty answer"
    if re.fullmatch(r"(?:x|y|z|\w)\s*answer", entity, re.I) or entity.lower() == "answer":
        return None, "echoes the format's placeholder"
    if re.match(r"\W*the answer\b", entity, re.I):
        return None, "repeats the format without an entity"
    if normalise(entity) == normalise(variable) or re.fullmatch(r"[XYZ]", entity):
        return None, "names the variable, not an entity"  # its own, or another mask letter
    if len(entity) > MAX_ENTITY_CHARS:
        return None, f"prose, not an entity ({len(entity)} characters)"
    return entity, ""


def parse_answer(text: Any, variable: str, final: bool = True) -> tuple[str | None, str]:
    """The entity a reply gives for ``variable``, and how it was read (or why not).

    Read, in order: "<<<X: answer>>>" (the paper's Table 1 format); "The answer is …" / "The answer to
    the question is …", cut where a new sentence starts, with a leading "X:" label removed — the last one
    that names an entity when ``final`` (after reasoning, the conclusion counts: CoT), else the first (a
    base model that goes on listing guesses); a JSON-ish object or list ({"X": "…"}, ["X: …"]); a line
    "X: …" / "X = …". A reply that answers only other variables, echoes the format's placeholder, names
    the variable itself or gives prose longer than an entity is unanswered, with the reason. Never raises.
    """
    reply, truncated = clean_reply(text)
    if not reply.strip():
        return None, "empty reply"
    suffix = " (reply cut at 20,000 characters)" if truncated else ""
    spans: list[tuple[str, str]] = []  # (candidate, how), in the order they are tried
    boxed = [
        (label.strip(), value)
        for label, value in re.findall(r"<{2,3}\s*([^<>:\n]{1,40}?)\s*:\s*([^<>\n]{1,300}?)\s*>{2,3}", reply)
    ]
    spans += [(value, "<<<X: answer>>>") for label, value in boxed if label.lower() == variable.lower()]
    said = [_first_clause(reply[m.end() :]) for m in _ANSWER_IS.finditer(reply)]
    spans += [(c, "The answer is …") for c in (reversed(said) if final else said)]
    found = _json_answer(reply, variable)
    if found is not None:
        spans.append((found, "JSON-ish"))
    line = re.search(rf"^\W*{re.escape(variable)}\s*(?:[:=]|\bis\b)\s*(.+)$", reply, re.I | re.M)
    if line:
        spans.append((_first_clause(line.group(1)), f"{variable}: …"))
    if not spans:
        if boxed or re.search(r"^\W*[A-Z]\s*[:=]", reply, re.M):
            return None, f"answers other variables, not {variable}{suffix}"
        return None, f"no answer in the requested format{suffix}"
    first_reason = ""
    for candidate, how in spans:
        entity, reason = _entity(candidate, variable)
        if entity is not None:
            return entity, how + suffix
        first_reason = first_reason or f"{reason} ({how})"
    return None, first_reason + suffix


def parse_rationale(text: Any) -> str | None:
    """The rationale a reply gives: what follows "The rationale is" if it says so, else the whole reply
    (the judges read it either way); None for an empty reply."""
    reply, _ = clean_reply(text)
    said = list(re.finditer(r"\brationale\s+is\s*:?\s*", reply, re.I))
    body = reply[said[0].end() :] if said else reply
    body = _unwrap(body.strip(), trailing="")
    return body or None


def parse_answers(prompts: pd.DataFrame, responses: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Per entity-prediction request: the reply, the entity read from it and how, and its status
    (answered / failed / unanswered: the one rule of every suite). A completion model's reply is read
    after the lead the prompt gave it ("The answer is"); ``kind`` is the model's (chat or base)."""
    replies = responses["text"].tolist()
    if kind != "chat":
        replies = [
            (f"{_completion_lead('answer')} {r}" if mode == "normal" else r) if isinstance(r, str) else r
            for r, mode in zip(replies, prompts["mode"], strict=True)
        ]
    parsed = [
        parse_answer(r, v, final=mode == "cot")
        for r, v, mode in zip(replies, prompts["variable"], prompts["mode"], strict=True)
    ]
    out = pd.DataFrame(
        {
            "prompt_id": prompts["prompt_id"].to_numpy(),
            "reply": responses["text"].to_numpy(),
            "error": responses["error"].to_numpy(),
            "answer": [p[0] for p in parsed],
            "read_as": [p[1] for p in parsed],
        }
    )
    out["status"] = status_of(out["answer"], out["error"])
    return out


# --- rationales ------------------------------------------------------------------------------------


def rationale_prompts(prompts: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
    """Two rationale requests per entity and mode: given the model's answer (only where one was read) and
    given the gold answer. ``rationale_id`` = prompt_id|predicted or prompt_id|gold."""
    by_prompt = answers.set_index("prompt_id")["answer"]
    rows = []
    for row in prompts.itertuples(index=False):
        entities = {"predicted": by_prompt.get(row.prompt_id), "gold": row.gold_answer}
        for kind, entity in entities.items():
            if not isinstance(entity, str):
                continue
            template = PREDICTED_RATIONALE_PROMPT if kind == "predicted" else GOLD_RATIONALE_PROMPT
            rows.append(
                {
                    "rationale_id": f"{row.prompt_id}|{kind}",
                    "prompt_id": row.prompt_id,
                    "given": kind,
                    "mode": row.mode,
                    "system": row.system,
                    "user": f"{template.format(variable=row.variable, entity=entity)} {row.question}",
                }
            )
    return pd.DataFrame(rows, columns=["rationale_id", "prompt_id", "given", "mode", "system", "user"])


def rationale_requests(rationales: pd.DataFrame, spec: ModelSpec) -> list[GenerationRequest]:
    return _requests(rationales, spec, "rationale")


def parse_rationales(rationales: pd.DataFrame, responses: pd.DataFrame, kind: str) -> pd.DataFrame:
    texts = responses["text"].tolist()
    lead = _completion_lead("rationale")
    if kind != "chat":
        texts = [f"{lead} {t}" if isinstance(t, str) else t for t in texts]
    out = rationales[["rationale_id", "prompt_id", "given"]].copy()
    out["reply"] = responses["text"].to_numpy()
    out["error"] = responses["error"].to_numpy()
    out["rationale"] = [parse_rationale(t) for t in texts]
    out["status"] = status_of(out["rationale"], out["error"])
    return out


# --- the jury's prompts ----------------------------------------------------------------------------


def entity_judge_prompts(prompts: pd.DataFrame, answers: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(prompt_ids, judge prompts) for every answered entity (Appendix C's entity evaluation)."""
    merged = prompts.merge(answers[["prompt_id", "answer"]], on="prompt_id")
    merged = merged[merged["answer"].notna()]
    texts = [
        ENTITY_JUDGE_PROMPT.format(question=r.question, true=r.gold_answer, given=r.answer)
        for r in merged.itertuples(index=False)
    ]
    return merged["prompt_id"].tolist(), texts


def rationale_judge_prompts(prompts: pd.DataFrame, rationales: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(rationale_ids, judge prompts) for every rationale given, scored against the gold rationale."""
    merged = rationales.merge(prompts[["prompt_id", "question", "gold_rationale"]], on="prompt_id")
    merged = merged[merged["rationale"].notna()]
    texts = [
        RATIONALE_JUDGE_PROMPT.format(question=r.question, true=r.gold_rationale, given=r.rationale)
        for r in merged.itertuples(index=False)
    ]
    return merged["rationale_id"].tolist(), texts


def read_entity_verdict(text: str | None) -> float | None:
    label = parse_label(text, list(ENTITY_LABELS))
    return ENTITY_LABELS[label] if label else None


def read_rationale_verdict(text: str | None) -> float | None:
    score = parse_likert(text, 1, 5)
    return float(score) if score is not None else None


# --- scoring ---------------------------------------------------------------------------------------


def normalise(text: Any) -> str:
    """Casefolded, accents and punctuation removed, "&" as "and", a leading article dropped."""
    if not isinstance(text, str):
        return ""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold().replace("&", " and ")
    text = re.sub(r"[^\w\s]", " ", text)
    text = re.sub(r"^\s*(?:the|a|an)\s+", "", text)
    return " ".join(text.split())


def exact_match(predicted: Any, gold: str) -> float:
    """1.0 when the normalised answer equals the normalised gold answer or one of its listed forms
    ("Quiet Luxury/Stealth Wealth"; "Apollo 11 Astronauts (Neil Armstrong, …)" also without the
    parenthesis); NaN when there is no answer."""
    if not isinstance(predicted, str) or not predicted.strip():
        return float("nan")
    forms = {gold, re.sub(r"\s*\([^)]*\)", "", gold), *gold.split("/")}
    return float(normalise(predicted) in {normalise(f) for f in forms if f.strip()})


def score(
    prompts: pd.DataFrame,
    answers: pd.DataFrame,
    rationales: pd.DataFrame,
    judged: dict[str, pd.DataFrame],
    similarity: pd.DataFrame,
    model: str,
) -> pd.DataFrame:
    """One row per (entity, mode): the answer and its status, and every score.

    ``judged["entities"]`` has (prompt_id, score, votes) from the entity jury; ``judged["rationales"]``
    (rationale_id, score, votes) from the rationale jury; ``similarity`` (id, similarity) for answers
    (prompt_id) and rationales (rationale_id). Unanswered and failed entities keep NaN entity scores
    (excluded, counted); the gold-answer rationale is scored for every entity.
    """
    out = prompts[
        ["prompt_id", "entity_id", "question_id", "variable", "mode", "indic", "themes", "gold_answer"]
    ].copy()
    out.insert(0, "model", model)
    out = out.merge(answers[["prompt_id", "answer", "read_as", "status"]], on="prompt_id", how="left")
    entity = judged["entities"].set_index("prompt_id")
    out["correct_answer_score"] = out["prompt_id"].map(entity["score"]).astype(float)
    out["correct_votes"] = out["prompt_id"].map(entity["votes"]).fillna(0).astype(int)
    out["exact_match"] = [exact_match(a, g) for a, g in zip(out["answer"], out["gold_answer"], strict=True)]
    sims = similarity.set_index("id")["similarity"]
    out["answer_similarity"] = out["prompt_id"].map(sims).astype(float)
    rationale = judged["rationales"].set_index("rationale_id")
    given = rationales.set_index("rationale_id")["status"]
    for kind, prefix in (("predicted", "pred"), ("gold", "gold")):
        ids = out["prompt_id"] + f"|{kind}"
        out[f"{prefix}_rationale_score"] = ids.map(rationale["score"]).astype(float)
        out[f"{prefix}_rationale_similarity"] = ids.map(sims).astype(float)
        out[f"{prefix}_rationale_status"] = ids.map(given).fillna("not asked")
    unanswered = out["status"] != "answered"
    out.loc[unanswered, ["correct_answer_score", "exact_match", "answer_similarity"]] = np.nan
    return out


def _subset(scores: pd.DataFrame, subset: str) -> pd.DataFrame:
    if subset == "Indic":
        return scores[scores["indic"].astype(bool)]
    if subset == "Non-Indic":
        return scores[~scores["indic"].astype(bool)]
    return scores


def aggregate(scores: pd.DataFrame) -> pd.DataFrame:
    """Per model, mode and subset (Indic / Non-Indic / All): each score's mean over the entities that have
    it — the paper's Σ over questions and entities ÷ entities — with the entity counts behind it."""
    rows = []
    for (model, mode), frame in scores.groupby(["model", "mode"], sort=False):
        for subset in SUBSETS:
            part = _subset(frame, subset)
            status = part["status"].value_counts()
            row = {
                "model": model,
                "mode": mode,
                "subset": subset,
                "entities": len(part),
                "questions": int(part["question_id"].nunique()),
                "answered": int(status.get("answered", 0)),
                "unanswered": int(status.get("unanswered", 0)),
                "failed": int(status.get("failed", 0)),
            }
            for column in SCORES:
                row[column] = float(part[column].mean()) if part[column].notna().any() else float("nan")
                row[f"{column}_n"] = int(part[column].notna().sum())
            rows.append(row)
    return pd.DataFrame(rows)


def paper_layout(aggregated: pd.DataFrame) -> pd.DataFrame:
    """The layout of the paper's ``aggregated_scores.csv``: key_name ``<model>_<mode>_Aggregated_<subset>``
    and correct_answer_score (0-1), pred_rationale_score and gold_rationale_score (1-5)."""
    keys = aggregated["model"] + "_" + aggregated["mode"] + "_Aggregated_" + aggregated["subset"]
    return pd.DataFrame({"key_name": keys, **{c: aggregated[c].to_numpy() for c in PAPER_SCORES}})


def read_paper_table(path: str | Path) -> pd.DataFrame:
    """The paper's aggregated judge scores (``Results/Aggregated Scores - aggregated_scores.csv``) as
    model, mode, subset and the three scores, plus the GEval columns of Tables 4, 7 and 8 (× 100; a
    rationale's 1-5 mean ÷ 5 × 100)."""
    table = pd.read_csv(path)
    missing = [c for c in ("key_name", *PAPER_SCORES) if c not in table.columns]
    if missing:
        raise ValueError(f"QUENCH results table {path}: no column(s) {missing}")
    parts = table["key_name"].str.extract(r"^(?P<model>.+)_(?P<mode>normal|cot)_Aggregated_(?P<subset>.+)$")
    if parts.isna().any().any():
        bad = table.loc[parts.isna().any(axis=1), "key_name"].tolist()
        raise ValueError(f"QUENCH results table {path}: key_name(s) not <model>_<mode>_Aggregated_<subset>: {bad[:3]}")
    out = pd.concat([parts, table[list(PAPER_SCORES)]], axis=1)
    out["geval_answer"] = out["correct_answer_score"] * 100
    out["geval_pred_rationale"] = out["pred_rationale_score"] / 5 * 100
    out["geval_gold_rationale"] = out["gold_rationale_score"] / 5 * 100
    return out


ALPHA, POWER = 0.05, 0.8  # a gap's ``detectable``: the one MDE (``stats.power``), one-sided at α 0.05, 80 % power


def detectable(se: float) -> float:
    """The smallest gap a sample whose gap has standard error ``se`` detects: ``power.minimum_detectable_effect``
    at ``ALPHA`` and ``POWER`` — the MDE every surface states (one-sided), here at the whole 5 %."""
    return minimum_detectable_effect(se, ALPHA, POWER)


def paper_gaps(paper: pd.DataFrame, indic_entities: int = 80, other_entities: int = 379) -> pd.DataFrame:
    """What the paper's own table can show: Indic − non-Indic entity correctness per model and mode with a
    normal-approximation 95 % interval and the smallest detectable gap (``detectable``). The paper publishes
    no per-item scores, so the standard error is the bound for a 0-1 score with that mean, p(1 − p) / n,
    entities as units (the release's 80 / 379) — an approximation, named as such."""
    wide = paper.pivot_table(index=["model", "mode"], columns="subset", values="correct_answer_score")
    p_i, p_n = wide["Indic"], wide["Non-Indic"]
    se = np.sqrt(p_i * (1 - p_i) / indic_entities + p_n * (1 - p_n) / other_entities)
    out = pd.DataFrame({"indic": p_i, "non_indic": p_n, "gap": p_i - p_n, "se": se})
    out["ci_low"], out["ci_high"] = out["gap"] - 1.959964 * se, out["gap"] + 1.959964 * se
    out["detectable"] = [detectable(v) for v in se]
    return out.reset_index()


def indic_gaps(scores: pd.DataFrame, resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Indic − non-Indic per model, mode and score, with a bootstrap interval that resamples questions
    within each subset (a question's entities move together), its standard error, the smallest gap this
    sample could detect (``detectable``) from that SE, and the same before any answer is seen
    (worst-case spread of a 0-1 score, questions as units)."""
    rows = []
    for (model, mode), frame in scores.groupby(["model", "mode"], sort=False):
        indic = frame["indic"].astype(bool).to_numpy()
        questions = frame["question_id"].to_numpy()
        for column in SCORES:
            values = frame[column].to_numpy(dtype=float)
            gap = group_gaps(
                values, np.where(indic, "Indic", "Non-Indic"), clusters=questions, resamples=resamples, seed=seed
            ).difference("Indic", "Non-Indic")
            have = np.isfinite(values)
            n_indic_q = len(set(questions[have & indic]))
            n_other_q = len(set(questions[have & ~indic]))
            rows.append(
                {
                    "model": model,
                    "mode": mode,
                    "score": column,
                    "indic": float(np.nanmean(values[indic])) if (have & indic).any() else float("nan"),
                    "non_indic": float(np.nanmean(values[~indic])) if (have & ~indic).any() else float("nan"),
                    "gap": gap.point,
                    "ci_low": gap.interval.low,
                    "ci_high": gap.interval.high,
                    "se": gap.se,
                    "detectable": detectable(gap.se) if gap.se > 0 else float("nan"),
                    "detectable_planned": planned_mde(n_indic_q, n_other_q, alpha=ALPHA, power=POWER)
                    if column in ("correct_answer_score", "exact_match")
                    else float("nan"),
                    "indic_entities": int((have & indic).sum()),
                    "indic_questions": n_indic_q,
                    "non_indic_entities": int((have & ~indic).sum()),
                    "non_indic_questions": n_other_q,
                    "note": gap.interval.note,
                }
            )
    return pd.DataFrame(rows)


_NO_PAIRS = Estimate(
    float("nan"), Interval(float("nan"), float("nan"), "no entity scored in both modes"), float("nan"), 0, 0
)


def cot_effect(scores: pd.DataFrame, resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """CoT − no CoT per model and score, paired on the entities both modes scored, with an interval that
    resamples questions."""
    rows = []
    for model, frame in scores.groupby("model", sort=False):
        wide = frame.pivot_table(
            index=["entity_id", "question_id"], columns="mode", values=list(SCORES), aggfunc="first"
        )
        for column in SCORES:
            if column not in wide or not set(MODES) <= set(wide[column].columns):
                continue
            pair = wide[column][list(MODES)].dropna()
            diff = pair["cot"] - pair["normal"]
            estimate = group_gaps(
                diff.to_numpy(),
                np.full(len(diff), "paired"),
                clusters=pair.index.get_level_values("question_id").to_numpy(),
                resamples=resamples,
                seed=seed,
            ).groups.get("paired", _NO_PAIRS)
            rows.append(
                {
                    "model": model,
                    "score": column,
                    "normal": float(pair["normal"].mean()) if len(pair) else float("nan"),
                    "cot": float(pair["cot"].mean()) if len(pair) else float("nan"),
                    "cot_minus_normal": estimate.point,
                    "ci_low": estimate.interval.low,
                    "ci_high": estimate.interval.high,
                    "paired_entities": estimate.items,
                    "questions": estimate.clusters,
                    "note": estimate.interval.note,
                }
            )
    return pd.DataFrame(rows)


def by_theme(scores: pd.DataFrame) -> pd.DataFrame:
    """Per model, mode and theme (a question can have several; one without themes is "(none)"): entities,
    how many are Indic, and the mean of each paper score."""
    exploded = scores.assign(theme=scores["themes"].map(lambda t: list(t) or ["(none)"])).explode("theme")
    grouped = exploded.groupby(["model", "mode", "theme"])
    out = grouped.agg(
        entities=("entity_id", "size"),
        indic_entities=("indic", "sum"),
        **{column: (column, "mean") for column in (*PAPER_SCORES, "exact_match")},
    )
    return out.reset_index().sort_values(["model", "mode", "entities"], ascending=[True, True, False])


def diagnose(scores: pd.DataFrame, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The paper's aggregated scores per subset and mode, the Indic gaps with intervals and detectable
    sizes, the CoT effect, themes, and a flat summary (no-CoT figures unsuffixed, CoT ones ``_cot``)."""
    aggregated = aggregate(scores)
    gaps = indic_gaps(scores, resamples, seed)
    cot = cot_effect(scores, resamples, seed)
    summary: dict[str, Any] = {}
    for row in aggregated[aggregated["subset"] == "All"].itertuples(index=False):
        suffix = "" if row.mode == "normal" else f"_{row.mode}"
        for column in SCORES:
            summary[f"{column}{suffix}"] = getattr(row, column)
        for count in ("entities", "answered", "unanswered", "failed"):
            summary[f"{count}{suffix}"] = getattr(row, count)
    for row in gaps.itertuples(index=False):
        suffix = "" if row.mode == "normal" else f"_{row.mode}"
        for part, value in (
            ("", row.gap),
            ("_ci_low", row.ci_low),
            ("_ci_high", row.ci_high),
            ("_detectable", row.detectable),
        ):
            summary[f"indic_gap_{row.score}{suffix}{part}"] = value
    for row in cot.itertuples(index=False):
        summary[f"cot_effect_{row.score}"] = row.cot_minus_normal
        summary[f"cot_effect_{row.score}_ci_low"] = row.ci_low
        summary[f"cot_effect_{row.score}_ci_high"] = row.ci_high
    return {
        "summary": summary,
        "aggregated": aggregated,
        "paper_layout": paper_layout(aggregated),
        "gaps": gaps,
        "cot": cot,
        "themes": by_theme(scores),
        "unanswered": scores.loc[scores["status"] != "answered", ["prompt_id", "status", "read_as"]],
    }


# --- monitoring ------------------------------------------------------------------------------------


def items(scores: pd.DataFrame) -> pd.DataFrame:
    """Per (entity, mode) ``item``, every one asked: the jury's correctness (NaN when not answered), whether it
    was answered and the Indic flag, so the headline, the gap and the answer rate are recomputed exactly on
    the items two runs share."""
    return pd.DataFrame(
        {
            "item": scores["prompt_id"].to_numpy(),
            "question_id": scores["question_id"].astype(str).to_numpy(),
            "mode": scores["mode"].to_numpy(),
            "correct": scores["correct_answer_score"].to_numpy(dtype=float),
            "answered": answered_outcome(scores["status"]),
            "indic": scores["indic"].astype(bool).to_numpy(),
            # the group the questions are tested by, one by one: Indic or not
            "questions": [question_group(indic) for indic in scores["indic"]],
        }
    )


_PLAIN = (("mode", "normal"),)  # the headlines are the no-CoT answers

# The tracked headlines, each declared once over the per-entity scores, clustered on questions.
TRACKED = (
    # The Indic and the non-Indic questions are each tested too: the group that gets worse pages, by name. The gap
    # between them is tracked as a size, whichever side is ahead (the paper's signed Indic − non-Indic gap, in the
    # leaderboard, would read a gap closing from the Indic side as a change for the worse); it is a disparity:
    # shown, never paged (it also widens when the better group improves).
    TrackedMetric(
        "correct_answer_score",
        Mean("correct", where=_PLAIN),
        "question_id",
        False,
        0.05,
        by=("questions",),
        bounds=(0, 1),
    ),
    TrackedMetric(
        "questions_gap_correct_answer_score",
        Range(Mean("correct", where=_PLAIN), "questions"),
        "question_id",
        True,
        0.05,
        bounds=(0, 1),
    ),
    # Whether the model still answers, overall and for the Indic and non-Indic questions: the score is over the
    # answered entities, so a model that stops answering the ones it gets wrong would otherwise look better.
    answered_rate("question_id", by=("questions",), where=_PLAIN),
)


# --- the suite's graph (built into Dagster assets by geomon.defs.factory) ------------------------------


def _question_bank_stage(context: Any) -> StageResult:
    """QUENCH's questions, one row per masked entity with its answer, rationale, themes and Indic flag."""
    settings = context.settings
    root = settings.quench.snapshot
    if root is None:
        root = source.fetch_release(settings.quench.archive_url, settings.results_dir.parent / "quench-release")
    release = source.read_release(root)
    metadata = {key: value[:50] if isinstance(value, list) else value for key, value in release.report.items()}
    return StageResult(release, metadata={**metadata, "source": str(root)})


def _release_complete(context: Any, question_bank: source.QuenchRelease) -> Any:
    """The release's counts (400 questions, 459 masked entities unless geomon.yaml says otherwise), every
    question with its Indic annotation, every entity with an answer and a rationale."""
    from geomon import quality

    settings = context.settings.quench
    items = question_bank.items
    report = quality.validate(
        items.assign(annotated=items["indic"].notna()),
        "quench_release",
        quality.quench_release_expectations(settings.expected_entities, settings.expected_questions),
    )
    return quality.outcome(
        report,
        "release_complete",
        questions=int(items["question_id"].nunique()),
        entities=len(items),
        indic_questions=question_bank.report["indic_questions"],
        indic_entities=question_bank.report["indic_entities"],
        expected=f"{settings.expected_questions} questions, {settings.expected_entities} entities",
        questions_without_annotation=question_bank.unannotated[:20],
    )


def _prompts_stage(context: Any, question_bank: source.QuenchRelease) -> StageResult:
    """One entity-prediction prompt per masked entity and mode (no CoT / CoT), as the release asks."""
    release = question_bank
    options = context.options
    prompts = build_prompts(release.items[release.items["indic"].notna()], options["sample_questions"], options["seed"])
    return StageResult(
        prompts,
        metadata={
            "prompts": len(prompts),
            "entities": int(prompts["entity_id"].nunique()) if len(prompts) else 0,
            "questions": int(prompts["question_id"].nunique()) if len(prompts) else 0,
            "indic_entities": int(prompts.drop_duplicates("entity_id")["indic"].sum()) if len(prompts) else 0,
            "preview": prompts[["prompt_id", "system", "user"]].head(2),
        },
        checks=[filled_outcome("prompts_filled", len(prompts), unfilled_placeholders(prompts))],
    )


def _answers_stage(context: Any, prompts: pd.DataFrame) -> StageResult:
    """Each model's entity predictions (through the response store) and the entity read from each reply;
    replies without one are unanswered: counted, never scored as wrong."""
    spec = context.spec()
    responses, engine = context.ask(spec, requests_for(prompts, spec))
    answers = parse_answers(prompts, responses, spec.kind)
    return StageResult(
        answers,
        metadata={
            **engine,
            "status": answers["status"].value_counts().to_dict(),
            "read_as": answers["read_as"].value_counts().head(12).to_dict(),
            "model": spec.describe(),
        },
    )


def _rationales_stage(context: Any, prompts: pd.DataFrame, answers: pd.DataFrame) -> StageResult:
    """The model's rationale for its own answer (where it gave one) and for the gold answer, same mode."""
    spec = context.spec()
    asked = rationale_prompts(prompts, answers)
    responses, engine = context.ask(spec, rationale_requests(asked, spec))
    rationales = parse_rationales(asked, responses, spec.kind)
    return StageResult(
        rationales,
        metadata={
            **engine,
            "asked": asked["given"].value_counts().to_dict(),
            "not_asked_without_an_answer": int((answers["status"] != "answered").sum()),
            "status": rationales.groupby(["given", "status"]).size().rename("n").reset_index().to_dict("records"),
        },
        checks=[
            filled_outcome("rationale_prompts_filled", len(asked), unfilled_placeholders(asked, "rationale_id"), False)
        ],
    )


def _judgements_stage(
    context: Any, prompts: pd.DataFrame, answers: pd.DataFrame, rationales: pd.DataFrame
) -> StageResult:
    """The jury with the paper's prompts: each answered entity correct / incorrect, each rationale 1-5
    against the gold rationale; an item's score is the judges' mean (every reply through the store)."""
    settings = context.settings
    judges = settings.judges(settings.quench.jury)
    entity_ids, entity_prompts = entity_judge_prompts(prompts, answers)
    rationale_ids, rationale_prompts_ = rationale_judge_prompts(prompts, rationales)
    tasks = [
        jury.JuryTask("entity", entity_ids, entity_prompts, read_entity_verdict, "mean", tuple(ENTITY_LABELS)),
        jury.JuryTask(
            "rationale", rationale_ids, rationale_prompts_, read_rationale_verdict, "mean", ("1", "2", "3", "4", "5")
        ),
    ]
    ask = lambda spec, requests: context.ask(spec, requests)[0]  # noqa: E731
    held = settings.quench.jury
    result = jury.convene(judges, tasks, ask, held.max_tokens, constrain=held.constrain)
    entity_scores = result.decisions["entity"].rename(columns={"id": "prompt_id"})
    rationale_scores = result.decisions["rationale"].rename(columns={"id": "rationale_id"})
    readable, numbers = jury.readable_replies(result.verdicts)
    return StageResult(
        {
            "entities": entity_scores,
            "rationales": rationale_scores,
            "verdicts": result.verdicts,
            "agreement": result.agreement,
        },
        metadata={
            "judges": ", ".join(j.name for j in judges),
            "entities_judged": len(entity_ids),
            "rationales_judged": len(rationale_ids),
            "entities_without_a_readable_verdict": int((entity_scores["votes"] == 0).sum()),
            "rationales_without_a_readable_score": int((rationale_scores["votes"] == 0).sum()),
            **jury.agreement_metadata(result.agreement, "entity_judge_fleiss_kappa"),
        },
        checks=[CheckOutcome("judge_replies_readable", passed=readable, severity="warn", metadata=numbers)],
    )


def _similarities_stage(
    context: Any, prompts: pd.DataFrame, answers: pd.DataFrame, rationales: pd.DataFrame
) -> StageResult:
    """Cosine similarity of sentence embeddings (bundled all-MiniLM-L6-v2, offline): each answer to the gold
    answer, each rationale to the gold rationale."""
    from geomon import embeddings

    model = context.settings.embedding_model
    gold = prompts.set_index("prompt_id")
    answer_sim = embeddings.similarity(
        answers["answer"].tolist(), gold.loc[answers["prompt_id"], "gold_answer"].tolist(), model
    )
    rationale_sim = embeddings.similarity(
        rationales["rationale"].tolist(), gold.loc[rationales["prompt_id"], "gold_rationale"].tolist(), model
    )
    frame = pd.DataFrame(
        {
            "id": [*answers["prompt_id"], *rationales["rationale_id"]],
            "kind": ["answer"] * len(answers) + [f"rationale|{g}" for g in rationales["given"]],
            "similarity": [*answer_sim, *rationale_sim],
        }
    )
    means = frame.groupby("kind")["similarity"].mean().to_dict()
    return StageResult(
        frame,
        metadata={
            "embedding_model": str(model or embeddings.BUNDLED),
            "compared": int(frame["similarity"].notna().sum()),
            "nothing_to_compare": int(frame["similarity"].isna().sum()),
            "mean_similarity": {k: round(float(v), 4) for k, v in means.items() if pd.notna(v)},
        },
    )


def _scores_stage(
    context: Any,
    prompts: pd.DataFrame,
    answers: pd.DataFrame,
    rationales: pd.DataFrame,
    judgements: dict,
    similarities: pd.DataFrame,
) -> StageResult:
    """Every score of every (entity, mode): jury correctness, rationale scores, similarities, exact match."""
    scores = score(prompts, answers, rationales, judgements, similarities, context.model)
    return StageResult(
        scores,
        metadata={
            "rows": len(scores),
            "status": scores["status"].value_counts().to_dict(),
            "scored_by_the_jury": int(scores["correct_answer_score"].notna().sum()),
        },
    )


def _disparity_stage(context: Any, scores: pd.DataFrame, judgements: dict) -> StageResult:
    """The paper's aggregated scores per subset and mode; Indic − non-Indic per score with intervals over
    questions and the smallest gap this sample can detect; the CoT effect; themes; history and regression."""
    from geomon.stats.values import metrics_from_mapping

    result = diagnose(scores)
    summary = result["summary"]
    summary["entity_judge_fleiss_kappa"] = float(judgements["agreement"]["fleiss_kappa"])
    numbers = {k: float(v) for k, v in summary.items() if isinstance(v, int | float) and pd.notna(v)}
    gaps = result["gaps"]
    settings = context.settings
    judges = ",".join(j.name for j in settings.judges(settings.quench.jury))
    # Runs compare only on the same questions and the same jury (other judges score differently).
    scope = f"questions={scores['question_id'].nunique()}|judges={judges}"
    return StageResult(
        result,
        metadata={
            **numbers,
            "paper_layout": result["paper_layout"],
            "indic_gaps": gaps[["mode", "score", "indic", "non_indic", "gap", "ci_low", "ci_high", "detectable"]],
            "cot_effect": result["cot"] if len(result["cot"]) else "none",
        },
        tracked=Tracked(items(scores), scope, others=undeclared(metrics_from_mapping(numbers, n=len(scores)), TRACKED)),
    )


def published_rows(settings: Any) -> pd.DataFrame | None:
    """The paper's aggregated scores (no CoT, all entities) per model, and its Indic − non-Indic gap in
    entity correctness, as leaderboard rows."""
    folder = settings.quench.paper_results
    path = folder / PAPER_TABLE if folder is not None else None
    if path is None or not path.is_file():
        return None
    paper = read_paper_table(path)
    normal = paper[paper["mode"] == "normal"].set_index(["model", "subset"])
    rows = []
    for model in sorted({m for m, _ in normal.index}):
        row = {"model": model, **{score: normal.loc[(model, "All"), score] for score in PAPER_SCORES}}
        row["indic_gap_correct_answer_score"] = (
            normal.loc[(model, "Indic"), "correct_answer_score"]
            - normal.loc[(model, "Non-Indic"), "correct_answer_score"]
        )
        rows.append(row)
    return pd.DataFrame(rows)


def _write_report(out: Path, board: pd.DataFrame, results: dict[str, dict[str, Any]], settings: Any) -> Path:
    from geomon.report.quench import write_report

    folder = settings.quench.paper_results
    path = folder / PAPER_TABLE if folder is not None else None
    reference = read_paper_table(path) if path is not None and path.is_file() else None
    gaps = paper_gaps(reference) if reference is not None else None
    return write_report(out, board, results, PIPELINE.leaderboard_columns, reference, gaps)


def _pipeline() -> Pipeline:
    from geomon import embeddings
    from geomon.stats import agreement, uncertainty

    this = sys.modules[__name__]
    judging = (this, jury)
    scoring = (this, jury, embeddings, agreement, uncertainty)
    model_stage = {"per_model": True, "asks_models": True}
    return Pipeline(
        stages=(
            Stage(
                "question_bank",
                _question_bank_stage,
                versioned_by=(source,),
                source=True,
                checks=(StageCheck("release_complete", blocking=True, evaluate=_release_complete),),
            ),
            Stage(
                "prompts",
                _prompts_stage,
                inputs=("question_bank",),
                checks=(
                    StageCheck(
                        "prompts_filled", "Every entity-prediction prompt rendered with no unfilled placeholder.", True
                    ),
                ),
                options=(
                    Option("sample_questions", int, 0, "0 = all 400; N = a seeded sample, half Indic"),
                    SEED,
                ),
            ),
            Stage(
                "answers",
                _answers_stage,
                inputs=("prompts",),
                requests=lambda prompts, spec, settings: requests_for(prompts, spec),
                **model_stage,
            ),
            Stage(
                "rationales",
                _rationales_stage,
                inputs=("prompts", "answers"),
                checks=(
                    StageCheck(
                        "rationale_prompts_filled",
                        "Every rationale prompt rendered with no unfilled placeholder.",
                        True,
                    ),
                ),
                **model_stage,
            ),
            Stage(
                "judgements",
                _judgements_stage,
                inputs=("prompts", "answers", "rationales"),
                versioned_by=judging,
                checks=(
                    StageCheck(
                        "judge_replies_readable",
                        f"At least {jury.MIN_READ_RATE:.0%} of the judges' replies give a verdict or a score.",
                    ),
                ),
                **model_stage,
            ),
            Stage(
                "similarities",
                _similarities_stage,
                inputs=("prompts", "answers", "rationales"),
                per_model=True,
                versioned_by=scoring,
            ),
            Stage(
                "scores",
                _scores_stage,
                inputs=("prompts", "answers", "rationales", "judgements", "similarities"),
                per_model=True,
                versioned_by=scoring,
            ),
            Stage(
                "disparity",
                _disparity_stage,
                inputs=("scores", "judgements"),
                per_model=True,
                versioned_by=scoring,
                tracked=True,
            ),
        ),
        write_report=_write_report,
        leaderboard_columns=(
            "entities",
            "answered",
            "correct_answer_score",
            "correct_answer_score_cot",
            "indic_gap_correct_answer_score",
            "indic_gap_correct_answer_score_ci_low",
            "indic_gap_correct_answer_score_ci_high",
            "pred_rationale_score",
            "gold_rationale_score",
            "answer_similarity",
            "exact_match",
        ),
        per_model_description="Answers, rationales, jury, similarities, scores and Indic gap of one model.",
        published=published_rows,
    )


PIPELINE = _pipeline()
