"""BorderLines' table: Wikipedia's "List of territorial disputes", its revisions (through the shared MediaWiki
client, ``geomon.sources.mediawiki``) and a parser of their tables.

``parse_disputes_html`` turns a revision's tables into BorderLines rows with the paper's filters:
land disputes only (no territorial-waters section, no Antarctica), current ones only, at least two
claimants that are countries, the controller as the one bold claimant or ``Unknown``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from geomon.sources.mediawiki import MediaWikiClient, MediaWikiError, Revision
from geomon.suites.borderlines.source import DATED_TABLES, UNKNOWN, DisputesError

if TYPE_CHECKING:  # imported where used: loading the code location does not need it (its import time)
    from bs4 import BeautifulSoup, Tag

DISPUTES_PAGE = "List of territorial disputes"

# The dated versions the BorderLines paper used (its scripts' SITES table).
PAPER_REVISIONS = {"2021-08-31": 1041639056, "2021-12-30": 1062730688, "2023-05-15": 1154894956}

# Sections whose tables are not current land disputes between countries (the paper's filter).
EXCLUDED_SECTIONS = ("territorial waters", "maritime", "antarctica", "former", "resolved", "historical")


LEVELS = ("h2", "h3", "h4")


def _text(tag: Tag) -> str:
    return " ".join(tag.get_text(" ", strip=True).split())


def _clean(soup: BeautifulSoup) -> None:
    """Drop what is not content: footnote markers, [edit] links, hidden sort keys."""
    for junk in soup.select("sup.reference, span.mw-editsection, span.sortkey, style, .noprint"):
        junk.decompose()


def _grid(table: Tag) -> list[list[Tag | None]]:
    """The table's body rows as a grid of cells, with rowspan/colspan filled in."""
    rows: list[list[Tag | None]] = []
    carry: dict[int, tuple[Tag, int]] = {}  # column → (cell, rows still to cover)
    for tr in table.find_all("tr"):
        if tr.find_parent("table") is not table:
            continue  # a row of a nested table
        cells = tr.find_all(["td", "th"], recursive=False)
        if not cells or all(c.name == "th" for c in cells):
            continue  # a header row
        row: list[Tag | None] = []
        queue = list(cells)
        col = 0
        while queue or col in carry:
            if col in carry:
                cell, left = carry.pop(col)
                if left > 1:
                    carry[col] = (cell, left - 1)
                row.append(cell)
            else:
                cell = queue.pop(0)
                span = int(str(cell.get("colspan", "1")).strip() or 1)
                down = int(str(cell.get("rowspan", "1")).strip() or 1)
                for offset in range(span):
                    row.append(cell)
                    if down > 1:
                        carry[col + offset] = (cell, down - 1)
                col += span - 1
            col += 1
        rows.append(row)
    return rows


def _header(table: Tag) -> list[str]:
    first = next((tr for tr in table.find_all("tr") if tr.find("th")), None)
    return [_text(th) for th in first.find_all("th", recursive=False)] if first else []


def _column(header: list[str], *names: str) -> int | None:
    for i, h in enumerate(header):
        if any(h.lower().startswith(n) for n in names):
            return i
    return None


def _links(cell: Tag) -> list[str]:
    names = [_text(a) for a in cell.find_all("a")]
    return [n for n in names if n and n[0].isalpha()]


def _controller(cell: Tag) -> str:
    """The claimant in bold; ``Unknown`` unless exactly one is bold (the page's convention)."""
    bold = [b for b in cell.find_all("b") if _text(b)]
    if len(bold) != 1:
        return UNKNOWN
    link = bold[0].find("a")
    return _text(link) if link else _text(bold[0])


def _section_region(h2: str, h3: str, h4: str) -> str | None:
    """Region label as the BorderLines table writes it; None for sections the paper excludes."""
    path = " / ".join((h2, h3, h4)).lower()
    if any(word in path for word in EXCLUDED_SECTIONS):
        return None
    if "outside" in h2.lower():
        return "Outside UN"
    if h3 == "Americas" and h4:
        return h4
    return h3 or h2


def parse_disputes_html(html: str, source: str, countries: set[str] | None = None) -> pd.DataFrame:
    """A revision's HTML → territory, claimants, controller, region (one row per territory).

    ``countries``, when given, is the set of names that count as countries (BorderLines'
    countries_info); other claimants (e.g. unrecognised states in a claimant cell) are dropped from
    the row and listed in ``attrs["not_countries"]``. Rows left with fewer than two claimants are
    listed in ``attrs["excluded"]`` with the reason; a page without any disputes table raises.
    """
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "lxml")
    _clean(soup)
    headings = dict.fromkeys(LEVELS, "")
    records: dict[str, dict[str, Any]] = {}
    excluded: list[dict[str, str]] = []
    merged: list[dict[str, Any]] = []
    not_countries: set[str] = set()
    tables = 0
    for element in soup.find_all([*LEVELS, "table"]):
        if element.name != "table":
            headings[element.name] = _text(element)
            for lower in LEVELS[LEVELS.index(element.name) + 1 :]:
                headings[lower] = ""  # a new section ends the subsections of the previous one
            continue
        header = _header(element)
        claimants_col = _column(header, "claimant")
        if claimants_col is None or element.find_parent("table") is not None:
            continue
        tables += 1
        territory_col = _column(header, "territory", "area", "name") or 0
        region = _section_region(headings["h2"], headings["h3"], headings["h4"])
        for row in _grid(element):
            if len(row) <= max(claimants_col, territory_col) or row[claimants_col] is None:
                raise DisputesError(
                    f"{source}: a row of the table under {headings['h2']!r}/{headings['h3']!r} has {len(row)} cells; "
                    f"expected a {header[claimants_col]!r} cell at column {claimants_col + 1} — the page layout changed"
                )
            cell = row[claimants_col]
            claimants = _links(cell) or [c.strip() for c in _text(cell).split(",") if c.strip()]
            territories = _links(row[territory_col]) or [_text(row[territory_col])]
            territories = [t for t in territories if t not in claimants]
            if region is None:
                excluded += [
                    {"territory": t, "reason": f"section {headings['h2']!r} {headings['h3']!r}"} for t in territories
                ]
                continue
            if countries is not None:
                not_countries |= {c for c in claimants if c not in countries}
                claimants = [c for c in claimants if c in countries]
            controller = _controller(cell)
            for territory in territories:
                if territory in records:  # listed twice: claimants merge, disagreeing controllers → Unknown
                    known = records[territory]
                    known["claimants"] = list(dict.fromkeys(known["claimants"] + claimants))
                    if known["controller"] != controller:
                        merged.append(
                            {"territory": territory, "controllers": [known["controller"], controller], "now": UNKNOWN}
                        )
                        known["controller"] = UNKNOWN
                    continue
                records[territory] = {
                    "territory": territory,
                    "claimants": list(dict.fromkeys(claimants)),
                    "controller": controller,
                    "region": region,
                }
    if tables == 0:
        raise DisputesError(f"{source}: no table with a 'Claimants' column — the page layout changed")
    rows = []
    for rec in records.values():
        if len(rec["claimants"]) < 2:
            excluded.append(
                {"territory": rec["territory"], "reason": f"fewer than two country claimants {rec['claimants']}"}
            )
        else:
            rows.append(rec)
    frame = pd.DataFrame(rows, columns=["territory", "claimants", "controller", "region"])
    frame["population"] = float("nan")
    frame.attrs["excluded"] = excluded
    frame.attrs["merged_with_disagreeing_controllers"] = merged
    frame.attrs["not_countries"] = sorted(not_countries)
    frame.attrs["controller_not_claimant"] = [
        r["territory"] for r in rows if r["controller"] != UNKNOWN and r["controller"] not in r["claimants"]
    ]
    return frame


def revision_key(revision: Revision) -> str:
    """A partition key that sorts by date and names the exact revision: ``2023-05-15-r1154894956``."""
    return f"{revision.date}-r{revision.revid}"


def parse_revision_key(key: str) -> Revision:
    date, _, revid = key.partition("-r")
    if len(date) != 10 or not revid.isdigit():
        raise ValueError(f"revision partition key {key!r}: expected YYYY-MM-DD-r<revid>")
    return Revision(int(revid), f"{date}T00:00:00Z")


def resolve_revisions(wanted: list[str] | tuple[str, ...], client: MediaWikiClient | None) -> list[Revision]:
    """The revisions to evaluate: each date's then-current revision, and ``latest``.

    Offline (``client`` None) the BorderLines release's dated tables stand in: a date resolves to the
    newest dated table on or before it, ``latest`` to the newest one.
    """
    out: dict[int, Revision] = {}
    for item in wanted:
        item = str(item)
        if client is not None:
            revision = (
                client.revisions(DISPUTES_PAGE, limit=1)[0]
                if item == "latest"
                else client.revision_at(item, DISPUTES_PAGE)
            )
        else:
            dates = sorted(d for d in DATED_TABLES if item == "latest" or d <= item)
            if not dates:
                raise MediaWikiError(f"no offline disputes table on or before {item}; have {sorted(DATED_TABLES)}")
            revision = Revision(DATED_TABLES[dates[-1]][1], f"{dates[-1]}T00:00:00Z")
        out[revision.revid] = revision
    return sorted(out.values(), key=lambda r: r.timestamp)


# The release's language codes that Wikipedia names differently (Chinese scripts share zh.wikipedia).
WIKI_LANGUAGE = {"zhs": "zh", "zht": "zh"}


def fill_terms_from_langlinks(
    client: MediaWikiClient, terms: dict[str, dict[str, str]], gaps: list[dict[str, str]], territories: set[str]
) -> tuple[dict[str, dict[str, str]], list[dict[str, str]]]:
    """Territory names missing from the release's translations, taken from the title of the same
    Wikipedia article in that language (interlanguage links). Returns the augmented terms and what was
    filled (each a territory, language and title), so the source of every name stays visible."""
    wanted: dict[str, set[str]] = {}
    for gap in gaps:
        if gap["lang"] in terms:
            names = {n.strip() for n in gap["missing"].split(",")} & territories
            wanted.setdefault(gap["lang"], set()).update(names)
    out = {lang: dict(t) for lang, t in terms.items()}
    filled = []
    for lang, names in sorted(wanted.items()):
        titles = client.langlinks(sorted(names), WIKI_LANGUAGE.get(lang, lang))
        for name, title in sorted(titles.items()):
            out[lang][name] = title
            filled.append({"territory": name, "lang": lang, "title": title})
    return out, filled
