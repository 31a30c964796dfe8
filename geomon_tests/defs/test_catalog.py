"""What the Dagster catalog filters and searches on: every asset's owner, kinds and tags (suite, stage), and
each model a tag of the assets partitioned by it (the catalog's search finds tags, never partition keys)."""

from __future__ import annotations

import dagster as dg

from geomon.definitions import defs
from geomon.defs.catalog import OWNER
from geomon.suites.registry import suites


def test_every_asset_carries_its_owner_kinds_suite_and_stage():
    graph = defs.resolve_asset_graph()
    described = [graph.get(key) for key in graph.get_all_asset_keys() if graph.get(key).is_materializable]
    assert len(described) > 40
    for node in described:
        path = node.key.path
        assert node.owners == [OWNER] and node.kinds, path
        assert node.tags["stage"] == path[-1]
        if path[0] in suites():
            assert node.tags["suite"] == path[0]
    assert graph.get(dg.AssetKey(["worldbench", "responses"])).kinds == {"llm"}  # it asks the models
    assert graph.get(dg.AssetKey(["worldbench", "leaderboard"])).kinds == {"pandas", "html"}
    imported = graph.get(dg.AssetKey(["history", "gapminder_evaluations"]))
    assert imported.tags["suite"] == "gapminder"
    # Gapminder's published models (the partitions an import adds) are found by name
    assert "model/o3-mini-2025-01-31" in imported.tags and "model/o1-2024-12-17" in imported.tags


def test_every_published_model_has_a_valid_search_tag():
    """A model whose name has characters a tag key refuses (Vertex AI's ``claude-3-opus@20240229``) is still found by
    searching its name: its tag replaces them, and every published model (each a partition an import adds) has one."""
    from dagster._utils.tags import is_valid_tag_key

    from geomon.defs.catalog import model_tag
    from geomon.suites.gapminder.published import model_names
    from geomon_tests.conftest import GAPMINDER_ENTITIES

    tags = defs.resolve_asset_graph().get(dg.AssetKey(["history", "gapminder_evaluations"])).tags
    assert "model/claude-3-opus_20240229" in tags and "model/claude-3-5-sonnet_20240620" in tags
    assert all(model_tag(name) in tags for name in model_names(GAPMINDER_ENTITIES))
    assert len(model_tag("x" * 80)) == len("model/") + 63
    assert all(is_valid_tag_key(tag) for tag in [*tags, model_tag("a b/c@d" * 20)])


def test_every_asset_says_what_it_is_and_a_source_shows_its_folder_relative_to_the_checkout(tmp_path):
    """Every asset, the observed sources too, has a description in the catalog; a source's observation shows the
    folder it watches as configured beside the checkout (``../shared/…``), not an absolute machine path.
    Mutation caught: the observable sources without ``description=`` (Dagster ignores their docstring)."""
    from geomon.defs.history import results_version
    from geomon.defs.monitoring import published_history
    from geomon.defs.resources import shown_path
    from geomon_tests.conftest import GAPMINDER_PUBLISHED

    graph = defs.resolve_asset_graph()
    nameless = [key.to_user_string() for key in graph.get_all_asset_keys() if not graph.get(key).description]
    assert nameless == []
    _, shown = results_version(published_history("gapminder-results"), GAPMINDER_PUBLISHED)
    assert shown["folder"] == "../shared/reference/gapminder" and shown["files"] > 0
    assert shown_path(tmp_path) == str(tmp_path)  # far from the checkout: as it is


def test_every_model_has_an_asset_named_after_it_that_links_its_evaluations():
    """The left bar's search (⌘K) reads asset keys, never tags or partition keys: each registered and each published
    model is an external asset ``models/<name>`` (found by its name there), carrying its tag, whose page links its
    partitions (the verdicts) and the open regressions. Mutation caught: the published models left out."""
    from urllib.parse import unquote

    from geomon.defs.resources import settings_at_load
    from geomon.suites.gapminder.published import model_names
    from geomon_tests.conftest import GAPMINDER_ENTITIES

    graph = defs.resolve_asset_graph()
    models = {key.path[1]: graph.get(key) for key in graph.get_all_asset_keys() if key.path[0] == "models"}
    registered = [m.name for m in settings_at_load().models]
    assert set(models) == {*registered, *model_names(GAPMINDER_ENTITIES)}
    o3_mini = models["o3-mini-2025-01-31"]
    assert (
        not o3_mini.is_materializable and o3_mini.group_name == "models" and "model/o3-mini-2025-01-31" in o3_mini.tags
    )
    text = unquote(o3_mini.description)
    assert "(/assets/history/gapminder_evaluations?partition=o3-mini-2025-01-31)" in text
    assert (
        '(/assets?asset-selection=tag:"model/o3-mini-2025-01-31")' in text
        and "/assets/monitor/open_regressions" in text
    )
    bundled = models[registered[0]].description  # a registered model: each suite's tracked asset, at its partition
    assert f"(/assets/gapminder/rates?partition={registered[0]})" in bundled and "worldbench/disparity" in bundled
    # A registered model's release date (geomon.yaml's); a none_open check (red while a regression of it is open)
    # on each
    assert "release_date" not in o3_mini.metadata  # a published model's is not known when the code location loads
    smollm2 = next(m for m in settings_at_load().models if m.name == "smollm2-135m-instruct")
    assert models[smollm2.name].metadata["release_date"] == f"{smollm2.release_date:%Y-%m-%d}"
    checked = {key.asset_key.path[1] for key in graph.asset_check_keys if key.asset_key.path[0] == "models"}
    assert checked == set(models)
