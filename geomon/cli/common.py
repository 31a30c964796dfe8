"""What every command shares: the refusal of a value, models by name, the Dagster home, the exit gate."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from geomon.config import ConfigError
from geomon.engine.registry import RegistryError


class UsageError(ValueError):
    """A command-line value geomon refuses (an unknown name, a negative sample): one ``geomon:`` line, exit 1."""


def named_models(settings: Any, names: Sequence[str], flag: str) -> list[Any]:
    """The models ``names`` names, in order; an unknown one is a ``UsageError`` naming ``flag``."""
    try:
        return [settings.model(name.strip()) for name in names]
    except RegistryError as exc:
        raise UsageError(f"{flag}: {exc}") from None


def dagster_home() -> Path:
    """DAGSTER_HOME defaults to the folder holding dagster.yaml (the repository root)."""
    home = os.environ.get("DAGSTER_HOME")
    if not home:
        if not Path("dagster.yaml").exists():
            raise ConfigError("set DAGSTER_HOME (a folder with dagster.yaml) or run from the repository root")
        home = str(Path.cwd())
        os.environ["DAGSTER_HOME"] = home
    return Path(home)


FAIL_ON = ("check", "regression", "never")


FAIL_ON_HELP = (
    "exit 3 when a regression alert fires (regression), or also when a blocking check fails or an imported "
    "evaluation lacks items its baseline has (check, the default); never: always 0 — for CI gates, "
    "docs/monitoring.md"
)


def gate(fail_on: str, failed_checks: int, regressions: int) -> int:
    """The exit status a CI job gates a release on: ``check`` fails on a failed blocking check or a regression
    alert, ``regression`` on a regression alert only, ``never`` on neither."""
    if fail_on == "never":
        return 0
    if regressions or (fail_on == "check" and failed_checks):
        return 3
    return 0
