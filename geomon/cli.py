"""The ``geomon`` command: run the benchmarks, list models, serve a bundled model, manage the store."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from geomon.config import ConfigError, load_settings
from geomon.engine.registry import RegistryError, bundled_model_path

log = logging.getLogger("geomon")


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    for noisy in ("httpx", "httpx2", "openai", "urllib3", "alembic", "great_expectations"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _dagster_home() -> Path:
    """DAGSTER_HOME defaults to the folder holding dagster.yaml (the repository root)."""
    home = os.environ.get("DAGSTER_HOME")
    if not home:
        if not Path("dagster.yaml").exists():
            raise ConfigError("set DAGSTER_HOME (a folder with dagster.yaml) or run from the repository root")
        home = str(Path.cwd())
        os.environ["DAGSTER_HOME"] = home
    return Path(home)


def cmd_run(args: argparse.Namespace) -> int:
    import dagster as dg

    if args.epoch:
        os.environ["GEOMON_CACHE_EPOCH"] = args.epoch
    from geomon.definitions import defs
    from geomon.defs.runs import failed_checks, suite_runs
    from geomon.suites.registry import resolve

    settings = load_settings(args.config)
    specs = settings.models
    if args.models:
        specs = [settings.model(name) for name in args.models.split(",")]
    names = [s.name for s in specs]
    chosen = resolve(args.suite)
    home = _dagster_home()
    level = "DEBUG" if args.verbose else "WARNING"
    results = []
    started = time.monotonic()
    with dg.DagsterInstance.get() as instance:
        for suite in chosen:
            options = {option.dest: getattr(args, option.dest) for option in suite.options}
            log.info("%s for %s", suite.title, ", ".join(names))
            ran, described = suite_runs(suite.name).run_from_options(defs, instance, names, options, settings, level)
            log.info("%s done (%s)", suite.title, described)
            results += ran
        for check in failed_checks(results):
            log.warning(
                "check %s on %s failed: %s",
                check.check_name,
                check.asset_key.to_user_string(),
                {k: v.value for k, v in check.metadata.items()},
            )
        print(f"\nDone in {time.monotonic() - started:.0f}s for {', '.join(names)}.")
        for suite in chosen:
            event = instance.get_latest_materialization_event(dg.AssetKey([suite.name, "leaderboard"]))
            if event is not None and event.asset_materialization is not None:
                board = event.asset_materialization.metadata.get("leaderboard")
                print(f"\n{suite.title}:\n{board.value if board is not None else ''}")
            report = settings.results_dir / suite.name / "report.html"
            print(f"Results: {report.parent} (leaderboard.csv and per-model CSVs)\nReport:  {report}")
        print(f"\nEvery report: {settings.results_dir / 'index.html'}")
    print(f"Dagster instance: {home} — open the UI with `make ui` (dg dev, http://127.0.0.1:3000)")
    return 0


def cmd_trends(args: argparse.Namespace) -> int:
    from geomon.monitor.history import MetricHistory
    from geomon.report import trends
    from geomon.report.index import write_index

    settings = load_settings(args.config)
    series = MetricHistory(settings.store_url).series(only=trends.headline_keys())
    page = trends.write_report(settings.results_dir / "trends", series)
    write_index(settings.results_dir)
    table = trends.trend_table(series)
    print(
        table.groupby(["suite", "metric", "model", "scope"]).tail(1).to_string(index=False)
        if len(table)
        else "no history yet"
    )
    print(f"\nReport: {page}")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from geomon.engine.runner import model_identity

    settings = load_settings(args.config)
    for spec in settings.models:
        where = f"bundled {bundled_model_path(spec.bundled)}" if spec.bundled else f"{spec.base_url} ({spec.model_id})"
        identity = model_identity(spec) if args.identity else ""
        print(f"{spec.name:28s} {spec.kind:5s} {where} {identity}")
    return 0


def cmd_serve_local(args: argparse.Namespace) -> int:
    from geomon.engine.local import running_server

    settings = load_settings(args.config)
    spec = settings.model(args.model)
    if not spec.bundled:
        raise RegistryError(f"model {spec.name!r} is an endpoint ({spec.base_url}), not a bundled model")
    with running_server(
        bundled_model_path(spec.bundled),
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
    spec = settings.model(args.model)
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


def cmd_store(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    store = settings.store()
    if args.action == "list":
        summary = store.summary()
        print(summary.to_string(index=False) if len(summary) else "the store is empty")
    elif args.action == "export":
        n = store.export(args.out, model=args.model, epoch=args.epoch)
        print(f"wrote {n} answers to {args.out}")
    elif args.action == "prune":
        before = datetime.fromisoformat(args.before).replace(tzinfo=UTC) if args.before else None
        deleted = store.prune(model=args.model, epoch=args.epoch, before=before, errors_only=args.errors_only)
        print(f"deleted {deleted['answers']} answers and {deleted['errors']} errors")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="geomon", description=__doc__)
    parser.add_argument("--config", help="settings file (default: $GEOMON_CONFIG or ./geomon.yaml)")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    from geomon.suites.registry import suites

    known = suites()
    run = sub.add_parser("run", help="materialize the suites' graphs for every registered model")
    run.add_argument("--suite", default=",".join(known), help=f"comma-separated: {', '.join(known)}")
    run.add_argument("--models", help="comma-separated model names (default: all registered)")
    for info in known.values():  # each suite's own options, from the registry
        group = run.add_argument_group(info.title)
        for option in info.options:
            group.add_argument(option.flag, type=option.type, default=option.default, help=option.help)
    run.add_argument("--epoch", help="cache epoch: a new value re-asks every question on purpose (old answers stay)")
    run.set_defaults(func=cmd_run)

    trends = sub.add_parser("trends", help="every headline metric per model over time (from the metric history)")
    trends.set_defaults(func=cmd_trends)
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

    store = sub.add_parser("store", help="list, export or prune stored responses")
    store.add_argument("action", choices=["list", "export", "prune"])
    store.add_argument("--model")
    store.add_argument("--epoch")
    store.add_argument("--before", help="prune: only rows stored before this ISO date/time (UTC)")
    store.add_argument("--errors-only", action="store_true", help="prune: only the recorded errors")
    store.add_argument("--out", default="responses.jsonl", help="export: JSON Lines file")
    store.set_defaults(func=cmd_store)
    return parser


def root_cause(exc: BaseException) -> BaseException:
    """The error behind Dagster's wrappers: a failed step carries the asset's own exception in
    ``user_exception``; otherwise the chain of causes is followed to its first geomon error, or its end."""
    seen: set[int] = set()
    current = exc
    while id(current) not in seen:
        seen.add(id(current))
        if type(current).__module__.startswith("geomon."):
            return current
        inner = getattr(current, "user_exception", None) or current.__cause__ or current.__context__
        if inner is None:
            return current
        current = inner
    return current


def describe_failure(exc: BaseException) -> str:
    """One line: what failed and why. geomon's own errors already say what and where; anything else is
    named by its type, since it is unexpected."""
    cause = root_cause(exc)
    first = (str(cause).strip().splitlines() or [""])[0]
    if type(cause).__module__.startswith("geomon.") or isinstance(cause, ValueError | OSError):
        return first or type(cause).__name__
    return f"unexpected {type(cause).__name__}: {first} (run with -v for the traceback)"


INTERRUPTED = "geomon: interrupted; answers already received are stored and will not be asked again"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _setup_logging(args.verbose)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130
    except (ConfigError, RegistryError) as exc:
        print(f"geomon: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # every failure ends in one line a person can act on; -v adds the traceback
        # Ctrl-C inside a Dagster step: while a model is asked (geomon's Interrupted) or between steps (Dagster's)
        if type(root_cause(exc)).__name__ in {"Interrupted", "DagsterExecutionInterruptedError"}:
            print(INTERRUPTED, file=sys.stderr)
            return 130
        if args.verbose:
            import traceback

            traceback.print_exception(exc)
        print(f"geomon: {describe_failure(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
