"""`geomon run --lanes N`: the suites split into lanes of about equal work, each lane a `geomon run` of its own
process, and their outcomes brought back into one."""

from __future__ import annotations

import dataclasses
import json
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from geomon.cli.tables import describe_check

log = logging.getLogger("geomon")


@dataclasses.dataclass
class RunOutcome:
    """What a run's failed checks come to: one line each, and the counts its exit status is gated on."""

    failed: list[str]
    regressions: int
    blocking: int

    @classmethod
    def of(cls, checks: Sequence[Any]) -> RunOutcome:
        return cls(
            failed=[describe_check(c) for c in checks],
            regressions=sum(c.check_name == "no_regression" for c in checks),
            blocking=sum(bool(getattr(c, "blocking", False)) for c in checks),
        )


# What a scored continuation (rank classification: one forward pass over a short prompt) costs against a generated
# answer, on this CPU's bundled models: ≈ 15 continuations against ≈ 1–2.5 answers a second (docs/performance.md).
CONTINUATION_COST = 0.2


def lanes_of(chosen: Sequence[Any], plans: Sequence[Any], lanes: int) -> list[list[Any]]:
    """The suites split into at most ``lanes`` lanes of about equal work, each in the registry's order: the
    longest first to the lane with the least, by the plan's asks still to make — a scored continuation counted as
    ``CONTINUATION_COST`` of a generated answer — (each suite counts one more, so suites with every answer stored
    spread evenly)."""
    work = {
        suite.name: 1 + sum(p.to_ask - p.scored * (1 - CONTINUATION_COST) for p in plans if p.suite == suite.name)
        for suite in chosen
    }
    groups: list[list[Any]] = [[] for _ in range(max(1, min(lanes, len(chosen))))]
    loads = [0] * len(groups)
    for suite in sorted(chosen, key=lambda s: work[s.name], reverse=True):
        least = loads.index(min(loads))
        groups[least].append(suite)
        loads[least] += work[suite.name]
    return [sorted(group, key=list(chosen).index) for group in groups if group]


def lane_argv(argv: Sequence[str], suites: Sequence[Any], report: Path) -> list[str]:
    """One lane's command line: this run's, with the lane's suites, in one lane, writing its outcome to
    ``report``."""
    kept: list[str] = []
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token.split("=", 1)[0] in ("--suite", "--lanes", "--lane-report"):
            skip = "=" not in token
        else:
            kept.append(token)
    return [*kept, "--suite", ",".join(s.name for s in suites), "--lane-report", str(report)]


class LaneFailed(RuntimeError):
    """A lane ended without its outcome; its ``geomon:`` line is printed."""

    def __init__(self, status: int) -> None:
        super().__init__(f"a lane ended with exit status {status}")
        self.status = status


# How a lane starts: this interpreter running geomon's command line (the tests start stand-ins).
LANE_COMMAND = (sys.executable, "-m", "geomon.cli")


def run_in_lanes(argv: Sequence[str], groups: Sequence[Sequence[Any]]) -> RunOutcome:
    """Each group of suites as a `geomon run` of its own, all at once; their outcomes together. Their progress
    goes to this terminal as it comes. A lane that fails (its `geomon:` line is its own; one killed by a signal is
    named here) ends the run with its exit status once every lane has ended, after the failed checks of the lanes
    that finished. SIGTERM stops the lanes as Ctrl-C does, and a lane dies with this process however it ends."""
    import subprocess
    import tempfile

    from geomon.engine.local import die_with_parent

    for group in groups:
        log.info("lane: %s", ", ".join(suite.title for suite in group))
    sys.stdout.flush()  # this run's lines before the lanes' own, in a pipe too

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    with tempfile.TemporaryDirectory(prefix="geomon-lanes-") as folder:
        reports = [Path(folder) / f"lane-{n}.json" for n in range(len(groups))]
        lanes: list[subprocess.Popen] = []
        try:
            for group, report in zip(groups, reports, strict=True):
                command = [*LANE_COMMAND, *lane_argv(argv, group, report)]
                lanes.append(subprocess.Popen(command, preexec_fn=lambda: die_with_parent(signal.SIGTERM)))
            statuses = [lane.wait() for lane in lanes]
        finally:
            signal.signal(signal.SIGTERM, previous)
            for lane in lanes:  # stopped as on Ctrl-C (Dagster ends the step); a terminal's Ctrl-C reached them too
                if lane.poll() is None:
                    lane.terminate()
            for lane in lanes:
                lane.wait()
        if 130 in statuses:  # an interrupted lane prints nothing: this run says it once
            raise KeyboardInterrupt
        finished = [RunOutcome(**json.loads(r.read_text())) for r, s in zip(reports, statuses, strict=True) if not s]
    outcome = RunOutcome(
        failed=[line for o in finished for line in o.failed],
        regressions=sum(o.regressions for o in finished),
        blocking=sum(o.blocking for o in finished),
    )
    failed = [(status, group) for status, group in zip(statuses, groups, strict=True) if status]
    if failed:
        for line in outcome.failed:
            print(f"geomon: {line}", file=sys.stderr)
        for status, group in failed:
            if status < 0:
                suites = ", ".join(suite.name for suite in group)
                print(f"geomon: the lane running {suites} was killed (signal {-status})", file=sys.stderr)
        raise LaneFailed(next((status for status, _ in failed if status > 0), 1))
    return outcome
