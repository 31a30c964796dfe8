"""A polite, minimal client of the MediaWiki Action API (``api.php``), for every suite that reads a wiki: a page's
revision history (ids, timestamps), the HTML of any revision (``action=parse&oldid=``) and interlanguage links.
The base URL is configurable (``mediawiki:`` in geomon.yaml: a mirror, or a loopback server in tests); every request
carries a descriptive User-Agent, asks with ``maxlag`` and keeps a minimum interval between calls, as Wikimedia's
API etiquette asks."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: loading the code location does not need it (its import time)
    import requests

DEFAULT_API_URL = "https://en.wikipedia.org/w/api.php"
USER_AGENT = "geomon/0.1 (LLM geopolitical-disparity monitor; https://github.com/geomon/geomon)"


class MediaWikiError(RuntimeError):
    """The MediaWiki API answered with an error or something that is not its wire format."""


@dataclass(frozen=True)
class Revision:
    revid: int
    timestamp: str  # ISO 8601, UTC

    @property
    def date(self) -> str:
        return self.timestamp[:10]


class MediaWikiClient:
    """A polite, minimal MediaWiki Action API client (JSON, formatversion 2)."""

    def __init__(
        self,
        api_url: str = DEFAULT_API_URL,
        user_agent: str = USER_AGENT,
        min_interval_s: float = 1.0,
        timeout_s: float = 30.0,
        max_retries: int = 3,
        session: requests.Session | None = None,
    ) -> None:
        self.api_url = api_url
        self.min_interval_s = min_interval_s
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        import requests

        self.session = session or requests.Session()
        self.session.headers["User-Agent"] = user_agent
        self._last_call = 0.0
        self.calls = 0

    def get(self, **params: Any) -> dict[str, Any]:
        """One API call; honours ``maxlag`` / 429 answers with their Retry-After, then gives up clearly."""
        import requests

        query = {"format": "json", "formatversion": "2", "maxlag": "5", **params}
        for attempt in range(self.max_retries + 1):
            wait = self._last_call + self.min_interval_s - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            self._last_call = time.monotonic()
            self.calls += 1
            try:
                response = self.session.get(self.api_url, params=query, timeout=self.timeout_s)
            except requests.RequestException as exc:
                raise MediaWikiError(f"{self.api_url}: {type(exc).__name__}: {exc}") from exc
            retry_after = response.headers.get("Retry-After")
            lagged = response.status_code in (429, 503) or (response.ok and retry_after and "maxlag" in response.text)
            if lagged and attempt < self.max_retries:
                time.sleep(min(float(retry_after or 5), 60.0))
                continue
            if not response.ok:
                raise MediaWikiError(f"{self.api_url} {params.get('action')}: HTTP {response.status_code}")
            try:
                doc = response.json()
            except ValueError as exc:
                raise MediaWikiError(f"{self.api_url}: answer is not JSON: {response.text[:200]!r}") from exc
            if "error" in doc:
                error = doc["error"]
                raise MediaWikiError(f"{self.api_url} {params}: {error.get('code')}: {error.get('info')}")
            return doc
        raise MediaWikiError(f"{self.api_url}: still lagged/rate-limited after {self.max_retries} retries")

    def revisions(
        self, title: str, since: str | None = None, until: str | None = None, limit: int = 500
    ) -> list[Revision]:
        """Revisions of ``title``, newest first, optionally between two ISO dates; follows ``continue``."""
        params: dict[str, Any] = {
            "action": "query",
            "prop": "revisions",
            "titles": title,
            "rvprop": "ids|timestamp",
            "rvdir": "older",
            "rvlimit": str(min(limit, 500)),
        }
        if until:
            params["rvstart"] = until if "T" in until else f"{until}T23:59:59Z"
        if since:
            params["rvend"] = since if "T" in since else f"{since}T00:00:00Z"
        out: list[Revision] = []
        while len(out) < limit:
            doc = self.get(**params)
            pages = doc.get("query", {}).get("pages", [])
            if not pages or pages[0].get("missing"):
                raise MediaWikiError(f"{self.api_url}: page {title!r} does not exist")
            out += [Revision(int(r["revid"]), r["timestamp"]) for r in pages[0].get("revisions", [])]
            if "continue" not in doc:
                break
            params.update(doc["continue"])
        return out[:limit]

    def revision_at(self, date: str, title: str) -> Revision:
        """The revision of ``title`` that was current at the end of ``date`` (YYYY-MM-DD)."""
        found = self.revisions(title, until=date, limit=1)
        if not found:
            raise MediaWikiError(f"{self.api_url}: page {title!r} has no revision on or before {date}")
        return found[0]

    def revision_html(self, revid: int) -> str:
        """The rendered HTML of one revision."""
        doc = self.get(action="parse", oldid=str(revid), prop="text")
        text = doc.get("parse", {}).get("text")
        if not isinstance(text, str):
            raise MediaWikiError(f"{self.api_url}: parse of revision {revid} has no HTML text")
        return text

    def langlinks(self, titles: list[str], lang: str) -> dict[str, str]:
        """English title → the title of the same article in ``lang`` (absent where there is none)."""
        out: dict[str, str] = {}
        for start in range(0, len(titles), 50):  # the API's limit of titles per request
            doc = self.get(
                action="query",
                prop="langlinks",
                titles="|".join(titles[start : start + 50]),
                lllang=lang,
                redirects="1",
            )
            query = doc.get("query", {})
            renamed = {r["to"]: r["from"] for r in query.get("normalized", []) + query.get("redirects", [])}
            for page in query.get("pages", []):
                links = page.get("langlinks") or []
                if links:
                    out[renamed.get(page["title"], page["title"])] = links[0]["title"]
        return out


@dataclass
class MediaWikiSettings:
    """The ``mediawiki:`` section of geomon.yaml: the API every suite that reads a wiki asks (live)."""

    api_url: str = DEFAULT_API_URL  # GEOMON_WIKIPEDIA_API_URL overrides it
    user_agent: str = ""  # Wikimedia asks for contact details in the User-Agent; set yours here
    min_interval_s: float = 1.0  # between API calls

    def client(self) -> MediaWikiClient:
        """A client for the configured API, polite and rate-limited."""
        agent = self.user_agent or USER_AGENT
        return MediaWikiClient(self.api_url, user_agent=agent, min_interval_s=self.min_interval_s)
