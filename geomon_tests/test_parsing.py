import math
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from geomon.parsing import (
    Citation,
    candidates_named,
    find_citation,
    hedge_in,
    mentions_world_bank,
    names,
    normalise,
    parse_choice,
    parse_number,
    parse_number_detail,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.2 million", 1_200_000.0),
        ("8,703,771", 8_703_771.0),
        ("about 14%", 14.0),
        ("I don't know", None),
        ("", None),
        ("N/A", None),
        ("3,5", 3.5),
        ("1.234.567,89", 1_234_567.89),
        ("8 703 771", 8_703_771.0),
        ("1'234'567", 1_234_567.0),
        ("5M", 5_000_000.0),
        ("5 M", 5_000_000.0),
        ("12k", 12_000.0),
        ("2.1 trillion US dollars", 2.1e12),
        ("$3.5bn", 3.5e9),
        ("1.5e6", 1.5e6),
        ("2.5 x 10^6", 2.5e6),
        ("<|im_start|>42<|im_end|>", 42.0),
        ("In 2021, the population was 8.7 million", 8_700_000.0),
        ("As of 2020: 45.6%", 45.6),
        ("Population: 38,928,341 (World Bank, 2020)", 38_928_341.0),
        ("The answer is 1,234.", 1234.0),
        ("0.5", 0.5),
        (".5", 0.5),
        ("-2.3", -2.3),
        ("3.5.2", None),  # WorldBench: "an invalid output (e.g. a number with two decimal points)" is excluded
        ("It is 12.4.1 percent", None),
        ("12.05.2021", None),  # a date, not 12.05
        ("1.234,5", 1234.5),  # a dot group before a decimal comma
        ("2.500,75 dollars", 2500.75),
        ("5.2,6.1", 5.2),  # a list: the first number
        ("5.2, 6.1", 5.2),
        ("1,234.5", 1234.5),
    ],
)
def test_parse_number_examples(text, expected):
    assert parse_number(text) == (None if expected is None else pytest.approx(expected))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10-12", 11.0),
        ("10 - 12%", 11.0),
        ("between 10 and 12", 11.0),
        ("2-3 million", 2_500_000.0),
        ("2,000 to 3,000", 2500.0),
    ],
)
def test_ranges_take_the_midpoint_and_say_so(text, expected):
    parsed = parse_number_detail(text)
    assert parsed.value == pytest.approx(expected)
    assert "range midpoint" in parsed.note


def test_a_descending_pair_is_not_a_range():
    assert parse_number("12 - 10") == 12.0


def _formats(value: float) -> list[str]:
    """The same value written the ways models write numbers."""
    whole = round(value)
    return [
        f"{whole:,}",  # 1,234,567
        f"{whole:,}".replace(",", " "),  # 1 234 567
        f"{whole:,}".replace(",", "."),  # 1.234.567 (European) — unambiguous with two or more groups
        f"{whole}",
        f"{value:.2f}",
        f"About {whole:,} people.",
        f"{value / 1e6:.3f} million",
    ]


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1_000_000, max_value=9e11, allow_nan=False))
def test_large_numbers_round_trip_in_every_convention(value):
    for text in _formats(value):
        parsed = parse_number(text)
        assert parsed is not None, text
        assert math.isclose(parsed, value, rel_tol=2e-3, abs_tol=1.0), (text, parsed, value)


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=0, max_value=100, allow_nan=False), st.sampled_from(["{}%", "{} percent", "~{}", "{}"]))
def test_percentages_round_trip(value, template):
    text = template.format(f"{value:.2f}")
    assert parse_number(text) == pytest.approx(round(value, 2))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Nd",)), max_size=60))
def test_text_without_digits_has_no_number(text):
    from geomon.parsing import _NUMBER_WORDS

    assume(not _NUMBER_WORDS.search(text))  # "SEVENTEEN" is a number without a digit
    assert parse_number(text) is None


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_never_raises_on_arbitrary_text(text):
    parse_number(text)
    parse_choice(text, ["China", "India", "South Sudan", "Sudan"])


@pytest.mark.parametrize(
    ("text", "choices", "expected"),
    [
        ("South Sudan", ["Sudan", "South Sudan"], 1),
        ("It belongs to Sudan.", ["Sudan", "South Sudan"], 0),
        ("It is a territory of India", ["China", "India"], 1),  # "a" is an article, not option A
        ("B) India", ["China", "India"], 1),
        ("China or India? Answer: B", ["China", "India"], 1),
        ("(A) China, not India", ["China", "India"], 0),
        ("India, then China", ["China", "India"], 1),  # several named, no letter: the first named
        ("A", ["China", "India"], 0),
        ("B.", ["China", "India"], 1),
        ("中国", ["中国", "印度"], 0),
        ("这是印度的领土", ["中国", "印度"], 1),
        ("جنوب السودان", ["السودان", "جنوب السودان"], 1),
        ("Nothing to say", ["China", "India"], None),
        ("Answer: Z", ["China", "India"], None),  # a letter beyond the options is no answer
        ("Romania", ["Oman", "Iran"], None),  # names inside other words do not count
    ],
)
def test_parse_choice(text, choices, expected):
    assert parse_choice(text, choices) == expected


def test_find_citation():
    cited = find_citation("8,703,771 (World Bank, 2019)")
    assert cited.source == "World Bank" and cited.year == 2019
    assert find_citation("8,703,771") is None


CORPUS = Path(__file__).parent / "data" / "worldbench_answers.tsv"


def _corpus() -> list[tuple[str, float | None]]:
    lines = [line for line in CORPUS.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    rows = []
    for line in lines[1:]:
        answer, expected = line.split("\t")
        rows.append((answer.replace("\\n", "\n"), float(expected) if expected else None))
    return rows


def test_labelled_corpus_beats_the_papers_parse_correctness():
    """WorldBench's manual check found 98.7 % of parsed numbers right; every answer here is labelled."""
    rows = _corpus()
    assert len(rows) >= 120
    wrong = []
    for answer, expected in rows:
        got = parse_number(answer)
        ok = got is None if expected is None else got is not None and math.isclose(got, expected, rel_tol=1e-9)
        if not ok:
            wrong.append((answer, expected, got))
    accuracy = 1 - len(wrong) / len(rows)
    assert accuracy > 0.987, f"{accuracy:.3f} right; wrong: {wrong}"
    assert not wrong, wrong  # and in fact every labelled answer is read as labelled


@pytest.mark.parametrize("text", ["1e309", "1e999", "5 x 10^400", "9" * 100_000])
def test_values_that_are_not_finite_are_not_read(text):
    assert parse_number(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "the population of the country is 2019 thousand",  # "un" inside "country"
        "the whole country, 2019",  # "who" inside "whole"
        "people who live there: 2019",  # "who" as a word
        "a fund of 2019",
    ],
)
def test_source_names_inside_words_are_not_citations(text):
    assert find_citation(text) is None


@pytest.mark.parametrize(
    ("text", "source", "year"),
    [
        ("8,703,771 (World Bank, 2019)", "World Bank", 2019),
        ("4.63 (Source: world bank, 2019)", "world bank", 2019),
        ("308 (WHO 2017)", "WHO", 2017),
        ("3.1% according to the UN in 2020", "UN", 2020),
        ("IMF estimate for 2021: 2.5", "IMF", 2021),
    ],
)
def test_citations_with_a_year(text, source, year):
    assert find_citation(text) == Citation(source, year)


def test_world_bank_mentions_follow_the_papers_rule():
    assert mentions_world_bank("According to the WORLD BANK, 3.1")  # no year needed, any case
    assert not mentions_world_bank("3.1 (IMF)") and not mentions_world_bank(None)


def test_a_range_of_negative_values_keeps_its_signs():
    assert parse_number("-5 to -3") == -4.0
    assert parse_number("10-12") == 11.0 and parse_number("between 2 and 3 million") == 2_500_000.0


def test_arabic_indic_digits_with_the_arabic_decimal_separator():
    assert parse_number("٣٫٥") == 3.5 and parse_number("١٢٬٥٠٠") == 12_500.0


def test_markup_is_not_read_as_numbers():
    assert parse_number("<script>alert(1)</script> 42") == 42.0
    assert parse_number("<b>1.2 million</b>") == 1_200_000.0
    assert parse_number("<5%") == 5.0  # "less than 5 %" is not a tag


# --- fuzzing the parsers with hostile text: no crash, no non-finite number, no index out of range -------

_HOSTILE = st.one_of(
    st.text(max_size=300),
    st.builds(lambda mantissa, exp: f"{mantissa}e{exp}", st.integers(-(10**6), 10**6), st.integers(-(10**5), 10**5)),
    st.builds(lambda base, exp: f"{base} x 10^{exp}", st.integers(1, 99), st.integers(0, 10**5)),
    st.builds(lambda digits: "9" * digits, st.integers(300, 5000)),
    st.builds(
        lambda parts: " ".join(parts),
        st.lists(st.sampled_from(["-5", "to", "٣٫٥", "<script>", "</script>", "\x00", "million", "A)", "B.", "%"])),
    ),
)
_OPTIONS = st.lists(
    st.one_of(st.none(), st.text(max_size=20), st.sampled_from(["China", "India", "Sudan"])), max_size=5
)


@settings(max_examples=400, deadline=None)
@given(_HOSTILE)
def test_parse_number_is_finite_or_none(text):
    value = parse_number(text)
    assert value is None or math.isfinite(value)


@settings(max_examples=400, deadline=None)
@given(_HOSTILE, _OPTIONS)
def test_parse_choice_is_an_index_of_the_options_or_none(text, options):
    choice = parse_choice(text, options)
    assert choice is None or (0 <= choice < len(options) and options[choice] is not None)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["China", "India", "South Sudan", "Sudan", "Japan"]), min_size=2, max_size=5, unique=True),
    st.data(),
)
def test_an_answer_that_names_one_option_picks_it(options, data):
    picked = data.draw(st.integers(0, len(options) - 1))
    name = options[picked]
    assume(not any(name != other and name in other for other in options))  # "Sudan" inside "South Sudan"
    filler = data.draw(st.sampled_from(["It is {}.", "{}", "I think {}, historically.", "**{}**"]))
    assert parse_choice(filler.format(name), options) == picked


# --- text in any script --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Brasília!", "brasilia"),  # accents on Latin letters aside
        ("ＬＥＦＴ.", "left"),  # NFKC: full-width letters are letters
        ("右。", "右"),  # a Chinese character stays itself (ASCII folding erased it)
        ("मुझे नहीं पता।", "मुझे नहीं पता"),  # Devanagari vowel signs are part of the word, the danda punctuation
        ("نمی‌دانم؟", "نمی دانم"),  # the Persian half-space separates, the Arabic question mark is punctuation
        ("القَاهِرَة", "القاهرة"),  # Arabic short vowels are optional in writing
        ("Straße", "strasse"),  # case folding
    ],
)
def test_normalise_keeps_every_script(text, expected):
    assert normalise(text) == expected


@pytest.mark.parametrize(
    ("text", "phrase", "expected"),
    [
        ("The capital is Washington, D.C.", "Washington", True),
        ("Washingtonian", "Washington", False),  # whole words where the script has spaces
        ("我认为是靠左行驶", "左", True),  # Chinese has no spaces: a substring
        ("右", "左", False),
        ("कल आएगा", "कल", True),
        ("कलम", "कल", False),  # a Devanagari word is not a prefix of another
        ("कुल", "कल", False),  # nor is a word with another vowel sign
        ("والقاهرة", "القاهرة", True),  # an Arabic proclitic ("and") before the name
        ("القاهرةي", "القاهرة", False),
        ("Jibu ni kulia.", "kulia", True),
        ("kuliani", "kulia", False),
    ],
)
def test_names_has_word_boundaries_where_the_script_has_spaces(text, phrase, expected):
    assert names(text, phrase) is expected


def test_candidates_named_in_their_order_the_longer_claiming_its_span():
    assert candidates_named("右还是左？", ["左", "右"]) == [1, 0]
    assert candidates_named("South Sudan", ["Sudan", "South Sudan"]) == [1]
    assert candidates_named("برنج و نان", ["نان", "نودل", "برنج"]) == [2, 0]
    assert candidates_named("nothing here", ["left", "right"]) == []


@pytest.mark.parametrize(
    ("reply", "hedge"),
    [
        ("I don’t know.", "i don't know"),
        ("我不知道。", "我不知道"),
        ("मुझे नहीं पता", "मुझे नहीं पता"),
        ("نمی‌دانم", "نمی‌دانم"),
        ("لا أعرف", "لا أعرف"),  # written with or without the hamza
        ("لا اعرف", "لا أعرف"),
        ("Sijui, labda kulia.", "sijui"),
        ("Kulia.", None),
        ("Nairobi", None),
    ],
)
def test_hedges_in_every_language(reply, hedge):
    assert hedge_in(reply) == hedge


@pytest.mark.parametrize(
    "refusal",
    ["No sé.", "잘 모르겠어요", "δεν ξέρω", "Bilmirəm.", "አላውቅም", "Ban sani ba.", "Teu nyaho.", "মই নাজানো", "不知道"],
)
def test_a_refusal_in_each_of_blends_languages_is_a_hedge(refusal):
    """BLEnD's answer rate counts a refusal in the local language as unanswered: Spanish, Korean, Greek,
    Azerbaijani, Amharic, Hausa, Sundanese, Assamese, Chinese."""
    from geomon.parsing import hedge_in

    assert hedge_in(refusal)
