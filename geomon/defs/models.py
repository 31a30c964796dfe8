"""One catalog entry per model, named by it (``models/o3-mini-2025-01-31``): the Dagster UI's left-bar search (⌘K)
matches asset keys and the names of groups, jobs, schedules, sensors, partition sets and resources, never tags,
descriptions or partition keys (docs/operations.md), so a model is found by name only where something is named
after it. Each is an external asset (nothing materializes it) whose page links where the model's evaluations,
its ``no_regression`` verdicts and the open regressions are: the registered models (each suite's tracked asset)
and the published ones of a suite's published history (Gapminder's: ``history/gapminder_evaluations``)."""

from urllib.parse import quote

import dagster as dg

from geomon.defs.catalog import MODELS_GROUP, model_tag, published_models
from geomon.defs.factory import declared, declared_names, stage_key
from geomon.defs.monitoring import PUBLISHED, PublishedHistory
from geomon.defs.resources import settings_at_load

OPEN_REGRESSIONS = "/assets/monitor/open_regressions"


def _partition_link(key: list[str], model: str) -> str:
    """A Markdown link to ``model``'s partition of the asset ``key`` (its page opens on the partition)."""
    return f"[{'/'.join(key)}](/assets/{'/'.join(key)}?partition={quote(model, safe='')})"


def _description(model: str, registered: bool, published: list[PublishedHistory]) -> str:
    """Where ``model``'s evaluations and verdicts are, as links the asset page renders."""
    lines = [
        f"**{model}**: its evaluations are partitions named after it, each judged by its asset's `no_regression` "
        "check (failed while a regression is open):"
    ]
    if registered:
        for name in declared_names():
            pipeline = declared(name).pipeline
            key = stage_key(name, pipeline.tracked)
            if pipeline.revisions is None:
                lines.append(f"- {name}: {_partition_link(key, model)}")
            else:  # a partition per model × revision: the asset's Partitions tab lists them
                lines.append(f"- {name}: [{'/'.join(key)}](/assets/{'/'.join(key)}?view=partitions), one per revision")
    for history in published:
        lines.append(
            f"- {history.suite}'s published results (imported; the baseline is the vendor's previous release): "
            + _partition_link(history.evaluations_key, model)
        )
    tag = model_tag(model)
    selection = "/assets?asset-selection=" + quote(f'tag:"{tag}"', safe="")
    lines.append(f"- every asset partitioned by it: [the catalog filtered by `{tag}`]({selection})")
    lines.append(f"- every open regression, of every model: [monitor/open_regressions]({OPEN_REGRESSIONS})")
    return "\n".join(lines)


def model_specs() -> list[dg.AssetSpec]:
    """An external asset per registered or published model (none where the settings do not load)."""
    settings = settings_at_load()
    if settings is None:
        return []
    registered = [m.name for m in settings.models]
    published = {history.suite: published_models(settings, history) for history in PUBLISHED}
    in_history = [model for models in published.values() for model in models]
    return [
        dg.AssetSpec(
            key=[MODELS_GROUP, model],
            group_name=MODELS_GROUP,
            description=_description(model, model in registered, [h for h in PUBLISHED if model in published[h.suite]]),
        )
        for model in dict.fromkeys([*registered, *in_history])
    ]


@dg.definitions
def model_assets() -> dg.Definitions:
    """The models, each an asset named after it."""
    return dg.Definitions(assets=model_specs())
