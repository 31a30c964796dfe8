"""The suite registry: a benchmark is one domain module in ``geomon.suites`` plus one ``geomon/defs/<name>/``
folder, and everything that lists suites — the CLI's ``--suite``, ``geomon run``, the Dagster definitions
and the trends report — reads this registry instead of naming them.

A suite module declares ``SUITE = SuiteInfo(...)`` and provides the suite protocol:

- ``build_prompts(...)`` → a prompt frame (one row per question; suite-specific inputs),
- ``requests_for(prompts, spec)`` → the engine requests for one model,
- ``score(prompts, responses, ...)`` → per-answer scores with a ``status`` column
  (answered / failed / unanswered: failed and unanswered answers are excluded and counted, never scored),
- ``diagnose(scores, ...)`` → the paper's figures with uncertainty,
- ``items(scores, ...)`` + ``REGRESSION_METRICS`` → per-item values the regression check compares.

Its Dagster folder ``geomon/defs/<name>/`` holds the assets and checks (loaded with the rest of the
``defs`` folder) and ``runs.py`` with ``materialize(...)``, the order ``geomon run`` materializes them in.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd

PROTOCOL = ("build_prompts", "requests_for", "score", "diagnose", "items", "REGRESSION_METRICS")


@dataclass(frozen=True)
class Headline:
    """A metric the trends report charts per model over time."""

    metric: str
    title: str
    breakdown: str = ""


@dataclass(frozen=True)
class RunOption:
    """A ``geomon run`` option that only this suite reads (``dest`` is the key ``materialize`` gets)."""

    flag: str
    help: str
    type: type = str
    default: Any = None

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class SuiteInfo:
    name: str  # the CLI name, the Dagster group and asset-key prefix, the metric history's suite
    title: str
    spec: str  # the paper that defines the figures
    headlines: tuple[Headline, ...] = ()
    options: tuple[RunOption, ...] = field(default_factory=tuple)
    order: int = 100  # where `geomon run` puts it among the suites (the cheaper ones first)


def status_of(read: pd.Series, errors: pd.Series) -> pd.Series:
    """The one rule of every suite, per answer: ``answered`` (a value was read), ``failed`` (the request
    errored) or ``unanswered`` (nothing could be read). Failed and unanswered answers are excluded from
    the scores and counted, never scored as a miss. An empty error string is no error."""
    failed = errors.notna() & errors.astype(str).ne("")
    return pd.Series(np.where(read.notna(), "answered", np.where(failed, "failed", "unanswered")), index=read.index)


class SuiteError(ValueError):
    pass


def _check(module: ModuleType) -> SuiteInfo:
    info = module.SUITE
    missing = [name for name in PROTOCOL if not hasattr(module, name)]
    if missing:
        raise SuiteError(f"suite module {module.__name__} lacks {', '.join(missing)} (the suite protocol)")
    if module.__name__.rsplit(".", 1)[-1] != info.name:
        raise SuiteError(f"suite module {module.__name__} declares the name {info.name!r}; they must match")
    return info


def suites() -> Mapping[str, SuiteInfo]:
    """Every suite module in ``geomon.suites`` that declares ``SUITE``, by name (in module order)."""
    import geomon.suites as package

    found: dict[str, SuiteInfo] = {}
    for entry in sorted(pkgutil.iter_modules(package.__path__), key=lambda e: e.name):
        if entry.name == "registry":
            continue
        module = importlib.import_module(f"geomon.suites.{entry.name}")
        if hasattr(module, "SUITE"):
            info = _check(module)
            found[info.name] = info
    return dict(sorted(found.items(), key=lambda item: (item[1].order, item[0])))


def module(name: str) -> ModuleType:
    """The domain module of suite ``name``."""
    known = suites()
    if name not in known:
        raise SuiteError(f"unknown suite {name!r}; known: {', '.join(known)}")
    return importlib.import_module(f"geomon.suites.{name}")


def resolve(names: str) -> list[SuiteInfo]:
    """``"worldbench,borderlines"`` → their SuiteInfo, in the order given; unknown names are an error."""
    known = suites()
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise SuiteError(f"--suite: unknown suite(s) {unknown}; known: {', '.join(known)}")
    return [known[n] for n in wanted]
