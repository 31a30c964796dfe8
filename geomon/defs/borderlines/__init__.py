"""BorderLines' Dagster assets (checks run inside the partitioned assets), per-model job, run order."""
