"""How the answer parsers' time grows with the answer's length (they must stay linear: a model can
return a megabyte). Prints seconds per call and the ratio to the previous size; ×10 length should cost
about ×10 time, not ×100.

    .venv/bin/python bench/parser_scaling.py
"""

from __future__ import annotations

import itertools
import time

from geomon.parsing import parse_choice, parse_number
from geomon.suites.quench.replies import parse_answer

SIZES = (10_000, 100_000, 1_000_000)
UNIT = "The answer is Morocco and Spain, about 1.2 million people. "
OPTIONS = ["Morocco", "Western Sahara (SADR)", "Spain"]


def timed(fn, text: str) -> float:
    start = time.perf_counter()
    fn(text)
    return time.perf_counter() - start


def main() -> None:
    parsers = {
        "parse_choice": lambda t: parse_choice(t, OPTIONS),
        "parse_number": parse_number,
        "quench.parse_answer": lambda t: parse_answer(t, "X"),
    }
    print(f"{'parser':22s} " + " ".join(f"{n:>12,d}" for n in SIZES) + "   growth per ×10")
    for name, fn in parsers.items():
        seconds = [timed(fn, UNIT * (n // len(UNIT))) for n in SIZES]
        growth = " ".join(f"×{b / a:.1f}" for a, b in itertools.pairwise(seconds))
        print(f"{name:22s} " + " ".join(f"{s:11.3f}s" for s in seconds) + f"   {growth}")


if __name__ == "__main__":
    main()
