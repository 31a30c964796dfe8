"""Bad command-line input is refused with one `geomon:` line naming it and exit 1, before anything runs."""

from __future__ import annotations

import json

import pytest

from geomon.cli import main, plan, run, trends
from geomon.engine.client import GenerationRequest, GenerationResult
from geomon.engine.store import ResponseStore, response_key
from geomon_tests.conftest import write_settings


def _refused(capsys, argv: list[str]) -> str:
    """The one `geomon:` line ``argv`` ends in, after checking it exits 1 with nothing else on stderr."""
    code = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1 and lines[0].startswith("geomon: "), err
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["run", "--sample", "-3"], "--sample -3"),
        (["run", "--territories", "-1"], "--territories -1"),
        (["run", "--questions", "-2"], "--questions -2"),
        (["plan", "--detect", "-5"], "--detect -5"),
        (["plan", "--detect", "0"], "--detect 0"),
        (["trends", "--breakdown", "nonsense"], "--breakdown nonsense"),
        (["trends", "--breakdown", "family="], "--breakdown family="),
    ],
)
def test_values_no_command_can_use_are_refused_before_it_runs(argv, named, monkeypatch, capsys):
    ran = []
    for module, command in ((run, "cmd_run"), (plan, "cmd_plan"), (trends, "cmd_trends")):
        monkeypatch.setattr(module, command, lambda args, command=command: ran.append(command) or 0)
    line = _refused(capsys, argv)
    assert line.startswith(f"geomon: {named}: ") and not ran


def test_history_names_an_unknown_suite_or_model(tmp_path, wdi_snapshot_dir, capsys):
    settings = str(write_settings(tmp_path, wdi_snapshot_dir))
    line = _refused(capsys, ["--config", settings, "history", "--suite", "nosuch"])
    assert line.startswith("geomon: --suite nosuch: ") and "known: " in line and "gapminder, " in line
    line = _refused(capsys, ["--config", settings, "history", "--suite", "gapminder", "--model", "nosuchmodel"])
    assert line.startswith("geomon: --model nosuchmodel: ") and "evaluated: none yet" in line
    assert main(["--config", settings, "history", "--suite", "gapminder"]) == 0  # known, not evaluated yet
    assert capsys.readouterr().out.strip() == "no evaluations"


def test_unknown_suites_and_models_name_the_flag_and_exit_1(tmp_path, wdi_snapshot_dir, capsys):
    settings = str(write_settings(tmp_path, wdi_snapshot_dir))
    line = _refused(capsys, ["--config", settings, "plan", "--suites", "nosuch,other"])
    assert line.startswith("geomon: --suites: unknown suite(s) nosuch, other; known: worldbench, ")
    line = _refused(capsys, ["--config", settings, "plan", "--models", "nosuch"])
    assert line.startswith("geomon: --models: no model named 'nosuch' in the registry; known: ") and "[" not in line
    line = _refused(capsys, ["--config", settings, "ask", "nosuch", "hello?"])
    assert line.startswith("geomon: ask: no model named 'nosuch'")
    line = _refused(capsys, ["--config", settings, "plan", "--profile", "nosuch"])
    assert "unknown run profile 'nosuch'; known: " in line


def test_a_flag_a_suite_cannot_build_its_prompts_at_stops_the_run_before_it_asks(
    tmp_path, wdi_snapshot_dir, monkeypatch, capsys
):
    """The run's plan is made at its flags: one the suite's own stages refuse (an unknown persona, a year the data
    does not have) is one line naming the suite, the flag and why, before anything is asked or run."""
    dead = [{"name": "dead", "kind": "chat", "base_url": "http://127.0.0.1:9/v1", "model_id": "m"}]  # never asked
    settings = str(write_settings(tmp_path, wdi_snapshot_dir, models=dead, include_bundled=False))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    run = ["--config", settings, "run", "--models", "dead", "--profile", "quick", "--yes"]
    line = _refused(capsys, [*run, "--suite", "borderlines", "--personas", "vanilla,pirate"])
    assert line == (
        "geomon: suite borderlines: its prompts cannot be built at --personas vanilla,pirate: unknown persona(s) "
        "['pirate']; known: ['demographic', 'nationalist', 'un_peacekeeper', 'vanilla']"
    )
    line = _refused(capsys, [*run, "--suite", "worldbench", "--year", "1900"])
    assert line.startswith("geomon: suite worldbench: its prompts cannot be built at --year 1900: no questions")
    assert not (tmp_path / "storage").exists()  # no Dagster run was started


def test_store_commands_filter_by_model_and_name_an_unknown_one(tmp_path, wdi_snapshot_dir, capsys):
    settings = write_settings(tmp_path, wdi_snapshot_dir)
    store = ResponseStore(f"sqlite:///{tmp_path / 'store.sqlite'}")
    for model in ("alpha", "beta"):
        request = GenerationRequest("chat", messages=({"role": "user", "content": "hi"},), params={})
        store.put(response_key(model, request), model, model, "", request, GenerationResult(text="yes"), "test")
    store.dispose()
    assert main(["--config", str(settings), "store", "list", "--model", "beta"]) == 0
    listed = capsys.readouterr().out
    assert "beta" in listed and "alpha" not in listed
    out = tmp_path / "x.jsonl"
    line = _refused(capsys, ["--config", str(settings), "store", "export", "--model", "nosuch", "--out", str(out)])
    assert line == "geomon: --model nosuch: no stored answers of this model; stored: alpha, beta"
    assert not out.exists()
    _refused(capsys, ["--config", str(settings), "store", "list", "--model", "nosuch"])
    assert main(["--config", str(settings), "store", "export", "--model", "alpha", "--out", str(out)]) == 0
    assert [json.loads(row)["model"] for row in out.read_text().splitlines()] == ["alpha"]
