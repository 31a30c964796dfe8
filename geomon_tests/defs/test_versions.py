"""Code versions (``defs/versions.py``): a hash of the source an asset runs, so a changed prompt, parser or formula
marks what the old code built as stale and nothing else does; a YAML suite's file hashes as the same text in a
module would (decoded, universal newlines, a last newline), whatever line endings it was saved with."""

from __future__ import annotations

import importlib.util
import sys
import warnings

import dagster as dg
import pandas as pd

from geomon.defs.versions import sample_label, source_version, versioned_output

SOURCE = 'PROMPT = "Which country is {q} in?"\n\n\ndef score(reply):\n    return reply.strip()\n'


def _module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # inspect.getsource finds a module's file through sys.modules
    spec.loader.exec_module(module)
    return module


def test_a_version_is_the_source_and_changes_with_any_character_of_it(tmp_path, monkeypatch):
    path = tmp_path / "toy_suite_module.py"
    path.write_text(SOURCE)
    monkeypatch.setitem(sys.modules, "toy_suite_module", None)
    module = _module(path, "toy_suite_module")
    version = source_version(module)
    assert len(version) == 12 and version == source_version(path)  # a module and its file: one version
    assert source_version(tmp_path / "toy_suite_module.py") == version  # the same source again: the same version
    changed = tmp_path / "changed.py"
    changed.write_text(SOURCE.replace("{q} in?", "{q} in? "))
    assert source_version(changed) != version
    assert source_version(path, changed) not in {version, source_version(changed)}  # every module counts


def test_a_files_line_endings_and_last_newline_do_not_change_its_version(tmp_path):
    unix, windows, unfinished = tmp_path / "unix.yaml", tmp_path / "windows.yaml", tmp_path / "unfinished.yaml"
    text = "name: capitals\nprompt: 'Capital of {country}?'\n"
    unix.write_text(text)
    windows.write_bytes(text.replace("\n", "\r\n").encode())
    unfinished.write_text(text.rstrip("\n"))
    assert source_version(unix) == source_version(windows) == source_version(unfinished)


def test_a_data_version_is_set_without_a_warning_and_a_sample_is_labelled_with_its_size():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Dagster's beta warning would fail here: geomon silences it once, there
        output = versioned_output(1, "wdi-2025-07", metadata={"rows": 3})
    assert output.data_version == dg.DataVersion("wdi-2025-07") and output.metadata["rows"].value == 3
    prompts = pd.DataFrame({"prompt": ["a", "b", "c"]})
    label = sample_label(prompts)
    assert label.endswith(" (3 prompts)") and label.split(" ")[0] == sample_label(prompts.copy()).split(" ")[0]
    assert label.split(" ")[0] != sample_label(prompts.iloc[:2]).split(" ")[0]
