"""SAGED: Dagster assets, checks, per-model job and run order (loaded with the defs folder)."""
