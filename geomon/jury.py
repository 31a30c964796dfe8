"""A jury of judge models that grades answers, for any suite (Gapminder's grades, QUENCH's correctness
and rationale scores).

Judges are registered models (bundled or endpoints). Each judge's reply goes through the same engine
and response store as any answer (cached, resumable, counted) and is read leniently by the suite's reader
(``parse_verdict``: "D\\nD", reasoning then a final letter; ``parse_label``: correct / incorrect;
``parse_likert``: a 1-5 score). ``ask_jury`` collects the verdicts; the suite's paper says how they
combine: a majority with a quorum (``majority``: Gapminder; no majority or too few readable verdicts is
``indecisive`` with the reason counted) or the judges' mean (``mean_scores``: QUENCH). Answers that
deterministic pre-grading settles are never sent to the judges.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.quality import CheckOutcome
from geomon.stats.agreement import fleiss_kappa, pairwise_agreement

INDECISIVE = "indecisive"


@dataclass
class JurySettings:
    """A judged suite's ``jury:`` section."""

    judges: tuple[str, ...] = ()  # registered model names; empty = every bundled model
    quorum: int | None = None  # votes a grade needs; default a strict majority of the judges
    max_tokens: int = 384  # a judge reasons step by step before its letter; small local judges may stop short
    # Hold each judge's reply to the task's choices at the server (a grammar, structured outputs, a JSON
    # schema: per endpoint, ``constrain`` in the model's entry), so every reply is a verdict. Off: the judge
    # reasons first as the prompt asks, and its reply is read leniently.
    constrain: bool = True


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
    found = _NAMED_LETTER.findall(tail)
    for letter in reversed(found):
        if letter.upper() in allowed:
            return letter.upper()
    return None


def parse_label(text: str | None, labels: Sequence[str]) -> str | None:
    """The label a judge's reply gives ("correct" / "incorrect" in QUENCH's entity prompt), or None.

    The reply's first word decides when it is a label ("Incorrect. The answer …"); otherwise the one label
    the reply names, if it names only one. Whole words only, so "incorrect" never reads as "correct".
    """
    if not text:
        return None
    by_word = {label.lower(): label for label in labels}
    pattern = r"\b(" + "|".join(re.escape(w) for w in sorted(by_word, key=len, reverse=True)) + r")\b"
    found = [m.lower() for m in re.findall(pattern, text[:2000], re.I)]
    first = re.match(r"\W*(\w+)", text)
    if first and first.group(1).lower() in by_word:
        return by_word[first.group(1).lower()]
    named = set(found)
    return by_word[named.pop()] if len(named) == 1 else None


def parse_likert(text: str | None, low: int = 1, high: int = 5) -> int | None:
    """The score a judge's reply gives on a ``low``-``high`` scale (QUENCH's 1-5 rationale prompt), or None.

    A reply that is just the number, "Score: 4", "4/5" or "4 out of 5" reads as 4; otherwise the one
    in-range number the reply names, if it names only one ("1 to 5 … 3" is ambiguous: None).
    """
    if not text:
        return None
    head = text.strip()[:2000]
    number = rf"(?<![\d.])([{low}-{high}])(?!\d|\.\d|\s*%)"
    for pattern in (rf"^\W*{number}\W*$", rf"score\W*(?:is|of|:)?\W*{number}", rf"{number}\s*(?:/|out of)\s*{high}\b"):
        match = re.search(pattern, head, re.I)
        if match:
            return int(match.group(1))
    named = set(re.findall(number + r"(?!\.\s*[A-Za-z])", head))  # "1. The King Cobra …" is a list, not a score
    return int(named.pop()) if len(named) == 1 else None


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
    prompts: Sequence[str], spec: ModelSpec, max_tokens: int = JUDGE_MAX_TOKENS, choices: Sequence[str] = ()
) -> list[GenerationRequest]:
    """One request per filled judge prompt; judges answer at temperature 0 (the data's judge settings).
    ``choices``: the reply must be one of them (the server holds it to them where it can)."""
    params = {**spec.params, "temperature": 0.0, "max_tokens": max_tokens}
    held = tuple(choices)
    if spec.kind == "chat":
        return [
            GenerationRequest("chat", messages=({"role": "user", "content": p},), params=params, choices=held)
            for p in prompts
        ]
    return [GenerationRequest("completion", prompt=f"{p}\n", params=params, choices=held) for p in prompts]


Asker = Callable[[ModelSpec, list[GenerationRequest]], pd.DataFrame]
Reader = Callable[[str | None], Any]  # a judge's reply → its verdict (a grade, a label, a score) or None


def letter_reader(letters_to_grade: Mapping[str, str]) -> Reader:
    """Read a choice letter (``parse_verdict``) and map it to its grade (Gapminder's A-D)."""

    def read(text: str | None) -> str | None:
        letter = parse_verdict(text, list(letters_to_grade))
        return letters_to_grade.get(letter) if letter else None

    return read


def ask_jury(
    judges: Sequence[ModelSpec],
    prompts: Sequence[str],
    read: Reader,
    ask: Asker,
    max_tokens: int = JUDGE_MAX_TOKENS,
    choices: Sequence[str] = (),
) -> pd.DataFrame:
    """Ask every judge every prompt (through ``ask``, the store-aware engine) and read each reply.

    One row per (item, judge): the reply, its error, the verdict ``read`` got from it and a status (read,
    unreadable, error). A judge that errored or replied unreadably casts no vote, and is counted here.
    """
    rows = []
    for judge in judges if prompts else ():  # nothing to judge (every answer pre-graded): ask no one
        replies = ask(judge, judge_requests(prompts, judge, max_tokens, choices))
        for item, (text, error) in enumerate(zip(replies["text"], replies["error"], strict=True)):
            verdict = read(text if isinstance(text, str) else None)
            rows.append(
                {
                    "item": item,
                    "judge": judge.name,
                    "reply": text,
                    "error": error,
                    "verdict": verdict,
                    "status": "error" if error else ("unreadable" if verdict is None else "read"),
                }
            )
    return pd.DataFrame(rows, columns=["item", "judge", "reply", "error", "verdict", "status"])


def majority(verdicts: pd.DataFrame, items: int, quorum: int | None = None) -> pd.DataFrame:
    """One decision per item (grade, reason, votes): the majority of readable verdicts (``decide``).
    ``quorum`` defaults to a strict majority of the judges (2 of 3)."""
    judges = verdicts["judge"].nunique() if len(verdicts) else 1
    quorum = quorum or judges // 2 + 1
    by_item = verdicts.groupby("item")["verdict"].apply(list).to_dict() if len(verdicts) else {}
    rows = []
    for item in range(items):
        decision = decide(by_item.get(item, []), quorum=quorum)
        rows.append({"item": item, "grade": decision.grade, "reason": decision.reason, "votes": decision.votes})
    return pd.DataFrame(rows, columns=["item", "grade", "reason", "votes"])


def mean_scores(verdicts: pd.DataFrame, items: int) -> pd.DataFrame:
    """One score per item: the mean of the judges' readable numeric verdicts (QUENCH's aggregation: each
    judge scores every answer and the scores are averaged), with the number of votes; NaN with no vote."""
    if len(verdicts):
        grouped = pd.to_numeric(verdicts["verdict"], errors="coerce").groupby(verdicts["item"])
        score, votes = grouped.mean(), grouped.count()
    else:
        score, votes = pd.Series(dtype=float), pd.Series(dtype=int)
    index = pd.RangeIndex(items, name="item")
    return pd.DataFrame(
        {"score": score.reindex(index).astype(float), "votes": votes.reindex(index).fillna(0).astype(int)}
    ).reset_index()


def agreement(verdicts: pd.DataFrame) -> dict[str, object]:
    """Judges' agreement on the items they all graded: per pair and Fleiss' kappa."""
    if verdicts.empty:
        return {"fleiss_kappa": float("nan"), "pairs": pd.DataFrame()}
    table = verdicts.pivot_table(index="item", columns="judge", values="verdict", aggfunc="first")
    table = table.reindex(columns=sorted(verdicts["judge"].unique()))
    return {"fleiss_kappa": fleiss_kappa(table), "pairs": pairwise_agreement(table)}


# What the agreement check shows instead of a kappa it cannot compute (``fleiss_kappa``'s NaN), and why.
KAPPA_NOT_DEFINED = (
    "not defined: Fleiss' kappa needs two judges, two items every judge read and two different grades among "
    "them; this run had fewer, so no drop is tested"
)
AGREEMENT_DROP = 0.2  # a fall of Fleiss' kappa this large between two runs of the same jury alerts


def agreement_dropped(previous: float | None, current: float, threshold: float = AGREEMENT_DROP) -> bool:
    """Did the judges' agreement fall by at least ``threshold`` since the previous run? (Judge drift: a
    judge model changed behind its name, or the answers moved into territory the judges read differently.)
    Undefined values (no previous run, too few items) never alert."""
    if previous is None or math.isnan(previous) or math.isnan(current):
        return False
    return previous - current >= threshold


@dataclass(frozen=True)
class JuryTask:
    """One kind of judgement a suite asks of the jury: ``prompts[i]`` judges the item ``ids[i]``; ``read``
    turns a reply into a verdict; ``combine`` is how the judges' verdicts become one (the suite's paper)."""

    name: str
    ids: Sequence[Any]
    prompts: Sequence[str]
    read: Reader
    combine: str = "majority"  # "majority" (a grade, with a quorum) or "mean" (a score)
    choices: tuple[str, ...] = ()  # the replies ``read`` understands, to hold the judges to (``convene``)


@dataclass
class JuryResult:
    verdicts: pd.DataFrame  # one row per (task, item, judge): task, item, id, judge, reply, error, verdict, status
    decisions: dict[str, pd.DataFrame]  # per task: ``majority`` or ``mean_scores`` rows, with the item's ``id``
    agreement: dict[str, object]  # the first task's (``agreement``)


def convene(
    judges: Sequence[ModelSpec],
    tasks: Sequence[JuryTask],
    ask: Asker,
    max_tokens: int = JUDGE_MAX_TOKENS,
    quorum: int | None = None,
    constrain: bool = True,
) -> JuryResult:
    """The one jury step of every judged suite: every judge asked every prompt of every task (through the
    store-aware engine; with ``constrain``, each reply held to the task's choices), replies read, verdicts
    combined per task, and the judges' agreement."""
    frames, decisions = [], {}
    agreed: dict[str, object] = {"fleiss_kappa": float("nan"), "pairs": pd.DataFrame()}
    for index, task in enumerate(tasks):
        choices = task.choices if constrain else ()
        verdicts = ask_jury(judges, task.prompts, task.read, ask, max_tokens, choices)
        if task.combine == "majority":
            combined = majority(verdicts, len(task.prompts), quorum)
        elif task.combine == "mean":
            combined = mean_scores(verdicts, len(task.prompts))
        else:
            raise ValueError(f"jury task {task.name}: unknown combine {task.combine!r}; use majority or mean")
        decisions[task.name] = combined.assign(id=[task.ids[i] for i in combined["item"]])
        frames.append(verdicts.assign(task=task.name, id=[task.ids[i] for i in verdicts["item"]]))
        if index == 0:
            agreed = agreement(verdicts)
    columns = ["task", "item", "id", "judge", "reply", "error", "verdict", "status"]
    joined = pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)
    return JuryResult(joined, decisions, agreed)


MIN_READ_RATE = 0.5  # below this share of readable judge replies, the judges' grades are not to be trusted


def readable_replies(verdicts: pd.DataFrame) -> tuple[bool, dict[str, Any]]:
    """Whether at least ``MIN_READ_RATE`` of the judges' replies could be read, with the counts per task
    (the ``judge_replies_readable`` check of every judged suite)."""
    rate = float((verdicts["status"] == "read").mean()) if len(verdicts) else 1.0
    counts = verdicts.groupby(["task", "status"]).size().rename("replies").reset_index() if len(verdicts) else None
    return rate >= MIN_READ_RATE, {"read_rate": rate, "floor": MIN_READ_RATE, "replies": counts}


def agreement_metadata(agreed: Mapping[str, Any], kappa_name: str = "judge_fleiss_kappa") -> dict[str, Any]:
    """Fleiss' kappa (-1 when undefined: too few items every judge read) and the per-pair table."""
    kappa = agreed["fleiss_kappa"]
    pairs = agreed["pairs"]
    return {kappa_name: float(kappa) if pd.notna(kappa) else -1.0, "judge_pairs": pairs if len(pairs) else "none"}


def agreement_outcome(context: Any, suite: str, kappa: float) -> CheckOutcome:
    """The ``judge_agreement_stable`` check: the judges' Fleiss' kappa against the model's previous run
    (read before this run is recorded, through the stage's context); a drop of ``AGREEMENT_DROP`` or more
    alerts, as a regression does."""
    model = context.model
    earlier = context.history().series(suite=suite, model=model, metric="judge_fleiss_kappa")
    previous = float(earlier["value"].iloc[-1]) if len(earlier) else None
    dropped = agreement_dropped(previous, kappa)
    if dropped:
        context.alert(
            "judge_agreement",
            f"{suite}: judges agree less on {model}",
            f"Fleiss' kappa {previous:.2f} → {kappa:.2f}: check the judge models before trusting grades.",
            {"before": previous, "after": kappa},
        )
    return CheckOutcome(
        "judge_agreement_stable",
        passed=not dropped,
        severity="warn",
        metadata={
            "previous": previous if previous is not None else "none (the model's first judged run)",
            "current": kappa if kappa == kappa else KAPPA_NOT_DEFINED,
        },
    )
