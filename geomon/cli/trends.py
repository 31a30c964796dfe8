"""`geomon trends`: every headline metric per model over time, and the trends report both it and a run write."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from geomon.cli.common import UsageError
from geomon.config import load_settings


def write_trends(settings: Any, breakdowns: Sequence[str] = ()) -> tuple[Path, Any]:
    """The trends report and the results index from the whole history (with each group of ``breakdowns``
    charted too); returns the page and the table."""
    from geomon.monitor import results

    page, _, table = results.write_trends(
        settings.results_dir, settings.store_url, breakdowns, settings.serving_changes()
    )
    return page, table


def cmd_trends(args: argparse.Namespace) -> int:
    page, table = write_trends(load_settings(args.config), args.breakdown)
    shown = ["suite", "metric", "breakdown", "model", "evaluated_at", "value", "ci_low", "ci_high"]
    latest = table.groupby(["suite", "metric", "breakdown", "model", "scope"]).tail(1)[shown] if len(table) else table
    shown_table = latest.to_string(index=False, na_rep="", float_format=lambda v: f"{v:.4g}")
    print(shown_table if len(table) else "no history yet")
    print(f"\nReport: {page}")
    return 0


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse a breakdown that is not ``COLUMN=VALUE``."""
    for breakdown in args.breakdown:
        group, _, value = breakdown.partition("=")
        if not group.strip() or not value.strip():
            raise UsageError(f"--breakdown {breakdown}: a group is COLUMN=VALUE, e.g. family=ideology")


def register(sub: Any, known: dict[str, Any]) -> None:
    """``geomon trends``."""
    trends = sub.add_parser("trends", help="every headline metric per model over time (from the metric history)")
    trends.add_argument(
        "--breakdown",
        action="append",
        default=[],
        metavar="GROUP",
        help="also chart this group of every headline metric, e.g. family=ideology (repeatable); groups with an "
        "open regression of their own are always charted",
    )
    trends.set_defaults(func=cmd_trends, check=check_arguments)
