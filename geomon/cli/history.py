"""`geomon history` and `geomon items`: the metric history's evaluations, verdicts and scored items, read."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from geomon.cli.common import UsageError
from geomon.cli.tables import one_line, print_frame
from geomon.config import load_settings


def cmd_history(args: argparse.Namespace) -> int:
    from geomon.monitor.history import MetricHistory
    from geomon.monitor.views import history_table
    from geomon.suites.registry import suites

    settings = load_settings(args.config)
    history = MetricHistory(settings.store_url)
    held = history.evaluations()
    info = suites().get(args.suite)
    if info is None and args.suite not in set(held["suite"]):
        known = sorted(set(suites()) | set(held["suite"]))
        raise UsageError(
            f"--suite {args.suite}: no such suite nor imported benchmark in the metric history; known: "
            + ", ".join(known)
        )
    evaluated = held.loc[held["suite"] == args.suite, "model"]
    if args.model and args.model not in set(evaluated) | {s.name for s in settings.models}:
        raise UsageError(
            f"--model {args.model}: not a registered model nor one evaluated in {args.suite}; evaluated: "
            + (", ".join(sorted(set(evaluated))) or "none yet")
        )
    headlines = [(h.metric, h.breakdown) for h in info.headlines] if info is not None else None
    bounds = {h.metric: h.bounds for h in info.headlines} if info is not None else None
    breakdowns = True if args.breakdowns == "all" else args.breakdowns or False
    table = history_table(history, args.suite, headlines, args.model, breakdowns, bounds)
    if args.format == "table":
        table = table.drop(columns=["evaluation_id", "origin"])
    print_frame(table, args.format)
    return 0


ITEM_CELL_CHARS = 60  # a table cell of `geomon items` (csv and json give every character)


def cmd_items(args: argparse.Namespace) -> int:
    """Every item of a model's latest evaluation in a suite as it was scored: prompt, reply, parsed answer, gold,
    score and status, filtered by group and outcome."""
    from geomon.monitor import release, views
    from geomon.monitor.history import MetricHistory

    settings = load_settings(args.config)
    try:
        evaluation, rows, total = views.item_rows(
            MetricHistory(settings.store_url), args.suite, args.model, args.group, args.score or "", args.limit
        )
    except release.TrackingError as exc:
        raise UsageError(f"items: {exc}") from None
    print(
        f"{args.suite} {args.model}: evaluation {evaluation.evaluation_id} of {evaluation.when:%Y-%m-%d %H:%M}, "
        f"{len(rows)} of {total} items",
        file=sys.stderr,
    )
    if args.format == "table":
        # One line per cell, cut: a reply's newlines would break the table.
        rows = rows.map(lambda v: one_line(v, ITEM_CELL_CHARS) if isinstance(v, str) else v)
    print_frame(rows, args.format)
    return 0


def register(sub: Any, known: dict[str, Any]) -> None:
    """``geomon history`` and ``geomon items``."""
    from geomon.monitor.views import OUTCOMES

    history = sub.add_parser("history", help="one row per evaluation and headline metric, with its verdict")
    history.add_argument("--suite", required=True, help=f"a suite ({', '.join(known)}) or an imported benchmark")
    history.add_argument("--model")
    history.add_argument("--format", choices=["table", "csv", "json"], default="table")
    history.add_argument(
        "--breakdowns",
        nargs="?",
        const="all",
        help="also every breakdown of the headlines (each country, language, group); or only those containing TEXT",
        metavar="TEXT",
    )
    history.set_defaults(func=cmd_history)

    items = sub.add_parser(
        "items", help="every item of a model's latest evaluation: prompt, reply, parsed answer and score (history)"
    )
    items.add_argument(
        "--suite",
        required=True,
        help="a suite declared with the kit (a YAML or kit Python suite); the built-in suites write each answer as "
        "scored to the per-model CSVs beside their reports",
    )
    items.add_argument("--model", required=True)
    items.add_argument(
        "--group", action="append", default=[], metavar="COLUMN=VALUE", help="only these items (repeatable)"
    )
    items.add_argument("--score", choices=OUTCOMES, help="only right (full marks), wrong, partial, unanswered, failed")
    items.add_argument("--limit", type=int, default=0, help="the first N items (default: every item)")
    items.add_argument("--format", choices=["table", "csv", "json"], default="table")
    items.set_defaults(func=cmd_items)
