"""`geomon ui`: the Dagster UI and daemon, stopped with every child."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from geomon.cli.common import dagster_home
from geomon.config import Settings, load_settings

log = logging.getLogger("geomon")


UI_STOP_GRACE_S = 20.0  # after SIGTERM, how long dg dev and its children get before SIGKILL
KILLED_WAIT_S = 10.0  # after SIGKILL, how long the killed take to be gone (reaped): geomon ui returns after
# Ctrl-C, `kill`, a closed terminal (SIGHUP) and Ctrl-\ each stop the UI with every child; uncaught, SIGHUP would
# end geomon alone and leave dg dev's group (in a session of its own) running, its daemon beside the next one's.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
PID_FILE = "geomon-ui.pid"  # in DAGSTER_HOME: the process group of the `dg dev` a `geomon ui` started there
# The Overview's Assets view: each asset group with its assets whose checks failed, in red. Dagster's landing page
# ("/") opens the Overview's view last opened in that browser, the Timeline (runs only) until then
# (docs/operations.md), so geomon ui names this one first.
LANDING = "/overview/activity/assets"
OPEN_REGRESSIONS = "/assets/monitor/open_regressions"


def cmd_ui(args: argparse.Namespace) -> int:
    """`dg dev` (webserver and daemon) in its own process group, stopped with every child on any stop signal —
    started in the background, `dg dev` itself ignores SIGINT and SIGTERM and leaves its children running. A
    `dg dev` that an earlier `geomon ui` left on this DAGSTER_HOME (its `geomon ui` killed) is stopped first:
    two daemons on one instance both run the sensors and log "Another … daemon is still sending heartbeats"."""
    import subprocess

    home = dagster_home()
    from geomon.monitor import alerts

    settings = load_settings(args.config)
    if not alerts.notifiers(settings.alerts):
        log.warning("alerts go nowhere: no channel is configured; `geomon alerts test` checks them")
    url = f"http://{args.host}:{args.port}"
    first_look = where_to_look(url, settings)  # before the UI starts: a history that cannot be read stops here
    pid_file = home / PID_FILE
    stop_left_behind(pid_file)
    dg_cli = Path(sys.executable).with_name("dg")
    command = [str(dg_cli), "dev", "-w", "workspace.yaml", "-h", args.host, "-p", str(args.port)]
    proc = subprocess.Popen(command, start_new_session=True)
    pid_file.write_text(f"{proc.pid}\n")
    print(f"Dagster UI on {url} (dg dev, pid {proc.pid}). Ctrl-C stops it.", flush=True)
    print(first_look, flush=True)

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    for signum in STOP_SIGNALS:
        signal.signal(signum, stop)
    code = 0
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        pass
    finally:
        for signum in STOP_SIGNALS:  # a second Ctrl-C (or make's forwarded SIGTERM) does not cut the stop short
            signal.signal(signum, signal.SIG_IGN)
        stop_process_group(proc.pid, UI_STOP_GRACE_S, reap=proc.poll)  # dg dev's children, even if it ended
        pid_file.unlink(missing_ok=True)
    return code


def where_to_look(url: str, settings: Settings) -> str:
    """What to open first: the Overview's Assets view, where a group holding an asset whose check failed reads red
    (opened once, the UI's landing page opens there in that browser), and the open regressions, counted."""
    from geomon.defs.monitoring import open_summary
    from geomon.monitor import views
    from geomon.monitor.history import MetricHistory

    found = views.open_regressions(MetricHistory(settings.store_url))
    return (
        f"Open first: {url}{LANDING} (each asset group with its failed checks in red; once opened, the UI's "
        f"landing page opens there in this browser)\n{open_summary(found)}: {url}{OPEN_REGRESSIONS}"
    )


def stop_left_behind(pid_file: Path) -> None:
    """Stop the `dg dev` group ``pid_file`` names if it still runs (its leader still `dg dev`: a pid is reused)."""
    try:
        pgid = int(pid_file.read_text().strip())
        leader = Path(f"/proc/{pgid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return
    if len(leader) > 2 and Path(leader[1].decode()).name == "dg" and leader[2] == b"dev":
        log.warning("stopping the Dagster UI (dg dev, pid %d) an earlier geomon ui left running here", pgid)
        stop_process_group(pgid, UI_STOP_GRACE_S)


def stop_process_group(pgid: int, grace_s: float, reap: Callable[[], Any] = lambda: None) -> None:
    """SIGTERM to the whole group ``pgid``, then SIGKILL to whatever of it is left after ``grace_s`` (Dagster's
    daemon ignores a second interrupt while it shuts down, and can hang there), returning once the group is gone.
    ``reap`` collects the leader when it is this process's child, so that its zombie does not count as alive."""
    for signum, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, KILLED_WAIT_S)):
        try:
            os.killpg(pgid, signum)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            reap()
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)


def register(sub: Any, known: dict[str, Any]) -> None:
    """``geomon ui``."""
    ui = sub.add_parser("ui", help="the Dagster UI and daemon (dg dev); Ctrl-C or SIGTERM stops every process")
    ui.add_argument("--host", default="127.0.0.1")
    ui.add_argument("--port", type=int, default=3000)
    ui.set_defaults(func=cmd_ui)
