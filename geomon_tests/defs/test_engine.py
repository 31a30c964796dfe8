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


def test_a_ui_run_shows_progress_in_the_step_logs_and_one_run_tag_while_it_asks(tmp_path, wdi_snapshot_dir):
    """A run launched from the UI (no terminal): while the answering step asks, its logs say done / total,
    the rate and the time left, and one run tag (``geomon/progress``) holds the latest count, updated in place:
    no asset event per report, so the asset's Events tab holds its materializations and a stopped run's count
    is never the asset's newest entry."""
    from geomon.definitions import defs
    from geomon.defs.engine import PROGRESS_TAG
    from geomon.defs.resources import GeomonResource
    from geomon.defs.runs import register_models
    from geomon_tests.conftest import SHARED, write_settings
    from geomon_tests.loopback import ScriptedModel, serve

    responses = dg.AssetKey(["blend", "responses"])
    with serve(ScriptedModel, {"answer": lambda messages: "Tea", "models": ["scripted"]}) as url:
        model = {"name": "scripted", "kind": "chat", "base_url": f"{url}/v1", "model_id": "scripted"}
        section = {"snapshot": str(SHARED / "snapshots" / "blend"), "countries": ["UK", "Spain"]}
        settings = write_settings(tmp_path, wdi_snapshot_dir, models=[model], include_bundled=False, blend=section)
        with dg.instance_for_test() as instance:
            register_models(instance, ["scripted"])
            result = dg.materialize(
                [*defs.assets, *defs.asset_checks],
                instance=instance,
                selection=dg.AssetSelection.assets(["blend", "question_bank"], ["blend", "prompts"], responses.path),
                partition_key="scripted",
                resources={"geomon": GeomonResource(config_path=str(settings))},
                run_config={"ops": {"blend__prompts": {"config": {"sample_questions": 5}}}},
            )
            assert result.success
            asks = len(result.output_for_node("blend__responses"))
            events = instance.all_logs(result.run_id)
            tags = instance.get_run_by_id(result.run_id).tags
    observed = [e for e in events if e.dagster_event and e.dagster_event.is_asset_observation]
    assert observed == []  # progress is no asset event
    lines = [e.user_message for e in events if e.step_key == "blend__responses" and "req/s, eta" in e.user_message]
    assert len(lines) >= 5  # a report at each tenth of the asks (and every 15 s between), not only at the end
    assert f"{asks}/{asks} done: {asks} answered, 0 failed" in lines[-1]
    final = tags[PROGRESS_TAG]
    assert final.startswith(f"blend/responses scripted: {asks} / {asks} asks (100 %), ") and final.endswith(" 0 s left")
