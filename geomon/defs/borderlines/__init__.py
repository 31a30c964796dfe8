"""BorderLines' Dagster assets (their checks run inside the partitioned assets)."""

from geomon.defs.borderlines import assets

ASSETS = [
    assets.borderlines_release,
    assets.dispute_revisions,
    assets.borderlines_prompts,
    assets.borderlines_responses,
    assets.borderlines_scores,
    assets.borderlines_concurrence,
    assets.borderlines_leaderboard,
]
