"""`geomon store`: list, export or prune the stored responses."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from geomon.cli.common import UsageError
from geomon.config import load_settings


def cmd_store(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    store = settings.store()
    summary = store.summary()
    if args.model and args.model not in set(summary["model"]):
        stored = ", ".join(summary["model"].drop_duplicates()) or "none"
        raise UsageError(f"--model {args.model}: no stored answers of this model; stored: {stored}")
    if args.action == "list":
        if args.model:
            summary = summary[summary["model"] == args.model]
        if args.epoch:
            summary = summary[summary["epoch"] == args.epoch]
        print(summary.to_string(index=False) if len(summary) else "the store is empty")
    elif args.action == "export":
        n = store.export(args.out, model=args.model, epoch=args.epoch)
        print(f"wrote {n} answers to {args.out}")
    elif args.action == "prune":
        before = datetime.fromisoformat(args.before).replace(tzinfo=UTC) if args.before else None
        deleted = store.prune(model=args.model, epoch=args.epoch, before=before, errors_only=args.errors_only)
        print(f"deleted {deleted['answers']} answers and {deleted['errors']} errors")
    return 0


def register(sub: Any, known: dict[str, Any]) -> None:
    """``geomon store list|export|prune``."""
    store = sub.add_parser("store", help="list, export or prune stored responses")
    store.add_argument("action", choices=["list", "export", "prune"])
    store.add_argument("--model")
    store.add_argument("--epoch")
    store.add_argument("--before", help="prune: only rows stored before this ISO date/time (UTC)")
    store.add_argument("--errors-only", action="store_true", help="prune: only the recorded errors")
    store.add_argument("--out", default="responses.jsonl", help="export: JSON Lines file")
    store.set_defaults(func=cmd_store)
