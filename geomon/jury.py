"""A jury of judge models that grades answers, for any suite (Gapminder's grades, QUENCH's correctness).

Judges are registered models (bundled or endpoints). Each judge's reply goes through the same engine
and response store as any answer (cached, resumable, counted), is read leniently (``parse_verdict``:
"D\\nD", "C\\n\\nC", reasoning then a final letter), and the majority decides (``decide``). No majority,
or too few readable verdicts, is ``indecisive`` with the reason counted. Answers that deterministic
pre-grading settles are never sent to the judges.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.stats.agreement import fleiss_kappa, pairwise_agreement

INDECISIVE = "indecisive"
_NAMED_LETTER = re.compile(r"(?:answer|assessment|choice|option|verdict)\s*(?:is|:)?\s*\**\(?([A-Za-z])\)?\**\b", re.I)
JUDGE_MAX_TOKENS = 384  # room for the step-by-step reasoning the judge prompt asks for, then the letter


def parse_verdict(text: str | None, letters: Sequence[str]) -> str | None:
    """The choice letter a judge's reply ends on, or None if it names none.

    The judge prompt asks for reasoning, then the letter alone on its own line: the last line that is a
    lone letter wins ("D\\nD", "C\\n\\nC", "Reasoning: …\\nC"); otherwise "Answer: C" / "**C**" near the end.
    "???" and empty replies are unreadable.
    """
    if not text:
        return None
    allowed = {letter.upper() for letter in letters}
    lines = [re.sub(r"[*_`'\".()\[\]:]", "", line).strip() for line in text.strip().splitlines()]
    for line in reversed(lines):
        if line.upper() in allowed:
            return line.upper()
    tail = text[-200:]
    found = re.findall(
        r"(?:answer|assessment|choice|option|verdict)\s*(?:is|:)?\s*\**\(?([A-Za-z])\)?\**\b", tail, re.I
    )
    for letter in reversed(found):
        if letter.upper() in allowed:
            return letter.upper()
    return None


@dataclass(frozen=True)
class Decision:
    grade: str
    reason: str  # "pre-graded", "majority", "no majority", "too few readable verdicts"
    votes: int


def decide(verdicts: Sequence[str | None], quorum: int = 2) -> Decision:
    """Majority of the readable verdicts decides, if it has at least ``quorum`` votes (Gapminder: two of
    three judges must agree); otherwise indecisive with the reason."""
    readable = [v for v in verdicts if isinstance(v, str)]  # None or NaN: no vote
    if len(readable) < quorum:
        return Decision(INDECISIVE, "too few readable verdicts", len(readable))
    (top, count), *rest = Counter(readable).most_common() or [(None, 0)]
    if count >= quorum and (not rest or rest[0][1] < count):
        return Decision(top, "majority", len(readable))
    return Decision(INDECISIVE, "no majority", len(readable))


def judge_requests(
    prompts: Sequence[str], spec: ModelSpec, max_tokens: int = JUDGE_MAX_TOKENS
) -> list[GenerationRequest]:
    """One request per filled judge prompt; judges answer at temperature 0 (the data's judge settings)."""
    params = {**spec.params, "temperature": 0.0, "max_tokens": max_tokens}
    if spec.kind == "chat":
        return [GenerationRequest("chat", messages=({"role": "user", "content": p},), params=params) for p in prompts]
    return [GenerationRequest("completion", prompt=f"{p}\n", params=params) for p in prompts]


Asker = Callable[[ModelSpec, list[GenerationRequest]], pd.DataFrame]


def run_jury(
    judges: Sequence[ModelSpec],
    prompts: Sequence[str],
    letters_to_grade: Mapping[str, str],
    ask: Asker,
    quorum: int | None = None,
    max_tokens: int = JUDGE_MAX_TOKENS,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ask every judge every prompt (through ``ask``, the store-aware engine) and decide each item.

    Returns (verdicts, decisions): ``verdicts`` one row per (item, judge) with the reply, its error and
    the verdict read from it; ``decisions`` one row per item with grade, reason and votes. A judge that
    errored or replied unreadably casts no vote (counted in ``verdicts``). ``quorum`` defaults to a strict
    majority of the judges (2 of 3).
    """
    quorum = quorum or len(judges) // 2 + 1
    rows = []
    for judge in judges:
        replies = ask(judge, judge_requests(prompts, judge, max_tokens))
        for item, (text, error) in enumerate(zip(replies["text"], replies["error"], strict=True)):
            letter = parse_verdict(text if isinstance(text, str) else None, list(letters_to_grade))
            rows.append(
                {
                    "item": item,
                    "judge": judge.name,
                    "reply": text,
                    "error": error,
                    "verdict": letters_to_grade.get(letter) if letter else None,
                    "status": "error" if error else ("unreadable" if letter is None else "read"),
                }
            )
    verdicts = pd.DataFrame(rows, columns=["item", "judge", "reply", "error", "verdict", "status"])
    decisions = []
    for item in range(len(prompts)):
        votes = verdicts.loc[verdicts["item"] == item, "verdict"].tolist()
        decision = decide(votes, quorum=quorum)
        decisions.append({"item": item, "grade": decision.grade, "reason": decision.reason, "votes": decision.votes})
    return verdicts, pd.DataFrame(decisions, columns=["item", "grade", "reason", "votes"])


def agreement(verdicts: pd.DataFrame) -> dict[str, object]:
    """Judges' agreement on the items they all graded: per pair and Fleiss' kappa."""
    if verdicts.empty:
        return {"fleiss_kappa": float("nan"), "pairs": pd.DataFrame()}
    table = verdicts.pivot_table(index="item", columns="judge", values="verdict", aggfunc="first")
    table = table.reindex(columns=sorted(verdicts["judge"].unique()))
    return {"fleiss_kappa": fleiss_kappa(table), "pairs": pairwise_agreement(table)}


AGREEMENT_DROP = 0.2  # a fall of Fleiss' kappa this large between two runs of the same jury alerts


def agreement_dropped(previous: float | None, current: float, threshold: float = AGREEMENT_DROP) -> bool:
    """Did the judges' agreement fall by at least ``threshold`` since the previous run? (Judge drift: a
    judge model changed behind its name, or the answers moved into territory the judges read differently.)
    Undefined values (no previous run, too few items) never alert."""
    if previous is None or math.isnan(previous) or math.isnan(current):
        return False
    return previous - current >= threshold
