"""From a fresh clone to the first verdicts, phase by phase: where `make run`'s minutes go.

Phases, each timed on the wall clock and (the geomon commands) profiled with cProfile:

1-2. setup: a fresh clone of this checkout's HEAD, a new venv, `make setup` with an empty package cache (a
   throwaway PIP_CACHE_DIR) and an empty wheelhouse (a throwaway GEOMON_WHEELHOUSE): the packages install while
   the engine (the llama-server the bundled models run on) compiles where this CPU needs a source build —
   skipped with --skip-install, which uses this checkout and its .venv;
3. `geomon import gapminder-results` (the published history, 37 configurations);
4. each suite (`geomon run --profile PROFILE --suite S`), split into the time asking the models (the runner's
   ``ask_now``: the engine started and every missing answer asked) and the time in geomon's own machinery (the
   rest), with the machinery's top costs by profile: bootstraps (geomon.stats.bootstrap, signflip), the registry, the
   metric history, the reports, Dagster's event log writes, Dagster's own code (self time) and the steps it ran;
5. with --stored (default on), every suite again with every answer stored: the machinery alone.

Each run writes into a throwaway home (store, results and Dagster storage), so nothing of this checkout's var/
is read or changed. The machine this runs on may be shared: the attribution is read from profiles (call counts
and cumulative times of one process), which load does not reorder; the wall times are what they were.

    python3 bench/first_run.py                                   # everything, from an empty package cache
    python3 bench/first_run.py --skip-install --suites worldbench,borderlines
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The machinery's parts, by the source files that hold them: the time spent inside a part is the cumulative time
# of its functions as called from outside it (so a part's own recursion is counted once).
PARTS = {
    "bootstraps": (
        "geomon/stats/statistics.py",
        "geomon/stats/declarations.py",
        "geomon/stats/bootstrap.py",
        "geomon/stats/signflip.py",
    ),
    "registry": ("geomon/suites/registry.py",),
    "history": ("geomon/monitor/history.py",),
    "reports": ("geomon/report/",),
}
# Dagster's event log: every event a step reports, written to the instance's storage (one function's cumulative
# time, which pstats counts once however deep it recurses).
EVENT_LOG = ("dagster/_core/instance/methods/event_methods.py", "handle_new_event")
DAGSTER = ("/dagster/", "/dagster_shared/", "/dagster_pipes/")  # Dagster's own code: its self time
STEP = "dagster_event_sequence_for_step"  # once per Dagster step executed
ASKING = ("geomon/engine/runner.py", "ask_now")  # the engine started and the missing answers asked


def attribute(profile: Path) -> dict[str, float]:
    """Seconds per part of one profiled command: total, asking, machinery, each of PARTS, dagster, steps."""
    stats = pstats.Stats(str(profile)).stats  # type: ignore[attr-defined]
    total = max(ct for (_, _, _, ct, _) in stats.values())
    out = {"total": total, "asking": 0.0, "dagster": 0.0, "event log": 0.0, "steps": 0.0}
    for (path, _, name), (_, calls, own, cumulative, callers) in stats.items():
        if path.endswith(ASKING[0]) and name == ASKING[1]:
            out["asking"] += cumulative
        if path.endswith(EVENT_LOG[0]) and name == EVENT_LOG[1]:
            out["event log"] += cumulative
        if name == STEP:
            out["steps"] += calls
        if any(part in path for part in DAGSTER):
            out["dagster"] += own
        for part, files in PARTS.items():
            if any(f in path for f in files):
                outside = [edge for caller, edge in callers.items() if not any(f in caller[0] for f in files)]
                out[part] = out.get(part, 0.0) + sum(edge[3] for edge in outside)
    out["machinery"] = total - out["asking"]
    return out


def timed(command: list[str], cwd: Path, env: dict[str, str], log: Path) -> float:
    """Wall seconds of ``command``; its output goes to ``log``; a failure stops the bench, naming the log."""
    started = time.monotonic()
    with log.open("w") as out:
        code = subprocess.call(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    if code:
        tail = log.read_text(errors="replace")[-2000:]
        raise SystemExit(f"geomon: bench step {' '.join(command)} failed ({code}); its log {log}:\n{tail}")
    return time.monotonic() - started


def isolated_env(home: Path, base: dict[str, str]) -> dict[str, str]:
    """The environment for a geomon command writing only under ``home``: its own store, results and Dagster
    storage (a dagster.yaml like the repository's, with absolute folders)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(
        f"storage:\n  sqlite:\n    base_dir: {home}/dagster/storage\n"
        f"local_artifact_storage:\n  module: dagster._core.storage.root\n  class: LocalArtifactStorage\n"
        f"  config:\n    base_dir: {home}/dagster\n"
        "run_coordinator:\n  module: geomon.defs.runs\n  class: SuiteTaggingRunCoordinator\n"
        "telemetry:\n  enabled: false\n"
    )
    env = {k: v for k, v in base.items() if k not in ("GEOMON_CONFIG", "GEOMON_SUITE_DIRS")}
    env.update(
        DAGSTER_HOME=str(home),
        GEOMON_STORE_URL=f"sqlite:///{home}/geomon.sqlite",
        GEOMON_RESULTS_DIR=str(home / "results"),
        PYTHONWARNINGS="ignore::UserWarning",
    )
    return env


def commit(checkout: Path) -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=checkout, capture_output=True, text=True).stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no")
    return git("rev-parse", "--short", "HEAD") + ("-dirty" if dirty else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-install", action="store_true", help="use this checkout and its .venv")
    parser.add_argument("--profile", default="quick", help="the run profile (default: quick)")
    parser.add_argument("--suites", default="", help="comma-separated suites (default: every registered suite)")
    parser.add_argument("--no-stored", action="store_true", help="skip the second pass with every answer stored")
    parser.add_argument("--work", type=Path, help="the throwaway folder (default: a new temporary one, removed)")
    args = parser.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="geomon-first-run-"))
    work.mkdir(parents=True, exist_ok=True)
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    rows: list[Row] = []
    base = dict(os.environ)
    if args.skip_install:
        checkout = ROOT
    else:
        base.pop("PYTHONPATH", None)  # the clone's own code, installed in its own venv
        checkout = work / "clone"
        subprocess.run(["git", "clone", "--quiet", "--no-local", str(ROOT), str(checkout)], check=True)
        shared = ROOT.parent / "shared"
        if shared.exists() and not (work / "shared").exists():
            (work / "shared").symlink_to(shared.resolve())  # the offline snapshots, where ../shared points
        empty = {"PIP_CACHE_DIR": str(work / "pip-cache"), "GEOMON_WHEELHOUSE": str(work / "wheelhouse")}
        phase = "setup: packages (empty pip cache) while the engine compiles (empty wheelhouse)"
        rows.append((phase, timed(["make", "setup"], checkout, {**base, **empty}, logs / "setup.log"), None))
    python = checkout / ".venv" / "bin" / "python"
    geomon = checkout / ".venv" / "bin" / "geomon"
    env = isolated_env(work / "home", base)
    suites = [s for s in args.suites.split(",") if s] or subprocess.run(
        [str(python), "-c", "from geomon.suites.registry import suites; print(','.join(suites()))"],
        cwd=checkout, env=env, capture_output=True, text=True, check=True,
    ).stdout.strip().split(",")  # fmt: skip

    def profiled(label: str, *command: str) -> None:
        out = work / f"{label.replace(' ', '_').replace('/', '_')}.prof"
        seconds = timed(
            [str(python), "-m", "cProfile", "-o", str(out), str(geomon), *command],
            checkout, env, logs / f"{out.stem}.log",
        )  # fmt: skip
        rows.append((label, seconds, attribute(out)))

    profiled("import gapminder-results", "import", "gapminder-results", "../shared/reference/gapminder",
             "--fail-on", "never")  # fmt: skip
    passes = [""] if args.no_stored else ["", " (answers stored)"]
    for stored in passes:
        for suite in suites:
            profiled(f"{suite}{stored}", "run", "--profile", args.profile, "--suite", suite, "--fail-on", "never")

    print_table(rows, checkout, args)
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


Row = tuple[str, float, dict[str, float] | None]  # phase, wall seconds, its profile's parts (None: not profiled)


def print_table(rows: list[Row], checkout: Path, args: argparse.Namespace) -> None:
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")), "?")
    print(f"bench/first_run.py, {when}, commit {commit(checkout)}, profile {args.profile}, "
          f"{os.cpu_count()} cores ({cpu}), load average {os.getloadavg()[0]:.1f} at the end")  # fmt: skip
    header = ["phase", "wall s", "asking s", "machinery s", *PARTS, "dagster event log", "dagster own s", "steps"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    total = 0.0
    for phase, seconds, parts in rows:
        total += seconds
        if parts is None:
            cells = [f"{seconds:.0f}", "", "", *[""] * len(PARTS), "", "", ""]
        else:
            cells = [
                f"{seconds:.1f}",
                f"{parts['asking']:.1f}",
                f"{parts['machinery']:.1f}",
                *[f"{parts.get(p, 0.0):.2f}" for p in PARTS],
                f"{parts['event log']:.1f}",
                f"{parts['dagster']:.1f}",
                f"{parts['steps']:.0f}",
            ]
        print(f"| {phase} | " + " | ".join(cells) + " |")
    print(f"| **total** | {total:.0f} |" + " |" * (len(header) - 2))
    print(
        "asking: the runner's ask_now (engine start + asks); machinery: the rest of the process; a part's time is "
        "inclusive (bootstraps within reports count in both); wall s includes Python's start-up.",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
