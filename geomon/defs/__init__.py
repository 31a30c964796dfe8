"""geomon's Dagster layer: wiring only; the work is in the domain packages."""

import warnings

import dagster as dg

# Data versions on the World Bank outputs are deliberate; Dagster flags the parameter as beta.
warnings.filterwarnings("ignore", category=dg.BetaWarning)
