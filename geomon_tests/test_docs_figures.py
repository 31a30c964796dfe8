"""Figures in the docs name the command that produced them.

The rule (docs/testing.md): in docs/performance.md, docs/reliability.md, docs/getting-started.md and
docs/serving-changes.md, every
section (a Markdown heading and what follows it, up to the next heading) that states a measured figure — a
number with a unit of time, rate or size — also names, in backticks, the command that measured it
(`make …`, `geomon …`, `python …`, `.venv/bin/python …`, `time …`, `pytest …`, `bash …`) and its date."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
FIGURE = re.compile(r"\b\d[\d,.]*\s?(?:ms|s|min|h|req/s|tokens/s|sentences/s|GB|MB|GiB|MiB)(?![\w])")
COMMAND = re.compile(r"`(?:make|geomon|python|\.venv/bin/python|\.venv/bin/geomon|time|pytest|bash)\b[^`]*`")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) of each section; code blocks are kept (a command may be shown in one)."""
    parts = re.split(r"^(#{1,4} .*)$", text, flags=re.M)
    out = [("(top)", parts[0])]
    out += [(parts[i].strip(), parts[i + 1]) for i in range(1, len(parts) - 1, 2)]
    return out


@pytest.mark.parametrize("page", ["performance.md", "reliability.md", "getting-started.md", "serving-changes.md"])
def test_every_figure_names_its_command_and_date(page):
    text = (DOCS / page).read_text(encoding="utf-8")
    missing = []
    for heading, body in sections(text):
        prose = re.sub(r"```.*?```", "", body, flags=re.S)
        if not FIGURE.search(prose):
            continue
        has_command = COMMAND.search(body) or re.search(r"^```(?:bash|sh)?\n(?:make|geomon|\.venv)", body, flags=re.M)
        if not (has_command and DATE.search(body)):
            missing.append(
                f"{heading}: {FIGURE.search(prose).group(0)!r} without {'a command' if not has_command else 'a date'}"
            )
    assert not missing, f"{page}: " + "; ".join(missing)
