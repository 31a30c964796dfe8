"""BorderLines' materialization order and its per-model job."""

from collections.abc import Sequence
from typing import Any

import dagster as dg

from geomon.config import Settings
from geomon.defs.resources import model_revision_partitions, revisions_partitions
from geomon.defs.runs import (
    OPTIONS_TAG,
    SUITE_TAG,
    per_model_job,
    per_model_job_name,
    register_models,
    runner,
    stage_job,
    stage_job_name,
)
from geomon.sources import wikipedia

RELEASE = dg.AssetSelection.assets(["borderlines", "release"])
PER_REVISION = dg.AssetSelection.assets(["wikipedia", "dispute_revisions"], ["borderlines", "prompts"])
PER_MODEL = dg.AssetSelection.assets(
    ["borderlines", "responses"], ["borderlines", "scores"], ["borderlines", "concurrence"]
)
LEADERBOARD = dg.AssetSelection.assets(["borderlines", "leaderboard"])

borderlines_per_model_job = per_model_job(
    "borderlines",
    PER_MODEL,
    model_revision_partitions,
    "Responses, claimants and concurrence scores of one model on one table revision.",
)
borderlines_release_job = stage_job(
    "borderlines", "release", RELEASE, "The release: countries, templates, translations."
)
borderlines_prompts_job = stage_job(
    "borderlines", "prompts", PER_REVISION, "One table revision and its queries.", revisions_partitions
)
borderlines_leaderboard_job = stage_job("borderlines", "leaderboard", LEADERBOARD, "Every model and revision.")


def materialize(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    models: Sequence[str],
    revisions: Sequence[str],
    prompt_configs: dict[str, dict[str, Any]] | None = None,
    log_level: str = "WARNING",
    resources: dict[str, Any] | None = None,
    described: str = "",
) -> list[dg.ExecuteInProcessResult]:
    """The BorderLines graph: the release, each revision's table and prompts (``prompt_configs`` per
    revision key, e.g. fewer personas for an older table), each model × revision, the leaderboard."""
    register_models(instance, models)
    new = [r for r in revisions if not instance.has_dynamic_partition(revisions_partitions.name, r)]
    if new:
        instance.add_dynamic_partitions(revisions_partitions.name, new)
    tags = {SUITE_TAG: "borderlines", **({OPTIONS_TAG: described} if described else {})}
    run = runner(defs, instance, resources, log_level, tags)
    results = [run(RELEASE, job=stage_job_name("borderlines", "release"))]
    for revision in revisions:
        config = (prompt_configs or {}).get(revision, {})
        results.append(
            run(
                PER_REVISION,
                partition_key=revision,
                config={"ops": {"borderlines__prompts": {"config": config}}},
                job=stage_job_name("borderlines", "prompts"),
            )
        )
    for revision in revisions:
        for model in models:
            key = dg.MultiPartitionKey({"model": model, "revision": revision})
            results.append(run(PER_MODEL, partition_key=key, job=per_model_job_name("borderlines")))
    results.append(run(LEADERBOARD, job=stage_job_name("borderlines", "leaderboard")))
    return results


def run_from_options(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    models: Sequence[str],
    options: dict[str, Any],
    settings: Settings,
    log_level: str,
) -> tuple[list[dg.ExecuteInProcessResult], str]:
    """``geomon run``'s BorderLines options: every persona on the newest configured table, the first
    persona on the older ones (KB CS over table versions)."""
    bl = settings.borderlines
    revisions = [wikipedia.revision_key(r) for r in wikipedia.resolve_revisions(bl.revisions, bl.mediawiki())]
    personas = [p for p in (options.get("personas") or "vanilla").split(",") if p]
    configs = {
        key: {
            "personas": personas if key == revisions[-1] else personas[:1],
            "sample_territories": options.get("territories") or 0,
        }
        for key in revisions
    }
    described = f"revisions: {', '.join(revisions)}; personas: {', '.join(personas)}"
    return materialize(defs, instance, models, revisions, configs, log_level=log_level, described=described), described
