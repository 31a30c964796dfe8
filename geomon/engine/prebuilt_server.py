"""llama.cpp's server from a prebuilt wheel (xllamacpp), started with llama-server's own arguments.

xllamacpp ships llama.cpp's C++ server compiled for any x86-64 CPU with AVX2 (no AVX-512, no AMX: safe on the
Xeons whose AMX path crashed and on AMD hosts without AVX-512), so the bundled models are served with no compile
step. It runs the server inside a Python process; this module is that process:

    python -m geomon.engine.prebuilt_server -m MODEL.gguf --alias NAME --host 127.0.0.1 --port 8080 -t 2 -np 2 -c 2048

It takes exactly the arguments ``geomon.engine.local.server_command`` gives llama-server, serves the same HTTP API
(``/health``, ``/v1/chat/completions``, ``/v1/completions``) and ends on SIGTERM or SIGINT. ``--check`` serves
the bundled SmolLM2 and asks it once: what `make setup` runs before it takes the prebuilt server (on a CPU it does
not run on, setup builds llama.cpp from source instead).
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys

# llama-server's --cache-type-k/-v values (common/arg.cpp's kv_cache_types) and --flash-attn's
CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
FLASH_ATTN = {
    "on": "LLAMA_FLASH_ATTN_TYPE_ENABLED",
    "off": "LLAMA_FLASH_ATTN_TYPE_DISABLED",
    "auto": "LLAMA_FLASH_ATTN_TYPE_AUTO",
}


def check() -> None:
    """Serve the bundled SmolLM2 through this module and ask it for one token; exit 1 saying why it failed."""
    import httpx

    from geomon.engine.local import EngineUnavailable, prebuilt_server_command, running_server
    from geomon.engine.registry import bundled_model_path

    os.environ["GEOMON_LLAMA_SERVER"] = shlex.join(prebuilt_server_command())
    try:
        with running_server(bundled_model_path("smollm2-135m-instruct"), "check", slots=1, threads=1) as url:
            reply = httpx.post(
                f"{url}/chat/completions",
                json={"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 1},
                timeout=60,
            )
            reply.raise_for_status()
    except (EngineUnavailable, httpx.HTTPError) as exc:
        sys.exit(f"geomon: the prebuilt llama.cpp server does not serve here: {exc}")
    print("the prebuilt llama.cpp server serves the bundled models here")


def main(argv: list[str] | None = None) -> None:
    if (argv if argv is not None else sys.argv[1:]) == ["--check"]:
        check()
        return
    parser = argparse.ArgumentParser(prog="geomon.engine.prebuilt_server")
    parser.add_argument("-m", "--model", required=True)
    parser.add_argument("--alias", default="")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("-t", "--threads", type=int, default=-1)
    parser.add_argument("-np", "--parallel", type=int, default=1)
    parser.add_argument("-c", "--ctx-size", type=int, default=0)
    parser.add_argument("-ub", "--ubatch-size", type=int)
    parser.add_argument("--no-webui", action="store_true")
    # the engine flags a serving variant may set (geomon.yaml's engine_flags), as llama-server spells them
    parser.add_argument("-ctk", "--cache-type-k", choices=CACHE_TYPES)
    parser.add_argument("-ctv", "--cache-type-v", choices=CACHE_TYPES)
    parser.add_argument("-fa", "--flash-attn", choices=FLASH_ATTN)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        sys.exit(
            f"geomon: the prebuilt llama.cpp server does not take {' '.join(unknown)} (it takes llama-server's "
            "--cache-type-k, --cache-type-v and --flash-attn): build the engine (GEOMON_ENGINE=build make setup) "
            "to serve a variant with other engine flags"
        )

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    if args.alias:
        params.model_alias = {args.alias}
    params.hostnames = [args.host]
    params.port = args.port
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.n_parallel = args.parallel
    params.n_ctx = args.ctx_size
    params.fit_params = False  # the context asked for, as llama-server's own flags give it
    if args.ubatch_size:
        params.n_ubatch = args.ubatch_size
    params.ui = not args.no_webui
    if args.cache_type_k:
        params.cache_type_k = getattr(xllamacpp.ggml_type, f"GGML_TYPE_{args.cache_type_k.upper()}")
    if args.cache_type_v:
        params.cache_type_v = getattr(xllamacpp.ggml_type, f"GGML_TYPE_{args.cache_type_v.upper()}")
    if args.flash_attn:
        params.flash_attn_type = getattr(xllamacpp.llama_flash_attn_type, FLASH_ATTN[args.flash_attn])

    server = xllamacpp.Server(params)  # listening once it returns; /health says when the model is loaded
    # SIGTERM and SIGINT end the process as they end llama-server (set after the server, which may install
    # handlers of its own): nothing here outlives the answers already sent.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)
    print(f"geomon prebuilt llama.cpp server on {server.listening_address}", flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
