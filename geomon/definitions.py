"""The Definitions object that workspace.yaml loads."""

import dagster as dg

from geomon.defs import worldbench
from geomon.defs.resources import GeomonResource



defs = dg.Definitions(
    assets=worldbench.ASSETS,
    asset_checks=worldbench.CHECKS,
    resources={"geomon": GeomonResource()},
)
