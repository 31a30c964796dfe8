"""WorldBench's materialization order and its per-model job."""

from collections.abc import Sequence
from typing import Any

import dagster as dg

from geomon.config import Settings
from geomon.defs.resources import models_partitions
from geomon.defs.runs import PerModelPlan, per_model_job

PER_MODEL = dg.AssetSelection.assets(["worldbench", "responses"], ["worldbench", "scores"], ["worldbench", "disparity"])
PLAN = PerModelPlan(
    suite="worldbench",
    sources=dg.AssetSelection.assets(
        ["worldbank", "economies"], ["worldbank", "indicators"], ["worldbench", "prompts"]
    ),
    per_model=PER_MODEL,
    leaderboard=dg.AssetSelection.assets(["worldbench", "leaderboard"]),
    prompts_op="worldbench__prompts",
)
materialize = PLAN.materialize
worldbench_prompts_job, worldbench_leaderboard_job = PLAN.stage_jobs()
worldbench_per_model_job = per_model_job(
    "worldbench",
    PER_MODEL,
    models_partitions,
    "Responses, scores and disparity of one model (a partition of `models`).",
)


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
    return materialize(defs, instance, models, prompt_config, log_level=log_level, described=described), described
