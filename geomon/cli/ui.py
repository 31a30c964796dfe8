"""`geomon ui`: the Dagster UI and daemon, stopped with every child."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from geomon.cli.common import dagster_home
from geomon.config import load_settings

log = logging.getLogger("geomon")


UI_STOP_GRACE_S = 20.0  # after SIGTERM, how long dg dev and its children get before SIGKILL


def cmd_ui(args: argparse.Namespace) -> int:
    """`dg dev` (webserver and daemon) in its own process group, stopped with every child on Ctrl-C or
    SIGTERM — started in the background, `dg dev` itself ignores both and leaves its children running."""
    import subprocess

    dagster_home()
    from geomon.monitor import alerts

    if not alerts.notifiers(load_settings(args.config).alerts):
        log.warning("alerts go nowhere: no channel is configured; `geomon alerts test` checks them")
    dg_cli = Path(sys.executable).with_name("dg")
    command = [str(dg_cli), "dev", "-w", "workspace.yaml", "-h", args.host, "-p", str(args.port)]
    proc = subprocess.Popen(command, start_new_session=True)
    print(f"Dagster UI on http://{args.host}:{args.port} (dg dev, pid {proc.pid}). Ctrl-C stops it.", flush=True)

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        stop_process_group(proc, UI_STOP_GRACE_S)
        return 0


def stop_process_group(proc: Any, grace_s: float) -> None:
    """SIGTERM to the whole group, then SIGKILL to whatever is left after ``grace_s``."""
    import subprocess

    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            return
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            continue
        with contextlib.suppress(ProcessLookupError):  # the leader is gone; its children may not be
            os.killpg(proc.pid, signal.SIGKILL)
        return


def register(sub: Any, known: dict[str, Any]) -> None:
    """``geomon ui``."""
    ui = sub.add_parser("ui", help="the Dagster UI and daemon (dg dev); Ctrl-C or SIGTERM stops every process")
    ui.add_argument("--host", default="127.0.0.1")
    ui.add_argument("--port", type=int, default=3000)
    ui.set_defaults(func=cmd_ui)
