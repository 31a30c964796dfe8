"""A serving change is a release: a ``variants:`` block in geomon.yaml derives a model from a registered one."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from geomon.cli import main
from geomon.config import load_settings
from geomon.engine.client import GenerationRequest
from geomon.engine.registry import RegistryError, ServingChange, bundled_model_path, model_weights, registry_from_doc
from geomon.engine.runner import model_identity
from geomon_tests.conftest import write_settings


def registry(*variants: dict, models: list[dict] | None = None) -> list:
    return registry_from_doc({"models": models or [], "variants": list(variants)}, Path("/etc/geomon/geomon.yaml"))


def by_name(specs: list, name: str):
    return next(s for s in specs if s.name == name)


def test_a_variant_is_its_base_served_otherwise_with_the_base_as_its_predecessor() -> None:
    specs = registry({"name": "gemma3-270m-q3", "of": "gemma3-270m", "quantize": "Q3_K_S"})
    base, variant = by_name(specs, "gemma3-270m"), by_name(specs, "gemma3-270m-q3")
    assert variant.predecessor == variant.variant_of == "gemma3-270m"
    assert (variant.kind, variant.bundled, variant.params) == (base.kind, base.bundled, base.params)
    assert variant.change == ServingChange(quantize="Q3_K_S")
    assert variant.change.describe(base) == "weights re-quantized Q4_K_M → Q3_K_S"


def test_sampling_and_system_prompt_variants_name_what_changed() -> None:
    specs = registry(
        {"name": "smol-warm", "of": "smollm2-135m-instruct", "params": {"temperature": 0.7, "seed": 3}},
        {"name": "smol-terse", "of": "smollm2-135m-instruct", "system_prompt": "Answer in one word."},
    )
    base, warm, terse = (by_name(specs, n) for n in ("smollm2-135m-instruct", "smol-warm", "smol-terse"))
    assert warm.params == {"temperature": 0.7, "seed": 3}
    assert warm.change.describe(base) == "seed default → 3, temperature 0.0 → 0.7"
    assert terse.change.describe(base) == "system prompt 'Answer in one word.'"
    asked = GenerationRequest("chat", messages=({"role": "user", "content": "Capital of Peru?"},))
    sent = terse.change.serve(asked)
    assert sent.messages == ({"role": "system", "content": "Answer in one word."}, *asked.messages)
    assert warm.change.serve(asked) == asked


def test_a_system_prompt_is_part_of_the_models_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its requests are the suites' own, so the store keys on the prompt through the identity: without it the
    variant would read its base's stored answers."""
    monkeypatch.setenv("GEOMON_CACHE_DIR", str(tmp_path))
    specs = registry({"name": "smol-terse", "of": "smollm2-135m-instruct", "system_prompt": "Be terse."})
    base, terse = by_name(specs, "smollm2-135m-instruct"), by_name(specs, "smol-terse")
    assert model_identity(terse).startswith(model_identity(base) + "|system-sha256:")


def test_an_engine_flag_variant_starts_its_own_servers_and_is_its_own_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same file served with other llama-server flags (its attention keys cached at 8 bits): the alert names the
    flags, the store keys on them (the same requests, other answers), and the engine's command line ends with them.
    Mutation caught: the flags left out of ``model_identity`` (the variant would read its base's answers)."""
    from geomon.engine.local import server_command

    monkeypatch.setenv("GEOMON_CACHE_DIR", str(tmp_path))
    specs = registry({"name": "gemma-kv8", "of": "gemma3-270m", "engine_flags": ["--cache-type-k", "q8_0"]})
    base, kv8 = by_name(specs, "gemma3-270m"), by_name(specs, "gemma-kv8")
    assert kv8.change.describe(base) == "engine flags --cache-type-k q8_0"
    assert model_identity(kv8) == model_identity(base) + "|engine-flags:--cache-type-k q8_0"
    command = server_command(Path("m.gguf"), 8080, "gemma-kv8", 1, 1, 512, flags=kv8.change.engine_flags)
    assert command[-2:] == ["--cache-type-k", "q8_0"]


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"name": "v", "of": "nobody", "quantize": "Q3_K_S"}, "of: no registered model named 'nobody'"),
        ({"name": "v", "of": "gemma3-270m"}, "a variant changes something"),
        ({"name": "v", "of": "gemma3-270m", "quantize": "Q3_K_X"}, "'Q3_K_X' is not one of llama.cpp's types"),
        ({"name": "v", "of": "gemma3-270m", "quantize": "Q2_K", "weights": "a.gguf"}, "quantize or weights, not both"),
        ({"name": "v", "of": "gemma3-270m", "system_prompt": "Hi"}, "a system prompt needs a chat model"),
        ({"name": "v", "of": "api", "quantize": "Q2_K"}, "'api' is an endpoint"),
        ({"name": "v", "of": "gemma3-270m", "quantize": "Q2_K", "bits": 2}, "unknown field(s) ['bits']"),
        ({"of": "gemma3-270m", "quantize": "Q2_K"}, "a variant needs 'name'"),
        ({"name": "v", "of": "gemma3-270m", "engine_flags": "-ctk q8_0"}, "a list of llama-server arguments"),
        ({"name": "v", "of": "gemma3-270m", "engine_flags": ["-c", "512"]}, "-c are set by geomon's engine"),
        ({"name": "v", "of": "api", "engine_flags": ["-ctk", "q8_0"]}, "engine flags apply to geomon's own engine"),
    ],
)
def test_a_variant_that_cannot_be_served_as_written_is_refused_naming_what(entry: dict, says: str) -> None:
    endpoint = {"name": "api", "kind": "chat", "base_url": "http://127.0.0.1:9/v1", "model_id": "m"}
    with pytest.raises(RegistryError, match="variants\\[0\\]") as caught:
        registry(entry, models=[endpoint])
    assert says in str(caught.value)


def test_a_variant_of_a_variant_is_refused() -> None:
    with pytest.raises(RegistryError, match="'q3' is itself a variant; derive from 'gemma3-270m'"):
        registry(
            {"name": "q3", "of": "gemma3-270m", "quantize": "Q3_K_S"}, {"name": "q2", "of": "q3", "quantize": "Q2_K"}
        )


def gguf_file(path: Path, body: bytes) -> Path:
    path.write_bytes(b"GGUF" + body)
    return path


def test_a_different_file_is_a_different_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The weights' sha256 is the model's identity (the store's keys, the answers' fingerprint): a variant's file
    changed in place is another model, a file equal to the base's is the base."""
    monkeypatch.setenv("GEOMON_CACHE_DIR", str(tmp_path / "cache"))
    weights = gguf_file(tmp_path / "v.gguf", b"\x03\x00\x00\x00one")
    [variant] = [s for s in registry({"name": "v", "of": "gemma3-270m", "weights": str(weights)}) if s.name == "v"]
    first = model_identity(variant)
    gguf_file(weights, b"\x03\x00\x00\x00two")
    assert model_identity(variant) != first
    base = by_name(registry(), "gemma3-270m")
    weights.write_bytes(bundled_model_path("gemma3-270m").read_bytes())
    assert model_identity(variant) == model_identity(base)


def test_a_relative_weights_path_is_read_beside_the_settings_file() -> None:
    [variant] = [s for s in registry({"name": "v", "of": "gemma3-270m", "weights": "w/v.gguf"}) if s.name == "v"]
    assert variant.change.weights == "/etc/geomon/w/v.gguf"


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda path: None, "is missing"),
        (lambda path: path.write_bytes(b"<html>not found</html>"), "is not a GGUF file (it starts with b'<htm')"),
        (lambda path: path.mkdir(), "cannot be read (Is a directory)"),
    ],
)
def test_a_variant_whose_file_is_missing_or_unreadable_is_refused_before_anything_is_asked(
    tmp_path: Path, wdi_snapshot_dir: Path, capsys: pytest.CaptureFixture, make, says: str
) -> None:
    weights = tmp_path / "variant.gguf"
    make(weights)
    config = write_settings(tmp_path, wdi_snapshot_dir)
    doc = yaml.safe_load(config.read_text())
    doc["variants"] = [{"name": "gemma3-270m-mine", "of": "gemma3-270m", "weights": str(weights)}]
    config.write_text(yaml.safe_dump(doc))
    status = main(["--config", str(config), "run", "--suite", "worldbench", "--profile", "quick", "--lanes", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert err == [f"geomon: model 'gemma3-270m-mine': weights file {weights} {says}"]
    store = load_settings(config).store()
    assert store.recent_answers("gemma3-270m").empty and store.recent_answers("gemma3-270m-mine").empty


def test_a_variant_is_no_judge(tmp_path: Path, wdi_snapshot_dir: Path) -> None:
    """The jury's default is the bundled models as shipped; a variant is a release under evaluation."""
    config = write_settings(tmp_path, wdi_snapshot_dir)
    doc = yaml.safe_load(config.read_text())
    doc["variants"] = [{"name": "gemma3-270m-q3", "of": "gemma3-270m", "quantize": "Q3_K_S"}]
    config.write_text(yaml.safe_dump(doc))
    settings = load_settings(config)
    assert [s.name for s in settings.judges(settings.gapminder.jury)] == ["smollm2-135m-instruct", "gemma3-270m"]
    assert settings.serving_changes() == {"gemma3-270m-q3": "weights re-quantized Q4_K_M → Q3_K_S"}
    assert settings.lineage()["gemma3-270m-q3"] == "gemma3-270m"


def _no_llama_quantize() -> str:
    """Why this machine cannot re-quantize ("" where it can): the prebuilt engine (CPUs without AVX-512) ships
    no llama-quantize; a source build does."""
    from geomon.engine.quantize import QuantizeUnavailable, llama_quantize_command

    try:
        llama_quantize_command()
    except QuantizeUnavailable as exc:
        return str(exc)
    return ""


@pytest.mark.llama
@pytest.mark.skipif(bool(_no_llama_quantize()), reason=_no_llama_quantize())
def test_a_quantize_variant_serves_the_bundled_file_requantized_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """llama.cpp's llama-quantize (built with the server) makes the smaller file once; a second use reads it."""
    monkeypatch.setenv("GEOMON_CACHE_DIR", str(tmp_path))
    specs = registry({"name": "gemma3-270m-q3", "of": "gemma3-270m", "quantize": "Q3_K_S"})
    base, variant = by_name(specs, "gemma3-270m"), by_name(specs, "gemma3-270m-q3")
    made = model_weights(variant)
    assert made.parent == tmp_path / "gguf" and made.name.endswith(".Q3_K_S.gguf")
    assert made.read_bytes()[:4] == b"GGUF"
    assert made.stat().st_size < model_weights(base).stat().st_size
    modified = made.stat().st_mtime_ns
    assert model_weights(variant) == made and made.stat().st_mtime_ns == modified
    assert model_identity(variant) != model_identity(base)


def test_geomon_plan_says_beforehand_which_comparisons_the_release_decides(
    tmp_path: Path, wdi_snapshot_dir: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per suite, before anything is asked: the release, what changed, and how many of its comparisons the
    profile decides (the bundled file under another name: a file variant that is its base's weights)."""
    monkeypatch.setenv("GEOMON_CACHE_DIR", str(tmp_path / "cache"))
    weights = tmp_path / "same.gguf"
    weights.symlink_to(bundled_model_path("gemma3-270m"))
    config = write_settings(tmp_path, wdi_snapshot_dir)
    doc = yaml.safe_load(config.read_text())
    doc["variants"] = [{"name": "gemma3-270m-same", "of": "gemma3-270m", "weights": str(weights)}]
    config.write_text(yaml.safe_dump(doc))
    args = ["--config", str(config), "plan", "--profile", "quick", "--suites", "worldbench,blend"]
    assert main([*args, "--models", "gemma3-270m,gemma3-270m-same"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("Release gemma3-270m-same"))
    assert line.startswith(
        "Release gemma3-270m-same vs gemma3-270m (weights same.gguf): comparisons decidable at profile quick: "
        "worldbench 0 of 24, blend 0 of 69"
    )


def test_a_system_prompt_variant_sends_its_prompt_and_keeps_its_own_answers(sqlite_store) -> None:
    """The endpoint receives the variant's system message before the suite's own messages (the base's requests
    go as they were), and each model's answers are stored apart. A scripted endpoint: it reports what it got."""
    from geomon.engine.runner import ask
    from geomon_tests.loopback import ScriptedModel, serve

    with serve(ScriptedModel, {"answer": lambda messages: " | ".join(m["role"] for m in messages)}) as url:
        endpoint = {"name": "api", "kind": "chat", "base_url": f"{url}/v1", "model_id": "m"}
        specs = registry({"name": "api-terse", "of": "api", "system_prompt": "Be terse."}, models=[endpoint])
        asked = [GenerationRequest("chat", messages=({"role": "user", "content": "Capital of Peru?"},))]
        base, _ = ask(by_name(specs, "api"), asked, sqlite_store)
        terse, _ = ask(by_name(specs, "api-terse"), asked, sqlite_store)
    assert base["text"].tolist() == ["user"] and terse["text"].tolist() == ["system | user"]
    assert base["key"].iloc[0] != terse["key"].iloc[0]
