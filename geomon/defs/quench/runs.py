"""QUENCH's materialization order and its per-model job."""

from collections.abc import Sequence
from typing import Any

import dagster as dg

from geomon.config import Settings
from geomon.defs.resources import models_partitions
from geomon.defs.runs import PerModelPlan, per_model_job

PER_MODEL = dg.AssetSelection.assets(
    ["quench", "answers"],
    ["quench", "rationales"],
    ["quench", "judgements"],
    ["quench", "similarities"],
    ["quench", "scores"],
    ["quench", "disparity"],
)
PLAN = PerModelPlan(
    suite="quench",
    sources=dg.AssetSelection.assets(["quench", "question_bank"], ["quench", "prompts"]),
    per_model=PER_MODEL,
    leaderboard=dg.AssetSelection.assets(["quench", "leaderboard"]),
    prompts_op="quench__prompts",
)
materialize = PLAN.materialize
quench_prompts_job, quench_leaderboard_job = PLAN.stage_jobs()
quench_per_model_job = per_model_job(
    "quench",
    PER_MODEL,
    models_partitions,
    "Answers, rationales, jury, similarities, scores and Indic gap of one model.",
)


def run_from_options(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    models: Sequence[str],
    options: dict[str, Any],
    settings: Settings,
    log_level: str,
) -> tuple[list[dg.ExecuteInProcessResult], str]:
    """``geomon run``'s QUENCH option: --quench-questions samples the questions (seeded, half Indic)."""
    config = {"sample_questions": options.get("quench_questions") or 0}
    described = f"questions: {config['sample_questions'] or 'all 400'} (half Indic), modes: no CoT and CoT"
    return materialize(defs, instance, models, config, log_level=log_level, described=described), described
