"""The ``geomon`` command: run the benchmarks, list models, serve a bundled model, manage the store."""

from __future__ import annotations

import argparse
import logging
import sys
import warnings

from geomon.cli import alerts, history, imports, models, plan, run, store, trends, ui
from geomon.cli.lanes import LaneFailed
from geomon.config import ConfigError
from geomon.engine.registry import RegistryError

# The command groups, in the order `geomon --help` lists them.
COMMANDS = (run, plan, history, imports, alerts, trends, models, ui, store)


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    for noisy in ("httpx", "httpx2", "openai", "urllib3", "alembic", "great_expectations"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if not verbose:
        # geomon uses Dagster's beta and preview APIs deliberately (observable sources, partition mappings):
        # their notices say nothing a user can act on. -v shows them.
        warnings.filterwarnings("ignore", message=r".* is currently in (beta|preview)")


def build_parser() -> argparse.ArgumentParser:
    # The package docstring, its reStructuredText literals as the plain text a terminal shows.
    parser = argparse.ArgumentParser(prog="geomon", description=__doc__.replace("``", ""))
    parser.add_argument("--config", help="settings file (default: $GEOMON_CONFIG or ./geomon.yaml)")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    from geomon.suites.registry import suites

    known = suites()
    for command in COMMANDS:  # each group registers its own sub-parsers
        command.register(sub, known)
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


def interrupted(args: argparse.Namespace) -> int:
    """Exit status 130, said once: by the run, not by each of its lanes."""
    if not getattr(args, "lane_report", None):
        print(INTERRUPTED, file=sys.stderr)
    return 130


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv  # a run in lanes starts each lane with its own command line
    _setup_logging(args.verbose)
    try:
        if check := getattr(args, "check", None):  # the values its types let through but the command cannot use
            check(args)
        return args.func(args)
    except KeyboardInterrupt:
        return interrupted(args)
    except (ConfigError, RegistryError) as exc:
        print(f"geomon: {exc}", file=sys.stderr)
        return 2
    except LaneFailed as exc:  # its line is printed
        return exc.status
    except Exception as exc:  # every failure ends in one line a person can act on; -v adds the traceback
        # Ctrl-C inside a Dagster step: while a model is asked (geomon's Interrupted) or between steps (Dagster's)
        if type(root_cause(exc)).__name__ in {"Interrupted", "DagsterExecutionInterruptedError"}:
            return interrupted(args)
        if args.verbose:
            import traceback

            traceback.print_exception(exc)
        print(f"geomon: {describe_failure(exc)}", file=sys.stderr)
        return 1
