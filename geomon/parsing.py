"""Turning untrusted model text into numbers, choices and citations.

Model output is data, never code: everything here is regular expressions over text.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from geomon.untrusted import strip_markup

_SPECIAL_TOKENS = re.compile(r"<\|[^|>]*\|>|</?s>|<(?:start|end)_of_turn>|\[/?INST\]")
_REFUSAL = re.compile(
    r"\b(?:i\s+(?:do\s*n[o']?t|cannot|can't|am\s+not\s+able\s+to)\s+(?:know|provide|answer|find|say)|"
    r"not\s+(?:available|known)|no\s+data|unknown|n/?a)\b",
    re.IGNORECASE,
)

_SCALES = {
    "thousand": 1e3,
    "thousands": 1e3,
    "millions": 1e6,
    "billions": 1e9,
    "trillions": 1e12,
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
    # South-Asian English: 1 lakh = 100,000; 1 crore = 10,000,000.
    "lakh": 1e5,
    "lakhs": 1e5,
    "lac": 1e5,
    "crore": 1e7,
    "crores": 1e7,
}
# Longest alternatives first so "million" wins over "m".
_SCALE_WORDS = "|".join(sorted(_SCALES, key=len, reverse=True))

# A number in one of the separator conventions models use:
#   1,234,567.89  1 234 567  1'234'567  1.234.567,89  1234.5  1234,5  .5
_NUMBER = (
    r"(?:\d{1,2}(?:,\d{2})+,\d{3}(?:\.\d+)?"  # 14,00,00,000 (South-Asian grouping: lakh, crore)
    r"|\d{1,3}(?:,\d{3})+(?:\.\d+)?"  # 1,234,567.89
    r"|\d{1,3}(?:[ \u00a0\u202f']\d{3})+(?:[.,]\d+)?"  # 1 234 567 / 1'234'567
    r"|\d{1,3}(?:\.\d{3}){2,}(?:,\d+)?"  # 1.234.567,89 (two or more dot groups: unambiguous)
    r"|\d{1,3}\.\d{3},\d+"  # 1.234,5 (a dot group before a decimal comma)
    r"|\d+(?:[.,]\d+)?"  # 1234.5 / 1234,5 / 8,703 (resolved below)
    r"|\.\d+)"
)
_EXPONENT = r"(?:\s*(?:[eE](?P<exp_e>[+-]?\d+)|\s*[x×*]\s*10\s*\^\s*(?P<exp_pow>[+-]?\d+)))?"
_QUANTITY = re.compile(
    # A digit glued to a letter is part of a word ("CO2", "PM2.5"), not a quantity.
    rf"(?<![^\W\d_])(?P<sign>[-−])?(?P<num>{_NUMBER}){_EXPONENT}"
    rf"(?:\s*(?P<scale>{_SCALE_WORDS})(?![a-z]))?(?P<pct>\s*%|\s*percent)?",
    re.IGNORECASE,
)
_ARABIC_SEPARATORS = str.maketrans({"\u066b": ".", "\u066c": ","})
# A number that runs on past its decimal part with the same separator ("3.5.2", "12.05.2021", "1,5,2"): not a
# number but a version, a date or noise. Another separator ("5.2,6.1") starts the next number of a list.
_MALFORMED = {".": re.compile(r"\.\d"), ",": re.compile(r",\d")}
_RANGE_JOINER = re.compile(r"^\s*(?:-|–|—|to|and)\s*$", re.IGNORECASE)
# Words after which a four-digit year is the answer's context ("data from 2019, …"), not the answer.
_YEAR_CONTEXT = re.compile(
    r"(?:\b(?:in|as\s+of|since|for|year|by|from|of|during|until|till|through|estimate[sd]?|data|figures?|"
    r"census|survey|report(?:ed)?)|\(|,|;|:)\s*$",
    re.IGNORECASE,
)
# Punctuation right after a year that marks it as context ("2019: 3.1", "In 2019, …").
_YEAR_FOLLOWER = re.compile(r"^\s*[,;:)]")


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
    if "," in s and "." in s:
        if s.rindex(".") < s.rindex(","):  # 1.234,5: dots group thousands, the comma is the decimal point
            return float(s.replace(".", "").replace(",", "."))
        return float(s.replace(",", ""))  # 1,234,567.89
    groups = s.split(",")
    # "8,703" and "1,234,567" are thousands; "14,00,00,000" is South-Asian grouping (lakh, crore);
    # "3,5" and "1234,567" use a decimal comma.
    if len(groups) > 1 and len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:]):
        return float("".join(groups))
    if len(groups) > 2 and len(groups[-1]) == 3 and all(len(g) == 2 for g in groups[1:-1]):
        return float("".join(groups))
    return float(s.replace(",", "."))


def _multiplier(m: re.Match[str]) -> float:
    factor = 1.0
    exp = m.group("exp_e") or m.group("exp_pow")
    if exp:
        # Beyond 10^308 a float overflows; such a value is "not read" (checked by the caller).
        factor *= 10.0 ** max(min(int(exp), 400), -400) if len(exp) < 6 else float("inf")
    scale = m.group("scale")
    # A single letter counts as a scale when attached ("5M", "12k") or capitalised ("5 M");
    # "5 m" is more likely metres.
    if scale and (len(scale) > 1 or scale.isupper() or m.string[m.start("scale") - 1].isdigit()):
        factor *= _SCALES[scale.lower()]
    return factor


def _quantity_value(m: re.Match[str]) -> float:
    try:
        value = _to_float(m.group("num")) * _multiplier(m)
    except OverflowError:
        return float("inf")
    return -value if m.group("sign") else value


def _looks_like_year(m: re.Match[str], text: str, is_last: bool) -> bool:
    """A four-digit year given as context ("data from 2019, the GDP is …"), not as the answer."""
    num = m.group("num")
    if not (len(num) == 4 and num.isdigit() and 1900 <= int(num) <= 2100):
        return False
    if m.group("scale") or m.group("pct") or m.group("sign") or m.group("exp_e") or m.group("exp_pow"):
        return False
    if _YEAR_CONTEXT.search(text[: m.start()]):
        return True
    return not is_last and bool(_YEAR_FOLLOWER.match(text[m.end() :]))


# --- number words ("roughly one million", "two hundred thousand", "a lakh") ---------------------------

_UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
_UNIT_WORDS = {w: i for i, w in enumerate([*_UNITS.split(" "), "seventeen", "eighteen", "nineteen"])}
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety"
_TENS_WORDS = {w: 10 * (i + 2) for i, w in enumerate(_TENS.split(" "))}
_BIG_WORDS = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "lakh": 1e5, "crore": 1e7}
_WORD_VOCAB = [*_UNIT_WORDS, *_TENS_WORDS, *_BIG_WORDS, "hundred", "and", "a", "an", "half"]
_NUMBER_WORDS = re.compile(
    r"(?<![\w-])(?:(?:" + "|".join(sorted(_WORD_VOCAB, key=len, reverse=True)) + r")s?(?:[\s-]+|(?![\w-])))+",
    re.IGNORECASE,
)


def _words_value(words: list[str]) -> float | None:
    total, current, seen_number = 0.0, 0.0, False
    for i, word in enumerate(words):
        word = word.rstrip("s") if word.rstrip("s") in (*_BIG_WORDS, "hundred") else word
        if word in _UNIT_WORDS or word in _TENS_WORDS:
            current += _UNIT_WORDS.get(word, 0) + _TENS_WORDS.get(word, 0)
            seen_number = True
        elif word in ("a", "an"):
            if i + 1 < len(words) and words[i + 1] in ("half", "hundred", *_BIG_WORDS):
                current = current or 1.0
        elif word == "half":
            current = current + 0.5 if seen_number else 0.5  # "one and a half", "half a million"
            seen_number = True
        elif word == "hundred":
            current = (current or 1.0) * 100
            seen_number = True
        elif word in _BIG_WORDS:
            total += (current or 1.0) * _BIG_WORDS[word]
            current = 0.0
            seen_number = True
    return total + current if seen_number else None


def _number_words_to_digits(text: str) -> str:
    """Spell out number words as digits where they are unambiguously a quantity: with a scale word
    ("one million", "a lakh"), a tens or teens word ("twenty-five"), or as the whole answer ("Three.")."""

    def replace(m: re.Match[str]) -> str:
        words = [w.lower() for w in re.split(r"[\s-]+", m.group(0).strip()) if w]
        while words and words[-1] in ("and", "a", "an"):
            words.pop()
        while words and words[0] in ("and",):
            words.pop(0)
        if not words or not any(w in _UNIT_WORDS or w in _TENS_WORDS or w in ("a", "an", "half") for w in words):
            return m.group(0)  # "1.2 million": the scale word of a written number, left to the number
        has_scale = any(w.rstrip("s") in (*_BIG_WORDS, "hundred") for w in words)
        has_tens = any(w in _TENS_WORDS or _UNIT_WORDS.get(w, 0) >= 10 for w in words)
        whole = text.strip(" .!\n\t").lower() == " ".join(words)
        value = _words_value(words) if (has_scale or has_tens or whole) else None
        if value is None:
            return m.group(0)
        trailing = m.group(0)[len(m.group(0).rstrip()) :]
        kept = m.group(0).strip().split()
        # Put back a trailing "and"/"a" that was not part of the number.
        rest = " ".join(kept[len(" ".join(words).split()) :]) if len(kept) > len(words) else ""
        return f"{value:.15g}" + (f" {rest}" if rest else "") + trailing

    return _NUMBER_WORDS.sub(replace, text)


def parse_number_detail(text: str | None) -> ParsedNumber | None:
    """The first number a model gave, with scale words, number words, separators (including South-Asian
    grouping), ranges, years stated as context and refusals followed by a figure handled. A value that
    is not finite is not read."""
    if not text:
        return None
    # Arabic decimal and thousands separators ("٣٫٥" is 3.5; Python reads the digits themselves).
    clean = _number_words_to_digits(strip_markup(_SPECIAL_TOKENS.sub(" ", text)).translate(_ARABIC_SEPARATORS))
    matches = list(_QUANTITY.finditer(clean))
    if not matches:
        return None
    notes = []
    idx = 0
    # "In 2021, the population was 8.7 million", "not available for 2022; in 2019 it was 3.1": a year
    # given as context is skipped; an answer of nothing but context years has no number.
    while idx < len(matches) and _looks_like_year(matches[idx], clean, idx == len(matches) - 1):
        idx += 1
    if idx == len(matches):
        return None
    if idx:
        notes.append("year skipped")
    first = matches[idx]
    if any(mark in first.group("num") and run_on.match(clean, first.end()) for mark, run_on in _MALFORMED.items()):
        return None  # "3.5.2": a number with two decimal points, an invalid output WorldBench excludes
    before = clean[: first.start()]
    if _REFUSAL.search(before):
        notes.append("after a refusal")  # "not available for 2022; in 2019 it was 3.1": the figure counts
    value = _quantity_value(first)
    if not math.isfinite(value):
        return None
    if idx + 1 < len(matches):
        second = matches[idx + 1]
        joiner = clean[first.end() : second.start()]
        negative_end = bool(second.group("sign")) and bool(joiner.strip())  # "-5 to -3": a minus sign
        if second.group("sign") and not joiner.strip():
            joiner = second.group("sign")  # "10-12": the dash joins, it is not a minus sign
        if _RANGE_JOINER.match(joiner):
            hi = _to_float(second.group("num")) * _multiplier(second) * (-1.0 if negative_end else 1.0)
            if not first.group("scale") and second.group("scale"):
                value *= _multiplier(second)  # "2-3 million": one scale word for both ends
            if value <= hi and math.isfinite(hi):
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


def _named_positions(
    text: str, choices: Sequence[str], spans: Callable[[str, str], list[tuple[int, int]]] | None = None
) -> dict[int, int]:
    """Option index → where its name first occurs (``spans``: where a name occurs, by default
    ``_option_spans``); a longer option claims its span ("South Sudan")."""
    spans = spans or _option_spans
    order = sorted(range(len(choices)), key=lambda i: len(choices[i] or ""), reverse=True)
    claimed = bytearray(len(text) + 1)  # 1 where a longer option's match lies: linear in the answer's length
    first_pos: dict[int, int] = {}
    for i in order:
        for start, end in spans(text, choices[i] or ""):
            if claimed.find(1, start, end) != -1:
                continue  # inside a longer option's match ("Sudan" within "South Sudan")
            claimed[start:end] = b"\x01" * (end - start)
            first_pos[i] = min(first_pos.get(i, start), start)
    return first_pos


def options_named(text: str | None, choices: Sequence[str]) -> list[int]:
    """The indices of the options whose name occurs in the answer, in the order they first occur."""
    if not text or not choices:
        return []
    positions = _named_positions(_SPECIAL_TOKENS.sub(" ", text), choices)
    return sorted(positions, key=positions.__getitem__)


def parse_choice(text: str | None, choices: Sequence[str]) -> int | None:
    """The index of the option an answer commits to, or None (rule in DESIGN.md)."""
    if not text or not choices:
        return None
    text = _SPECIAL_TOKENS.sub(" ", text)
    first_pos = _named_positions(text, choices)
    letter = _first_letter(text, len(choices))
    if letter is not None and choices[letter[1]] is None:
        letter = None  # a letter pointing at a missing option (None) commits to nothing
    if len(first_pos) == 1:
        return next(iter(first_pos))
    if len(first_pos) > 1:
        if letter is not None:
            return letter[1]
        return min(first_pos, key=first_pos.__getitem__)
    return None if letter is None else letter[1]


# --- text in any script ------------------------------------------------------------------------

# Scripts written without spaces between words: a name is found as a plain substring there.
_UNSPACED = ("CJK", "HIRAGANA", "KATAKANA", "THAI", "LAO", "KHMER", "MYANMAR", "TIBETAN", "YI ")
# Marks that are optional in writing and dropped: accents on Latin letters, short vowels and hamza in Arabic
# script, points in Hebrew. Every other mark (a Devanagari vowel sign, a Thai tone) is part of the word.
_OPTIONAL_MARKS_ON = ("LATIN", "ARABIC", "HEBREW")
# Arabic-script words take these letters in front ("and", "in", "to", "as", "so"): "والقاهرة" names القاهرة.
_ARABIC_PROCLITICS = "وفبلك"


def _unspaced(ch: str) -> bool:
    return unicodedata.name(ch, "").startswith(_UNSPACED)


def _in_word(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LMN"


@functools.lru_cache(maxsize=4096)  # the same answers, candidates and hedges are compared with every reply
def normalise(text: str) -> str:
    """Text compared in any script: special tokens and markup out, NFKC, case folded, optional marks dropped
    (accents on Latin letters, Arabic short vowels and hamza, Hebrew points), punctuation, symbols and
    invisible characters as spaces, spacing collapsed. Every script's letters, marks and digits stay: nothing is
    folded to ASCII or erased ("Brasília" → "brasilia", "मुझे नहीं पता!" → "मुझे नहीं पता", "右" → "右")."""
    text = unicodedata.normalize("NFKC", strip_markup(_SPECIAL_TOKENS.sub(" ", text))).casefold()
    kept, base = [], ""
    for ch in unicodedata.normalize("NFD", text):
        category = unicodedata.category(ch)
        if category[0] == "M" and base.startswith(_OPTIONAL_MARKS_ON):
            continue
        if category[0] in "PSZC":
            kept.append(" ")
            base = ""
            continue
        if category[0] != "M":
            base = unicodedata.name(ch, "")
        kept.append(ch)
    return " ".join(unicodedata.normalize("NFC", "".join(kept)).split())


def phrase_spans(text: str, phrase: str) -> list[tuple[int, int]]:
    """Where ``phrase`` occurs in ``text`` (both ``normalise``d) as whole words: bounded by a non-letter
    where its script separates words with spaces (Latin, Cyrillic, Devanagari, Arabic — an Arabic word after
    a one- or two-letter proclitic too), anywhere where it does not (Chinese, Japanese, Thai)."""
    spans: list[tuple[int, int]] = []
    if not phrase:
        return spans
    start = text.find(phrase)
    while start != -1:
        end = start + len(phrase)
        left = start
        if "ARABIC" in unicodedata.name(phrase[0], ""):
            while left > max(start - 2, 0) and text[left - 1] in _ARABIC_PROCLITICS:
                left -= 1
        open_left = _unspaced(phrase[0]) or left == 0 or not _in_word(text[left - 1])
        open_right = _unspaced(phrase[-1]) or end == len(text) or not _in_word(text[end])
        if open_left and open_right:
            spans.append((start, end))
        start = text.find(phrase, start + 1)
    return spans


def names(text: str, phrase: str) -> bool:
    """Whether ``text`` names ``phrase`` (both normalised here): ``phrase_spans``' rule."""
    return bool(phrase_spans(normalise(text), normalise(phrase)))


def candidates_named(text: str, candidates: Sequence[str]) -> list[int]:
    """The candidates a reply names (``phrase_spans``' rule, after ``normalise``), in the order they first
    occur; a longer candidate claims its span ("South Sudan" is not also "Sudan")."""
    positions = _named_positions(normalise(text), [normalise(c) for c in candidates], phrase_spans)
    return sorted(positions, key=positions.__getitem__)


# "I don't know" and its kin in the languages geomon's suites ask in: a reply that says one declines to answer.
HEDGES = (
    "i don't know", "i do not know", "i dont know", "i'm not sure", "i am not sure", "not sure", "no idea",
    "i cannot answer", "i can't answer", "i can't say", "i cannot say", "hard to say", "it depends",
    "我不知道", "不知道", "不确定", "不清楚", "无法回答", "我不確定", "わかりません", "分かりません", "知りません",
    "मुझे नहीं पता", "पता नहीं", "मैं नहीं जानता", "मैं नहीं जानती", "निश्चित नहीं",
    "نمی‌دانم", "نمیدانم", "مطمئن نیستم", "لا أعرف", "لا أعلم", "لست متأكدا", "لست متأكدًا",
    "sijui", "sina uhakika", "je ne sais pas", "no lo sé", "não sei", "ich weiß nicht", "weiß nicht",
    "не знаю", "bilmiyorum", "saya tidak tahu", "tidak tahu", "ไม่รู้", "ไม่ทราบ", "모르겠습니다", "모릅니다",
    # BLEnD's other languages: Spanish, Korean, Greek, Azerbaijani, Amharic, Hausa, Sundanese, Assamese.
    "no sé", "모르겠어요", "모르겠어", "잘 모르겠", "δεν ξέρω", "δεν γνωρίζω", "bilmirəm", "አላውቅም",
    "ban sani ba", "teu nyaho", "teu terang", "মই নাজানো", "নাজানো",
)  # fmt: skip


def hedge_in(text: str, hedges: Sequence[str] = HEDGES) -> str | None:
    """The first of ``hedges`` the reply says (``phrase_spans``' rule, after ``normalise``), or None."""
    clean = normalise(text)
    return next((h for h in hedges if phrase_spans(clean, normalise(h))), None)


# --- citations ----------------------------------------------------------------------------------

# Sources models cite. Full names match in any case; acronyms only in capitals ("who" and "un" are
# words); both only as whole words ("un" in "country" is not the UN).
_SOURCE = (
    r"\b(?:(?i:world\s+bank|world\s+health\s+organi[sz]ation|international\s+monetary\s+fund|"
    r"united\s+nations(?:\s+development\s+programme)?|international\s+labou?r\s+organi[sz]ation|"
    r"international\s+energy\s+agency|cia\s+world\s+factbook)|"
    r"WHO|IMF|UN(?:ESCO|DP|ICEF)?|OECD|ILO|IEA|CIA)\b"
)
_CITATION = re.compile(rf"(?P<source>{_SOURCE})[^0-9\n]{{0,40}}?\b(?P<year>(?:19|20)\d{{2}})\b")
_WORLD_BANK = re.compile(r"world\s+bank", re.IGNORECASE)


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


def mentions_world_bank(text: str | None) -> bool:
    """WorldBench's citation rule: the string "World Bank" occurs (case-insensitive), with or without a year."""
    return bool(text) and bool(_WORLD_BANK.search(text))
