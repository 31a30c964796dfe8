"""WorldBench's materialization order and its per-model job."""

from collections.abc import Sequence
from typing import Any

import dagster as dg

from geomon.config import Settings
from geomon.defs.resources import models_partitions
from geomon.defs.runs import register_models, runner

SOURCES_AND_PROMPTS = dg.AssetSelection.assets(
    ["worldbank", "economies"], ["worldbank", "indicators"], ["worldbench", "prompts"]
)
PER_MODEL = dg.AssetSelection.assets(["worldbench", "responses"], ["worldbench", "scores"], ["worldbench", "disparity"])
LEADERBOARD = dg.AssetSelection.assets(["worldbench", "leaderboard"])

worldbench_per_model_job = dg.define_asset_job(
    "worldbench_per_model",
    selection=PER_MODEL,
    partitions_def=models_partitions,
    description="Responses, scores and disparity of one model (a partition of `models`).",
)


def materialize(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    models: Sequence[str],
    prompt_config: dict[str, Any] | None = None,
    log_level: str = "WARNING",
    resources: dict[str, Any] | None = None,
) -> list[dg.ExecuteInProcessResult]:
    """Run the whole WorldBench graph for ``models``; failed checks are in the returned results."""
    register_models(instance, models)
    run = runner(defs, instance, resources, log_level)
    results = [run(SOURCES_AND_PROMPTS, config={"ops": {"worldbench__prompts": {"config": prompt_config or {}}}})]
    results += [run(PER_MODEL, partition_key=name) for name in models]
    results.append(run(LEADERBOARD))
    return results


def run_from_options(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    models: Sequence[str],
    options: dict[str, Any],
    settings: Settings,
    log_level: str,
) -> tuple[list[dg.ExecuteInProcessResult], str]:
    """``geomon run``'s WorldBench options (SUITE.options) → a materialization; returns what it ran."""
    prompt_config: dict[str, Any] = {"sample_countries": options.get("sample") or 0}
    if options.get("year"):
        prompt_config["year"] = options["year"]
    if options.get("example_country"):
        prompt_config["example_country"] = options["example_country"]
    described = f"sample: {options.get('sample') or 'all countries'}"
    return materialize(defs, instance, models, prompt_config, log_level=log_level), described
