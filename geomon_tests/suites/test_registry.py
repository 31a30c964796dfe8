"""The suite registry: a benchmark is one domain module + one defs folder, found without being named."""

from __future__ import annotations

import sys

import pytest

import geomon.suites
from geomon.suites import registry
from geomon.suites.pipeline import Pipeline
from geomon_tests import snapshot

BUNDLED = snapshot.expected()["suites"]  # the bundled suites in run order, as the reviewed snapshot records them
DECLARED_TOY = """
import pandas as pd
from geomon.stats.declarations import TrackedMetric
from geomon.stats.statistics import Mean
from geomon.suites.pipeline import Option, Pipeline, Stage, StageResult, Tracked
from geomon.suites.registry import Headline, RunOption, SuiteInfo

SUITE = SuiteInfo(
    name="declaredtoy",
    title="DeclaredToy",
    spec="a test",
    headlines=(Headline("toy_mean", "DeclaredToy: the mean"),),
    options=(RunOption("--declared-toy-size", "DeclaredToy: items", int, 3, "size"),),
    order=60,
)
TRACKED = (TrackedMetric("toy_mean", Mean("value")),)

def _items(context):
    return StageResult(pd.DataFrame({"item": range(context.options["size"])}))

def _score(context, items):
    frame = items.assign(value=1.0)
    return StageResult({"summary": {"toy_mean": 1.0}}, tracked=Tracked(frame, "toy"))

PIPELINE = Pipeline(
    stages=(
        Stage("items", _items, "the items", options=(Option("size", int, 3),)),
        Stage(
            "scores", _score, "the scores", inputs=("items",), per_model=True, tracked=True,
            requests=lambda items, spec, settings: [],
        ),
    ),
    write_report=lambda out, board, results, settings: out,
    leaderboard_columns=("toy_mean",),
    per_model_description="toy",
)
"""
# The same suite under another name, another option and another headline.
TOY = (
    DECLARED_TOY.replace("declaredtoy", "toybench")
    .replace("DeclaredToy: the mean", "ToyBench: the gap")
    .replace('Headline("toy_mean"', 'Headline("toy_gap"')
    .replace('TrackedMetric("toy_mean"', 'TrackedMetric("toy_gap"')
    .replace("--declared-toy-size", "--toy-size")
)


@pytest.fixture
def toy_suite(tmp_path, monkeypatch):
    (tmp_path / "toybench.py").write_text(TOY)
    monkeypatch.setattr(geomon.suites, "__path__", [*geomon.suites.__path__, str(tmp_path)])
    yield "toybench"
    sys.modules.pop("geomon.suites.toybench", None)


def test_the_built_suites_are_registered_in_run_order():
    assert list(registry.suites()) == BUNDLED
    for name in registry.suites():
        suite = registry.suite(name)
        assert isinstance(suite.pipeline, Pipeline) and suite.info is registry.suites()[name] and suite.name == name


def test_a_declared_suite_gets_its_dagster_half_from_the_factory(tmp_path, monkeypatch):
    """A seventh benchmark is a module with a PIPELINE: the factory builds its assets, checks and jobs."""
    from geomon.defs.factory import declared

    (tmp_path / "declaredtoy.py").write_text(DECLARED_TOY)
    monkeypatch.setattr(geomon.suites, "__path__", [*geomon.suites.__path__, str(tmp_path)])
    try:
        built = declared("declaredtoy")
        keys = sorted(k.to_user_string() for a in built.assets for k in a.keys)
        assert keys == ["declaredtoy/items", "declaredtoy/leaderboard", "declaredtoy/scores"]
        checks = {c.name for a in built.assets for c in a.check_specs}
        assert checks == {"no_regression"}
        assert sorted(j.name for j in built.jobs) == [
            "declaredtoy_leaderboard",
            "declaredtoy_per_model",
            "declaredtoy_prompts",
        ]
        broken = DECLARED_TOY.replace('"size"),),\n    order', '"sample"),),\n    order')
        (tmp_path / "declaredtoy.py").write_text(broken)
        sys.modules.pop("geomon.suites.declaredtoy", None)
        with pytest.raises(
            registry.SuiteError, match="--declared-toy-size sets 'sample', not an option of stage items"
        ):
            registry.suite("declaredtoy")
    finally:
        sys.modules.pop("geomon.suites.declaredtoy", None)
        declared.cache_clear()


def test_a_new_suite_module_is_found_by_the_cli_and_the_trends_report(toy_suite):
    from geomon.cli import build_parser

    assert list(registry.suites()) == [*BUNDLED, "toybench"]  # toybench's order (100) is after them
    args = build_parser().parse_args(["run", "--suite", "toybench", "--toy-size", "7"])
    assert [s.name for s in registry.resolve(args.suite)] == ["toybench"] and args.toy_size == 7
    assert ("toybench", "toy_gap", "", "ToyBench: the gap", None) in registry.headline_catalog()


def test_unknown_suites_and_incomplete_modules_are_clear_errors(tmp_path, monkeypatch):
    known = ", ".join(BUNDLED)
    with pytest.raises(registry.SuiteError, match=rf"unknown suite\(s\) nope; known: {known}"):
        registry.resolve("worldbench,nope")
    monkeypatch.setattr(geomon.suites, "__path__", [*geomon.suites.__path__, str(tmp_path)])
    halves = {
        "PIPELINE must be a Pipeline, not NoneType": ("PIPELINE = Pipeline(", "UNUSED = Pipeline("),
        "TRACKED must be a non-empty tuple of TrackedMetric": ("TRACKED = (", "TRACKED = None and ("),
    }
    contracts = {
        "suite halfbench: SUITE.settings must be a dataclass": ("order=60,", "order=60, settings=dict,"),
        "suite halfbench: headline toy_gap  is declared twice": (
            'headlines=(Headline("toy_gap", "ToyBench: the gap"),)',
            'headlines=(Headline("toy_gap", "ToyBench: the gap"), Headline("toy_gap", "again"))',
        ),
        "suite halfbench: stage items declares option(s) twice": (
            'options=(Option("size", int, 3),)',
            'options=(Option("size", int, 3), Option("size", int, 4))',
        ),
    }
    for message, (old, new) in contracts.items():
        (tmp_path / "halfbench.py").write_text(TOY.replace("toybench", "halfbench").replace(old, new))
        try:
            assert "halfbench" not in registry.suites()
            assert registry.broken()["halfbench"].startswith(message)
        finally:
            sys.modules.pop("geomon.suites.halfbench", None)
    for message, (old, new) in halves.items():
        (tmp_path / "halfbench.py").write_text(TOY.replace("toybench", "halfbench").replace(old, new))
        try:
            # A broken module breaks only itself: the others load, and using it says why.
            assert "halfbench" not in registry.suites() and "worldbench" in registry.suites()
            assert message in registry.broken()["halfbench"]
            with pytest.raises(registry.SuiteError, match=rf"geomon\.suites\.halfbench: {message}"):
                registry.suite("halfbench")
        finally:
            sys.modules.pop("geomon.suites.halfbench", None)


def test_a_suite_module_that_fails_to_import_breaks_only_itself(tmp_path, monkeypatch, wdi_snapshot_dir):
    """Settings load and every other suite runs; the broken one is named, with its error, where it is used."""
    from geomon.config import load_settings
    from geomon_tests.conftest import write_settings

    monkeypatch.setattr(geomon.suites, "__path__", [*geomon.suites.__path__, str(tmp_path)])
    (tmp_path / "crashbench.py").write_text("raise RuntimeError('a bug in the module')\n")
    try:
        settings = load_settings(write_settings(tmp_path, wdi_snapshot_dir, crashbench={"anything": 1}))
        assert settings.run_options("blend", "quick")["sample_questions"] == 2
        assert "crashbench" not in registry.suites()
        with pytest.raises(
            registry.SuiteError,
            match=r"--suite crashbench: .*crashbench cannot be imported: "
            r"RuntimeError: a bug in the module",
        ):
            registry.resolve("worldbench,crashbench")
    finally:
        sys.modules.pop("geomon.suites.crashbench", None)


def test_a_tracked_metric_must_be_a_declared_headline(tmp_path, monkeypatch):
    """Registration refuses a tracked metric that no headline declares, naming the suite and the headlines."""
    monkeypatch.setattr(geomon.suites, "__path__", [*geomon.suites.__path__, str(tmp_path)])
    stray = TOY.replace("toybench", "straybench").replace('TrackedMetric("toy_gap"', 'TrackedMetric("toy_typo"')
    (tmp_path / "straybench.py").write_text(stray)
    try:
        with pytest.raises(
            registry.SuiteError,
            match=r"suite straybench: tracked metric toy_typo is not a declared "
            r"headline \(toy_gap\)",
        ):
            registry.suite("straybench")
    finally:
        sys.modules.pop("geomon.suites.straybench", None)


def test_every_registered_suite_is_in_the_definitions():
    from geomon.definitions import defs
    from geomon.defs.factory import suite_runs

    prefixes = {key.path[0] for key in defs.resolve_asset_graph().get_all_asset_keys()}
    for name in registry.suites():
        assert name in prefixes
        assert callable(suite_runs(name).run_from_options) and callable(suite_runs(name).materialize)
        assert defs.resolve_job_def(f"{name}_per_model")


def test_a_tracked_value_without_a_summary_fails_naming_the_suite_stage_and_field(
    tmp_path, monkeypatch, wdi_snapshot_dir
):

    from geomon.defs.factory import declared
    from geomon.defs.resources import GeomonResource
    from geomon_tests.conftest import write_settings

    folder = tmp_path / "suites"
    folder.mkdir()
    no_summary = DECLARED_TOY.replace('return StageResult({"summary": {"toy_mean": 1.0}}', "return StageResult({}")
    (folder / "declaredtoy.py").write_text(no_summary)
    monkeypatch.setattr(geomon.suites, "__path__", [*geomon.suites.__path__, str(folder)])
    try:
        resources = {"geomon": GeomonResource(config_path=str(write_settings(tmp_path, wdi_snapshot_dir)))}
        result = _toy_scores(declared("declaredtoy"), resources)
        assert "suite declaredtoy: tracked stage scores's value needs a 'summary' mapping" in _step_failure(result)
    finally:
        sys.modules.pop("geomon.suites.declaredtoy", None)
        declared.cache_clear()


def test_a_tracked_stage_hands_in_its_items_and_the_factory_computes_its_figures(
    tmp_path, monkeypatch, wdi_snapshot_dir
):
    """One definition per tracked headline: the factory computes it from the tracked stage's items by its
    declaration, once, for the history and the leaderboard's summary (the suite's own summary value replaced),
    and records the stage's other figures beside it; a stage that hands in a figure of a tracked metric fails,
    naming it. Mutation caught: the factory recording a suite's own figure, or accepting one beside the items."""
    import dagster as dg

    from geomon.defs.factory import declared
    from geomon.defs.resources import GeomonResource
    from geomon.monitor import release
    from geomon.monitor.history import MetricHistory
    from geomon_tests.conftest import write_settings

    folder = tmp_path / "suites"
    folder.mkdir()
    own = DECLARED_TOY.replace("frame = items.assign(value=1.0)", "frame = items.assign(value=[1.0, 0.0, 1.0])")
    own = own.replace("import pandas as pd\n", "import pandas as pd\nfrom geomon.stats.values import MetricValue\n")
    others = '[MetricValue("toy_rows", 3.0, n=3)]'
    settings = write_settings(tmp_path, wdi_snapshot_dir)
    resources = {"geomon": GeomonResource(config_path=str(settings))}
    monkeypatch.setattr(geomon.suites, "__path__", [*geomon.suites.__path__, str(folder)])

    def run(handed_in: str) -> dg.ExecuteInProcessResult:
        tracked = f'tracked=Tracked(frame, "toy", others={handed_in})'
        (folder / "declaredtoy.py").write_text(own.replace('tracked=Tracked(frame, "toy")', tracked))
        sys.modules.pop("geomon.suites.declaredtoy", None)
        declared.cache_clear()
        return _toy_scores(declared("declaredtoy"), resources)

    try:
        result = run(others)
        assert result.success
        history = MetricHistory(f"sqlite:///{tmp_path / 'store.sqlite'}")
        evaluation = history.latest("declaredtoy", "smollm2-135m-instruct", "toy")
        series = history.series(suite="declaredtoy")
        stored = {(r.metric, r.value, r.n) for r in series.itertuples()}
        (mean,) = release.declared_figures("declaredtoy", registry.suite("declaredtoy").tracked, evaluation.items)
        assert stored == {("toy_mean", mean.value, 3), ("toy_rows", 3.0, 3)} and mean.value == pytest.approx(2 / 3)
        summary = result.output_for_node("declaredtoy__scores")["summary"]
        assert summary["toy_mean"] == mean.value and summary["toy_mean_n"] == 3  # not the suite's own 1.0
        result = run(others.replace("]", ', MetricValue("toy_mean", 0.5)]'))
        assert "suite declaredtoy: toy_mean handed in beside the items, but a tracked metric declares it" in (
            _step_failure(result)
        )
    finally:
        sys.modules.pop("geomon.suites.declaredtoy", None)
        declared.cache_clear()


def test_the_registry_is_built_once_until_a_suite_source_changes(tmp_path, monkeypatch, suite_folder):
    """A run asks the registry about two dozen times: it is built once, and built again when a suite folder,
    file or module changes (a folder named, a file written, a module dropped)."""
    builds = []
    build = registry._build
    monkeypatch.setattr(registry, "_build", lambda: builds.append(1) or build())
    registry.suites()
    registry.suites()
    registry.suite("worldbench")
    assert len(builds) <= 1  # the first may build (another test changed the sources), the rest reuse it
    before = len(builds)
    folder = tmp_path / "suites"
    folder.mkdir()
    suite_folder(folder)
    assert list(registry.suites()) == BUNDLED and len(builds) == before + 1  # a folder named: built again
    (folder / "toybench.py").write_text(TOY)
    assert list(registry.suites()) == [*BUNDLED, "toybench"] and len(builds) == before + 2
    assert list(registry.suites()) == [*BUNDLED, "toybench"] and len(builds) == before + 2
    sys.modules.pop("geomon.suites.toybench")
    assert "toybench" in registry.suites() and len(builds) == before + 3  # a module dropped: loaded again
    toybench = sys.modules["geomon.suites.toybench"]
    suite = registry.suite("toybench")
    declared = (toybench.SUITE, toybench.PIPELINE, toybench.TRACKED, toybench)
    assert (suite.info, suite.pipeline, suite.tracked, suite.source) == declared
    assert registry.suite("toybench") is suite  # one record, until a source changes


def _step_failure(result) -> str:
    """The error of the run's failed step."""
    return str(next(e for e in result.all_events if e.is_step_failure).event_specific_data.error)


def _toy_scores(built, resources):
    """The toy suite's items, then its tracked scores stage for one model, on a fresh instance."""
    import dagster as dg

    from geomon.defs.runs import register_models

    with dg.instance_for_test() as instance:
        register_models(instance, ["smollm2-135m-instruct"])
        items = dg.AssetSelection.assets(["declaredtoy", "items"])
        dg.materialize(built.assets, instance=instance, resources=resources, selection=items)
        return dg.materialize(
            built.assets,
            instance=instance,
            resources=resources,
            partition_key="smollm2-135m-instruct",
            selection=dg.AssetSelection.assets(["declaredtoy", "scores"]),
            raise_on_error=False,
        )


def test_the_drift_probe_asks_the_one_suite_that_declares_its_questions(tmp_path, monkeypatch):
    """The drift probe names no suite: it re-asks the questions of the one registered suite whose pipeline declares
    them (bundled: WorldBench's whole question bank), and a second suite declaring them too is an error naming both,
    not a silent choice."""
    from geomon.suites.worldbench.prompts import build_prompts, requests_for

    probe = registry.drift_probe()
    assert (probe.source, probe.questions, probe.requests) == ("worldbank/indicators", build_prompts, requests_for)
    (tmp_path / "toyprobe.py").write_text(
        TOY.replace("toybench", "toyprobe")
        .replace("--toy-size", "--toy-probe-size")
        .replace(
            'per_model_description="toy",',
            'per_model_description="toy", drift_probe=DriftProbe("toyprobe/items", lambda bank: bank, '
            "lambda questions, spec: []),",
        )
        .replace("Option, Pipeline,", "DriftProbe, Option, Pipeline,")
    )
    monkeypatch.setattr(geomon.suites, "__path__", [*geomon.suites.__path__, str(tmp_path)])
    try:
        assert "toyprobe" in registry.suites()
        with pytest.raises(registry.SuiteError, match=r"2 registered suites declare a drift_probe \(.*toyprobe"):
            registry.drift_probe()
    finally:
        sys.modules.pop("geomon.suites.toyprobe", None)
