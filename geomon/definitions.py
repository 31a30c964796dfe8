"""The Definitions object that workspace.yaml loads: everything in the ``geomon/defs`` folder, found by
Dagster's ``dg`` project layout (``[tool.dg]`` in pyproject.toml). Suites need no folder there: the suite
factory (``defs/factory.py``) builds every registered suite's assets from its declaration; ``defs/catalog.py``
describes each for the catalog's filters and search."""

from pathlib import Path

import dagster as dg

from geomon.defs.catalog import described

# Every asset's owner, kinds and tags (suite, stage, its models), given in one place (``defs/catalog.py``); the
# permissive map leaves the two observed sources (SourceAssets, which carry no kinds or owners) as they are.
defs = dg.load_from_defs_folder(path_within_project=Path(__file__).parent).permissive_map_resolved_asset_specs(
    func=described, selection=None
)
