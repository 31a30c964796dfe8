"""The Definitions object that workspace.yaml loads: everything in the ``geomon/defs`` folder, found by
Dagster's ``dg`` project layout (``[tool.dg]`` in pyproject.toml). Suites need no folder there: the suite
factory (``defs/factory.py``) builds every registered suite's assets from its declaration."""

from pathlib import Path

import dagster as dg

defs = dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
