"""Code versions derived from the source of the domain modules an asset runs.

Changing a prompt template, the parser or a score formula changes the hash, so the Dagster UI
marks the assets built with the old code as stale without anyone remembering to bump a number.
"""

from __future__ import annotations

import hashlib
import inspect
from types import ModuleType


def source_version(*modules: ModuleType) -> str:
    digest = hashlib.sha256()
    for module in modules:
        digest.update(inspect.getsource(module).encode())
    return digest.hexdigest()[:12]
