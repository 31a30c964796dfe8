"""The false-alarm rate on a small fixed-seed replay of bench/alert_calibration.py: a model against re-draws
of itself, every suite's declared metrics decided as one family. Uncorrected tests at α = 0.05 over a family
of eight would alarm in about a third of these releases; Holm keeps it near 5 %."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from geomon.stats import verdicts

BENCH = Path(__file__).resolve().parents[2] / "bench" / "alert_calibration.py"


def _bench():
    spec = importlib.util.spec_from_file_location("alert_calibration", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_null_releases_rarely_alarm():
    bench = _bench()
    settings = verdicts.VerdictSettings(resamples=199)
    rng = np.random.default_rng(11)
    models = {s: bench.MODELS[s][0](rng, n) for s, n in bench.SIZES["default"].items()}
    alarms, raw = 0, 0
    for r in range(25):
        decided = bench.release(np.random.default_rng([11, r]), models, settings, seed=r)
        alarms += any(v.verdict == verdicts.REGRESSION for v in decided)
        raw += any(v.p_value is not None and v.p_value < 0.05 and v.family_size for v in decided)
    assert decided[0].family_size >= 6  # every suite takes part
    assert alarms <= 3, f"{alarms} of 25 null releases raised a regression"
    assert raw > alarms  # without the family's correction some of them would have alarmed
