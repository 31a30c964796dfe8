"""geomon's Dagster layer: wiring only; the work is in the domain packages."""
