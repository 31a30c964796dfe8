"""The BorderLines release fetched over HTTP (a loopback server serving the release's files)."""

from __future__ import annotations

import functools
from http.server import SimpleHTTPRequestHandler

import pytest

from geomon.sources.borderlines import DisputesError, fetch_release, read_snapshot
from geomon_tests.conftest import SHARED
from geomon_tests.loopback import serve

ROOT = SHARED / "snapshots" / "borderlines"


class QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def file_server(directory):
    """Serve ``directory``'s files the way GitHub's raw host serves the release's."""
    return serve(functools.partial(QuietFiles, directory=str(directory)))


def test_fetch_release_then_read_it_like_the_snapshot(tmp_path):
    with file_server(ROOT) as url:
        fetched = fetch_release(url, tmp_path / "release")
    data = read_snapshot(fetched)
    assert (
        len(data.templates) == 49
        and len(data.terms) == 49
        and set(data.personas)
        == {
            "vanilla",
            "un_peacekeeper",
            "nationalist",
            "demographic",
        }
    )
    assert data.report == read_snapshot(ROOT).report


def test_a_missing_release_file_names_its_url(tmp_path):
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "countries_info.json").write_text("{}")
    with file_server(partial) as url, pytest.raises(DisputesError, match=r"disputed_territories.csv: HTTP 404"):
        fetch_release(url, tmp_path / "release")
