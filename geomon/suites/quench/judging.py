"""QUENCH's jury: the paper's Appendix C prompts (each answered entity correct / incorrect, each rationale 1-5
against the gold rationale) and how a judge's reply is read."""

from __future__ import annotations

import pandas as pd

from geomon.jury import parse_label, parse_likert

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
