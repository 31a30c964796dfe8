"""SAGED's materialization order and its per-model job."""

from collections.abc import Sequence
from typing import Any

import dagster as dg

from geomon.config import Settings
from geomon.defs.resources import models_partitions
from geomon.defs.runs import PerModelPlan, per_model_job

PER_MODEL = dg.AssetSelection.assets(["saged", "responses"], ["saged", "features"], ["saged", "disparity"])
PLAN = PerModelPlan(
    suite="saged",
    sources=dg.AssetSelection.assets(["saged", "corpus"], ["saged", "prompts"]),
    per_model=PER_MODEL,
    leaderboard=dg.AssetSelection.assets(["saged", "leaderboard"]),
    prompts_op="saged__prompts",
)
materialize = PLAN.materialize
saged_prompts_job, saged_leaderboard_job = PLAN.stage_jobs()
saged_per_model_job = per_model_job(
    "saged", PER_MODEL, models_partitions, "Responses per role, features and country disparity of one model."
)


def run_from_options(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    models: Sequence[str],
    options: dict[str, Any],
    settings: Settings,
    log_level: str,
) -> tuple[list[dg.ExecuteInProcessResult], str]:
    """``geomon run``'s SAGED option: --saged-prompts samples the root prompts (seeded)."""
    config = {"sample_prompts": options.get("saged_prompts") or 0}
    concepts = len(settings.saged.countries or ()) or 20
    described = (
        f"root prompts: {config['sample_prompts'] or 'all'} × {concepts + 1} concepts, "
        f"roles: {', '.join(settings.saged.roles)}"
    )
    return materialize(defs, instance, models, config, log_level=log_level, described=described), described
