"""Settings from ``geomon.yaml`` and the environment.

The file holds what users edit (models, data sources, store, engine); the environment overrides
it per deployment and is the only place secrets come from:

- ``GEOMON_CONFIG``: path of the settings file (default ``./geomon.yaml`` if it exists)
- ``GEOMON_STORE_URL``: response/metric store (``sqlite:///…`` or ``postgresql://…``)
- ``GEOMON_WORLDBANK_SNAPSHOT``: a WDI bulk-CSV directory (offline); ``none`` to go live
- ``GEOMON_WORLDBANK_API_URL``: World Bank API base URL (live)
- ``GEOMON_RESULTS_DIR``: where reports and CSVs are written
- ``GEOMON_CACHE_EPOCH``: a response-cache generation; a new value re-asks every model on purpose
- ``GEOMON_WIKIPEDIA_API_URL``: the MediaWiki API suites read live (``mediawiki.api_url``: BorderLines' disputes
  page, SAGED's pages)
- ``GEOMON_<SUITE>_<FIELD>``: a text or path field of a suite's own section, e.g. ``GEOMON_GAPMINDER_SNAPSHOT``
  (``none`` to fetch the release), ``GEOMON_BORDERLINES_SNAPSHOT`` (``none`` to parse live revisions),
  ``GEOMON_BORDERLINES_RELEASE_URL``, ``GEOMON_QUENCH_ARCHIVE_URL``, ``GEOMON_BLEND_SNAPSHOT``
- ``GEOMON_<KEY>``: the folder of a suite's published results its importer's key names, imported into the history
  (``none``: not), e.g. ``GEOMON_GAPMINDER_RESULTS``
- ``GEOMON_BUDGET_ASKS_PER_SUITE``: the asks a run may make per model and suite (``budget.asks_per_suite``)
- ``GEOMON_EMBEDDING_MODEL``: a sentence-transformers model directory (default: the bundled all-MiniLM-L6-v2)
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geomon.engine.discovery import Endpoint, discover, endpoints_from_doc
from geomon.engine.registry import (
    ModelSpec,
    RegistryError,
    bundled_specs,
    find_model,
    load_yaml_mapping,
    registry_from_doc,
)
from geomon.engine.runner import EngineOptions
from geomon.monitor.alerts import AlertSettings
from geomon.monitor.drift import DriftSettings
from geomon.sources.mediawiki import MediaWikiSettings
from geomon.sources.worldbank import DEFAULT_API_URL
from geomon.stats.verdicts import VerdictSettings


class ConfigError(ValueError):
    pass


@dataclass
class RetentionSettings:
    """Dagster keeps every run's event log; geomon's metric history is the long-term record."""

    run_days: int | None = 90  # runs finished longer ago are deleted with their event logs; None = keep all
    schedule: str = "30 3 * * *"  # cron: when the purge runs

    def __post_init__(self) -> None:
        if self.run_days is not None and (not isinstance(self.run_days, int) or self.run_days < 1):
            raise TypeError(f"run_days must be a whole number of days ≥ 1 or null, not {self.run_days!r}")


@dataclass(frozen=True)
class BudgetSettings:
    """What a run may ask: ``asks_per_suite`` requests per model per suite per run. ``geomon plan`` sizes each
    comparison a profile cannot decide against it: a larger sample within it, or not decidable at this profile."""

    asks_per_suite: int = 20_000

    def __post_init__(self) -> None:
        value = self.asks_per_suite
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"asks_per_suite: {value!r} must be a whole number of asks ≥ 1")


@dataclass
class Settings:
    store_url: str
    results_dir: Path
    worldbank_snapshot: Path | None
    worldbank_api_url: str
    models: list[ModelSpec] = field(default_factory=list)  # read from the same file, once
    engine: EngineOptions = field(default_factory=EngineOptions)
    cache_epoch: str = ""
    mediawiki: MediaWikiSettings = field(default_factory=MediaWikiSettings)  # the wiki API suites read live
    endpoints: list[Endpoint] = field(default_factory=list)  # served models are discovered (/v1/models)
    alerts: AlertSettings = field(default_factory=AlertSettings)
    verdicts: VerdictSettings = field(default_factory=VerdictSettings)
    drift: DriftSettings = field(default_factory=DriftSettings)
    retention: RetentionSettings = field(default_factory=RetentionSettings)
    budget: BudgetSettings = field(default_factory=BudgetSettings)
    embedding_model: Path | None = None  # None: the bundled all-MiniLM-L6-v2
    # Model → the model it is compared with on its first evaluation, for models outside the registry
    # (imported histories); overrides an import's own choice (the same vendor's previous release).
    predecessors: dict[str, str] = field(default_factory=dict)
    # A suite importer's folder by its kind, where geomon.yaml sets the importer's key (``Importer.setting``): the
    # Dagster layer observes it and re-imports when a file changes. A kind not here is imported by the command only.
    published: dict[str, Path] = field(default_factory=dict)
    # Sections of suites that declare their own settings class (SuiteInfo.settings), by suite name.
    suite_sections: dict[str, Any] = field(default_factory=dict)
    # Run profiles' overrides: profile → suite → prompts-stage option → value (suites declare their own).
    profiles: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    # The profile automation and the UI's default materialization run (docs/getting-started.md).
    automation_profile: str = "default"
    # `geomon run` on a terminal asks before a run its plan estimates above these (0: never asks).
    confirm_above_minutes: float = 60.0
    confirm_above_usd: float = 5.0

    def digest(self) -> str:
        """A hash of everything read from geomon.yaml and the environment (models, engine, suites' sections,
        verdicts) and of geomon's own code: an evaluation run under other settings or other code is not the same
        evaluation (``answers_fingerprint``)."""
        return hashlib.sha256(f"{self!r}\n{code_digest()}".encode()).hexdigest()[:16]

    def run_options(self, suite: str, profile: str | None = None) -> dict[str, Any]:
        """Suite ``suite``'s prompts-stage options under ``profile`` (default: the automation profile): the one
        meaning of a profile for ``geomon run``, the UI and automation."""
        from geomon.suites.registry import SuiteError, profile_options

        try:
            return profile_options(suite, profile or self.automation_profile, self.profiles)
        except SuiteError as exc:
            raise ConfigError(str(exc)) from None

    def __getattr__(self, name: str) -> Any:
        """A suite's own section as an attribute too (``settings.gapminder``): suites declare them."""
        sections = self.__dict__.get("suite_sections", {})
        if name in sections:
            return sections[name]
        raise AttributeError(f"Settings has no {name!r} (no field, and no suite declares that section)")

    def suite(self, name: str) -> Any:
        """The parsed ``geomon.yaml`` section of suite ``name`` (its declared settings class; defaults when
        the file has none)."""
        if name not in self.suite_sections:
            raise ConfigError(f"suite {name!r} declares no settings section")
        return self.suite_sections[name]

    def all_models(self) -> tuple[list[ModelSpec], dict[str, str]]:
        """Registry models plus those the endpoints serve now (registry entries win); unreachable endpoints."""
        discovered, errors = discover(self.endpoints)
        names = {s.name for s in self.models}
        return [*self.models, *(s for s in discovered if s.name not in names)], errors

    def lineage(self) -> dict[str, str]:
        """Each model's predecessor: the registry's ``predecessor``, overridden by the settings' ``predecessors:``
        — the one answer for ``geomon run``, ``geomon import`` and the Dagster assets."""
        return {**{s.name: s.predecessor for s in self.models if s.predecessor}, **self.predecessors}

    def serving_changes(self) -> dict[str, str]:
        """Each variant's serving change as its alerts name it (``weights re-quantized Q4_K_M → Q3_K_S``)."""
        return {s.name: s.change.describe(self.model(s.variant_of)) for s in self.models if s.change and s.variant_of}

    def model(self, name: str) -> ModelSpec:
        """A model by name: from the registry, else from what the endpoints serve."""
        try:
            return find_model(self.models, name)
        except RegistryError:
            if not self.endpoints:
                raise
        return find_model(self.all_models()[0], name)

    def judges(self, jury: Any) -> list[ModelSpec]:
        """The jury's judge models: the named ones, or every bundled model."""
        if jury.judges:
            return [self.model(name) for name in jury.judges]
        return [s for s in self.models if s.bundled and s.variant_of is None]

    def store(self) -> Any:
        from geomon.engine.store import ResponseStore

        return ResponseStore(self.store_url)


@functools.cache
def code_digest() -> str:
    """A hash of geomon's source (its Python modules and declared suites), once per process."""
    root = Path(__file__).parent
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".yaml", ".yml")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _section(where: str, kind: type, doc: Any, base: Path, path: Path | None, env_prefix: str = "") -> Any:
    """A settings section parsed into its dataclass: unknown keys are an error naming the file and section;
    ``Path`` fields resolve against the settings file's folder (``none`` = unset); lists become tuples (of
    dataclasses, when the field says so); a nested dataclass field is a nested section over its default;
    ``<env_prefix>_<FIELD>`` in the environment overrides a text or path field (``GEOMON_BLEND_SNAPSHOT=none``)."""
    import dataclasses
    import typing

    if doc is not None and not isinstance(doc, dict):
        raise ConfigError(f"settings file {path}: {where}: expected a mapping, found {type(doc).__name__}")
    doc = dict(doc or {})
    fields = {f.name: f for f in dataclasses.fields(kind)}
    unknown = sorted(set(doc) - set(fields))
    if unknown:
        raise ConfigError(f"settings file {path}: {where}: unknown key(s) {unknown}; known: {sorted(fields)}")
    values: dict[str, Any] = {}
    for key, hint in typing.get_type_hints(kind).items():
        if key not in fields:
            continue
        env = os.environ.get(f"{env_prefix}_{key.upper()}") if env_prefix else None
        raw = env if env is not None else doc.get(key, dataclasses.MISSING)
        if raw is dataclasses.MISSING:
            continue
        args = typing.get_args(hint)
        if hint is Path or Path in args:
            values[key] = _resolve(base, None if raw is None else str(raw))
        elif dataclasses.is_dataclass(hint):
            default = fields[key].default_factory() if callable(fields[key].default_factory) else hint()
            merged = {**{f.name: getattr(default, f.name) for f in dataclasses.fields(hint)}, **(raw or {})}
            values[key] = _section(f"{where}.{key}", hint, merged, base, path)
        elif typing.get_origin(hint) is tuple:
            if not isinstance(raw, list | tuple):
                raise ConfigError(f"settings file {path}: {where}.{key}: expected a list, found {raw!r}")
            item = args[0] if args else str
            if dataclasses.is_dataclass(item):
                values[key] = tuple(_section(f"{where}.{key}[{i}]", item, v, base, path) for i, v in enumerate(raw))
            else:
                values[key] = tuple(str(v) for v in raw)
        else:
            values[key] = raw
    try:
        return kind(**values)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"settings file {path}: {where}: {exc}") from exc


def _predecessors(doc: Any, path: Path | None) -> dict[str, str]:
    if doc is None:
        return {}
    if not isinstance(doc, dict) or not all(isinstance(v, str) and v for v in doc.values()):
        raise ConfigError(f"settings file {path}: predecessors: a mapping of model name to its predecessor's name")
    return {str(k): v for k, v in doc.items()}


def _budget(doc: Any, path: Path | None) -> BudgetSettings:
    """``budget:`` — ``asks_per_suite`` (``GEOMON_BUDGET_ASKS_PER_SUITE`` overrides it); an unknown key or a value
    that is not a whole number ≥ 1 is an error naming the file and the key."""
    if doc is not None and not isinstance(doc, dict):
        raise ConfigError(f"settings file {path}: budget: expected a mapping, found {type(doc).__name__}")
    doc = dict(doc or {})
    unknown = sorted(set(doc) - {"asks_per_suite"})
    if unknown:
        raise ConfigError(f"settings file {path}: budget: unknown key(s) {unknown}; known: ['asks_per_suite']")
    raw = os.environ.get("GEOMON_BUDGET_ASKS_PER_SUITE")
    if raw is not None:
        try:
            doc["asks_per_suite"] = int(raw)
        except ValueError:
            raise ConfigError(f"GEOMON_BUDGET_ASKS_PER_SUITE: {raw!r} is not a whole number of asks") from None
    try:
        return BudgetSettings(**doc)
    except ValueError as exc:
        raise ConfigError(f"settings file {path}: budget.{exc}") from None


def _resolve(base: Path, value: str | None) -> Path | None:
    if value in (None, "", "none"):
        return None
    path = Path(os.path.expanduser(value))
    return path if path.is_absolute() else (base / path).resolve()


def _profiles(doc: Any, path: Path | None) -> dict[str, dict[str, dict[str, Any]]]:
    """``profiles:`` — profile → suite → prompts-stage option → value; a suite or option that does not
    exist is an error naming the file, the profile and the name."""
    if not doc:
        return {}
    from geomon.suites import registry

    where = f"settings file {path}: profiles"
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: a mapping of profile name to suites")
    known = registry.suites()
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for profile, by_suite in doc.items():
        if not isinstance(by_suite, dict):
            raise ConfigError(f"{where}.{profile}: a mapping of suite name to its options")
        for suite, values in by_suite.items():
            if suite not in known:
                raise ConfigError(f"{where}.{profile}: unknown suite {suite!r}; known: {', '.join(known)}")
            options = {o.name for o in registry.suite(suite).pipeline.prompts.options}
            unknown = sorted(set(values or {}) - options)
            if unknown:
                raise ConfigError(
                    f"{where}.{profile}.{suite}: unknown option(s) {unknown}; known: {', '.join(sorted(options))}"
                )
            out.setdefault(str(profile), {})[suite] = dict(values or {})
    return out


def _published(observed: dict[str, str], doc: dict[str, Any], base: Path) -> dict[str, Path]:
    """The folders geomon.yaml names for the suites' importers (``GEOMON_<KEY>`` overrides; ``none``: not), by
    kind."""
    folders = {
        kind: _resolve(base, os.environ.get(f"GEOMON_{key.upper()}", doc.get(key))) for key, kind in observed.items()
    }
    return {kind: folder for kind, folder in folders.items() if folder is not None}


def _revision_scopes(sections: dict[str, Any]) -> dict[str, int]:
    """Each suite with revisions that counts them from its section: how many one release decides."""
    from geomon.suites import registry

    counted = {}
    for name, section in sections.items():
        revisions = registry.suite(name).pipeline.revisions
        if revisions is not None and revisions.scopes is not None:
            counted[name] = revisions.scopes(section)
    return counted


def load_settings(path: str | Path | None = None) -> Settings:
    """Settings from a file (or ``GEOMON_CONFIG``, or ``./geomon.yaml``) with environment overrides."""
    path = path or os.environ.get("GEOMON_CONFIG")
    if path is None and Path("geomon.yaml").exists():
        path = "geomon.yaml"
    doc: dict[str, Any] = {}
    base = Path.cwd()
    if path is not None:
        path = Path(path).resolve()
        doc = load_yaml_mapping(path, "settings file", ConfigError)
        base = path.parent
    known = {
        "store_url",
        "results_dir",
        "worldbank",
        "mediawiki",
        "engine",
        "models",
        "variants",
        "include_bundled",
        "cache_epoch",
        "alerts",
        "verdicts",
        "drift",
        "retention",
        "budget",
        "endpoints",
        "embedding_model",
        "predecessors",
        "profiles",
        "automation_profile",
        "confirm_above_minutes",
        "confirm_above_usd",
        "suite_dirs",  # read by the suite registry (suites declared in YAML files)
    }
    from geomon.suites.registry import broken, broken_importers, importers, suites

    declared = {info.name: info.settings for info in suites().values() if info.settings is not None}
    observed = {importer.setting: kind for kind, (_, importer) in importers().items() if importer.setting}
    # A broken suite module's section, and the keys named after it (its importer's folder), are kept unread: that
    # suite fails when used, naming why; the rest run.
    failing = {*broken(), *broken_importers()}
    known |= set(declared) | set(broken()) | set(observed)
    known |= {key for key in doc if any(str(key).startswith(f"{name}_") for name in failing)}
    unknown = set(doc) - known
    if unknown:
        raise ConfigError(f"settings file {path}: unknown key(s) {sorted(unknown)}; known: {sorted(known)}")
    wb = doc.get("worldbank") or {}
    home = base / "var"
    store_url = os.environ.get("GEOMON_STORE_URL") or doc.get("store_url") or f"sqlite:///{home / 'geomon.sqlite'}"
    if store_url.startswith("sqlite:///") and not store_url.startswith("sqlite:////"):
        store_url = f"sqlite:///{(base / store_url.removeprefix('sqlite:///')).resolve()}"
    snapshot = os.environ.get("GEOMON_WORLDBANK_SNAPSHOT", wb.get("snapshot"))
    engine_doc = doc.get("engine") or {}
    try:
        engine = EngineOptions(**engine_doc)
    except TypeError as exc:
        raise ConfigError(f"settings file {path}: engine: {exc}") from exc
    try:
        # Fail early, naming the file, rather than mid-run.
        models = registry_from_doc(doc, path) if path is not None else bundled_specs()
        endpoints = endpoints_from_doc(doc.get("endpoints"), str(path))
    except RegistryError as exc:
        raise ConfigError(str(exc)) from exc
    mediawiki = _section("mediawiki", MediaWikiSettings, doc.get("mediawiki"), base, path)
    mediawiki.api_url = os.environ.get("GEOMON_WIKIPEDIA_API_URL", mediawiki.api_url)
    sections = {}
    kinds = (
        ("alerts", AlertSettings),
        ("verdicts", VerdictSettings),
        ("drift", DriftSettings),
        ("retention", RetentionSettings),
    )
    for name, kind in kinds:
        section = doc.get(name) or {}
        if any(key.endswith(("password", "webhook_url", "api_key")) for key in section):
            raise ConfigError(f"settings file {path}: {name}: secrets come from environment variables (use *_env keys)")
        try:
            sections[name] = kind(**section)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"settings file {path}: {name}: {exc}") from exc
    suite_sections = {
        name: _section(name, kind, doc.get(name), base, path, f"GEOMON_{name.upper()}")
        for name, kind in declared.items()
    }
    # A suite with revisions decides each of them in a release: its share of α is split among them.
    scopes = {**_revision_scopes(suite_sections), **sections["verdicts"].scopes}
    sections["verdicts"] = dataclasses.replace(sections["verdicts"], scopes=scopes)
    return Settings(
        **sections,
        budget=_budget(doc.get("budget"), path),
        suite_sections=suite_sections,
        endpoints=endpoints,
        mediawiki=mediawiki,
        embedding_model=_resolve(base, os.environ.get("GEOMON_EMBEDDING_MODEL", doc.get("embedding_model"))),
        models=models,
        store_url=store_url,
        results_dir=_resolve(base, os.environ.get("GEOMON_RESULTS_DIR", doc.get("results_dir"))) or home / "results",
        worldbank_snapshot=_resolve(base, snapshot),
        worldbank_api_url=os.environ.get("GEOMON_WORLDBANK_API_URL", wb.get("api_url", DEFAULT_API_URL)),
        engine=engine,
        predecessors=_predecessors(doc.get("predecessors"), path),
        profiles=_profiles(doc.get("profiles"), path),
        confirm_above_minutes=float(doc.get("confirm_above_minutes", 60.0)),
        confirm_above_usd=float(doc.get("confirm_above_usd", 5.0)),
        automation_profile=str(os.environ.get("GEOMON_AUTOMATION_PROFILE", doc.get("automation_profile", "default"))),
        published=_published(observed, doc, base),
        cache_epoch=str(os.environ.get("GEOMON_CACHE_EPOCH", doc.get("cache_epoch", ""))),
    )
