"""`geomon alerts`: list the regressions the gates read, acknowledge one, test the channels."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from geomon.config import ConfigError, load_settings


def cmd_alerts(args: argparse.Namespace) -> int:
    from geomon.monitor import alerts

    settings = load_settings(args.config)
    if args.action == "ack":
        return acknowledge(settings, args)
    if args.action == "list":
        return list_alerts(settings, args)
    if not alerts.notifiers(settings.alerts):  # said once, not also by deliver's log line and outcome
        print(
            f"geomon: alerts go nowhere: set {settings.alerts.webhook_url_env} (a webhook) or alerts.smtp_host and "
            "alerts.email_to in geomon.yaml",
            file=sys.stderr,
        )
        return 1
    alert = alerts.Alert(
        kind="test",
        title="test alert",
        summary="geomon's alert channels work: this message was sent by `geomon alerts test`.",
        url=settings.alerts.ui_url,
    )
    outcomes = alerts.deliver(alert, settings.alerts)
    for outcome in outcomes:
        print(outcome)
    return 1 if any(": failed: " in o for o in outcomes) else 0


def list_alerts(settings: Any, args: argparse.Namespace) -> int:
    """``geomon alerts list``: every regression the gates read, open ones first, with who acknowledged the rest;
    exit 3 while any is open (a CI step that fails on unacknowledged regressions), 0 otherwise."""
    from geomon.monitor import views
    from geomon.monitor.history import MetricHistory

    table = views.alert_list(MetricHistory(settings.store_url), suite=args.suite or None)
    still_open = int((table["state"] == "open").sum())
    if args.format == "csv":
        table.to_csv(sys.stdout, index=False)
    elif table.empty:
        print("No regression in the metric history: nothing open, nothing acknowledged.")
    else:
        print(table.to_string(index=False))
        print(
            f"{still_open} open, {len(table) - still_open} acknowledged"
            + (" (`geomon alerts ack EVALUATION --metric M --breakdown G` acknowledges one)" if still_open else "")
        )
    return 3 if still_open else 0


def acknowledge(settings: Any, args: argparse.Namespace) -> int:
    """``geomon alerts ack EVALUATION``: an operator has seen the regression; its no_regression check passes
    on the next run, and the acknowledgement is stored with who and when."""
    from geomon.monitor.history import MetricHistory

    if not args.evaluation:
        raise ConfigError(
            "alerts ack: give the evaluation id (the evaluation_id column of geomon history --format csv)"
        )
    who = args.by or os.environ.get("USER") or os.environ.get("USERNAME") or ""
    if not who:
        raise ConfigError("alerts ack: --by NAME (who acknowledges; $USER is not set)")
    if args.breakdown and not args.metric:
        raise ConfigError("alerts ack: --breakdown needs --metric (without both, every regression is acknowledged)")
    history = MetricHistory(settings.store_url)
    held = history.evaluations()
    if args.evaluation not in set(held["evaluation_id"]):
        raise ConfigError(f"alerts ack: no evaluation {args.evaluation!r} in the metric history")
    import pandas as pd

    from geomon.monitor import release, views
    from geomon.stats.values import MetricKey

    row = held[held["evaluation_id"] == args.evaluation].iloc[0]
    evaluation = next(
        e for e in history.evaluations_of(row["suite"], row["scope"], model=row["model"])
        if e.evaluation_id == args.evaluation
    )  # fmt: skip
    # What its gates read: its own regressions and its release's against the predecessor (``release.standing``).
    regressions = release.standing(history, evaluation)
    wanted = {"metric": args.metric, "breakdown": args.breakdown}
    covered = [r for r in regressions if release.acknowledged(pd.DataFrame([wanted]), r.key)]
    if args.metric and not covered:
        found = ", ".join(views.verdict_text(r) for r in regressions) or "none"
        raise ConfigError(
            f"alerts ack: evaluation {args.evaluation} has no regression on {MetricKey(args.metric, args.breakdown)}; "
            f"its regressions: {found}"
        )
    # Stored on the evaluation each regression was decided on, so every later evaluation's gate honours it.
    for evaluation_id in dict.fromkeys([*(r.evaluation_id for r in covered), args.evaluation]):
        history.acknowledge(evaluation_id, who, args.metric, args.note, args.breakdown)
    what = " (every regression)"
    if args.metric:
        what = f" ({args.metric}, {'every breakdown' if args.breakdown == '*' else args.breakdown or 'overall'})"
    print(f"acknowledged by {who}: {args.evaluation}{what}")
    return 0


def register(sub: Any, known: dict[str, Any]) -> None:
    """``geomon alerts list|test|ack``."""
    alerts = sub.add_parser(
        "alerts",
        help="list: every open or acknowledged regression (exit 3 while any is open); test: send a test alert to "
        "every channel; ack: acknowledge an evaluation's regression",
    )
    alerts.add_argument("action", choices=["list", "test", "ack"])
    alerts.add_argument("evaluation", nargs="?", help="ack: the evaluation id (geomon history --format csv)")
    alerts.add_argument("--metric", default="", help="ack: only this metric's regression (default: all)")
    alerts.add_argument(
        "--breakdown",
        default="",
        help="ack: with --metric, only this breakdown (e.g. country=Kenya; default: the overall figure; '*': all)",
    )
    alerts.add_argument("--by", default="", help="ack: who acknowledges (default: $USER)")
    alerts.add_argument("--note", default="", help="ack: why (recorded with who and when)")
    alerts.add_argument("--suite", default="", help="list: one suite's regressions (default: every suite)")
    alerts.add_argument("--format", choices=["table", "csv"], default="table", help="list: how to print them")
    alerts.set_defaults(func=cmd_alerts)
