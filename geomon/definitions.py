"""The Definitions object that workspace.yaml loads: everything in the ``geomon/defs`` folder, found by
Dagster's ``dg`` project layout (``[tool.dg]`` in pyproject.toml) — a new suite's ``defs/<suite>/``
folder is picked up without being named here."""

from pathlib import Path

import dagster as dg

defs = dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
