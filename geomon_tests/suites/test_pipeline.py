"""A suite's declaration is checked before anything runs (Pipeline.validate names the suite and the stage), and
a sample is its content (sample_id)."""

from __future__ import annotations

import pandas as pd
import pytest

from geomon.suites.pipeline import Pipeline, PipelineError, Revisions, Stage, StageResult, responses_stage, sample_id


def _prompts(context, **_):
    return StageResult(pd.DataFrame())


def _requests(prompts, spec):
    return []


def _pipeline(*stages: Stage, **kwargs) -> Pipeline:
    return Pipeline(
        stages, write_report=lambda *a, **k: None, leaderboard_columns=(), per_model_description="", **kwargs
    )


PROMPTS = Stage("prompts", _prompts)
SCORES = Stage("scores", _prompts, inputs=("responses",), per_model=True, tracked=True)


def test_a_well_formed_pipeline_validates_and_names_its_stages():
    pipeline = _pipeline(PROMPTS, responses_stage(_requests, "id"), SCORES)
    pipeline.validate("demo")
    assert pipeline.tracked.name == "scores" and pipeline.prompts.name == "prompts"
    assert pipeline.labels == ("model",)
    with pytest.raises(PipelineError, match="no stage 'nope'"):
        pipeline.stage("nope")


@pytest.mark.parametrize(
    ("stages", "message"),
    [
        ((PROMPTS, PROMPTS), "stage name 'prompts' is used twice"),
        ((Stage("leaderboard", _prompts),), "reserved"),
        ((PROMPTS, Stage("scores", _prompts, inputs=("answers",), per_model=True, tracked=True)), "which no earlier"),
        ((PROMPTS, responses_stage(_requests, "id"), Stage("x", _prompts, inputs=("responses",))), "is not per model"),
        ((PROMPTS, responses_stage(_requests, "id")), "exactly one per-model stage must be tracked, found 0"),
        ((PROMPTS, Stage("s", _prompts, per_model=True, tracked=True)), "no stage declares requests"),
    ],
)
def test_an_inconsistent_declaration_is_refused_naming_the_suite_and_the_stage(stages, message):
    with pytest.raises(PipelineError, match=message) as refused:
        _pipeline(*stages).validate("demo")
    assert str(refused.value).startswith("suite demo: ")


def test_revisions_partitions_must_name_dagster_partitions():
    revisions = Revisions("dispute revisions", resolve=lambda settings: [], options=lambda options, keys: {})
    with pytest.raises(PipelineError, match="must be letters, digits and underscores"):
        _pipeline(PROMPTS, responses_stage(_requests, "id"), SCORES, revisions=revisions).validate("demo")


def test_a_sample_is_its_content():
    first = pd.DataFrame({"id": [1, 2], "prompt": ["a", "b"]})
    assert sample_id(first) == sample_id(first.copy())
    assert sample_id(first) != sample_id(first.iloc[:1]) != sample_id(first.assign(prompt=["a", "c"]))
    assert len(sample_id(first)) == 12
