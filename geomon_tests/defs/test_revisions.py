"""Revisions for any suite: a second versioned source gets partitions and a sensor of its own, never
BorderLines' Wikipedia revisions; a suite that claims another's partitions is refused, naming both."""

from __future__ import annotations

import importlib

import dagster as dg
import pytest

from geomon.defs.resources import GeomonResource
from geomon.suites import registry
from geomon_tests.conftest import write_settings

VERSIONED = """
import pandas as pd
from geomon.stats.declarations import TrackedMetric
from geomon.stats.statistics import Mean
from geomon.suites.info import Headline, SuiteInfo
from geomon.suites.pipeline import Option, Pipeline, Revisions, Stage, StageResult, Tracked

SUITE = SuiteInfo(name="NAME", title="Versioned", spec="a test", headlines=(Headline("mean", "the mean"),))
TRACKED = (TrackedMetric("mean", Mean("value")),)

def _table(context):
    return StageResult(pd.DataFrame({"item": ["a", "b", "c"]}))

def _scores(context, table):
    return StageResult({"summary": {"mean": 1.0}}, tracked=Tracked(table.assign(value=1.0), context.revision))

PIPELINE = Pipeline(
    stages=(
        Stage("table", _table, per_revision=True, options=(Option("size", int, 3),)),
        Stage("scores", _scores, inputs=("table",), per_model=True, tracked=True, requests=lambda t, spec, s: []),
    ),
    write_report=lambda out, board, results, settings: out,
    leaderboard_columns=("mean",),
    per_model_description="toy",
    revisions=Revisions(
        partitions="PARTITIONS", resolve=lambda settings: ["v1", "v2"], options=lambda o, keys: {k: {} for k in keys}
    ),
)
"""


@pytest.fixture
def suite_dir(tmp_path, suite_folder):
    folder = tmp_path / "suites"
    folder.mkdir()
    return suite_folder(folder)


def test_a_second_versioned_suite_has_its_own_partitions_and_sensor(suite_dir, tmp_path, wdi_snapshot_dir):
    (suite_dir / "editions.py").write_text(VERSIONED.replace("NAME", "editions").replace("PARTITIONS", "editions"))
    defs = importlib.import_module("geomon.definitions").defs
    graph = defs.resolve_asset_graph()
    assert graph.get(dg.AssetKey(["editions", "table"])).partitions_def.name == "editions"
    assert graph.get(dg.AssetKey(["borderlines", "prompts"])).partitions_def.name == "dispute_revisions"
    dimensions = graph.get(dg.AssetKey(["editions", "scores"])).partitions_def.partitions_defs
    assert {d.name: d.partitions_def.name for d in dimensions} == {"model": "models", "revision": "editions"}
    sensor = defs.resolve_sensor_def("editions_revisions_sensor")
    resources = {"geomon": GeomonResource(config_path=str(write_settings(tmp_path, wdi_snapshot_dir)))}
    with dg.instance_for_test() as instance:
        tick = sensor(dg.build_sensor_context(instance=instance, resources=resources))
        (request,) = tick.dynamic_partitions_requests
        assert request.partitions_def_name == "editions" and request.partition_keys == ["v1", "v2"]
        assert instance.get_dynamic_partitions("dispute_revisions") == []


def test_a_suite_claiming_another_suites_revisions_is_refused(suite_dir):
    copy = VERSIONED.replace("NAME", "copycat").replace("PARTITIONS", "dispute_revisions")
    (suite_dir / "copycat.py").write_text(copy.replace("SuiteInfo(", "SuiteInfo(order=200, "))
    assert "copycat" not in registry.suites() and "borderlines" in registry.suites()
    assert registry.broken()["copycat"] == (
        "suite copycat: revisions.partitions 'dispute_revisions' is taken by suite borderlines "
        "(a suite's revisions are its own)"
    )
