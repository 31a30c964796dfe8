"""BLEnD: the release read from the real snapshot, prompts as the reference builds them, the paper's soft
exact match (verdicts of ``exact_match.py`` on answers written for each language) and the statistics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from geomon.sources import blend as source
from geomon.stats import bootstrap, sufficiency, verdicts
from geomon.stats.declarations import TrackedMetric
from geomon.stats.signflip import PairedTest
from geomon.suites import blend
from geomon_tests.conftest import SHARED

BLEND = SHARED / "snapshots" / "blend"


@pytest.fixture(scope="module")
def release() -> source.BlendRelease:
    return source.read_release(BLEND)


def test_the_release_has_16_countries_of_500_questions_and_the_papers_templates(release):
    assert release.report["questions"] == 16 * 500
    assert set(release.report["per_country"].values()) == {500}
    assert release.report["without_topic"] == 0
    # The release's translated placeholders are counted; the paper's templates have none.
    assert release.report["templates_without_placeholder"] == ["Algeria:pers-1", "Algeria:pers-2"]
    assert release.report["empty_question_text"] == ["China:New-en-04:question"]
    china = source.BlendRelease(
        release.questions[release.questions["question_id"] == "New-en-04"], release.templates, release.report
    )
    asked = blend.build_prompts(china, ("inst-4",))
    assert "China|New-en-04|local" in asked.attrs["not_asked_empty_question"]
    assert set(asked.loc[asked["country"] == "China", "mode"]) == {"english"}
    assert {"inst-4", "pers-3"} <= set(release.templates["South_Korea"])
    assert set(release.questions["language"]) == set(blend.LANGUAGES)  # 13 languages, each with a lemmatiser
    first = release.questions.iloc[0]
    assert first["annotations"][0]["count"] >= first["annotations"][-1]["count"]


def test_prompts_local_and_english_with_the_templates(release):
    prompts = blend.build_prompts(release, ("inst-4", "pers-3"), sample=2, seed=1)
    korea = prompts[prompts["country"] == "South_Korea"]
    assert set(korea["mode"]) == {"local", "english"} and len(korea) == 2 * 2 * 2
    local = korea[(korea["mode"] == "local") & (korea["template"] == "inst-4")].iloc[0]
    assert local["prompt"].startswith("다음 질문을 읽고") and local["asked_in"] == "Korean"
    english = korea[(korea["mode"] == "english") & (korea["template"] == "pers-3")].iloc[0]
    assert english["prompt"].startswith("You are a person from South Korea") and "{q}" not in english["prompt"]
    # An English-speaking country is asked once: its local language is English.
    assert set(prompts.loc[prompts["country"] == "UK", "mode"]) == {"local"}
    assert not blend.unfilled_placeholders(prompts)
    # Seeded: the same sample again, a different one with another seed.
    again = blend.build_prompts(release, ("inst-4", "pers-3"), sample=2, seed=1)
    assert again["prompt_id"].tolist() == prompts["prompt_id"].tolist()
    other = blend.build_prompts(release, ("inst-4",), sample=2, seed=2)
    assert set(other["question_id"]) != set(prompts["question_id"])


def test_an_unknown_template_or_country_names_itself(release):
    with pytest.raises(source.BlendError, match="inst-9"):
        blend.build_prompts(release, ("inst-9",), sample=1)
    algeria = source.BlendRelease(
        release.questions[release.questions["country"] == "Algeria"], release.templates, release.report
    )
    with pytest.raises(source.BlendError, match="Algeria's template 'pers-1' has no"):
        blend.build_prompts(algeria, ("pers-1",), sample=1)
    with pytest.raises(source.BlendError, match="Atlantis"):
        source.read_release(BLEND, ("Atlantis",))


def test_reply_cleaning_as_delete_prompt_from_answer():
    prompt = (
        "Read the following question and provide a single answer without any explanations.\n\nQuestion: Q?\nAnswer:"
    )
    assert blend.clean_reply("Answer: Fish and chips.", prompt) == "fish and chips"
    # A leading "word:" that is not in the prompt stays.
    assert blend.clean_reply("Note: tea", prompt) == "note: tea"
    assert blend.clean_reply("答案： 饺子。", "问题：…答案：") == "饺子"
    assert blend.clean_reply("答案：饺子", "问题：…答案：") == "答案:饺子"  # the reference needs a space after it
    assert blend.clean_reply(prompt + " Tea", prompt) == "tea"


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
    assert blend.lemma_check(answer, reply, language) is verdict


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
    name = blend.lemmatiser(language).name
    assert "variant" not in name, blend.lemmatiser(language).unavailable  # the extra is installed: the paper's own
    assert blend.lemma_check(answer, reply, language) is paper
    # Without it, the named variant runs, and the verdict is the variant's.
    monkeypatch.setitem(blend._PAPER, language, (blend._PAPER[language][0], None))
    blend.lemmatiser.cache_clear()
    try:
        if language != "Chinese":
            assert "variant" in blend.lemmatiser(language).name
        assert blend.lemma_check(answer, reply, language) is variant
    finally:
        monkeypatch.undo()
        blend.lemmatiser.cache_clear()


def test_a_lemmatiser_that_cannot_load_is_replaced_by_the_named_variant(monkeypatch):
    def broken():
        raise ImportError("No module named 'konlpy'")

    monkeypatch.setitem(blend._PAPER, "Korean", ("konlpy Okt", broken))
    blend.lemmatiser.cache_clear()
    try:
        assert blend.lemmatiser("Korean").name == "whitespace (variant; paper: konlpy Okt)"
        assert "No module named 'konlpy'" in blend.lemmatiser("Korean").unavailable
    finally:
        monkeypatch.undo()
        blend.lemmatiser.cache_clear()


def test_soft_match_scores_sem_b_and_sem_w_as_the_paper():
    annotations = [
        {"answers": ["과자"], "en_answers": ["cookie", "snack"], "count": 3},
        {"answers": ["과일"], "en_answers": ["fruit"], "count": 2},
    ]
    assert blend.soft_match("과자", annotations, "Korean", "Korean") == (1.0, 1.0, "과자")
    # A local reply may match an English answer (the reference's fallback); weight = votes ÷ top votes.
    assert blend.soft_match("fruit", annotations, "Korean", "Korean") == (1.0, 2 / 3, "fruit")
    # An English reply is checked against the English answers only.
    assert blend.soft_match("과일", annotations, "Korean", "English") == (0.0, 0.0, "")
    assert blend.soft_match("", annotations, "Korean", "Korean") == (0.0, 0.0, "")


def test_validity_follows_the_idk_rule():
    some = [{"answers": ["a"], "en_answers": ["a"], "count": 1}]
    assert blend.valid_question(some, {"idk": 4, "no-answer": 1, "not-applicable": 1})
    assert not blend.valid_question(some, {"idk": 5, "no-answer": 0, "not-applicable": 0})
    assert not blend.valid_question(some, {"idk": 0, "no-answer": 2, "not-applicable": 1})
    assert not blend.valid_question([], {"idk": 0, "no-answer": 0, "not-applicable": 0})


def _scored(release, right: set[str]) -> pd.DataFrame:
    """Scores of scripted replies: the top annotated answer for countries in ``right``, "nothing" elsewhere."""
    prompts = blend.build_prompts(release, ("inst-4",), sample=30, seed=0)
    texts = [
        (p.annotations[0]["answers" if p.asked_in != "English" else "en_answers"][0] if p.annotations else "x")
        if p.country in right
        else "nothing"
        for p in prompts.itertuples()
    ]
    responses = pd.DataFrame({"text": texts, "error": [None] * len(texts)})
    return blend.score(prompts, responses, "scripted")


def test_scores_and_diagnosis_on_scripted_replies(release):
    scores = _scored(release, right={"UK", "South_Korea"})
    valid = scores[scores["status"] == "answered"]
    assert (valid.loc[valid["country"].isin(["UK", "South_Korea"]), "sem_b"] == 100).all()
    assert (valid.loc[valid["country"].isin(["UK", "South_Korea"]), "sem_w"] == 100).all()
    others = valid[~valid["country"].isin(["UK", "South_Korea"])]
    # Elsewhere "nothing" is right only where annotators gave it: one Hausa question of this sample, in both languages.
    hits = others[others["sem_b"] == 100]
    assert list(zip(hits["question_id"], hits["matched"], strict=True)) == [("Na-ko-43", "nothing")] * 2
    assert scores.loc[scores["status"] == "invalid", "sem_b"].isna().all()
    result = blend.diagnose(scores, resamples=200)
    summary = result["summary"]
    countries = result["countries"]
    local = countries[(countries["view"] == "local") & (countries["metric"] == "sem_b")].set_index("group")
    assert local.loc["UK", "value"] == 100 and local.loc["Spain", "value"] == 0
    assert summary["country_gap_sem_b_local"] == 100
    expected = valid.loc[valid["mode"] == "local", "sem_b"].mean()
    assert summary["sem_b_local"] == pytest.approx(expected)
    assert local.loc["Spain", "vs_best"] == -100
    paired = result["local_vs_english"].set_index("country")
    assert paired.loc["South_Korea", "difference"] == 0  # right in both languages
    assert paired.loc["Spain", "difference"] == 0 and np.isfinite(paired.loc["Spain", "ci_low"]) is np.True_
    assert (paired["insufficient_sample"] == (paired["questions"] < sufficiency.MIN_SAMPLE)).all()
    assert paired["questions"].max() <= 30
    items = blend.items(scores)
    assert len(items) == len(valid) and set(items.columns) == {
        "item",
        "question",
        "value",
        "answered",
        "country",
        "mode",
        "asked_in",
    }


def _scored_countries(questions: dict[str, int]) -> pd.DataFrame:
    """Scored rows of each country's ``questions`` questions, asked in Spanish and in English, half of them right."""
    rows = [
        {
            "country": country, "language": "Spanish", "question_id": f"{country}-{q}", "topic": "food",
            "status": "answered", "mode": mode, "asked_in": "Spanish" if mode == "local" else "English",
            "sem_b": 100.0 * (q % 2), "sem_w": 100.0 * (q % 2),
        }
        for country, n in questions.items() for q in range(n) for mode in ("local", "english")
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_the_tables_flag_a_country_by_the_verdicts_sufficiency_rule():
    """A country's figure in BLEnD's tables is insufficient exactly where its verdict would be: below
    ``sufficiency.MIN_SAMPLE`` questions (30). Mutation caught: the tables' own 20 (a country with 25 questions
    sufficient in its table and insufficient in its verdict)."""
    scores = _scored_countries({"Spain": 25, "Mexico": 30})
    result = blend.diagnose(scores, resamples=50)
    countries = result["countries"].drop_duplicates("group").set_index("group")
    paired = result["local_vs_english"].set_index("country")
    for country, questions in (("Spain", 25), ("Mexico", 30)):
        (verdict,) = verdicts.decide([_paired_test(clusters=questions)], verdicts.VerdictSettings())
        insufficient = verdict.verdict == verdicts.INSUFFICIENT
        assert countries.loc[country, "items"] == paired.loc[country, "questions"] == questions
        assert countries.loc[country, "insufficient_sample"] == paired.loc[country, "insufficient_sample"]
        assert bool(paired.loc[country, "insufficient_sample"]) is insufficient is (country == "Spain")


def _paired_test(clusters: int) -> PairedTest:
    """A significant worsening over ``clusters`` clusters: decided, unless the sample is too small."""
    return PairedTest("sem_b", "country=x", 50.0, 30.0, -20.0, 0.0001, 1.0, clusters, clusters, False, 5.0)


def test_failed_requests_are_excluded_and_counted(release):
    prompts = blend.build_prompts(release, ("inst-4",), sample=1, seed=0)
    responses = pd.DataFrame({"text": [None] * len(prompts), "error": ["timeout"] * len(prompts)})
    scores = blend.score(prompts, responses, "m")
    assert set(scores["status"]) <= {"failed", "invalid"} and scores["sem_b"].isna().all()


def _valid(prompts: pd.DataFrame) -> pd.DataFrame:
    keep = [blend.valid_question(a, i) for a, i in zip(prompts["annotations"], prompts["idks"], strict=True)]
    return prompts[keep]


def test_an_empty_or_hedging_reply_is_unanswered_and_scored_a_miss(release):
    """An empty reply or a hedge that names no annotated answer is ``unanswered`` and scored 0 (the paper's miss);
    a hedge that names one is answered and scored; a failed request is left out of the answer rate."""
    prompts = blend.build_prompts(release, ("inst-4",), sample=30, seed=0)
    uk = _valid(prompts[prompts["country"] == "UK"]).head(5)
    top = uk["annotations"].iloc[2][0]["en_answers"][0]
    texts = ["", "I don't know.", f"Not sure, maybe {top}", "nothing", None]
    responses = pd.DataFrame({"text": texts, "error": [None, None, None, None, "timeout"]})
    scores = blend.score(uk, responses, "m")
    assert scores["status"].tolist() == ["unanswered", "unanswered", "answered", "answered", "failed"]
    assert scores["sem_b"].tolist()[:4] == [0.0, 0.0, 100.0, 0.0] and np.isnan(scores["sem_b"].iloc[4])
    items = blend.items(scores)
    assert items["value"].tolist() == [0.0, 0.0, 100.0, 0.0]  # unanswered replies stay in the pair, as misses
    assert items["answered"].tolist() == [0.0, 0.0, 1.0, 1.0]  # the failed request is not in the rate
    (rate,) = [e for e in bootstrap.estimates(_rate(), items, resamples=0) if not e.breakdown]
    assert rate.value == 50.0


def _rate() -> TrackedMetric:
    return next(m for m in blend.TRACKED if m.name == "answered_rate")


def test_the_answer_rate_moves_no_sem_b_figure(release):
    """Splitting ``unanswered`` from ``answered`` adds the answer rate and moves nothing the paper reports: every
    SEM-B/SEM-W figure of ``diagnose`` and every tracked SEM-B headline is what it is when the unanswered replies
    are counted as answered misses (the scoring before the split). Mutation caught: ``diagnose`` or ``items``
    dropping the unanswered replies."""
    scores = _scored(release, right={"UK", "South_Korea"})
    hedged = scores["country"].isin(["Spain", "Mexico"]) & (scores["status"] == "answered")
    scores.loc[hedged, "status"] = "unanswered"  # as "I don't know" or an empty reply: a miss either way
    assert scores.loc[hedged, "sem_b"].eq(0).all() and hedged.sum() > 20
    before = scores.assign(status=scores["status"].replace("unanswered", "answered"))
    now, then = blend.diagnose(scores, resamples=200), blend.diagnose(before, resamples=200)
    figures = [k for k in then["summary"] if k.startswith(("sem_", "country_gap_", "n_"))]
    assert figures and {k: now["summary"][k] for k in figures} == {k: then["summary"][k] for k in figures}
    pd.testing.assert_frame_equal(now["countries"], then["countries"])
    pd.testing.assert_frame_equal(now["local_vs_english"], then["local_vs_english"])
    assert now["summary"]["scored"] == then["summary"]["answered"] == now["summary"]["answered"] + hedged.sum()
    found, was = (
        {(e.metric, e.breakdown): e.value for m in blend.TRACKED for e in bootstrap.estimates(m, rows, resamples=0)}
        for rows in (blend.items(scores), blend.items(before))
    )
    sem_b = [k for k in was if k[0] != "answered_rate"]
    assert sem_b and {k: found[k] for k in sem_b} == {k: was[k] for k in sem_b}
    assert found[("answered_rate", "country=Spain")] == 0 and found[("answered_rate", "country=UK")] == 100
    assert found[("answered_rate", "")] < was[("answered_rate", "")] == 100


def test_the_stages_that_score_are_versioned_by_the_code_that_reads_a_reply():
    """BLEnD's answer rate reads hedges with `geomon.parsing` and replies through `geomon.untrusted`: an edit to them
    marks its scores and its tracked stage stale, so `geomon run` scores the answers again instead of calling the
    suite unchanged (an audit's finding: the tracked stage was versioned by blend.py alone)."""
    from geomon import parsing, untrusted
    from geomon.suites import registry

    pipeline = registry.suite("blend").pipeline
    for name in ("scores", "disparity"):
        assert {parsing, untrusted} <= set(pipeline.stage(name).versioned_by), name
