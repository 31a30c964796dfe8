"""What the Dagster catalog filters and searches on, given to every asset in one place (``geomon/definitions.py``
maps it over the definitions): an owner, kinds (what an asset is made of: a model's answers, a table, a report,
the metric history) and the tags ``suite`` and ``stage``. The catalog's search finds asset keys, groups, kinds,
owners and tags, never partition keys: each model is a tag (``model/o3-mini-2025-01-31``) of the assets
partitioned by it, so the catalog's search finds where its evaluations are; the left bar's search (⌘K) reads
asset keys only, and finds each model's own asset (``models/<name>``, ``defs/models.py``)."""

import re
from functools import cache

import dagster as dg

from geomon.config import Settings
from geomon.defs.monitoring import MODELS_GROUP, PUBLISHED, PublishedHistory
from geomon.defs.resources import settings_at_load
from geomon.suites.registry import suites

OWNER = "team:geomon"
# Each published history's assets belong to its suite.
HISTORY_SUITE = {tuple(key): h.suite for h in PUBLISHED for key in (h.results_key, h.import_key, h.evaluations_key)}
REPORTS = {"leaderboard", "trends"}  # write an HTML report
FROM_HISTORY = {*(tuple(h.evaluations_key) for h in PUBLISHED), ("monitor", "open_regressions"), ("monitor", "trends")}
MODEL_TAG = "model/"
# Dagster's rule for a tag key's name part: at most 63 of these characters.
TAG_NAME_REFUSED = re.compile(r"[^A-Za-z0-9_.-]")
TAG_NAME_LENGTH = 63


@cache
def _asks_models() -> frozenset[tuple[str, ...]]:
    """The keys of the assets that ask the models (their kind is ``llm``): the declared suites' stages that do,
    and the drift probe."""
    from geomon.defs.factory import declared, declared_names, stage_key

    stages = {
        tuple(stage_key(name, stage))
        for name in declared_names()
        for stage in declared(name).pipeline.stages
        if stage.asks_models
    }
    return frozenset({*stages, ("monitor", "drift_probe")})


def model_tag(name: str) -> str:
    """A model's search tag: ``model/`` and its name, each character a tag key refuses made ``_`` and cut to
    Dagster's length (``claude-3-opus@20240229`` → ``model/claude-3-opus_20240229``); its partition keeps the
    full name."""
    return MODEL_TAG + TAG_NAME_REFUSED.sub("_", name)[:TAG_NAME_LENGTH]


def _model_tags(names: list[str]) -> dict[str, str]:
    return {model_tag(n): "" for n in names if n}


def published_models(settings: Settings, published: PublishedHistory) -> tuple[str, ...]:
    """The models whose results a suite's authors published (its importer's ``models``: Gapminder's snapshot's
    configurations), the partitions an import adds to its evaluations asset; none where they are not known."""
    return published.importer.models(settings)


def model_tags(key: tuple[str, ...], partitioned: bool) -> dict[str, str]:
    """The models an asset holds a partition of, as tags: the registered models for a suite's per-model asset,
    the published ones for a suite's published history."""
    settings = settings_at_load()
    if settings is None or not partitioned:
        return {}
    for published in PUBLISHED:
        if key == tuple(published.evaluations_key):
            return _model_tags(list(published_models(settings, published)))
    if key[0] in suites():
        return _model_tags([m.name for m in settings.models])
    return {}


def described(spec: dg.AssetSpec) -> dg.AssetSpec:
    """``spec`` with geomon's owner, kinds and tags (``suite``, ``stage``, each model it is partitioned by)."""
    key = tuple(spec.key.path)
    if key[0] == MODELS_GROUP:  # a model's own entry (defs/models.py): found by its name and its tag
        return spec.merge_attributes(owners=[OWNER], kinds={"model"}, tags=_model_tags([key[-1]]))
    suite = key[0] if key[0] in suites() else HISTORY_SUITE.get(key)
    kinds = {"llm"} if key in _asks_models() else {"pandas"}
    if key[-1] in REPORTS:
        kinds.add("html")
    if key in FROM_HISTORY or key[0] == "history":
        kinds = (kinds - {"pandas"}) | {"sql"}
    tags = {"stage": key[-1], **({"suite": suite} if suite else {})}
    tags.update(model_tags(key, spec.partitions_def is not None))
    return spec.merge_attributes(owners=[OWNER], kinds=kinds, tags=tags)
