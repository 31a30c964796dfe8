"""HTML in the structure "List of territorial disputes" really has, built from a disputes table.

What ``action=parse`` returns for the page: sections as headings (the current skin wraps them in
``<div class="mw-heading">``; revisions parsed before 2024 used ``<h2><span class="mw-headline">``),
one ``wikitable`` per region with Territory | Claimants | Notes, claimants as flag icons + links with
the controller in bold, footnote markers, and rowspans where consecutive rows share claimants. The
regions sit under "Ongoing disputes between UN member states" (Americas split into North and South
America), then "... involving states outside the UN", "Disputes over territorial waters" and
"Antarctica", which the paper leaves out.
"""

from __future__ import annotations

import html
import itertools

import pandas as pd

UN_REGIONS = ["Africa", "Asia", "Europe", "Oceania"]
AMERICAS = ["North America", "North and Central America", "South America"]


def _heading(level: int, text: str, modern: bool) -> str:
    anchor = text.replace(" ", "_")
    edit = '<span class="mw-editsection"><span class="mw-editsection-bracket">[</span><a>edit</a>]</span>'
    if modern:
        heading = f'<h{level} id="{anchor}">{html.escape(text)}</h{level}>'
        return f'<div class="mw-heading mw-heading{level}">{heading}{edit}</div>'
    return f'<h{level}><span class="mw-headline" id="{anchor}">{html.escape(text)}</span>{edit}</h{level}>'


def _link(name: str) -> str:
    return f'<a href="/wiki/{html.escape(name.replace(" ", "_"))}" title="{html.escape(name)}">{html.escape(name)}</a>'


def _claimants_cell(claimants: list[str], controller: str, note: int) -> str:
    parts = []
    names = list(claimants) + ([controller] if controller != "Unknown" and controller not in claimants else [])
    for name in names:
        flag = '<span class="flagicon"><img alt="" src="//upload.wikimedia.org/flag.svg" width="23"></span>&nbsp;'
        link = _link(name)
        parts.append(flag + (f"<b>{link}</b>" if name == controller else link))
    cite = f'<sup id="cite_ref-{note}" class="reference"><a href="#cite_note-{note}">[{note}]</a></sup>'
    return "<br>".join(parts) + cite


def _table(rows: pd.DataFrame, rowspans: bool) -> str:
    out = ['<table class="wikitable sortable"><tbody>', "<tr><th>Territory</th><th>Claimants</th><th>Notes</th></tr>"]
    note = itertools.count(1)
    records = rows.to_dict("records")
    i = 0
    while i < len(records):
        rec = records[i]
        span = 1
        if rowspans:
            while (
                i + span < len(records)
                and list(records[i + span]["claimants"]) == list(rec["claimants"])
                and records[i + span]["controller"] == rec["controller"]
            ):
                span += 1
        attr = f' rowspan="{span}"' if span > 1 else ""
        out.append(
            f"<tr><td>{_link(rec['territory'])}</td>"
            f"<td{attr}>{_claimants_cell(list(rec['claimants']), rec['controller'], next(note))}</td>"
            f'<td>Disputed since 1900.<sup class="reference"><a>[{next(note)}]</a></sup></td></tr>'
        )
        for follower in records[i + 1 : i + span]:
            out.append(f"<tr><td>{_link(follower['territory'])}</td><td>Same claim.</td></tr>")
        i += span
    out.append("</tbody></table>")
    return "\n".join(out)


def disputes_page(
    disputes: pd.DataFrame, modern: bool = True, waters: pd.DataFrame | None = None, rowspans: bool = True
) -> str:
    """The page for ``disputes`` (territory, claimants, controller, region), plus excluded sections."""
    body = ['<div class="mw-content-ltr mw-parser-output" lang="en" dir="ltr">', "<p>This is a list of disputes.</p>"]
    body.append(_heading(2, "Ongoing disputes between UN member states", modern))
    for region in UN_REGIONS[:2]:
        body += [_heading(3, region, modern), _table(disputes[disputes["region"] == region], rowspans)]
    americas = [r for r in AMERICAS if (disputes["region"] == r).any()]
    if americas:
        body.append(_heading(3, "Americas", modern))
        for region in americas:
            body += [_heading(4, region, modern), _table(disputes[disputes["region"] == region], rowspans)]
    for region in UN_REGIONS[2:]:
        body += [_heading(3, region, modern), _table(disputes[disputes["region"] == region], rowspans)]
    body += [
        _heading(2, "Ongoing disputes involving states outside the UN", modern),
        _table(disputes[disputes["region"] == "Outside UN"], rowspans),
    ]
    if waters is not None:
        body += [_heading(2, "Disputes over territorial waters", modern), _table(waters, rowspans)]
        antarctic = pd.DataFrame(
            [{"territory": "Queen Maud Land", "claimants": ["Norway", "Chile"], "controller": "Unknown"}]
        )
        body += [_heading(2, "Antarctica", modern), _table(antarctic, rowspans)]
    body += [_heading(2, "See also", modern), "<ul><li>Border disputes</li></ul>", "</div>"]
    return "\n".join(body)
