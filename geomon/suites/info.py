"""What a suite declares about itself (its name, headlines, run options, profiles) and the one rule of its
answers: the types a suite module and a YAML suite build, below the registry that collects them — and
``Suite``, the one record of a registered suite the registry hands out."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from geomon.stats.declarations import TrackedMetric
    from geomon.suites.pipeline import Pipeline


@dataclass(frozen=True)
class Headline:
    """A metric the trends report charts per model over time."""

    metric: str
    title: str
    breakdown: str = ""
    bounds: tuple[float, float] | None = None  # the metric's possible range, when it has one (a rate: 0-100)


@dataclass(frozen=True)
class RunOption:
    """A ``geomon run`` option that only this suite reads (``dest`` is the key ``materialize`` gets)."""

    flag: str
    help: str
    type: type = str
    default: Any = None
    config: str = ""  # the prompts stage option it sets, for a suite declared by a Pipeline

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def is_sample(self) -> bool:
        """A sample size (N questions, countries, territories; 0 = all): never negative."""
        return self.type is int and self.config.startswith("sample")


@dataclass(frozen=True)
class SuiteInfo:
    name: str  # the CLI name, the Dagster group and asset-key prefix, the metric history's suite
    title: str
    spec: str  # the paper that defines the figures
    headlines: tuple[Headline, ...] = ()
    options: tuple[RunOption, ...] = field(default_factory=tuple)
    order: int = 100  # where `geomon run` puts it among the suites (the cheaper ones first)
    # The suite's own ``geomon.yaml`` section (a dataclass; ``Settings.suite(name)`` returns it parsed), so
    # the settings loader never names a suite.
    settings: type | None = None
    # The summary's sample size the headline figures rest on (questions, territories, answers): below
    # stats.sufficiency.MIN_SAMPLE they are marked ``insufficient sample``.
    sample: str = ""
    # The prompts stage's options per run profile ("quick", "default"); the "paper" profile is the stage's
    # declared defaults (each paper's full size). geomon.yaml's ``profiles:`` overrides them.
    profiles: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # The prompts' columns whose distinct values are the tracked headlines' clusters (``geomon plan``'s sample).
    unit: tuple[str, ...] = ()


@dataclass(frozen=True)
class Suite:
    """A registered suite, one record built once by the registry (``geomon.suites.registry.suite``): what it
    says of itself (``info``), its stages (``pipeline``), its tracked headlines (``tracked``, each a declared
    headline) and the source that versions its stages by default (``source``: its Python module, or the YAML
    file that declares it). A Python suite module declares the first three as ``SUITE``, ``PIPELINE`` and
    ``TRACKED``; a YAML suite is built straight into one."""

    info: SuiteInfo
    pipeline: Pipeline
    tracked: tuple[TrackedMetric, ...]
    source: ModuleType | Path

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def published(self) -> ModuleType:
        """The suite folder's reader of the results its benchmark's authors published (``<suite>/published.py``:
        Gapminder's, which ``geomon import gapminder-results`` records); an error naming the suite where it has
        none."""
        module = self.source if isinstance(self.source, ModuleType) else None
        name = f"{module.__name__}.published" if module is not None and hasattr(module, "__path__") else ""
        if not name or importlib.util.find_spec(name) is None:
            raise SuiteError(f"suite {self.name}: no published results to import (no published.py in its folder)")
        return importlib.import_module(name)


def status_of(read: pd.Series, errors: pd.Series) -> pd.Series:
    """The one rule of every suite, per answer: ``answered`` (a value was read), ``failed`` (the request
    errored) or ``unanswered`` (nothing could be read). Failed and unanswered answers are excluded from
    the scores and counted, never scored as a miss. An empty error string is no error."""
    failed = errors.notna() & errors.astype(str).ne("")
    return pd.Series(np.where(read.notna(), "answered", np.where(failed, "failed", "unanswered")), index=read.index)


def answered_outcome(status: pd.Series) -> np.ndarray:
    """Per answer, what a tracked answer rate counts: 1 answered, 0 not (unanswered, refused), NaN for a failed
    request — no answer of the model's (an outage is not a model that stopped answering; the suite's checks
    count it)."""
    return np.where(status == "failed", np.nan, (status == "answered").to_numpy(dtype=float))


class SuiteError(ValueError):
    pass
