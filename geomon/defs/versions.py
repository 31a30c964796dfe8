"""Code versions derived from the source of the domain modules an asset runs.

Changing a prompt template, the parser or a score formula changes the hash, so the Dagster UI
marks the assets built with the old code as stale without anyone remembering to bump a number.
"""

from __future__ import annotations

import hashlib
import inspect
import tokenize
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import dagster as dg

from geomon.suites.pipeline import sample_id


def source_version(*modules: ModuleType | Path) -> str:
    """A hash of the modules' source; a file (a YAML suite) counts by its text, read as Python reads a module's
    source (``linecache``: decoded, universal newlines, a last newline added), so it hashes as it did when a
    YAML suite was a module."""
    digest = hashlib.sha256()
    for module in modules:
        digest.update((_text(module) if isinstance(module, Path) else inspect.getsource(module)).encode())
    return digest.hexdigest()[:12]


def _text(path: Path) -> str:
    with tokenize.open(path) as file:
        text = file.read()
    return text if not text or text.endswith("\n") else text + "\n"


def versioned_output(value: Any, version: str, **kwargs: Any) -> dg.Output:
    """``dg.Output`` with a data version (a World Bank release, a Wikipedia revision). Dagster marks the
    parameter beta and warns on every call; geomon uses it deliberately, so that one warning is silenced
    here (Dagster resets warning filters around a step: a module-level filter does not reach it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        return dg.Output(value, data_version=dg.DataVersion(version), **kwargs)


SAMPLE = "sample"  # metadata: the prompts' sample, on the prompts and on each model's stages that read them


def sample_label(prompts: Any) -> str:
    """``3f2a1c9d0b7e (57 prompts)``: the sample and its size, as metadata and the leaderboard show it."""
    size = f" ({len(prompts)} prompts)" if hasattr(prompts, "__len__") else ""
    return f"{sample_id(prompts)}{size}"
