"""SAGED's corpus: local files (a section between markers) and a Wikipedia page read live through the
MediaWiki client, against the loopback api.php."""

from __future__ import annotations

import pytest

from geomon.sources import mediawiki
from geomon.suites.saged.source import CorpusError, LocalDocument, read_local, wikipedia_text
from geomon_tests.loopback import serve
from geomon_tests.sources.test_mediawiki import PAGE as TITLE
from geomon_tests.sources.test_mediawiki import MediaWiki

PAGE = (
    "<div><p>Canada is a country in North America.<sup class='reference'>[1]</sup></p>"
    "<table><tr><td>Population 41 million</td></tr></table>"
    "<style>.x{}</style><p>Its capital is Ottawa.</p><p> </p></div>"
)


def test_a_wikipedia_page_as_text():
    state = {"calls": [], "pages": {"1154894956": PAGE}, "langlinks": {}}
    with serve(MediaWiki, state) as url:
        client = mediawiki.MediaWikiClient(f"{url}/w/api.php", user_agent="geomon-tests", min_interval_s=0.0)
        text = wikipedia_text(client, TITLE, "2023-05-15")
    # Paragraphs only: no reference marks, no table cells, no style, no empty paragraph.
    assert text == "Canada is a country in North America.\nIts capital is Ottawa."


def test_local_sections_and_errors(tmp_path):
    path = tmp_path / "article.txt"
    path.write_text("Preface\n== Start ==\nIdeaCoun is a country.\nIt is green.\n== End ==\nAfterword\n")
    assert read_local(LocalDocument(path, "a", start="== Start ==", end="== End ==")) == (
        "IdeaCoun is a country.\nIt is green."
    )
    assert read_local(LocalDocument(path, "a")).startswith("Preface")
    with pytest.raises(CorpusError, match="no line after the start contains 'nowhere'"):
        read_local(LocalDocument(path, "a", start="== Start ==", end="nowhere"))
    with pytest.raises(CorpusError, match="missing"):
        read_local(LocalDocument(tmp_path / "none.txt", "a"))
    (tmp_path / "empty.txt").write_text("== Start ==\n== End ==\n")
    with pytest.raises(CorpusError, match="the chosen section is empty"):
        read_local(LocalDocument(tmp_path / "empty.txt", "a", start="== Start ==", end="== End =="))
