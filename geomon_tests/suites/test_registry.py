"""The suite registry: a benchmark is one domain module + one defs folder, found without being named."""

from __future__ import annotations

import sys

import pytest

import geomon.suites
from geomon.suites import registry

TOY = """
from geomon.suites.registry import Headline, RunOption, SuiteInfo

SUITE = SuiteInfo(
    name="toybench",
    title="ToyBench",
    spec="a test",
    headlines=(Headline("toy_gap", "ToyBench: the gap"),),
    options=(RunOption("--toy-size", "ToyBench: items", int, 3),),
    order=50,
)

def build_prompts(): ...
def requests_for(prompts, spec): ...
def score(prompts, responses): ...
def diagnose(scores): ...
def items(scores): ...
REGRESSION_METRICS = {}
"""


@pytest.fixture
def toy_suite(tmp_path, monkeypatch):
    (tmp_path / "toybench.py").write_text(TOY)
    monkeypatch.setattr(geomon.suites, "__path__", [*geomon.suites.__path__, str(tmp_path)])
    yield "toybench"
    sys.modules.pop("geomon.suites.toybench", None)


def test_the_built_suites_are_registered_in_run_order():
    assert list(registry.suites()) == ["worldbench", "borderlines", "gapminder", "quench", "saged"]
    for name in registry.suites():
        module = registry.module(name)
        assert all(hasattr(module, attr) for attr in registry.PROTOCOL)


def test_a_new_suite_module_is_found_by_the_cli_and_the_trends_report(toy_suite):
    from geomon.cli import build_parser
    from geomon.report.trends import headlines

    assert list(registry.suites()) == ["worldbench", "borderlines", "gapminder", "quench", "saged", "toybench"]
    args = build_parser().parse_args(["run", "--suite", "toybench", "--toy-size", "7"])
    assert [s.name for s in registry.resolve(args.suite)] == ["toybench"] and args.toy_size == 7
    assert ("toybench", "toy_gap", "", "ToyBench: the gap") in headlines()


def test_unknown_suites_and_incomplete_modules_are_clear_errors(tmp_path, monkeypatch):
    known = "worldbench, borderlines, gapminder, quench, saged"
    with pytest.raises(registry.SuiteError, match=rf"unknown suite\(s\) \['nope'\]; known: {known}"):
        registry.resolve("worldbench,nope")
    (tmp_path / "halfbench.py").write_text(TOY.replace("toybench", "halfbench").replace("def diagnose", "def _d"))
    monkeypatch.setattr(geomon.suites, "__path__", [*geomon.suites.__path__, str(tmp_path)])
    try:
        with pytest.raises(registry.SuiteError, match=r"geomon\.suites\.halfbench lacks diagnose"):
            registry.suites()
    finally:
        sys.modules.pop("geomon.suites.halfbench", None)


def test_every_registered_suite_has_its_defs_folder_in_the_definitions():
    from geomon.definitions import defs
    from geomon.defs.runs import suite_runs

    prefixes = {key.path[0] for key in defs.resolve_asset_graph().get_all_asset_keys()}
    for name in registry.suites():
        assert name in prefixes
        assert callable(suite_runs(name).run_from_options) and callable(suite_runs(name).materialize)
        assert defs.resolve_job_def(f"{name}_per_model")
