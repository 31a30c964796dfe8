"""BorderLines' table from Wikipedia (``suites/borderlines/wikipedia.py``): the disputes-table parser on pages in
the real structure, the revisions a run evaluates (offline the release's dated tables, live through the shared
MediaWiki client against the loopback wiki) and names filled from interlanguage links."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from geomon.sources.mediawiki import MediaWikiError
from geomon.suites.borderlines import wikipedia
from geomon.suites.borderlines.prompts import build_queries
from geomon.suites.borderlines.source import DisputesError, read_disputes, read_snapshot
from geomon_tests.conftest import SHARED
from geomon_tests.suites.borderlines.wikipedia_pages import disputes_page

ROOT = SHARED / "snapshots" / "borderlines"
COLUMNS = ["territory", "claimants", "controller", "region"]


def _countries(table: pd.DataFrame) -> set[str]:
    info = json.loads((ROOT / "countries_info.json").read_text(encoding="utf-8"))
    return set(info) | {c for names in table["claimants"] for c in names}


def _same(parsed: pd.DataFrame, expected: pd.DataFrame) -> None:
    left = parsed[COLUMNS].sort_values("territory", ignore_index=True)
    right = expected[COLUMNS].sort_values("territory", ignore_index=True)
    pd.testing.assert_frame_equal(left, right)


def test_the_2023_table_round_trips_through_the_current_page_structure():
    table = read_disputes(ROOT / "disputed_territories.csv")
    waters = pd.DataFrame(
        [{"territory": "Sea of Galilee shelf", "claimants": ["Israel", "Syria"], "controller": "Israel"}]
    )
    page = disputes_page(table, modern=True, waters=waters)
    parsed = wikipedia.parse_disputes_html(page, "revision 1154894956", _countries(table))
    _same(parsed, table)
    assert {e["territory"] for e in parsed.attrs["excluded"]} == {"Sea of Galilee shelf", "Queen Maud Land"}
    # The published quirk survives: Artsakh controls the Lachin corridor but is no claimant country.
    assert parsed.attrs["controller_not_claimant"] == ["Lachin corridor"]


def test_the_2021_table_round_trips_through_the_older_heading_markup():
    table = read_disputes(ROOT / "data_misc" / "disputed_territories_2021-08.csv")
    page = disputes_page(table, modern=False, rowspans=False)
    _same(wikipedia.parse_disputes_html(page, "revision 1041639056", _countries(table)), table)


def test_page_conventions_controller_duplicates_and_non_countries():
    table = pd.DataFrame(
        [
            {"territory": "Kashmir", "claimants": ["India", "Pakistan"], "controller": "Unknown", "region": "Asia"},
            {"territory": "Kashmir", "claimants": ["India", "China"], "controller": "India", "region": "Asia"},
            {"territory": "Islet", "claimants": ["Somaliland", "Somalia"], "controller": "Somalia", "region": "Africa"},
            {
                "territory": "Rock",
                "claimants": ["Chile", "Argentina"],
                "controller": "Chile",
                "region": "South America",
            },
        ]
    )
    argentina = '<a href="/wiki/Argentina" title="Argentina">Argentina</a>'
    page = disputes_page(table, rowspans=False).replace(argentina, f"<b>{argentina}</b>")  # two in bold
    parsed = wikipedia.parse_disputes_html(
        page, "fixture", {"India", "Pakistan", "China", "Somalia", "Chile", "Argentina"}
    )
    rows = parsed.set_index("territory")
    # Listed twice with different controllers: claimants merge, control becomes Unknown.
    assert rows.at["Kashmir", "claimants"] == ["India", "Pakistan", "China"]
    assert rows.at["Kashmir", "controller"] == "Unknown"
    assert rows.at["Rock", "controller"] == "Unknown"
    assert [m["territory"] for m in parsed.attrs["merged_with_disagreeing_controllers"]] == ["Kashmir"]
    assert "Islet" not in rows.index  # Somaliland is not a country: one claimant left
    assert parsed.attrs["not_countries"] == ["Somaliland"]
    assert parsed.attrs["excluded"] == [
        {"territory": "Islet", "reason": "fewer than two country claimants ['Somalia']"}
    ]


def test_a_changed_page_layout_is_an_error_not_an_empty_table():
    with pytest.raises(DisputesError, match="no table with a 'Claimants' column"):
        wikipedia.parse_disputes_html("<table><tr><th>Area</th><th>Owner</th></tr></table>", "revision 7")
    broken = (
        "<h2>Asia</h2><table><tr><th>Notes</th><th>Territory</th><th>Claimants</th></tr><tr><td>x</td></tr></table>"
    )
    with pytest.raises(DisputesError, match=r"revision 8: a row .* expected a 'Claimants' cell at column 3"):
        wikipedia.parse_disputes_html(broken, "revision 8")


def test_offline_revisions_are_the_release_dated_tables():
    revisions = wikipedia.resolve_revisions(["2021-08-31", "2023-05-15", "latest"], None)
    assert [wikipedia.revision_key(r) for r in revisions] == ["2021-08-31-r1041639056", "2023-05-15-r1154894956"]
    with pytest.raises(MediaWikiError, match="no offline disputes table on or before 2020-01-01"):
        wikipedia.resolve_revisions(["2020-01-01"], None)


def test_live_revisions_are_the_pages_revisions_current_on_each_date(loopback_wiki):
    client, _ = loopback_wiki
    live = wikipedia.resolve_revisions(["2021-08-31", "2023-05-15", "latest"], client)
    assert [wikipedia.revision_key(r) for r in live] == [
        "2021-08-31-r1041639056",
        "2023-05-15-r1154894956",
        "2024-10-01-r1250000000",
    ]
    assert wikipedia.parse_revision_key("2023-05-15-r1154894956").revid == 1154894956


def test_missing_territory_names_come_from_interlanguage_links(loopback_wiki):
    client, state = loopback_wiki
    state["langlinks"][("Crimea", "zh")] = "克里米亚"
    data = read_snapshot(ROOT)
    crimea = data.with_disputes(data.disputes[data.disputes["territory"] == "Crimea"])
    terms = {lang: dict(t) for lang, t in data.terms.items()}
    for lang in ("uk", "zhs"):
        terms[lang].pop("Crimea", None)
    gappy = type(crimea)(crimea.disputes, crimea.countries, crimea.templates, terms, crimea.personas)
    gaps = build_queries(gappy).attrs["gaps"]
    assert {g["lang"] for g in gaps if "Crimea" in g["missing"]} >= {"uk"}
    filled_terms, filled = wikipedia.fill_terms_from_langlinks(client, terms, gaps, {"Crimea"})
    assert {"territory": "Crimea", "lang": "uk", "title": "Кримський півострів"} in filled
    assert filled_terms["uk"]["Crimea"] == "Кримський півострів" and "Crimea" not in terms["uk"]  # input untouched
    queries = build_queries(type(crimea)(crimea.disputes, crimea.countries, crimea.templates, filled_terms))
    assert "Кримський півострів" in queries.set_index("lang").at["uk", "query"]
