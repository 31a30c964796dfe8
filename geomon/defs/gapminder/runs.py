"""Gapminder's materialization order and its per-model job."""

from collections.abc import Sequence
from typing import Any

import dagster as dg

from geomon.config import Settings
from geomon.defs.resources import models_partitions
from geomon.defs.runs import PerModelPlan, per_model_job

PER_MODEL = dg.AssetSelection.assets(
    ["gapminder", "responses"], ["gapminder", "judgements"], ["gapminder", "grades"], ["gapminder", "rates"]
)
PLAN = PerModelPlan(
    suite="gapminder",
    sources=dg.AssetSelection.assets(["gapminder", "question_bank"], ["gapminder", "prompts"]),
    per_model=PER_MODEL,
    leaderboard=dg.AssetSelection.assets(["gapminder", "leaderboard"]),
    prompts_op="gapminder__prompts",
)
materialize = PLAN.materialize
gapminder_prompts_job, gapminder_leaderboard_job = PLAN.stage_jobs()
gapminder_per_model_job = per_model_job(
    "gapminder", PER_MODEL, models_partitions, "Responses, jury judgements, grades and rates of one model."
)


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
    return materialize(defs, instance, models, config, log_level=log_level, described=described), described
