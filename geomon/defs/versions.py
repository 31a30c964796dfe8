"""Code versions derived from the source of the domain modules an asset runs.

Changing a prompt template, the parser or a score formula changes the hash, so the Dagster UI
marks the assets built with the old code as stale without anyone remembering to bump a number.
"""

from __future__ import annotations

import hashlib
import inspect
import warnings
from types import ModuleType
from typing import Any

import dagster as dg


def source_version(*modules: ModuleType) -> str:
    digest = hashlib.sha256()
    for module in modules:
        digest.update(inspect.getsource(module).encode())
    return digest.hexdigest()[:12]


def versioned_output(value: Any, version: str, **kwargs: Any) -> dg.Output:
    """``dg.Output`` with a data version (a World Bank release, a Wikipedia revision). Dagster marks the
    parameter beta and warns on every call; geomon uses it deliberately, so that one warning is silenced
    here (Dagster resets warning filters around a step: a module-level filter does not reach it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        return dg.Output(value, data_version=dg.DataVersion(version), **kwargs)
