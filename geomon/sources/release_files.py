"""A dataset release's files: fetched over HTTP into a local folder laid out as the offline snapshot
(BorderLines' and Gapminder's GitHub-hosted files; files already there are kept), and read with errors
that name the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


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


def read_mapping(path: Path, error: type[Exception], missing_because: str = "the release needs it") -> dict[str, Any]:
    """A file holding one mapping, JSON or (by its suffix) YAML. Missing, unreadable or not a mapping is an
    ``error`` naming the file."""
    import yaml

    if not path.is_file():
        raise error(f"{path}: missing; {missing_because}")
    as_yaml = path.suffix in {".yaml", ".yml"}
    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text) if as_yaml else json.loads(text)
    except (ValueError, yaml.YAMLError) as exc:  # JSON's and UTF-8's decoding errors are ValueErrors
        raise error(f"{path}: not readable {'YAML' if as_yaml else 'JSON'} ({exc})") from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected a mapping, found {type(data).__name__}")
    return data
