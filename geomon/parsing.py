"""Turning untrusted model text into numbers, choices and citations.

Model output is data, never code: everything here is regular expressions over text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

_SPECIAL_TOKENS = re.compile(r"<\|[^|>]*\|>|</?s>|<(?:start|end)_of_turn>|\[/?INST\]")
_REFUSAL = re.compile(
    r"\b(?:i\s+(?:do\s*n[o']?t|cannot|can't|am\s+not\s+able\s+to)\s+(?:know|provide|answer|find|say)|"
    r"not\s+(?:available|known)|no\s+data|unknown|n/?a)\b",
    re.IGNORECASE,
)

_SCALES = {
    "thousand": 1e3,
    "k": 1e3,
    "million": 1e6,
    "mn": 1e6,
    "mio": 1e6,
    "m": 1e6,
    "billion": 1e9,
    "bn": 1e9,
    "b": 1e9,
    "trillion": 1e12,
    "tn": 1e12,
    "t": 1e12,
}
# Longest alternatives first so "million" wins over "m".
_SCALE_WORDS = "|".join(sorted(_SCALES, key=len, reverse=True))

# A number in one of the separator conventions models use:
#   1,234,567.89  1 234 567  1'234'567  1.234.567,89  1234.5  1234,5  .5
_NUMBER = (
    r"(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?"  # 1,234,567.89
    r"|\d{1,3}(?:[ \u00a0\u202f']\d{3})+(?:[.,]\d+)?"  # 1 234 567 / 1'234'567
    r"|\d{1,3}(?:\.\d{3}){2,}(?:,\d+)?"  # 1.234.567,89 (two or more dot groups: unambiguous)
    r"|\d+(?:[.,]\d+)?"  # 1234.5 / 1234,5 / 8,703 (resolved below)
    r"|\.\d+)"
)
_EXPONENT = r"(?:\s*(?:[eE](?P<exp_e>[+-]?\d+)|\s*[x×*]\s*10\s*\^\s*(?P<exp_pow>[+-]?\d+)))?"
_QUANTITY = re.compile(
    rf"(?P<sign>[-−])?(?P<num>{_NUMBER}){_EXPONENT}"
    rf"(?:\s*(?P<scale>{_SCALE_WORDS})(?![a-z]))?(?P<pct>\s*%|\s*percent)?",
    re.IGNORECASE,
)
_RANGE_JOINER = re.compile(r"^\s*(?:-|–|—|to|and)\s*$", re.IGNORECASE)
_YEAR_CONTEXT = re.compile(r"(?:\bin|\bas\s+of|\bsince|\bfor|\byear|\bby|\(|,)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class ParsedNumber:
    """A number found in an answer, and how it was read."""

    value: float
    text: str
    note: str = ""  # e.g. "range midpoint", "year skipped"


def _to_float(num: str) -> float:
    s = re.sub(r"[ \u00a0\u202f']", "", num)
    if s.count(".") >= 2:  # 1.234.567,89
        return float(s.replace(".", "").replace(",", "."))
    if "," in s and "." in s:  # 1,234,567.89
        return float(s.replace(",", ""))
    groups = s.split(",")
    # "8,703" and "1,234,567" are thousands; "3,5" and "1234,567" use a decimal comma.
    if len(groups) > 1 and len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:]):
        return float("".join(groups))
    return float(s.replace(",", "."))


def _multiplier(m: re.Match[str]) -> float:
    factor = 1.0
    exp = m.group("exp_e") or m.group("exp_pow")
    if exp:
        factor *= 10.0 ** int(exp)
    scale = m.group("scale")
    # A single letter counts as a scale when attached ("5M", "12k") or capitalised ("5 M");
    # "5 m" is more likely metres.
    if scale and (len(scale) > 1 or scale.isupper() or m.string[m.start("scale") - 1].isdigit()):
        factor *= _SCALES[scale.lower()]
    return factor


def _quantity_value(m: re.Match[str]) -> float:
    value = _to_float(m.group("num")) * _multiplier(m)
    return -value if m.group("sign") else value


def _looks_like_year(m: re.Match[str], text: str) -> bool:
    num = m.group("num")
    if not (len(num) == 4 and num.isdigit() and 1900 <= int(num) <= 2100) or m.group("scale") or m.group("pct"):
        return False
    return bool(_YEAR_CONTEXT.search(text[: m.start()]))


def parse_number_detail(text: str | None) -> ParsedNumber | None:
    """The first number a model gave, with scale words, separators, ranges and years handled."""
    if not text:
        return None
    clean = _SPECIAL_TOKENS.sub(" ", text)
    matches = list(_QUANTITY.finditer(clean))
    if not matches:
        return None
    notes = []
    idx = 0
    # "In 2021, the population was 8.7 million": a leading year is context, not the answer.
    while idx < len(matches) - 1 and _looks_like_year(matches[idx], clean):
        idx += 1
        notes.append("year skipped")
    first = matches[idx]
    if _REFUSAL.search(clean[: first.start()]) and not clean[: first.start()].strip().endswith(":"):
        return None
    value = _quantity_value(first)
    if idx + 1 < len(matches):
        second = matches[idx + 1]
        joiner = clean[first.end() : second.start()]
        if second.group("sign") and not joiner.strip():
            joiner = second.group("sign")  # "10-12": the dash joins, it is not a minus sign
        if _RANGE_JOINER.match(joiner):
            hi = _to_float(second.group("num")) * _multiplier(second)
            if not first.group("scale") and second.group("scale"):
                value *= _multiplier(second)  # "2-3 million": one scale word for both ends
            if value <= hi:
                notes.append("range midpoint")
                text_span = clean[first.start() : second.end()].strip()
                return ParsedNumber((value + hi) / 2, text_span, "; ".join(notes))
    return ParsedNumber(value, first.group(0).strip(), "; ".join(notes))


def parse_number(text: str | None) -> float | None:
    """The number a model gave: "1.2 million" → 1200000.0, "about 14%" → 14.0, "I don't know" → None."""
    parsed = parse_number_detail(text)
    return None if parsed is None else parsed.value


# --- choices -----------------------------------------------------------------------------------

_LETTER_PATTERNS = [
    re.compile(r"(?:answer|option|choice)\s*(?:is|:|-)?\s*:?\s*\(?([A-Za-z])\b(?![''-])", re.IGNORECASE),
    re.compile(r"\(([A-Z])\)"),
    re.compile(r"(?<![A-Za-z])([A-Z])\)"),
    re.compile(r"(?<![A-Za-z.])([A-Z])\.(?=\s|$)"),
    re.compile(r"^\s*([A-Z])\s*$"),
]


def _is_latin_letter(ch: str) -> bool:
    return ch.isalpha() and "LATIN" in unicodedata.name(ch, "")


def _option_spans(text: str, option: str) -> list[tuple[int, int]]:
    needle = option.casefold().strip()
    if not needle:
        return []
    hay = text.casefold()
    spans = []
    start = hay.find(needle)
    while start != -1:
        end = start + len(needle)
        before = hay[start - 1] if start > 0 else ""
        after = hay[end] if end < len(hay) else ""
        # Word boundaries only make sense for alphabetic scripts with spaces (Latin, Cyrillic, ...);
        # for CJK or Thai a name is matched as a plain substring.
        bounded = True
        if _is_latin_letter(needle[0]) and before and before.isalpha():
            bounded = False
        if _is_latin_letter(needle[-1]) and after and after.isalpha():
            bounded = False
        if bounded:
            spans.append((start, end))
        start = hay.find(needle, start + 1)
    return spans


def _first_letter(text: str, n_choices: int) -> tuple[int, int] | None:
    """(position, index) of the first explicit option letter ("A)", "(B)", "B.", "Answer: C")."""
    best: tuple[int, int] | None = None
    for pattern in _LETTER_PATTERNS:
        for m in pattern.finditer(text):
            letter = m.group(1)
            if pattern is not _LETTER_PATTERNS[0] and not letter.isupper():
                continue
            index = ord(letter.upper()) - ord("A")
            if 0 <= index < n_choices and (best is None or m.start(1) < best[0]):
                best = (m.start(1), index)
            break
    return best


def parse_choice(text: str | None, choices: Sequence[str]) -> int | None:
    """The index of the option an answer commits to, or None (rule in DESIGN.md)."""
    if not text or not choices:
        return None
    text = _SPECIAL_TOKENS.sub(" ", text)
    order = sorted(range(len(choices)), key=lambda i: len(choices[i]), reverse=True)
    claimed: list[tuple[int, int]] = []
    first_pos: dict[int, int] = {}
    for i in order:
        for start, end in _option_spans(text, choices[i]):
            if any(start < c_end and c_start < end for c_start, c_end in claimed):
                continue  # inside a longer option's match ("Sudan" within "South Sudan")
            claimed.append((start, end))
            first_pos[i] = min(first_pos.get(i, start), start)
    letter = _first_letter(text, len(choices))
    if len(first_pos) == 1:
        return next(iter(first_pos))
    if len(first_pos) > 1:
        if letter is not None:
            return letter[1]
        return min(first_pos, key=first_pos.__getitem__)
    return None if letter is None else letter[1]


# --- citations ----------------------------------------------------------------------------------

_CITATION = re.compile(
    r"(?P<source>World\s+Bank|WHO|World\s+Health\s+Organi[sz]ation|IMF|International\s+Monetary\s+Fund|"
    r"United\s+Nations|UN(?:ESCO|DP|ICEF)?|OECD|ILO|IEA|CIA\s+World\s+Factbook)"
    r"[^0-9\n]{0,40}?(?P<year>(?:19|20)\d{2})",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Citation:
    source: str
    year: int


def find_citation(text: str | None) -> Citation | None:
    """A source-and-year "citation" in an answer, e.g. "(World Bank, 2019)"."""
    if not text:
        return None
    m = _CITATION.search(text)
    if not m:
        return None
    return Citation(source=re.sub(r"\s+", " ", m.group("source")).strip(), year=int(m.group("year")))
