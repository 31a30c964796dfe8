"""Asking models from assets, for every suite: through the store-aware engine (nothing stored is asked
again), with the engine's counters as materialization metadata; the jury's judges are asked the same way."""

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import dagster as dg
import pandas as pd

from geomon.config import Settings
from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.engine.runner import ProgressListener, ProgressReport, ask


class Interrupted(RuntimeError):
    """A person stopped the run (Ctrl-C or SIGTERM) while a model was being asked."""


@contextmanager
def stop_when_interrupted() -> Iterator[None]:
    """Ctrl-C or SIGTERM stops a model-calling step for good: its retry policy is for a flaky endpoint, not
    for a person who stopped the run (Dagster would otherwise retry the interrupted step 30 s later).

    The signal is noted before Dagster's handler raises, because that raise lands wherever the main thread
    happens to be, and Python swallows an exception raised inside a garbage-collection callback: the step
    would then run to its end as if nothing had happened."""
    noted = threading.Event()
    on_main_thread = threading.current_thread() is threading.main_thread()
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}

    def note_then_delegate(signum: int, frame: FrameType | None) -> None:
        noted.set()
        handler = previous[signum]
        if callable(handler):
            handler(signum, frame)
        elif handler != signal.SIG_IGN:
            raise KeyboardInterrupt

    if on_main_thread:  # signal handlers can only be set there; a step in a worker process has its own
        for signum in previous:
            signal.signal(signum, note_then_delegate)
    try:
        yield
    except (dg.DagsterExecutionInterruptedError, KeyboardInterrupt):
        noted.set()
    except BaseException:
        if not noted.is_set():
            raise
    finally:
        if on_main_thread:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
    if noted.is_set():
        raise dg.Failure(
            "interrupted (Ctrl-C or SIGTERM): the answers received are stored; run again to resume",
            allow_retries=False,
        ) from Interrupted()


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown (no answer yet)"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


PROGRESS_TAG = "geomon/progress"  # the run's one progress entry, updated in place while a step asks


def progress_events(context: dg.AssetExecutionContext) -> ProgressListener:
    """Progress of a model-calling step where the UI shows it while the step runs: a line in the step's logs,
    and the run's ``geomon/progress`` tag (the run's page and the Runs list) updated in place with done / total
    asks, the rate and the time left. Not an asset event per report: those flooded the asset's Events tab, and
    a stopped run's last count stayed its newest entry."""
    partition = str(context.partition_key) if context.assets_def.partitions_def is not None else None
    asset = context.asset_key.to_user_string() + (f" {partition}" if partition else "")

    def report(progress: ProgressReport) -> None:
        percent = 100 * progress.done // max(progress.total, 1)
        context.log.info(progress.line())
        failed = f", {progress.failed} failed" if progress.failed else ""
        context.instance.add_run_tags(
            context.run_id,
            {
                PROGRESS_TAG: f"{asset}: {progress.done} / {progress.total} asks ({percent} %){failed}, "
                f"{progress.rate:.2f} asks/s, {_duration(progress.seconds_left)} left"
            },
        )

    return report


def ask_model(
    settings: Settings,
    spec: ModelSpec,
    requests: list[GenerationRequest],
    label: str = "",
    on_progress: Callable[[ProgressReport], None] | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The answers (one row per request) and metadata: the engine's counters, the request rate, the cache
    epoch and the model's description; ``on_progress`` gets the progress reports while the model is asked."""
    with stop_when_interrupted():
        responses, stats = ask(
            spec,
            requests,
            settings.store(),
            epoch=settings.cache_epoch,
            options=settings.engine,
            label=label,
            on_progress=on_progress,
        )
    counters = stats.as_dict()
    metadata: dict[str, Any] = {
        k: dg.MetadataValue.int(v) if isinstance(v, int) else dg.MetadataValue.float(float(v))
        for k, v in counters.items()
    }
    metadata["requests_per_second"] = float(stats.asked / stats.seconds) if stats.asked and stats.seconds else 0.0
    metadata["cache_epoch"] = settings.cache_epoch or "(default)"
    metadata["model"] = dg.MetadataValue.json(spec.describe())
    return responses, metadata
