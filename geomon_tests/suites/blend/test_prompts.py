"""BLEnD's prompts as the reference builds them: local language and English with the templates, and the errors that
name an unknown template or country."""

from __future__ import annotations

import pytest

from geomon.suites.blend import source
from geomon.suites.blend.prompts import build_prompts, unfilled_placeholders
from geomon_tests.suites.blend.conftest import BLEND


def test_prompts_local_and_english_with_the_templates(release):
    prompts = build_prompts(release, ("inst-4", "pers-3"), sample=2, seed=1)
    korea = prompts[prompts["country"] == "South_Korea"]
    assert set(korea["mode"]) == {"local", "english"} and len(korea) == 2 * 2 * 2
    local = korea[(korea["mode"] == "local") & (korea["template"] == "inst-4")].iloc[0]
    assert local["prompt"].startswith("다음 질문을 읽고") and local["asked_in"] == "Korean"
    english = korea[(korea["mode"] == "english") & (korea["template"] == "pers-3")].iloc[0]
    assert english["prompt"].startswith("You are a person from South Korea") and "{q}" not in english["prompt"]
    # An English-speaking country is asked once: its local language is English.
    assert set(prompts.loc[prompts["country"] == "UK", "mode"]) == {"local"}
    assert not unfilled_placeholders(prompts)
    # Seeded: the same sample again, a different one with another seed.
    again = build_prompts(release, ("inst-4", "pers-3"), sample=2, seed=1)
    assert again["prompt_id"].tolist() == prompts["prompt_id"].tolist()
    other = build_prompts(release, ("inst-4",), sample=2, seed=2)
    assert set(other["question_id"]) != set(prompts["question_id"])


def test_an_unknown_template_or_country_names_itself(release):
    with pytest.raises(source.BlendError, match="inst-9"):
        build_prompts(release, ("inst-9",), sample=1)
    algeria = source.BlendRelease(
        release.questions[release.questions["country"] == "Algeria"], release.templates, release.report
    )
    with pytest.raises(source.BlendError, match="Algeria's template 'pers-1' has no"):
        build_prompts(algeria, ("pers-1",), sample=1)
    with pytest.raises(source.BlendError, match="Atlantis"):
        source.read_release(BLEND, ("Atlantis",))
