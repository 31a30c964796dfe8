"""What a suite declares about itself (its name, headlines, run options, profiles, the results its authors
published it imports) and the one rule of its answers: the types a suite module and a YAML suite build, below the
registry that collects them — and ``Suite``, the one record of a registered suite the registry hands out."""

from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Callable, Mapping, Sequence
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


def model_name(model_id: str) -> str:
    """An imported model's name: ``openai/gpt-4.1-2025-04-14`` → ``gpt-4.1-2025-04-14`` (a provider path's last
    part)."""
    return str(model_id).strip().rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Published:
    """One evaluation a benchmark's authors published, as its suite's importer reads it: which model (its
    ``model_name``), when it was evaluated and released and by whom, its per-item rows (what the suite's tracked
    metrics are computed from and compared on) and what the import could not use."""

    key: str  # its id among the published results (a model configuration): the import's origin names it
    model: str
    evaluated_at: str  # as published; the import reads the date
    items: pd.DataFrame
    vendor: str = ""  # its predecessor is the same vendor's previous release
    released: str = ""  # the model's publish date, as published
    answers: int = 0  # the answers read (0 where only rates are published)
    excluded: int = 0  # answers without an answer: counted, never scored
    note: str = ""  # what could not be used, and why; "" when complete


@dataclass(frozen=True)
class Importer:
    """A kind of ``geomon import`` a suite offers: the results its benchmark's authors published, read as the
    suite's evaluations (``read``); the import declares their figures by the suite's tracked metrics, compares them
    on ``scope``, each with its vendor's previous release, and the Dagster layer observes the folder ``setting``
    names. A suite folder declares its importers as ``IMPORTERS`` in its ``published.py`` (``Suite.importers``)."""

    kind: str  # the command line's kind: ``geomon import <kind> PATH``
    path: str  # what PATH is, for ``--help``
    read: Callable[[Path, Any, Mapping[str, Any]], list[Published]]  # (PATH, settings, its options' values)
    scope: str  # the scope every imported evaluation is compared on
    files: Callable[[Path], list[Path]]  # the files ``read`` reads in PATH: a change to one re-imports
    models: Callable[[Any], tuple[str, ...]]  # settings → the models an import adds, known before it runs
    options: tuple[RunOption, ...] = ()  # its own flags (``--entities``), handed to ``read`` by ``RunOption.dest``
    # geomon.yaml's top-level key (``GEOMON_<KEY>`` overrides it) naming the PATH Dagster observes hourly and
    # imports when a file changes; "" when only the command line imports.
    setting: str = ""
    summary: Callable[[Sequence[str]], str] | None = None  # the imported evaluations' notes → a closing line
    counted: str = ""  # a note ``summary`` already counts, not repeated per evaluation


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

    @functools.cached_property
    def importers(self) -> Mapping[str, Importer]:
        """The kinds of ``geomon import`` the suite offers, by kind: the ``IMPORTERS`` its folder's ``published.py``
        declares (Gapminder's published results); none where it has no such file. Read when first asked, not when
        the registry loads the suite: a broken importer leaves the suite's runs alone."""
        module = self.source if isinstance(self.source, ModuleType) else None
        name = f"{module.__name__}.published" if module is not None and hasattr(module, "__path__") else ""
        if not name or importlib.util.find_spec(name) is None:
            return {}
        declared = getattr(importlib.import_module(name), "IMPORTERS", ())
        if not isinstance(declared, tuple) or not all(isinstance(i, Importer) for i in declared):
            raise SuiteError(f"suite {self.name}: {name}.IMPORTERS must be a tuple of Importer")
        return {importer.kind: importer for importer in declared}


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
