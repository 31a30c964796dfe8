"""Wikipedia: the disputes-table parser on pages in the real structure, and the MediaWiki API client
against a loopback server speaking its wire format."""

from __future__ import annotations

import json
import time
from urllib.parse import parse_qs, urlparse

import pandas as pd
import pytest

from geomon.sources import wikipedia
from geomon.sources.borderlines import DisputesError, read_disputes
from geomon_tests.conftest import SHARED
from geomon_tests.loopback import JSONHandler, serve
from geomon_tests.sources.wikipedia_pages import disputes_page

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


REVISIONS = [  # newest first, as the API lists them
    {"revid": 1250000000, "parentid": 1154894956, "timestamp": "2024-10-01T08:00:00Z"},
    {"revid": 1154894956, "parentid": 1150000000, "timestamp": "2023-05-15T10:11:12Z"},
    {"revid": 1150000000, "parentid": 1062730688, "timestamp": "2023-04-20T00:00:00Z"},
    {"revid": 1062730688, "parentid": 1041639056, "timestamp": "2021-12-30T01:02:03Z"},
    {"revid": 1041639056, "parentid": 0, "timestamp": "2021-08-31T05:06:07Z"},
]


class MediaWiki(JSONHandler):
    """Enough of api.php (formatversion=2) for geomon: revisions (with continuation), parse, langlinks."""

    def do_GET(self) -> None:
        q = {k: v[0] for k, v in parse_qs(urlparse(self.path).query).items()}
        self.state["calls"].append((time.monotonic(), q, self.headers.get("User-Agent")))
        if self.state.get("lagged", 0) > 0:
            self.state["lagged"] -= 1
            self.send_response(200)
            body = json.dumps({"error": {"code": "maxlag", "info": "Waiting for a database server: 3 seconds lagged."}})
            self.send_header("Retry-After", "0")
            self.end_headers()
            self.wfile.write(body.encode())
            return
        assert q["format"] == "json" and q["formatversion"] == "2"
        if q["action"] == "parse":
            if q["oldid"] not in self.state["pages"]:
                self.send_json(
                    {"error": {"code": "nosuchrevid", "info": f"There is no revision with ID {q['oldid']}."}}
                )
                return
            self.send_json(
                {
                    "parse": {
                        "title": wikipedia.DISPUTES_PAGE,
                        "revid": int(q["oldid"]),
                        "text": self.state["pages"][q["oldid"]],
                    }
                }
            )
        elif q.get("prop") == "revisions":
            if q["titles"] != wikipedia.DISPUTES_PAGE:
                self.send_json(
                    {"batchcomplete": True, "query": {"pages": [{"ns": 0, "title": q["titles"], "missing": True}]}}
                )
                return
            revs = [r for r in REVISIONS if "rvstart" not in q or r["timestamp"] <= q["rvstart"]]
            start = int(q.get("rvcontinue", 0))
            size = int(q["rvlimit"]) if q["rvlimit"] != "max" else 500
            size = min(size, 2)  # pages of two, so the client must follow `continue`
            body = {
                "query": {
                    "pages": [{"pageid": 1, "ns": 0, "title": q["titles"], "revisions": revs[start : start + size]}]
                }
            }
            if start + size < len(revs):
                body["continue"] = {"rvcontinue": str(start + size), "continue": "||"}
            self.send_json(body)
        elif q.get("prop") == "langlinks":
            titles = q["titles"].split("|")
            normalized = [{"fromencoded": False, "from": t, "to": t.replace("_", " ")} for t in titles if "_" in t]
            pages = []
            for t in titles:
                title = t.replace("_", " ")
                links = self.state["langlinks"].get((title, q["lllang"]))
                pages.append(
                    {
                        "ns": 0,
                        "title": title,
                        **({"langlinks": [{"lang": q["lllang"], "title": links}]} if links else {}),
                    }
                )
            self.send_json({"batchcomplete": True, "query": {"normalized": normalized, "pages": pages}})
        else:
            self.send_json({"error": {"code": "badvalue", "info": "Unrecognized value"}})


@pytest.fixture
def mediawiki():
    state = {
        "calls": [],
        "pages": {"1154894956": "<p>page</p>"},
        "langlinks": {("Crimea", "uk"): "Кримський півострів", ("Golan Heights", "he"): "רמת הגולן"},
    }
    with serve(MediaWiki, state) as url:
        yield (
            wikipedia.MediaWikiClient(
                f"{url}/w/api.php", user_agent="geomon-tests (ops@example.org)", min_interval_s=0.05
            ),
            state,
        )


class FakeClock:
    """Stands in for the client's ``time``: the clock moves only when the client sleeps, so the rate
    limit is checked without reading a wall clock (a loaded machine cannot make it fail)."""

    def __init__(self) -> None:
        self.now = 1000.0  # like a real monotonic clock, well past the client's initial "last call"
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_revision_history_follows_continuation_and_dates(mediawiki, monkeypatch):
    client, state = mediawiki
    clock = FakeClock()
    monkeypatch.setattr(wikipedia, "time", clock)
    revisions = client.revisions()
    assert [r.revid for r in revisions] == [r["revid"] for r in REVISIONS]
    assert len(state["calls"]) == 3  # pages of two
    assert client.revision_at("2023-05-15") == wikipedia.Revision(1154894956, "2023-05-15T10:11:12Z")
    assert client.revision_at("2021-09-01").revid == 1041639056
    assert wikipedia.revision_key(client.revision_at("2023-05-15")) == "2023-05-15-r1154894956"
    live = wikipedia.resolve_revisions(["2021-08-31", "latest"], client)
    assert [r.revid for r in live] == [1041639056, 1250000000]
    # Polite: our User-Agent on every call, and never two calls closer than the minimum interval.
    assert {agent for _, _, agent in state["calls"]} == {"geomon-tests (ops@example.org)"}
    # Every call after the first waited out the whole interval (no time passes between them here).
    assert clock.sleeps == [pytest.approx(0.05)] * (len(state["calls"]) - 1)


def test_revision_html_langlinks_and_errors(mediawiki):
    client, state = mediawiki
    assert client.revision_html(1154894956) == "<p>page</p>"
    with pytest.raises(wikipedia.WikipediaError, match="nosuchrevid: There is no revision with ID 42"):
        client.revision_html(42)
    assert client.langlinks(["Crimea", "Golan_Heights", "Atlantis"], "uk") == {"Crimea": "Кримський півострів"}
    assert client.langlinks(["Golan_Heights"], "he") == {"Golan_Heights": "רמת הגולן"}
    with pytest.raises(wikipedia.WikipediaError, match="does not exist"):
        client.revisions(title="No such page")
    state["lagged"] = 2  # replica lag: the API says maxlag with Retry-After; the client waits and retries
    assert client.revision_html(1154894956) == "<p>page</p>"
    state["lagged"] = 10
    with pytest.raises(wikipedia.WikipediaError, match="maxlag"):
        client.revision_html(1154894956)


def test_offline_revisions_are_the_release_dated_tables():
    revisions = wikipedia.resolve_revisions(["2021-08-31", "2023-05-15", "latest"], None)
    assert [wikipedia.revision_key(r) for r in revisions] == ["2021-08-31-r1041639056", "2023-05-15-r1154894956"]
    with pytest.raises(wikipedia.WikipediaError, match="no offline disputes table on or before 2020-01-01"):
        wikipedia.resolve_revisions(["2020-01-01"], None)


def test_missing_territory_names_come_from_interlanguage_links(mediawiki):
    from geomon.sources.borderlines import read_snapshot
    from geomon.suites import borderlines

    client, state = mediawiki
    state["langlinks"][("Crimea", "zh")] = "克里米亚"
    data = read_snapshot(ROOT)
    crimea = data.with_disputes(data.disputes[data.disputes["territory"] == "Crimea"])
    terms = {lang: dict(t) for lang, t in data.terms.items()}
    for lang in ("uk", "zhs"):
        terms[lang].pop("Crimea", None)
    gappy = type(crimea)(crimea.disputes, crimea.countries, crimea.templates, terms, crimea.personas)
    gaps = borderlines.build_queries(gappy).attrs["gaps"]
    assert {g["lang"] for g in gaps if "Crimea" in g["missing"]} >= {"uk"}
    filled_terms, filled = wikipedia.fill_terms_from_langlinks(client, terms, gaps, {"Crimea"})
    assert {"territory": "Crimea", "lang": "uk", "title": "Кримський півострів"} in filled
    assert filled_terms["uk"]["Crimea"] == "Кримський півострів" and "Crimea" not in terms["uk"]  # input untouched
    queries = borderlines.build_queries(type(crimea)(crimea.disputes, crimea.countries, crimea.templates, filled_terms))
    assert "Кримський півострів" in queries.set_index("lang").at["uk", "query"]
