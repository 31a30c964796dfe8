"""One catalog entry per model, named by it (``models/o3-mini-2025-01-31``): the Dagster UI's left-bar search (⌘K)
matches asset keys and the names of groups, jobs, schedules, sensors, partition sets and resources, never tags,
descriptions or partition keys (docs/operations.md), so a model is found by name only where something is named
after it. Each is an external asset whose page links where the model's evaluations, its ``no_regression``
verdicts and the open regressions are: the registered models (each suite's tracked asset) and the published ones
of a suite's published history (Gapminder's: ``history/gapminder_evaluations``). A registered model's definition
carries its release date; the runs that evaluate or import a model report its state as its materialization, with
its ``none_open`` check, red while a regression of it is open (``monitoring.report_models``); the check can also
be executed from its page."""

from collections.abc import Iterator
from urllib.parse import quote

import dagster as dg

from geomon.defs.catalog import model_tag, published_models
from geomon.defs.factory import declared, declared_names, stage_key
from geomon.defs.monitoring import MODELS_GROUP, NONE_OPEN, PUBLISHED, PublishedHistory, model_check, none_open_spec
from geomon.defs.resources import settings_at_load
from geomon.monitor import states, views
from geomon.monitor.history import MetricHistory

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
    """An external asset per registered or published model, a registered one's with its release date (none where
    the settings do not load). A published model's is not known when the code location loads: a suite's importer
    names its models only (``Importer.models``)."""
    settings = settings_at_load()
    if settings is None:
        return []
    registered = {
        m.name: f"{m.release_date:%Y-%m-%d}" if m.release_date else "not given (release_date in geomon.yaml)"
        for m in settings.models
    }
    published = {history.suite: published_models(settings, history) for history in PUBLISHED}
    in_history = [model for models in published.values() for model in models]
    return [
        dg.AssetSpec(
            key=[MODELS_GROUP, model],
            group_name=MODELS_GROUP,
            description=_description(model, model in registered, [h for h in PUBLISHED if model in published[h.suite]]),
            metadata={"release_date": registered[model]} if model in registered else None,
        )
        for model in dict.fromkeys([*registered, *in_history])
    ]


def model_checks(specs: list[dg.AssetSpec]) -> dg.AssetChecksDefinition:
    """Each model's ``none_open``, executable from its page (its state read from the metric history now); runs
    and imports report it as they change a model's state (``monitoring.report_models``). Built with
    ``AssetChecksDefinition.create``: Dagster's check decorators name an output after each asset key, which a
    model's name (``claude-3-5-sonnet@20240620``) cannot always be."""
    checks = {
        f"model_{i}": none_open_spec(spec.key.path, spec.key.path[-1], named="in which suites (its evaluations)")
        for i, spec in enumerate(specs)
    }

    @dg.op(
        name="models_none_open",
        out={name: dg.Out(dg.Nothing, is_required=False) for name in checks},
        required_resource_keys={"geomon"},
    )
    def models_none_open(context: dg.OpExecutionContext) -> Iterator[dg.AssetCheckResult]:
        history = MetricHistory(context.resources.geomon.settings().store_url)
        latest = states.latest_by_model(history, views.open_regressions(history))
        for key in context.selected_asset_check_keys:
            model = key.asset_key.path[-1]
            yield dg.AssetCheckResult(
                asset_key=key.asset_key, check_name=NONE_OPEN, **model_check(model, latest[latest["model"] == model])
            )

    return dg.AssetChecksDefinition.create(
        keys_by_input_name={}, node_def=models_none_open, check_specs_by_output_name=checks, can_subset=True
    )


@dg.definitions
def model_assets() -> dg.Definitions:
    """The models, each an asset named after it, with its ``none_open`` check."""
    specs = model_specs()
    return dg.Definitions(assets=specs, asset_checks=[model_checks(specs)] if specs else [])
