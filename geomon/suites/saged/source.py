"""Text corpora for SAGED's scraper: local text files (offline; a section of a file can be chosen between
two marker lines) or Wikipedia pages (live, through geomon's MediaWiki client), each document tagged with
its source. Every file problem is an error naming the file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from geomon.sources.mediawiki import MediaWikiClient


class CorpusError(ValueError):
    """A corpus document that cannot be read."""


@dataclass(frozen=True)
class LocalDocument:
    path: Path
    source_tag: str
    start: str = ""  # the section begins after the first line containing this ("" = the file's start)
    end: str = ""  # and stops before the next line containing this ("" = the file's end)


def read_local(document: LocalDocument) -> str:
    """The document's text (its chosen section)."""
    if not document.path.is_file():
        raise CorpusError(f"corpus file {document.path}: missing")
    try:
        lines = document.path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise CorpusError(f"corpus file {document.path}: not UTF-8 text ({exc})") from exc
    begin = 0
    if document.start:
        found = [i for i, line in enumerate(lines) if document.start in line]
        if not found:
            raise CorpusError(f"corpus file {document.path}: no line contains the start marker {document.start!r}")
        begin = found[0] + 1
    stop = len(lines)
    if document.end:
        after = [i for i, line in enumerate(lines[begin:], begin) if document.end in line]
        if not after:
            raise CorpusError(f"corpus file {document.path}: no line after the start contains {document.end!r}")
        stop = after[0]
    text = "\n".join(lines[begin:stop]).strip()
    if not text:
        raise CorpusError(f"corpus file {document.path}: the chosen section is empty")
    return text


def wikipedia_text(client: MediaWikiClient, title: str, date: str) -> str:
    """The paragraphs of ``title`` as it read at the end of ``date`` (rendered HTML → text)."""
    from bs4 import BeautifulSoup

    revision = client.revision_at(date, title)
    soup = BeautifulSoup(client.revision_html(revision.revid), "lxml")
    for noise in soup.select("sup.reference, style, script, table, .mw-editsection"):
        noise.decompose()
    return "\n".join(p.get_text(" ", strip=True) for p in soup.find_all("p") if p.get_text(strip=True))
