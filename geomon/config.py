"""Settings from ``geomon.yaml`` and the environment.

The file holds what users edit (models, data sources, store, engine); the environment overrides
it per deployment and is the only place secrets come from:

- ``GEOMON_CONFIG``: path of the settings file (default ``./geomon.yaml`` if it exists)
- ``GEOMON_STORE_URL``: response/metric store (``sqlite:///…`` or ``postgresql://…``)
- ``GEOMON_WORLDBANK_SNAPSHOT``: a WDI bulk-CSV directory (offline); ``none`` to go live
- ``GEOMON_WORLDBANK_API_URL``: World Bank API base URL (live)
- ``GEOMON_RESULTS_DIR``: where reports and CSVs are written
- ``GEOMON_CACHE_EPOCH``: a response-cache generation; a new value re-asks every model on purpose
- ``GEOMON_BORDERLINES_SNAPSHOT``: the BorderLines release directory (offline); ``none`` to go live
- ``GEOMON_WIKIPEDIA_API_URL``: MediaWiki API (live revisions of the disputes page)
- ``GEOMON_BORDERLINES_RELEASE_URL``: where the BorderLines release files are fetched from (live)
- ``GEOMON_GAPMINDER_SNAPSHOT``: the Gapminder question-bank directory (offline); ``none`` to fetch it
- ``GEOMON_GAPMINDER_RELEASE_URL``: where the Gapminder release files are fetched from (live)
- ``GEOMON_QUENCH_SNAPSHOT``: the QUENCH release directory (offline); ``none`` to fetch its archive
- ``GEOMON_QUENCH_ARCHIVE_URL``: the QUENCH repository archive (.tar.gz) fetched live
- ``GEOMON_EMBEDDING_MODEL``: a sentence-transformers model directory (default: the bundled all-MiniLM-L6-v2)
"""

from __future__ import annotations

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
from geomon.sources.borderlines import DEFAULT_RELEASE_URL
from geomon.sources.corpus import LocalDocument
from geomon.sources.gapminder import DEFAULT_RELEASE_URL as GAPMINDER_RELEASE_URL
from geomon.sources.quench import DEFAULT_ARCHIVE_URL as QUENCH_ARCHIVE_URL
from geomon.sources.wikipedia import DEFAULT_API_URL as DEFAULT_WIKIPEDIA_API_URL
from geomon.sources.wikipedia import USER_AGENT, MediaWikiClient
from geomon.sources.worldbank import DEFAULT_API_URL
from geomon.suites.saged import ROLES as SAGED_ROLES
from geomon.suites.saged import TOPICS as SAGED_TOPICS


class ConfigError(ValueError):
    pass


@dataclass
class BorderLinesSettings:
    snapshot: Path | None  # the release directory; its dated tables stand in for revisions offline
    release_url: str = DEFAULT_RELEASE_URL
    wikipedia_api_url: str = DEFAULT_WIKIPEDIA_API_URL
    revisions: tuple[str, ...] = ("2021-08-31", "2023-05-15", "latest")  # dated versions to evaluate
    user_agent: str = ""  # Wikimedia asks for contact details in the User-Agent; set yours here
    min_interval_s: float = 1.0  # between MediaWiki API calls
    latest_every_days: int = 30  # how often the page's latest revision becomes a new version to evaluate

    def mediawiki(self) -> MediaWikiClient | None:
        """The MediaWiki client these settings describe; None offline (the release's dated tables stand in)."""
        return None if self.snapshot is not None else self.mediawiki_client()

    def mediawiki_client(self) -> MediaWikiClient:
        """A client for the configured MediaWiki API (also SAGED's live pages), polite and rate-limited."""
        return MediaWikiClient(
            self.wikipedia_api_url, user_agent=self.user_agent or USER_AGENT, min_interval_s=self.min_interval_s
        )


@dataclass
class JurySettings:
    judges: tuple[str, ...] = ()  # registered model names; empty = every bundled model
    quorum: int | None = None  # votes a grade needs; default a strict majority of the judges
    max_tokens: int = 384  # a judge reasons step by step before its letter; small local judges may stop short


@dataclass
class GapminderSettings:
    snapshot: Path | None = None  # the question-bank directory; None = fetch the release from release_url
    release_url: str = GAPMINDER_RELEASE_URL
    languages: tuple[str, ...] = ("en-US", "zh-CN")
    jury: JurySettings = field(default_factory=JurySettings)


@dataclass
class QuenchSettings:
    snapshot: Path | None = None  # the release directory; None = fetch the archive from archive_url
    archive_url: str = QUENCH_ARCHIVE_URL
    # The paper's judges answer "correct"/"incorrect" or a 1-5 score: a few tokens are enough.
    jury: JurySettings = field(default_factory=lambda: JurySettings(max_tokens=16))
    expected_questions: int | None = 400  # the release's counts; the blocking check compares (None: skip)
    expected_entities: int | None = 459
    paper_results: Path | None = None  # the paper's Results/ folder: its table goes beside geomon's in the report


@dataclass
class SagedSettings:
    concept: str = "IdeaCoun"  # the root concept the corpus is about; branching replaces its keywords
    keywords: tuple[str, ...] = ("IdeaCoun",)
    documents: tuple[LocalDocument, ...] = ()  # local text files (offline)
    wikipedia_pages: tuple[str, ...] = ()  # live: page titles, read through the MediaWiki client
    wikipedia_date: str = ""  # the pages as they read that day ("" = today)
    countries: tuple[str, ...] = ()  # empty = the G20
    question_model: str | None = None  # a registered model that writes question prompts too (Ap B.2); None: splits only
    roles: dict[str, str | None] = field(default_factory=lambda: dict(SAGED_ROLES))  # name → system prompt
    topics: int = SAGED_TOPICS  # topic clusters per concept (the paper: 3); 0 = no topic feature


@dataclass
class RetentionSettings:
    """Dagster keeps every run's event log; geomon's metric history is the long-term record."""

    run_days: int | None = 90  # runs finished longer ago are deleted with their event logs; None = keep all
    schedule: str = "30 3 * * *"  # cron: when the purge runs

    def __post_init__(self) -> None:
        if self.run_days is not None and (not isinstance(self.run_days, int) or self.run_days < 1):
            raise TypeError(f"run_days must be a whole number of days ≥ 1 or null, not {self.run_days!r}")


@dataclass
class Settings:
    store_url: str
    results_dir: Path
    worldbank_snapshot: Path | None
    worldbank_api_url: str
    models: list[ModelSpec] = field(default_factory=list)  # read from the same file, once
    engine: EngineOptions = field(default_factory=EngineOptions)
    cache_epoch: str = ""
    borderlines: BorderLinesSettings = field(default_factory=lambda: BorderLinesSettings(snapshot=None))
    endpoints: list[Endpoint] = field(default_factory=list)  # served models are discovered (/v1/models)
    alerts: AlertSettings = field(default_factory=AlertSettings)
    drift: DriftSettings = field(default_factory=DriftSettings)
    retention: RetentionSettings = field(default_factory=RetentionSettings)
    gapminder: GapminderSettings = field(default_factory=GapminderSettings)
    quench: QuenchSettings = field(default_factory=QuenchSettings)
    saged: SagedSettings = field(default_factory=SagedSettings)
    embedding_model: Path | None = None  # None: the bundled all-MiniLM-L6-v2
    # Sections of suites that declare their own settings class (SuiteInfo.settings), by suite name.
    suite_sections: dict[str, Any] = field(default_factory=dict)

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

    def model(self, name: str) -> ModelSpec:
        """A model by name: from the registry, else from what the endpoints serve."""
        try:
            return find_model(self.models, name)
        except RegistryError:
            if not self.endpoints:
                raise
        return find_model(self.all_models()[0], name)

    def judges(self, jury: JurySettings) -> list[ModelSpec]:
        """The jury's judge models: the named ones, or every bundled model."""
        if jury.judges:
            return [self.model(name) for name in jury.judges]
        return [s for s in self.models if s.bundled]

    def store(self) -> Any:
        from geomon.engine.store import ResponseStore

        return ResponseStore(self.store_url)


def _jury(doc: dict[str, Any] | None, default: JurySettings) -> JurySettings:
    """A ``jury:`` section over the suite's defaults (judges are model names)."""
    doc = dict(doc or {})
    doc["judges"] = tuple(str(j) for j in doc.get("judges") or ())
    return JurySettings(**{"quorum": default.quorum, "max_tokens": default.max_tokens, **doc})


def _saged(doc: dict[str, Any] | None, base: Path, path: Path | None) -> SagedSettings:
    """The ``saged:`` section: documents' paths resolved against the settings file's folder."""
    doc = dict(doc or {})
    try:
        documents = []
        for entry in doc.pop("documents", None) or []:
            entry = dict(entry)
            entry["path"] = _resolve(base, str(entry.get("path", "")))
            if entry["path"] is None or not entry.get("source_tag"):
                raise ConfigError(f"settings file {path}: saged.documents: each needs a path and a source_tag")
            documents.append(LocalDocument(**entry))
        for key in ("keywords", "wikipedia_pages", "countries"):
            if key in doc:
                doc[key] = tuple(str(v) for v in doc[key] or ())
        roles = doc.pop("roles", None)
        settings = SagedSettings(documents=tuple(documents), **doc)
    except TypeError as exc:
        raise ConfigError(f"settings file {path}: saged: {exc}") from exc
    if not isinstance(settings.topics, int) or isinstance(settings.topics, bool) or settings.topics < 0:
        raise ConfigError(f"settings file {path}: saged.topics: a whole number of topic clusters per concept (0 = off)")
    if roles is not None:
        if not isinstance(roles, dict) or not roles:
            raise ConfigError(f"settings file {path}: saged.roles: a mapping of role name to system prompt (or null)")
        settings.roles = {str(k): (str(v) if v else None) for k, v in roles.items()}
    return settings


def _suite_section(name: str, kind: type, doc: Any, base: Path, path: Path | None) -> Any:
    """A suite's section parsed into its declared dataclass: unknown keys are an error naming the file and
    section; ``Path`` fields resolve against the settings file's folder (``none`` = unset); lists become
    tuples; ``GEOMON_<SUITE>_<FIELD>`` overrides a text or path field (``GEOMON_BLEND_SNAPSHOT=none``)."""
    import dataclasses
    import typing

    if doc is not None and not isinstance(doc, dict):
        raise ConfigError(f"settings file {path}: {name}: expected a mapping, found {type(doc).__name__}")
    doc = dict(doc or {})
    fields = {f.name: f for f in dataclasses.fields(kind)}
    unknown = sorted(set(doc) - set(fields))
    if unknown:
        raise ConfigError(f"settings file {path}: {name}: unknown key(s) {unknown}; known: {sorted(fields)}")
    hints = typing.get_type_hints(kind)
    values: dict[str, Any] = {}
    for key, hint in hints.items():
        if key not in fields:
            continue
        env = os.environ.get(f"GEOMON_{name.upper()}_{key.upper()}")
        raw = env if env is not None else doc.get(key, dataclasses.MISSING)
        if raw is dataclasses.MISSING:
            continue
        if Path in typing.get_args(hint) or hint is Path:
            values[key] = _resolve(base, None if raw is None else str(raw))
        elif typing.get_origin(hint) is tuple:
            if not isinstance(raw, list | tuple):
                raise ConfigError(f"settings file {path}: {name}.{key}: expected a list, found {raw!r}")
            values[key] = tuple(str(v) for v in raw)
        else:
            values[key] = raw
    try:
        return kind(**values)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"settings file {path}: {name}: {exc}") from exc


def _resolve(base: Path, value: str | None) -> Path | None:
    if value in (None, "", "none"):
        return None
    path = Path(os.path.expanduser(value))
    return path if path.is_absolute() else (base / path).resolve()


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
        "borderlines",
        "engine",
        "models",
        "include_bundled",
        "cache_epoch",
        "alerts",
        "drift",
        "retention",
        "endpoints",
        "gapminder",
        "quench",
        "saged",
        "embedding_model",
    }
    from geomon.suites.registry import suites

    declared = {info.name: info.settings for info in suites().values() if info.settings is not None}
    known |= set(declared)
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
    bl = dict(doc.get("borderlines") or {})
    bl_snapshot = os.environ.get("GEOMON_BORDERLINES_SNAPSHOT", bl.pop("snapshot", None))
    bl["release_url"] = os.environ.get("GEOMON_BORDERLINES_RELEASE_URL", bl.get("release_url", DEFAULT_RELEASE_URL))
    bl["wikipedia_api_url"] = os.environ.get(
        "GEOMON_WIKIPEDIA_API_URL", bl.get("wikipedia_api_url", DEFAULT_WIKIPEDIA_API_URL)
    )
    if "revisions" in bl:
        bl["revisions"] = tuple(str(r) for r in bl["revisions"])
    try:
        borderlines = BorderLinesSettings(snapshot=_resolve(base, bl_snapshot), **bl)
    except TypeError as exc:
        raise ConfigError(f"settings file {path}: borderlines: {exc}") from exc
    gm = dict(doc.get("gapminder") or {})
    gm_snapshot = os.environ.get("GEOMON_GAPMINDER_SNAPSHOT", gm.pop("snapshot", None))
    gm["release_url"] = os.environ.get("GEOMON_GAPMINDER_RELEASE_URL", gm.get("release_url", GAPMINDER_RELEASE_URL))
    try:
        gm["languages"] = tuple(gm.get("languages") or GapminderSettings.languages)
        jury = _jury(gm.pop("jury", None), JurySettings())
        gapminder = GapminderSettings(snapshot=_resolve(base, gm_snapshot), jury=jury, **gm)
    except TypeError as exc:
        raise ConfigError(f"settings file {path}: gapminder: {exc}") from exc
    qu = dict(doc.get("quench") or {})
    qu_snapshot = os.environ.get("GEOMON_QUENCH_SNAPSHOT", qu.pop("snapshot", None))
    qu["archive_url"] = os.environ.get("GEOMON_QUENCH_ARCHIVE_URL", qu.get("archive_url", QUENCH_ARCHIVE_URL))
    try:
        jury = _jury(qu.pop("jury", None), QuenchSettings().jury)
        qu["paper_results"] = _resolve(base, qu.get("paper_results"))
        quench = QuenchSettings(snapshot=_resolve(base, qu_snapshot), jury=jury, **qu)
    except TypeError as exc:
        raise ConfigError(f"settings file {path}: quench: {exc}") from exc
    saged = _saged(doc.get("saged"), base, path)
    sections = {}
    for name, kind in (("alerts", AlertSettings), ("drift", DriftSettings), ("retention", RetentionSettings)):
        section = doc.get(name) or {}
        if any(key.endswith(("password", "webhook_url", "api_key")) for key in section):
            raise ConfigError(f"settings file {path}: {name}: secrets come from environment variables (use *_env keys)")
        try:
            sections[name] = kind(**section)
        except TypeError as exc:
            raise ConfigError(f"settings file {path}: {name}: {exc}") from exc
    return Settings(
        **sections,
        suite_sections={name: _suite_section(name, kind, doc.get(name), base, path) for name, kind in declared.items()},
        endpoints=endpoints,
        borderlines=borderlines,
        gapminder=gapminder,
        quench=quench,
        saged=saged,
        embedding_model=_resolve(base, os.environ.get("GEOMON_EMBEDDING_MODEL", doc.get("embedding_model"))),
        models=models,
        store_url=store_url,
        results_dir=_resolve(base, os.environ.get("GEOMON_RESULTS_DIR", doc.get("results_dir"))) or home / "results",
        worldbank_snapshot=_resolve(base, snapshot),
        worldbank_api_url=os.environ.get("GEOMON_WORLDBANK_API_URL", wb.get("api_url", DEFAULT_API_URL)),
        engine=engine,
        cache_epoch=str(os.environ.get("GEOMON_CACHE_EPOCH", doc.get("cache_epoch", ""))),
    )
