"""Headless Chromium for looking at what geomon renders: its reports and the Dagster UI's pages.

Debian's Chromium (``/usr/bin/chromium``, or ``GEOMON_CHROMIUM``) driven by Playwright; nothing is downloaded.
The flags keep Chromium off the network it would otherwise call home to (closed here, and not its business).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LAPTOP = {"width": 1366, "height": 900}


class BrowserUnavailable(RuntimeError):
    """No Chromium binary to drive."""


def chromium_path() -> str | None:
    """The Chromium binary: ``GEOMON_CHROMIUM``, else ``chromium`` on the PATH."""
    return os.environ.get("GEOMON_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@contextmanager
def headless_page(viewport: dict[str, int] | None = None) -> Iterator[Any]:
    """A Playwright page in headless Chromium; errors in the page's scripts are collected in ``page.errors``."""
    from playwright.sync_api import sync_playwright

    binary = chromium_path()
    if binary is None:
        raise BrowserUnavailable("no Chromium: install Debian's chromium package or set GEOMON_CHROMIUM")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=binary, headless=True, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport=viewport or LAPTOP)
            page.errors = []
            page.on("pageerror", lambda error: page.errors.append(str(error)))
            yield page
        finally:
            browser.close()


def overflow_px(page: Any) -> int:
    """How far the page spills past the viewport's width (0 when it fits a laptop's screen)."""
    return int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth"))


def screenshot(page: Any, url: str, path: Path, wait_for_text: str | None = None, timeout_ms: int = 60_000) -> int:
    """Open ``url``, wait until it is idle (and shows ``wait_for_text``), save a full-page PNG at ``path``;
    returns the horizontal overflow in pixels."""
    page.goto(url, wait_until="networkidle", timeout=timeout_ms)
    if wait_for_text:
        page.get_by_text(wait_for_text, exact=False).first.wait_for(timeout=timeout_ms)
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    return overflow_px(page)


@contextmanager
def dagster_ui(
    dagster_home: Path, target: list[str], startup_s: float = 180.0, with_daemon: bool = False
) -> Iterator[str]:
    """``dagster-webserver`` (with ``with_daemon``: ``dg dev``, the webserver and the daemon, as ``make ui``
    runs them) on a free loopback port for the instance at ``dagster_home`` (``target``: its ``-w
    workspace.yaml`` or ``-f file.py``), the first-run pop-up marked seen; yields the UI's URL and stops
    the processes (their whole process group) afterwards."""
    import signal
    import socket
    import subprocess
    import sys
    import tempfile
    import time
    import urllib.request

    (dagster_home / ".nux").mkdir(parents=True, exist_ok=True)
    (dagster_home / ".nux" / "nux.yaml").write_text("seen: 1\n")  # Dagster's own marker for the pop-up
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = ["dg", "dev"] if with_daemon else ["dagster-webserver"]
    command[0] = str(Path(sys.executable).with_name(command[0]))
    log = tempfile.NamedTemporaryFile("w", prefix="geomon-dagster-ui-", suffix=".log", delete=False)  # noqa: SIM115
    proc = subprocess.Popen(
        [*command, *target, "-h", "127.0.0.1", "-p", str(port)],
        env={**os.environ, "DAGSTER_HOME": str(dagster_home)},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_s
        while True:
            try:
                urllib.request.urlopen(f"{url}/server_info", timeout=5)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise BrowserUnavailable(f"dagster-webserver did not start; see {log.name}") from None
                time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
