"""BLEnD's lemmatisers: the verdicts of the reference's ``exact_match.py`` on answers written for each language, the
paper's lemmatisers where installed, and the named variant where one cannot load."""

from __future__ import annotations

import pytest

from geomon.suites.blend.lemmatisers import _PAPER, lemma_check, lemmatiser

# (language, annotated answer, cleaned reply, exact_match.lemma_check's verdict) — the verdicts follow the
# reference's steps: the substring test on the answer as annotated, then lemmatised tokens.
VERDICTS = [
    ("English", "apple", "apples are common", True),  # lemmas: apples → apple
    ("English", "fish and chips", "fish and chips", True),  # substring
    ("English", "Christmas", "christmas pudding", True),  # case differs: the token test lower-cases
    ("English", "ice-cream", "ice cream", True),  # hyphen as a space
    ("English", "football", "basketball", False),
    ("English", "sunday roast", "a roast on sunday", True),  # every token present, any order
    ("Spanish", "tamales", "los tamales", True),
    ("Spanish", "fútbol", "futbol", True),  # the combining acute accent is dropped
    ("Spanish", "tortilla de patatas", "tortilla", False),
    ("Greek", "σουβλάκι", "τρώμε σουβλάκι", True),  # substring
    ("Greek", "μουσακάς", "σουβλάκι", False),
    ("Indonesian", "nasi goreng", "nasi goreng", True),
    ("Persian", "چلوکباب", "چلوکباب", True),
    ("Chinese", "饺子", "我们吃饺子", True),  # substring
    ("Chinese", "春节", "中秋节", False),
    ("Korean", "김치", "김치찌개", True),  # substring (the paper's Okt would agree)
    ("Korean", "떡볶이", "김밥", False),
    ("Arabic", "كسكس", "الكسكس", True),  # substring
    ("Amharic", "እንጀራ", "ዳቦ", False),
    ("Hausa", "tuwo", "tuwo shinkafa", True),
    ("Azerbaijani", "plov", "dolma", False),
    ("Sundanese", "surabi", "surabi oncom", True),
    ("Assamese", "ভাত", "মাছ", False),
]


@pytest.mark.parametrize(("language", "answer", "reply", "verdict"), VERDICTS)
def test_lemma_check_reproduces_the_reference_verdicts(language, answer, reply, verdict):
    assert lemma_check(answer, reply, language) is verdict


# Where the paper's lemmatiser (the ``blend`` extra, installed by make setup) and geomon's variant disagree:
# (language, annotated answer, cleaned reply, the reference's verdict, the variant's verdict). The reference's
# tokens are in the comments: each verdict is exact_match.lemma_check's steps on them.
PAPER_VERDICTS = [
    ("English", "3:00 PM", "school usually ends at 3:00 pm", True, False),  # spaCy: [3:00, pm] ⊂ reply
    ("English", "chicken, fried", "fried chicken", False, True),  # spaCy: [chicken, fry] vs [fried, chicken]
    ("English", "better food", "good food", False, True),  # spaCy keeps "better" (adjective)
    ("Korean", "김치를", "김치 먹어요", True, False),  # Okt drops the particle 를: [김치]
    ("Korean", "먹다", "김치를 먹어요", True, False),  # Okt stems 먹어요 → 먹다
    ("Hausa", "-masara", "masara", True, False),  # the hyphen stripped, then stemmed
    ("Hausa", "tuwon masara", "tuwo masara", True, False),  # hausastemmer: tuwon → tuwo
    ("Indonesian", "kue-kue", "kue lapis", True, False),  # nlp-id: kue-kue → kue
    ("Arabic", "الكبسة", "كبسة", True, False),  # qalsadi's lemma string, compared character by character
    ("English", "going out for dinner", "we go out for dinner", True, True),  # spaCy: going → go
    ("Korean", "축구를", "축구 해요", True, False),  # Okt: [축구] ⊂ [축구, 해]
    ("Korean", "야구", "축구", False, False),
    ("Hausa", "kwallon kafa", "kwallo kafa", True, False),  # [kwallo, kafa] both ways
    ("Hausa", "gidajen", "gida", False, False),  # hausastemmer: gidajen → gidaje, not gida
    ("Indonesian", "minuman", "minum teh", True, True),  # nlp-id: minuman → minum (simplemma agrees)
    ("Indonesian", "sepak bola", "bola basket", False, False),
    ("Chinese", "春节", "中秋节", False, False),  # jieba, as the paper
    ("Chinese", "北京烤鸭", "烤鸭，北京的最好", False, False),  # jieba keeps 北京烤鸭 one token
    ("Chinese", "饺子", "我们吃饺子", True, True),  # the substring test
]


@pytest.mark.parametrize(("language", "answer", "reply", "paper", "variant"), PAPER_VERDICTS)
def test_the_papers_lemmatisers_give_the_papers_verdicts(language, answer, reply, paper, variant, monkeypatch):
    name = lemmatiser(language).name
    assert "variant" not in name, lemmatiser(language).unavailable  # the extra is installed: the paper's own
    assert lemma_check(answer, reply, language) is paper
    # Without it, the named variant runs, and the verdict is the variant's.
    monkeypatch.setitem(_PAPER, language, (_PAPER[language][0], None))
    lemmatiser.cache_clear()
    try:
        if language != "Chinese":
            assert "variant" in lemmatiser(language).name
        assert lemma_check(answer, reply, language) is variant
    finally:
        monkeypatch.undo()
        lemmatiser.cache_clear()


def test_a_lemmatiser_that_cannot_load_is_replaced_by_the_named_variant(monkeypatch):
    def broken():
        raise ImportError("No module named 'konlpy'")

    monkeypatch.setitem(_PAPER, "Korean", ("konlpy Okt", broken))
    lemmatiser.cache_clear()
    try:
        assert lemmatiser("Korean").name == "whitespace (variant; paper: konlpy Okt)"
        assert "No module named 'konlpy'" in lemmatiser("Korean").unavailable
    finally:
        monkeypatch.undo()
        lemmatiser.cache_clear()
