"""Drift verdicts: changes within the noise floor are not drift; a different model is."""

from __future__ import annotations

import pytest

from geomon.monitor import drift


def test_noise_floor_is_the_largest_disagreement_between_repeated_probes():
    calibration = [list("aaaaaaaaaa"), list("aaaaaaaaab"), list("aaaaaaaabb")]
    assert drift.noise_floor(calibration) == pytest.approx(0.2)
    quiet = drift.assess(calibration, list("aaaaaaabbb"), tolerance=0.1)  # 3 of 10 changed: 0.3 ≤ 0.2 + 0.1
    assert not quiet.drifted and quiet.change_rate == pytest.approx(0.3) and quiet.threshold == pytest.approx(0.3)
    loud = drift.assess(calibration, list("bbbbbaaaaa"), tolerance=0.1)
    assert loud.drifted and loud.changed_examples[0] == {"index": 0, "baseline": "a", "now": "b"}


def test_whitespace_and_case_are_not_changes():
    assert drift.change_rate(["The answer is 5 ", None], ["the  answer is 5", None]) == 0.0
    with pytest.raises(ValueError, match="differ in length"):
        drift.change_rate(["a"], ["a", "b"])


def test_bundled_models_are_never_probed(smollm2, sqlite_store):
    with pytest.raises(ValueError, match="bundled"):
        drift.probe(smollm2, [], sqlite_store, drift.DriftSettings(), "cycle")
