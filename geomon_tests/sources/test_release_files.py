"""A release's files (``sources/release_files.py``): each downloaded once into the snapshot's layout and kept (a
second run reads the copy, without the server); a file the server lacks is an error naming its URL, and nothing is
written for it; a mapping file, JSON or YAML by its suffix, that is missing, unreadable or not a mapping is an
error naming the file."""

from __future__ import annotations

import pytest

from geomon.sources.release_files import ReleaseFiles, read_mapping
from geomon_tests.loopback import file_server


class ReleaseError(ValueError):
    """The error a source names its files with."""


def test_a_file_is_downloaded_once_and_kept(tmp_path):
    published = tmp_path / "published"
    (published / "data").mkdir(parents=True)
    (published / "data" / "a.json").write_text('{"a": 1}')
    with file_server(published) as url:
        files = ReleaseFiles(url + "/", tmp_path / "copy", "Toy", ReleaseError)
        got = files.get("data/a.json")
        assert got == tmp_path / "copy" / "data" / "a.json" and got.read_text() == '{"a": 1}'
        with pytest.raises(ReleaseError, match=rf"^Toy file {url}/data/b.json: HTTP 404$"):
            files.get("data/b.json")
    assert not (tmp_path / "copy" / "data" / "b.json").exists()
    (published / "data" / "a.json").write_text('{"a": 2}')  # the server is gone, and its file changed
    assert files.get("data/a.json").read_text() == '{"a": 1}'


def test_a_mapping_file_is_json_or_yaml_by_its_suffix_and_an_error_names_it(tmp_path):
    json_file, yaml_file = tmp_path / "m.json", tmp_path / "m.yaml"
    json_file.write_text('{"x": [1, 2]}')
    yaml_file.write_text("x: [1, 2]\n")
    assert read_mapping(json_file, ReleaseError) == read_mapping(yaml_file, ReleaseError) == {"x": [1, 2]}
    with pytest.raises(ReleaseError, match=r"gone.json: missing; the suite reads it$"):
        read_mapping(tmp_path / "gone.json", ReleaseError, "the suite reads it")
    json_file.write_text("x: [1, 2]\n")  # YAML in a .json file
    with pytest.raises(ReleaseError, match=r"m.json: not readable JSON"):
        read_mapping(json_file, ReleaseError)
    yaml_file.write_text("x: [1, 2\n")
    with pytest.raises(ReleaseError, match=r"m.yaml: not readable YAML"):
        read_mapping(yaml_file, ReleaseError)
    json_file.write_bytes(b'{"x": "\xff"}')  # not UTF-8
    with pytest.raises(ReleaseError, match=r"m.json: not readable JSON"):
        read_mapping(json_file, ReleaseError)
    yaml_file.write_text("- 1\n- 2\n")
    with pytest.raises(ReleaseError, match=r"m.yaml: expected a mapping, found list"):
        read_mapping(yaml_file, ReleaseError)
