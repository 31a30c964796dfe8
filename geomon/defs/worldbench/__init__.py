"""WorldBench's Dagster assets, checks, per-model job and materialization order (loaded with the defs folder)."""
