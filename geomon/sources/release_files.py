"""Fetching a dataset release's files over HTTP into a local folder laid out as the offline snapshot
(BorderLines' and Gapminder's GitHub-hosted files): files already there are kept."""

from __future__ import annotations

from pathlib import Path


class ReleaseFiles:
    """``get(relative)`` → the local copy of ``base_url/relative`` under ``dest``."""

    def __init__(self, base_url: str, dest: str | Path, what: str, error: type[Exception], timeout_s: float = 30.0):
        import requests

        self.base_url = base_url.rstrip("/")
        self.dest = Path(dest)
        self.what = what
        self.error = error
        self.timeout_s = timeout_s
        self.session = requests.Session()

    def get(self, relative: str) -> Path:
        """Download once; a file the server does not have is an error naming its URL."""
        target = self.dest / relative
        if not target.is_file():
            url = f"{self.base_url}/{relative}"
            response = self.session.get(url, timeout=self.timeout_s)
            if not response.ok:
                raise self.error(f"{self.what} file {url}: HTTP {response.status_code}")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(response.content)
        return target
