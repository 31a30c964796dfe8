"""The suite registry: a benchmark is one domain module in ``geomon.suites`` (and its source reader in
``geomon.sources``), and everything that lists suites — the CLI's ``--suite``, ``geomon run``, the
settings, the Dagster definitions, sensors and the trends report — reads this registry instead of naming
them.

A suite module declares ``SUITE = SuiteInfo(...)`` (its name, paper, headline metrics, run options and
settings class) and ``PIPELINE = Pipeline(...)`` (``geomon.suites.pipeline``: its stages, checks, tracked
stage and report), plus ``TRACKED`` (its tracked headlines, each declared once as a
``geomon.stats.declarations.TrackedMetric``); a YAML suite in a suite folder (``geomon.suites.yaml_suite``) declares
the same in its file. The registry reads them once per process (again only when a suite folder, file or module
changes), checks them and keeps each suite as one record, a ``Suite`` (info, pipeline, tracked): the rest of
geomon asks ``suite(name)`` for it and never reads a module's declarations. ``geomon.defs.factory`` builds the
Dagster assets, checks and jobs from it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import importlib.util
import os
import pkgutil
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from geomon.stats.values import MetricKey
from geomon.suites.info import (
    Headline,
    Importer,
    Published,
    RunOption,
    Suite,
    SuiteError,
    SuiteInfo,
    answered_outcome,
    status_of,
)

# where every suite reads them
__all__ = [
    "Headline",
    "Importer",
    "Published",
    "RunOption",
    "Suite",
    "SuiteError",
    "SuiteInfo",
    "answered_outcome",
    "status_of",
]


def _declared(module: ModuleType) -> Suite:
    """A suite module's declarations (``SUITE``, ``PIPELINE``, ``TRACKED``) as one ``Suite``, checked."""
    from geomon.suites.pipeline import Pipeline

    info = module.SUITE
    if not isinstance(info, SuiteInfo):
        raise SuiteError(f"suite module {module.__name__}: SUITE must be a SuiteInfo, not {type(info).__name__}")
    if module.__name__.rsplit(".", 1)[-1] != info.name:
        raise SuiteError(f"suite module {module.__name__} declares the name {info.name!r}; they must match")
    pipeline = getattr(module, "PIPELINE", None)
    if not isinstance(pipeline, Pipeline):
        raise SuiteError(f"suite module {module.__name__}: PIPELINE must be a Pipeline, not {type(pipeline).__name__}")
    return _check(Suite(info, pipeline, getattr(module, "TRACKED", None), module), f"suite module {module.__name__}")


def _check(suite: Suite, where: str) -> Suite:
    """A suite's declarations, checked as typed values: its pipeline's stages and inputs, one tracked stage, the
    run options that set stage options, its tracked headlines (``where`` names what declared them)."""
    from geomon.suites.pipeline import PipelineError

    info, pipeline = suite.info, suite.pipeline
    try:
        pipeline.validate(info.name)
    except PipelineError as exc:
        raise SuiteError(str(exc)) from None
    if info.settings is not None and not (isinstance(info.settings, type) and dataclasses.is_dataclass(info.settings)):
        raise SuiteError(f"suite {info.name}: SUITE.settings must be a dataclass (its geomon.yaml section)")
    seen: set[tuple[str, str]] = set()
    for headline in info.headlines:
        key = (headline.metric, headline.breakdown)
        if key in seen:
            raise SuiteError(f"suite {info.name}: headline {headline.metric} {headline.breakdown} is declared twice")
        seen.add(key)
    for stage in pipeline.stages:
        names = [o.name for o in stage.options]
        if len(names) != len(set(names)):
            raise SuiteError(f"suite {info.name}: stage {stage.name} declares option(s) twice: {names}")
    _check_tracked(suite, where)
    stage_options = {o.name for o in pipeline.prompts.options}
    for profile, values in info.profiles.items():
        unknown = sorted(set(values) - stage_options)
        if unknown:
            raise SuiteError(
                f"suite {info.name}: profile {profile!r} sets {unknown}, not options of stage {pipeline.prompts.name} "
                f"({', '.join(sorted(stage_options))})"
            )
    for option in info.options:
        if option.config not in stage_options:
            raise SuiteError(
                f"suite {info.name}: run option {option.flag} sets {option.config!r}, not an option of stage "
                f"{pipeline.prompts.name} ({', '.join(sorted(stage_options))})"
            )
    return suite


def _check_tracked(suite: Suite, where: str) -> None:
    """The suite's tracked metrics (``TRACKED``): each a declared headline (metric and breakdown), once."""
    from geomon.stats.declarations import TrackedMetric

    info, tracked = suite.info, suite.tracked
    if not isinstance(tracked, tuple) or not tracked or not all(isinstance(m, TrackedMetric) for m in tracked):
        raise SuiteError(f"{where}: TRACKED must be a non-empty tuple of TrackedMetric")
    headlines = {(h.metric, h.breakdown) for h in info.headlines}
    seen = set()
    for metric in tracked:
        key = MetricKey(metric.name, metric.breakdown)
        if key not in headlines:
            shown = ", ".join(str(MetricKey(*pair)) for pair in sorted(headlines))
            raise SuiteError(f"suite {info.name}: tracked metric {key} is not a declared headline ({shown})")
        if key in seen:
            raise SuiteError(f"suite {info.name}: tracked metric {metric.name} is declared twice")
        seen.add(key)


_BROKEN: dict[str, str] = {}  # suite module → why it cannot be loaded (the last ``suites()`` found)
_NOT_SUITES = {"registry", "pipeline", "yaml_suite", "info", "kit"}  # the registry's own modules


def suite_dirs() -> list[Path]:
    """Folders of suites outside the package — YAML files and Python modules: ``GEOMON_SUITE_DIRS``
    (os.pathsep-separated) and ``suite_dirs`` in the settings file (``$GEOMON_CONFIG`` or ./geomon.yaml;
    relative to it). Read here, not through the settings, which load the suites."""
    dirs = [Path(p) for p in os.environ.get("GEOMON_SUITE_DIRS", "").split(os.pathsep) if p]
    config = Path(os.environ.get("GEOMON_CONFIG", "geomon.yaml"))
    if config.is_file():
        stat = config.stat()
        dirs += [config.parent / p for p in _listed_dirs(config.resolve(), stat.st_mtime_ns, stat.st_size)]
    return [d.resolve() for d in dirs]


@functools.lru_cache(maxsize=16)
def _listed_dirs(config: Path, mtime_ns: int, size: int) -> tuple[str, ...]:
    """The settings file's ``suite_dirs``, parsed once per version of the file: building the code location
    asks the registry dozens of times, and parsing the file each time was most of its import time."""
    import yaml

    try:
        doc = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError:
        doc = {}  # the settings loader names the file and the problem
    listed = doc.get("suite_dirs") if isinstance(doc, dict) else None
    return tuple(str(p) for p in listed or [])


def _load_file(path: Path, found: Mapping[str, Suite]) -> Suite:
    """The suite a file outside the package declares: a YAML suite, built straight into a ``Suite``, or a Python
    module run as ``geomon.suites.<file name>`` (so it imports and versions like a bundled suite), its
    declarations checked into one. A Python module is bound in ``sys.modules`` under its suite's name once that
    name is known to be free; a YAML suite has no module."""
    from geomon.suites import yaml_suite

    if path.suffix == ".yaml":
        suite = yaml_suite.load(path)
        _free(suite.name, path, found)
        return _check(suite, f"suite file {path}")
    spec = importlib.util.spec_from_file_location(f"geomon.suites.{path.stem}", path)
    if spec is None or spec.loader is None:
        raise SuiteError(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except SuiteError as exc:
        raise SuiteError(f"{path}: {exc}") from None
    except Exception as exc:  # the suite's own bug: named, never breaking the others
        raise SuiteError(f"suite module {path} cannot be imported: {type(exc).__name__}: {exc}") from None
    finally:
        sys.modules.pop(spec.name, None)  # registered below, once its name is known to be free
    info = getattr(module, "SUITE", None)
    name = info.name if isinstance(info, SuiteInfo) else path.stem
    _free(name, path, found)
    sys.modules[f"geomon.suites.{name}"] = module
    return _declared(module)


def _free(name: str, path: Path, found: Mapping[str, Suite]) -> None:
    """A file's suite ``name`` is free: no suite found before has it, and no module of the package (or of another
    file) is bound to it."""
    existing = sys.modules.get(f"geomon.suites.{name}")
    if name in found or (existing is not None and getattr(existing, "__file__", None) != str(path)):
        raise SuiteError(f"{path}: suite name {name!r} is taken")


def _file_suites(found: dict[str, Suite]) -> None:
    """Suites declared in the suite folders (``*.yaml``, ``*.py``)."""
    for folder in suite_dirs():
        for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.py")]):
            if path.name.startswith("_"):
                continue
            try:
                suite = _load_file(path, found)
                found[suite.name] = suite
            except SuiteError as exc:
                _BROKEN[path.stem] = str(exc)


# The last registry built and what it was built from (``_sources``): every lookup (a run asks ~two dozen
# times) reuses it until a suite folder, file or module changes.
_BUILT: tuple[tuple[Any, ...], dict[str, Suite], dict[str, str]] | None = None


def _sources(known: Mapping[str, Suite]) -> tuple[Any, ...]:
    """What the registry is built from, cheap to read: the package's and the settings' suite folders, each
    candidate file's size and modification time, and the module (and its declarations) each suite name is bound to
    in ``sys.modules`` (the files' and the ``known`` suites'). A test or user that adds a folder, writes a file or
    drops a module changes it."""
    import geomon.suites as package

    folders = (*package.__path__, *map(str, suite_dirs()))
    files = []
    for folder in folders:
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                if entry.name.endswith((".py", ".yaml")):
                    stat = entry.stat()
                    files.append((folder, entry.name, stat.st_mtime_ns, stat.st_size))
    names = sorted({Path(name).stem for _, name, *_ in files} | set(known))
    bound = []
    for name in names:
        loaded = sys.modules.get(f"geomon.suites.{name}")
        # the objects themselves, not their ids: a dropped module's id may be reused by its successor
        bound.append((name, loaded, *(getattr(loaded, attr, None) for attr in ("SUITE", "PIPELINE", "TRACKED"))))
    return (folders, tuple(files), tuple(bound))


def _registered() -> dict[str, Suite]:
    """Every registered suite by name, in run order: built once per set of sources (``_sources``) and reused."""
    global _BUILT
    if _BUILT is None or _BUILT[0] != _sources(_BUILT[1]):
        found = _build()
        _BUILT = (_sources(found), found, dict(_BROKEN))  # after loading, which binds the file suites' modules
    _BROKEN.clear()
    _BROKEN.update(_BUILT[2])
    return _BUILT[1]


def suites() -> Mapping[str, SuiteInfo]:
    """Every suite module in ``geomon.suites`` that declares ``SUITE``, and every suite in the suite folders, by
    name (in run order). A module that fails to import or declares itself wrongly breaks only itself: it is left
    out, and ``broken()`` and any use of it by name say why. Built once per set of sources and reused."""
    return {name: suite.info for name, suite in _registered().items()}


def _build() -> dict[str, Suite]:
    """The registry, loaded: every suite module imported and checked, the file suites executed."""
    import geomon.suites as package

    found: dict[str, Suite] = {}
    _BROKEN.clear()
    for entry in sorted(pkgutil.iter_modules(package.__path__), key=lambda e: e.name):
        if entry.name in _NOT_SUITES:
            continue
        try:
            module = importlib.import_module(f"geomon.suites.{entry.name}")
            if hasattr(module, "SUITE"):
                suite = _declared(module)
                found[suite.name] = suite
        except SuiteError as exc:
            _BROKEN[entry.name] = str(exc)
        except Exception as exc:  # a suite's own bug: named, never breaking the others
            _BROKEN[entry.name] = (
                f"suite module geomon.suites.{entry.name} cannot be imported: {type(exc).__name__}: {exc}"
            )
    _file_suites(found)
    _own_revisions(found)
    return dict(sorted(found.items(), key=lambda item: (item[1].info.order, item[0])))


def _own_revisions(found: dict[str, Suite]) -> None:
    """Each suite with revisions names partitions of its own: a later suite (in run order) that declares
    another's is left out, naming both."""
    owners: dict[str, str] = {}
    for name in sorted(found, key=lambda n: (found[n].info.order, n)):
        revisions = found[name].pipeline.revisions
        if revisions is None:
            continue
        if revisions.partitions in owners:
            del found[name]
            _BROKEN[name] = (
                f"suite {name}: revisions.partitions {revisions.partitions!r} is taken by suite "
                f"{owners[revisions.partitions]} (a suite's revisions are its own)"
            )
        else:
            owners[revisions.partitions] = name


def broken() -> dict[str, str]:
    """Suite modules left out by the last ``suites()``, and why."""
    return dict(_BROKEN)


def suite(name: str) -> Suite:
    """Suite ``name``: its info, pipeline and tracked headlines (a broken one is an error saying why)."""
    known = _registered()
    if name in _BROKEN:
        raise SuiteError(_BROKEN[name])
    if name not in known:
        raise SuiteError(f"unknown suite {name!r}; known: {', '.join(known)}")
    return known[name]


def drift_probe() -> Any:
    """The questions the drift probe re-asks (a ``pipeline.DriftProbe``): those of the one registered suite that
    declares them, so the probe names no suite; an error where none or several do."""
    declared = {name: s.pipeline.drift_probe for name, s in _registered().items() if s.pipeline.drift_probe}
    if len(declared) != 1:
        raise SuiteError(
            f"the drift probe re-asks one suite's questions; {len(declared)} registered suites declare a "
            f"drift_probe ({', '.join(declared) or 'none'})"
        )
    return next(iter(declared.values()))


def _importers() -> tuple[dict[str, tuple[str, Importer]], dict[str, str]]:
    """The registered suites' importers by kind, with the suite that offers each, and the suites whose importers
    cannot be loaded, with why (a suite's own bug: it leaves out its kinds, never the others')."""
    found: dict[str, tuple[str, Importer]] = {}
    failed: dict[str, str] = {}
    for name, entry in _registered().items():
        try:
            offered = entry.importers
        except Exception as exc:  # the suite's own bug: named, kept to itself
            failed[name] = f"suite {name}: its importers cannot be loaded: {type(exc).__name__}: {exc}"
            continue
        for kind, importer in offered.items():
            if kind in found:
                raise SuiteError(f"geomon import {kind}: declared by suite {found[kind][0]} and by suite {name}")
            found[kind] = (name, importer)
    return found, failed


def importers() -> dict[str, tuple[str, Importer]]:
    """Every kind of ``geomon import`` the registered suites offer (``Suite.importers``), by kind, with the suite
    that offers it, in run order: what the command line dispatches from, the settings read the folders of and the
    Dagster layer builds the published history's assets from, so none of them names a suite. A kind two suites
    declare is an error naming both; a suite whose importers cannot be loaded is left out (``broken_importers``
    says why)."""
    return _importers()[0]


def broken_importers() -> dict[str, str]:
    """The suites whose importers cannot be loaded, and why."""
    return _importers()[1]


def module(name: str) -> ModuleType:
    """The Python module of suite ``name``: its domain code beyond the declarations. A YAML suite has none: an
    error naming its file."""
    source = suite(name).source
    if not isinstance(source, ModuleType):
        raise SuiteError(f"suite {name} is declared in {source}, not in a Python module")
    return source


def headline_catalog() -> list[tuple[str, str, str, str, tuple[float, float] | None]]:
    """(suite, metric, breakdown, title, bounds) of every registered suite's headlines: what the trends
    report charts (handed to it: the report layer imports no suite)."""
    return [(info.name, h.metric, h.breakdown, h.title, h.bounds) for info in suites().values() for h in info.headlines]


def titles() -> list[tuple[str, str]]:
    """(name, title) of every registered suite, in run order: the results index's rows."""
    return [(info.name, info.title) for info in suites().values()]


PROFILES = ("quick", "default", "paper")  # the run profiles every suite has (geomon.yaml may add others)


def check_profile(profile: str, overrides: Mapping[str, Any]) -> None:
    """A ``SuiteError`` unless ``profile`` is a built-in run profile or one geomon.yaml's ``profiles:`` defines."""
    known = {*PROFILES, *overrides}
    if profile not in known:
        raise SuiteError(f"unknown run profile {profile!r}; known: {', '.join(sorted(known))}")


def profile_options(name: str, profile: str, overrides: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> dict:
    """The prompts-stage options of suite ``name`` under run ``profile``: the stage's declared defaults
    (the paper's full size), the suite's own values for the profile, then geomon.yaml's ``profiles:``."""
    info = suites()[name]
    check_profile(profile, overrides)
    declared = {o.name: o.default for o in suite(name).pipeline.prompts.options}
    return {**declared, **dict(info.profiles.get(profile, {})), **dict(overrides.get(profile, {}).get(name, {}))}


def resolve(names: str, flag: str = "--suite") -> list[SuiteInfo]:
    """``"worldbench,borderlines"`` → their SuiteInfo, in the order given; unknown names are an error naming
    ``flag``, the command-line option they came from."""
    known = suites()
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    for name in wanted:
        if name in _BROKEN:
            raise SuiteError(f"{flag} {name}: {_BROKEN[name]}")
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise SuiteError(f"{flag}: unknown suite(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[n] for n in wanted]
