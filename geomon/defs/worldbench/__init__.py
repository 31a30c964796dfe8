"""WorldBench's Dagster assets and checks."""

from geomon.defs.worldbench import assets, checks

ASSETS = [
    assets.worldbank_snapshot,
    assets.worldbench_prompts,
    assets.worldbench_responses,
    assets.worldbench_scores,
    assets.worldbench_disparity,
    assets.worldbench_leaderboard,
]
CHECKS = [checks.economies_are_countries, checks.indicator_values_plausible, checks.prompts_complete]
