"""A person's Ctrl-C stops a model-calling step for good, however the signal lands."""

import contextlib
import signal

import dagster as dg
import pytest
from dagster._utils.interrupts import capture_interrupts, raise_interrupts_as

from geomon.defs.engine import Interrupted, stop_when_interrupted


def _stopped(failure: dg.Failure) -> None:
    assert failure.allow_retries is False  # the step's RetryPolicy must not start it again
    assert isinstance(failure.__cause__, Interrupted)  # the CLI's exit status 130 hangs on this


def test_an_interrupt_raised_through_the_step_stops_it():
    with (
        capture_interrupts(),
        raise_interrupts_as(dg.DagsterExecutionInterruptedError),
        pytest.raises(dg.Failure) as failure,
        stop_when_interrupted(),
    ):
        signal.raise_signal(signal.SIGINT)
    _stopped(failure.value)


def test_an_interrupt_swallowed_on_its_way_stops_the_step_all_the_same():
    """Dagster raises the interrupt wherever the main thread is; inside a garbage-collection callback Python
    prints 'Exception ignored' and the step goes on. Seen in CI: the run finished with exit status 0."""
    with (
        capture_interrupts(),
        raise_interrupts_as(dg.DagsterExecutionInterruptedError),
        pytest.raises(dg.Failure) as failure,
        stop_when_interrupted(),
        contextlib.suppress(dg.DagsterExecutionInterruptedError),  # what a garbage-collection callback does
    ):
        signal.raise_signal(signal.SIGINT)
    _stopped(failure.value)


def test_sigterm_stops_the_step_and_the_handlers_are_restored():
    with capture_interrupts(), raise_interrupts_as(dg.DagsterExecutionInterruptedError):
        before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        with pytest.raises(dg.Failure) as failure, stop_when_interrupted():
            signal.raise_signal(signal.SIGTERM)
        assert {s: signal.getsignal(s) for s in before} == before
    _stopped(failure.value)


def test_a_step_that_is_not_interrupted_is_left_alone():
    with stop_when_interrupted():
        pass
    with pytest.raises(ValueError, match="a real error"), stop_when_interrupted():
        raise ValueError("a real error")
