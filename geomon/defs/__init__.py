"""geomon's Dagster layer: wiring only; the work is in the domain packages."""

from geomon.defs import compat  # noqa: F401  (a Dagster defect worked around before any definitions load)
