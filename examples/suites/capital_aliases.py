"""Capitals, any accepted name: the example of a simple Python suite on the kit (``geomon.suites.kit``).

The same 40 questions as capitals.yaml, scored in Python by a rule of its own: a reply is right when it names
any of the capital's accepted names (``aliases``: Kyiv or Kiev, Astana or Nur-Sultan, both of Bolivia's
capitals) as whole words, case, accents and punctuation aside (``geomon.parsing.names``), and a guess between
cities ("Sydney or Canberra") is no answer: it reads as unanswered, excluded and counted, never scored as right.
Accuracy and the answer rate overall and per region with 95 % intervals, and the gap between regions, come from
the kit.
"""

import sys
from pathlib import Path
from typing import Any

import pandas as pd

from geomon import parsing
from geomon.suites import kit

HERE = Path(__file__).parent


def score(reply: str | None, row: dict[str, Any]) -> kit.Reading:
    """1 for an accepted name, 0 for another, NaN for nothing to read or a guess between cities; and what it read."""
    if not isinstance(reply, str) or not reply.strip() or parsing.names(reply, "or"):
        return kit.Reading(float("nan"))
    named = next((name for name in row["aliases"].split("|") if parsing.names(reply, name)), None)
    return kit.Reading(float(named is not None), answer=named or parsing.normalise(reply).strip())


def read(folder: Path) -> pd.DataFrame:
    return kit.read_table(folder / "capitals.csv", "question_id", ("country", "region", "aliases"))


SUITE, PIPELINE, TRACKED = kit.declare(
    kit.QuestionSet(
        name="capital_aliases",
        title="Capitals (any accepted name)",
        spec="geomon's example Python suite: a country's capital city, any accepted name (2026)",
        files=("capitals.csv",),
        read=read,
        data_dir=HERE,
        id="question_id",
        answer="capital",
        prompt="What is the capital city of {country}? Answer with the city's name only.",
        score=score,
        groups=("region",),
        max_tokens=16,
        profiles={"quick": {"sample": 20}, "default": {"sample": 40}},
    ),
    sys.modules[__name__],
)
