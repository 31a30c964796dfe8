"""`geomon models`, `geomon serve-local` and `geomon ask`: the registered models, a bundled one served, one asked."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from typing import Any

from geomon.cli.common import named_models
from geomon.config import load_settings
from geomon.engine.registry import RegistryError, model_weights


def cmd_models(args: argparse.Namespace) -> int:
    from geomon.engine.runner import model_identity

    settings = load_settings(args.config)
    for spec in settings.models:
        where = f"bundled {model_weights(spec)}" if spec.bundled else f"{spec.base_url} ({spec.model_id})"
        identity = model_identity(spec) if args.identity else ""
        print(f"{spec.name:28s} {spec.kind:5s} {where} {identity}")
    return 0


def cmd_serve_local(args: argparse.Namespace) -> int:
    from geomon.engine.local import running_server

    settings = load_settings(args.config)
    [spec] = named_models(settings, [args.model], "serve-local")
    if not spec.bundled:
        raise RegistryError(f"model {spec.name!r} is an endpoint ({spec.base_url}), not a bundled model")
    with running_server(
        model_weights(spec),
        alias=spec.name,
        slots=args.slots,
        port=args.port,
        threads=args.threads,
        host=args.host,
    ) as base_url:
        print(
            f"{spec.name} is served at {base_url} (OpenAI-compatible; model id {spec.name!r}). Ctrl-C stops it.",
            flush=True,
        )

        # Stop on Ctrl-C and on SIGTERM alike, even where the launching shell left SIGINT ignored (a
        # background job of a non-interactive shell inherits SIGINT ignored and would never stop).
        def stop(signum: int, frame: object) -> None:
            raise KeyboardInterrupt

        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, stop)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    """One question to one model through the store (a quick way to see a model answer)."""
    from geomon.engine.client import GenerationRequest
    from geomon.engine.runner import ask

    settings = load_settings(args.config)
    [spec] = named_models(settings, [args.model], "ask")
    if spec.kind == "chat":
        request = GenerationRequest("chat", messages=({"role": "user", "content": args.text},), params=spec.params)
    else:
        request = GenerationRequest(
            "completion", prompt=f"Question: {args.text}\nAnswer:", params={**spec.params, "stop": ["\n"]}
        )
    frame, stats = ask(spec, [request], settings.store(), options=settings.engine)
    row = frame.iloc[0]
    print(row["text"] if row["error"] is None else f"error: {row['error']}")
    print(f"({'from the store' if row['cached'] else 'asked'}; model calls: {stats.model_calls})", file=sys.stderr)
    return 0


def register(sub: Any, known: dict[str, Any]) -> None:
    """``geomon models``, ``geomon serve-local MODEL`` and ``geomon ask MODEL TEXT``."""
    models = sub.add_parser("models", help="list registered models")
    models.add_argument("--identity", action="store_true", help="also print the identity the store keys on")
    models.set_defaults(func=cmd_models)

    serve = sub.add_parser("serve-local", help="serve a bundled model over an OpenAI-compatible API")
    serve.add_argument("model")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0 in a container)")
    serve.add_argument("--slots", type=int, default=8, help="sequences decoded together")
    serve.add_argument("--threads", type=int)
    serve.set_defaults(func=cmd_serve_local)

    ask = sub.add_parser("ask", help="ask one model one question (through the store)")
    ask.add_argument("model")
    ask.add_argument("text")
    ask.set_defaults(func=cmd_ask)
