"""The MediaWiki API client (``sources/mediawiki.py``) against a loopback server speaking its wire format: a page's
revisions (with continuation), a revision's HTML, interlanguage links, errors, maxlag and the rate limit."""

from __future__ import annotations

import json
import time
from urllib.parse import parse_qs, urlparse

import pytest

from geomon.sources import mediawiki
from geomon_tests.loopback import JSONHandler, serve

PAGE = "List of territorial disputes"  # the one page the loopback wiki has

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
                        "title": PAGE,
                        "revid": int(q["oldid"]),
                        "text": self.state["pages"][q["oldid"]],
                    }
                }
            )
        elif q.get("prop") == "revisions":
            if q["titles"] != PAGE:
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
def loopback_wiki():
    state = {
        "calls": [],
        "pages": {"1154894956": "<p>page</p>"},
        "langlinks": {("Crimea", "uk"): "Кримський півострів", ("Golan Heights", "he"): "רמת הגולן"},
    }
    with serve(MediaWiki, state) as url:
        yield (
            mediawiki.MediaWikiClient(
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


def test_revision_history_follows_continuation_and_dates(loopback_wiki, monkeypatch):
    client, state = loopback_wiki
    clock = FakeClock()
    monkeypatch.setattr(mediawiki, "time", clock)
    revisions = client.revisions(PAGE)
    assert [r.revid for r in revisions] == [r["revid"] for r in REVISIONS]
    assert len(state["calls"]) == 3  # pages of two
    assert client.revision_at("2023-05-15", PAGE) == mediawiki.Revision(1154894956, "2023-05-15T10:11:12Z")
    assert client.revision_at("2021-09-01", PAGE).revid == 1041639056
    with pytest.raises(mediawiki.MediaWikiError, match="no revision on or before 2020-01-01"):
        client.revision_at("2020-01-01", PAGE)
    # Polite: our User-Agent on every call, and never two calls closer than the minimum interval.
    assert {agent for _, _, agent in state["calls"]} == {"geomon-tests (ops@example.org)"}
    # Every call after the first waited out the whole interval (no time passes between them here).
    assert clock.sleeps == [pytest.approx(0.05)] * (len(state["calls"]) - 1)


def test_revision_html_langlinks_and_errors(loopback_wiki):
    client, state = loopback_wiki
    assert client.revision_html(1154894956) == "<p>page</p>"
    with pytest.raises(mediawiki.MediaWikiError, match="nosuchrevid: There is no revision with ID 42"):
        client.revision_html(42)
    assert client.langlinks(["Crimea", "Golan_Heights", "Atlantis"], "uk") == {"Crimea": "Кримський півострів"}
    assert client.langlinks(["Golan_Heights"], "he") == {"Golan_Heights": "רמת הגולן"}
    with pytest.raises(mediawiki.MediaWikiError, match="does not exist"):
        client.revisions("No such page")
    state["lagged"] = 2  # replica lag: the API says maxlag with Retry-After; the client waits and retries
    assert client.revision_html(1154894956) == "<p>page</p>"
    state["lagged"] = 10
    with pytest.raises(mediawiki.MediaWikiError, match="maxlag"):
        client.revision_html(1154894956)


def test_the_settings_make_a_polite_client():
    client = mediawiki.MediaWikiSettings(api_url="http://mirror.local/w/api.php", min_interval_s=0.5).client()
    assert (client.api_url, client.min_interval_s) == ("http://mirror.local/w/api.php", 0.5)
    assert client.session.headers["User-Agent"] == mediawiki.USER_AGENT  # no contact set: geomon's own
    contact = mediawiki.MediaWikiSettings(user_agent="geomon-at-acme (ops@acme.example)").client()
    assert contact.session.headers["User-Agent"] == "geomon-at-acme (ops@acme.example)"
