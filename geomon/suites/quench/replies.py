"""Reading QUENCH's replies: the entity a reply gives for its variable (the paper's formats and the ways models
stray from them), and the rationale it gives; what cannot be read is unanswered, with the reason."""

from __future__ import annotations

import json
import re
from typing import Any

import pandas as pd

from geomon.suites.info import status_of
from geomon.suites.quench.prompts import completion_lead
from geomon.suites.quench.scoring import normalise
from geomon.untrusted import clean_text

MAX_REPLY_CHARS = 20_000  # longer replies are cut before parsing (and the cut is recorded)
MAX_ENTITY_CHARS = 200  # an "answer" longer than this is prose, not an entity

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
            (f"{completion_lead('answer')} {r}" if mode == "normal" else r) if isinstance(r, str) else r
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


def parse_rationales(rationales: pd.DataFrame, responses: pd.DataFrame, kind: str) -> pd.DataFrame:
    texts = responses["text"].tolist()
    lead = completion_lead("rationale")
    if kind != "chat":
        texts = [f"{lead} {t}" if isinstance(t, str) else t for t in texts]
    out = rationales[["rationale_id", "prompt_id", "given"]].copy()
    out["reply"] = responses["text"].to_numpy()
    out["error"] = responses["error"].to_numpy()
    out["rationale"] = [parse_rationale(t) for t in texts]
    out["status"] = status_of(out["rationale"], out["error"])
    return out
