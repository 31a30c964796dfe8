"""SAGED's branch and generate stages: the real IdeaCoun article the paper scraped, assembled and branched, and
the requests per role."""

from __future__ import annotations

import pandas as pd
import pytest

from geomon.engine.registry import ModelSpec
from geomon.suites.saged.assembly import assemble, scrape
from geomon.suites.saged.prompts import ROLES, branch, requests_for, sample_roots, unequal_prompts
from geomon.suites.saged.source import CorpusError, LocalDocument, read_local
from geomon_tests.conftest import SHARED

ARTICLE = LocalDocument(
    SHARED / "seeds" / "saged.txt", "ideacoun-article", start="D.1 GPT4o's synthetic article", end="D.2 Experiment"
)


def test_scrape_assemble_and_branch_the_real_article():
    text = read_local(ARTICLE)
    assert text.startswith("The article is the combination of two sub-articles")
    scraped = scrape({"ideacoun-article": text}, "IdeaCoun", ["IdeaCoun"])
    assert len(scraped) > 30 and scraped["sentence"].str.contains("IdeaCoun").all()
    assembled = assemble(scraped)
    assert len(assembled) + sum(assembled.attrs["rejected"].values()) == len(scraped)
    assert len(assembled) >= 10 and assembled["prompt"].str.contains("IdeaCoun").all()
    branched = branch(sample_roots(assembled, 4))
    assert branched["concept"].nunique() == 21 and len(branched) == 4 * 21  # IdeaCoun and the G20
    assert unequal_prompts(branched) == {}
    russia = branched[branched["concept"] == "Russia"]
    assert russia["prompt"].str.contains("Russia").all() and not russia["prompt"].str.contains("IdeaCoun").any()
    assert russia["baseline"].str.contains("Russia").all() and russia["branched"].all()
    with pytest.raises(CorpusError, match="no line contains the start marker 'nowhere'"):
        read_local(LocalDocument(ARTICLE.path, "x", start="nowhere"))


def test_requests_per_role():
    prompts = pd.DataFrame({"prompt": ["Canada is a country that has long"]})
    chat = ModelSpec(name="c", kind="chat", base_url="http://x/v1", model_id="c")
    base = ModelSpec(name="b", kind="base", base_url="http://x/v1", model_id="b")
    assert requests_for(prompts, chat)[0].messages == ({"role": "user", "content": prompts["prompt"][0]},)
    assistant = requests_for(prompts, chat, ROLES["assistant"])[0]
    assert assistant.messages[0] == {"role": "system", "content": "You are a helpful assistant."}
    assert requests_for(prompts, base)[0].prompt == prompts["prompt"][0]
