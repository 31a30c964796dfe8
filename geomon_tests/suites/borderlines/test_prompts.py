"""BorderLines' prompts (``suites/borderlines/prompts.py``): the published translations reproduced, a missing one a
counted gap (never an English fallback, which the prompts' check fails), the personas' system prompts as the paper
fills them, and the requests a chat model and a rank-classifying model are sent."""

from __future__ import annotations

import json

import pytest

from geomon import quality
from geomon.suites.borderlines.prompts import (
    build_prompts,
    build_queries,
    prompts_expectations,
    prompts_frame,
    requests_for,
)
from geomon.suites.borderlines.source import BorderLinesData, read_snapshot
from geomon_tests.conftest import SHARED

ROOT = SHARED / "snapshots" / "borderlines"


def test_queries_reproduce_the_published_translations(data):
    prompts = build_queries(data)
    english = (ROOT / "prompts" / "prompts_q_mc.txt").read_text(encoding="utf-8").splitlines()
    assert prompts[prompts["lang"] == "en"]["query"].tolist() == english
    same = total = 0
    territories = data.disputes["territory"]
    for path in sorted((ROOT / "translate" / "prompts_mc_q").glob("prompts.*")):
        lang = path.suffix[1:]
        if lang == "en":
            continue
        published = path.read_text(encoding="utf-8").splitlines()
        lines = json.loads((ROOT / "translate" / "terms" / f"line_inds.{lang}.txt").read_text())
        ours = prompts[prompts["lang"] == lang].set_index("territory")["query"]
        for index, query in zip(lines, published, strict=True):
            total += 1
            same += ours.get(territories[index]) == query
    # All but the four Dutch queries about Suriname, whose country info the release lacks:
    # those are counted gaps, not English fallbacks.
    assert (same, total) == (465, 469)
    suriname_gaps = [g for g in prompts.attrs["gaps"] if "Suriname" in g["missing"]]
    assert len(suriname_gaps) == 4


def test_missing_translation_is_a_counted_gap_not_an_english_fallback(data):
    terms = {lang: dict(t) for lang, t in data.terms.items()}
    del terms["zhs"]["Abagaitu Islet"]
    prompts = build_queries(BorderLinesData(data.disputes, data.countries, data.templates, terms))
    assert "Abagaitu Islet|zhs" not in set(prompts["query_id"])
    assert {"territory": "Abagaitu Islet", "lang": "zhs", "missing": "Abagaitu Islet"} in prompts.attrs["gaps"]


def test_prompts_without_silent_english_fallback():
    data = read_snapshot(ROOT)
    prompts = build_prompts(data.with_disputes(data.disputes.head(20)), ["vanilla"])
    languages = sorted(data.templates)
    assert quality.validate(prompts_frame(prompts), "p", prompts_expectations(languages)).success
    english = prompts.set_index(["territory", "lang"])["query"]
    fallback = prompts.copy()
    native = fallback.index[fallback["lang"] != "en"][0]
    fallback.at[native, "query"] = english[(fallback.at[native, "territory"], "en")]  # untranslated
    report = quality.validate(prompts_frame(fallback), "p", prompts_expectations(languages))
    assert [f["column"] for f in report.failures] == ["same_as_english"]


def test_persona_system_prompts_are_filled_as_the_paper_does(data):
    prompts = build_prompts(data, ["vanilla", "un_peacekeeper", "nationalist", "demographic"])
    assert len(prompts) == 4 * len(build_queries(data))
    crimea = prompts[prompts["territory"] == "Crimea"].set_index(["lang", "persona"])["system"]
    assert "concise answers (translated to Ukrainian) to questions" in crimea[("uk", "vanilla")]
    assert "concise answers to questions" in crimea[("en", "vanilla")]
    assert 'Begin your response with "As a UN peacekeeper," (translated to Russian)' in crimea[("ru", "un_peacekeeper")]
    assert (
        'Begin your response with "As a citizen of Russia," (translated to Russian).' in crimea[("ru", "nationalist")]
    )
    assert 'Begin your response with "As a current resident,".' in crimea[("en", "nationalist")]
    demo = crimea[("en", "demographic")]
    assert "Ukraine, Religion: Christianity, Language: Ukrainian" in demo and "Russia, Religion:" in demo
    assert not prompts["system"].str.contains(r"\|(?:lang|nationalist|demo)\|").any()
    with pytest.raises(KeyError, match="unknown persona"):
        build_prompts(data, ["pirate"])


def test_chat_and_rank_classification_requests(data, smollm2, gemma):
    prompts = build_prompts(data).query("territory == 'Crimea'").reset_index(drop=True)
    chat, owners = requests_for(prompts, smollm2)
    assert len(chat) == len(prompts) and owners == [(i, -1) for i in range(len(prompts))]
    assert chat[0].messages[0]["role"] == "system" and chat[0].messages[1]["content"] == prompts.at[0, "query"]
    ranked, owners = requests_for(prompts, gemma)
    assert len(ranked) == sum(len(c) for c in prompts["choices"])
    uk = prompts.index[prompts["lang"] == "uk"][0]
    scored = [r for r, (i, _) in zip(ranked, owners, strict=True) if i == uk]
    # names in the query's language, each after the query as the release's run_inference_rank.py joins them
    assert [r.continuation for r in scored] == [f" {name}" for name in prompts.at[uk, "choices"]]
    assert scored[0].prompt == prompts.at[uk, "query"] + " Answer:" and scored[0].mode == "completion"
    # the paper's Table 5 asks with no instruction; another persona's comes above the query
    nationalist = build_prompts(data, ["nationalist"]).query("territory == 'Crimea' and lang == 'uk'")
    (first, *_), _ = requests_for(nationalist.reset_index(drop=True), gemma)
    assert first.prompt == f"{nationalist['system'].iloc[0]}\n\n{nationalist['query'].iloc[0]} Answer:"
