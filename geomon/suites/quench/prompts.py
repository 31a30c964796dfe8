"""QUENCH's prompts, as the release's ``LLM_Inference/*.py`` sends them: the quizmaster system prompt (with
" Let's think step by step." for CoT), one entity-prediction request per masked entity and mode, and the two
rationale requests (given the model's answer, given the gold one); a base model gets each as a completion."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.stats.sampling import nested_sample

MODES = ("normal", "cot")  # the paper's "without" and "with" chain-of-thought
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
# Reasoning needs room; an answer alone does not. Rationales are a few sentences.
MAX_TOKENS = {"normal": 64, "cot": 320, "rationale": 192}
TEMPERATURE = 0.0  # the release leaves the APIs' defaults; geomon answers deterministically so reruns compare
_PLACEHOLDER = re.compile(r"\{[a-z_]+\}")


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


def completion_lead(stage: str) -> str:
    """The words a base model's reply is led in with (and read back after): "The answer is" / "The rationale is"."""
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
            lead = "" if stage == "answer" and row.mode == "cot" else f" {completion_lead(stage)}"
            requests.append(
                GenerationRequest("completion", prompt=f"{row.system}\n\n{row.user}\n\nReply:{lead}", params=params)
            )
    return requests


def requests_for(prompts: pd.DataFrame, spec: ModelSpec) -> list[GenerationRequest]:
    """The entity-prediction requests: the quizmaster as system prompt, the variable's instruction and the
    question as the user message (the release's chat layout); base models get it as a completion."""
    return _requests(prompts, spec, "answer")


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
