"""The one rule of every suite's answers (info.status_of, answered_outcome) and what a run option says of itself."""

from __future__ import annotations

import math

import pandas as pd

from geomon.suites.info import RunOption, answered_outcome, status_of


def test_an_answer_is_answered_failed_or_unanswered_and_an_empty_error_is_no_error():
    read = pd.Series([42.0, None, None, None, 7.0])
    errors = pd.Series([None, "HTTP 503", "", None, "late error"])
    status = status_of(read, errors)
    # A value read wins over an error string (the request was retried and answered).
    assert status.tolist() == ["answered", "failed", "unanswered", "unanswered", "answered"]


def test_a_failed_request_is_no_answer_of_the_models_and_an_unanswered_one_counts_against_it():
    outcome = answered_outcome(pd.Series(["answered", "unanswered", "failed"]))
    assert outcome[0] == 1.0 and outcome[1] == 0.0 and math.isnan(outcome[2])


def test_a_run_option_names_its_key_and_whether_it_is_a_sample():
    sample = RunOption("--blend-questions", "questions per country", int, 0, config="sample_questions")
    assert sample.dest == "blend_questions" and sample.is_sample
    assert not RunOption("--personas", "which personas", str, "all", config="personas").is_sample
    assert not RunOption("--seed-count", "seeds", int, 1, config="seeds").is_sample
