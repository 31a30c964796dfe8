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


def test_the_probe_set_is_chosen_once_and_survives_a_sample_change(tmp_path, wdi_snapshot_dir):
    """The probes come from the whole question bank, are stored per baseline, and a later probe asks exactly
    them; a question the bank lost is an error naming the stored set."""
    from geomon.sources.worldbank import read_snapshot
    from geomon.suites import worldbench

    snapshot = read_snapshot(wdi_snapshot_dir)
    bank = worldbench.build_prompts(snapshot)
    stored = tmp_path / "probe-set-baseline-1.txt"
    first = drift.fixed_probe_set(bank, 12, stored)
    assert len(first) == 12 and stored.read_text().split() == list(first["question_id"].astype(str))
    # A WorldBench run with another sample does not move the probes: the stored ids are asked again.
    sampled = worldbench.build_prompts(snapshot, countries=worldbench.sample_countries(snapshot, 5))
    assert not set(first["question_id"]) <= set(sampled["question_id"])  # the old behaviour would have changed
    again = drift.fixed_probe_set(bank, 12, stored)
    assert list(again["question_id"]) == list(first["question_id"])
    shrunk = bank[bank["question_id"] != first["question_id"].iloc[0]]
    with pytest.raises(drift.ProbeSetError, match=r"1 probe question\(s\) are not in the question bank"):
        drift.fixed_probe_set(shrunk, 12, stored)
