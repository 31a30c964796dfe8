"""Gapminder's materialization order and its per-model job."""

from collections.abc import Sequence
from typing import Any

import dagster as dg

from geomon.config import Settings
from geomon.defs.resources import models_partitions
from geomon.defs.runs import register_models, runner

SOURCES_AND_PROMPTS = dg.AssetSelection.assets(["gapminder", "question_bank"], ["gapminder", "prompts"])
PER_MODEL = dg.AssetSelection.assets(
    ["gapminder", "responses"], ["gapminder", "judgements"], ["gapminder", "grades"], ["gapminder", "rates"]
)
LEADERBOARD = dg.AssetSelection.assets(["gapminder", "leaderboard"])

gapminder_per_model_job = dg.define_asset_job(
    "gapminder_per_model",
    selection=PER_MODEL,
    partitions_def=models_partitions,
    description="Responses, jury judgements, grades and rates of one model (a partition of `models`).",
)


def materialize(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    models: Sequence[str],
    prompt_config: dict[str, Any] | None = None,
    log_level: str = "WARNING",
    resources: dict[str, Any] | None = None,
) -> list[dg.ExecuteInProcessResult]:
    """The question bank and prompts once, each model's partition, then the leaderboard."""
    register_models(instance, models)
    run = runner(defs, instance, resources, log_level)
    results = [run(SOURCES_AND_PROMPTS, config={"ops": {"gapminder__prompts": {"config": prompt_config or {}}}})]
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
    """``geomon run``'s Gapminder options: --questions and --variations sample the bank (seeded)."""
    config = {"sample_questions": options.get("questions") or 0, "sample_variations": options.get("variations") or 0}
    described = f"questions: {config['sample_questions'] or 'all'}, variations: {config['sample_variations'] or 'all'}"
    return materialize(defs, instance, models, config, log_level=log_level), described
