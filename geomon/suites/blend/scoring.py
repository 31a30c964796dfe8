"""BLEnD's scoring: a reply cleaned as ``delete_prompt_from_answer`` does, the paper's soft exact match (SEM-B,
SEM-W) against the annotated answers, the reference code's validity rule, and the per-prompt rows the metric
history compares."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from geomon import parsing, untrusted
from geomon.suites.blend.lemmatisers import lemma_check, lemmatiser
from geomon.suites.registry import answered_outcome

MAX_REPLY_CHARS = 2_000  # a single answer; a runaway reply is cut before matching (and the cut counted)
_LABEL = re.compile(r"^(\w+:)\s")


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


SCORED = ("answered", "unanswered")  # the statuses every SEM figure counts: an unanswered reply is a miss


def scored_rows(scores: pd.DataFrame) -> pd.DataFrame:
    """The prompts the paper scores: answered and unanswered replies (failed requests and invalid questions
    left out)."""
    return scores[scores["status"].isin(SCORED)]


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
