"""Drift of API-served models: re-ask a fixed probe set and compare with the model's own baseline.

A provider can change the model behind an unchanged name. Each probe cycle asks the same requests
under a fresh cache epoch (so the response cache cannot answer for the model) and measures the share
of answers that differ from the baseline answers. Engines are not deterministic even at temperature 0
(batched kernels), so the first cycles also calibrate a *noise floor*: the largest change rate between
repeated probes of the unchanged model. Drift is called only when the change rate exceeds the noise
floor by more than ``tolerance``. Bundled models run fixed weights that geomon hashes, so they are
never probed or reported as drifting.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.engine.runner import EngineOptions, ask
from geomon.engine.store import ResponseStore


@dataclass
class DriftSettings:
    schedule: str = "0 */6 * * *"  # cron: how often API-served models are probed
    probe_questions: int = 40  # questions in the fixed probe set (from the question bank a suite declares)
    calibration_probes: int = 3  # repeated probes that measure the noise floor
    tolerance: float = 0.10  # drift = change rate above noise floor + tolerance
    baseline: str = "1"  # bump to re-baseline every model (e.g. after an announced upgrade)


@dataclass
class DriftVerdict:
    change_rate: float  # share of probe answers that differ from the baseline
    noise_floor: float  # largest change rate among the calibration probes
    tolerance: float
    drifted: bool
    probes: int
    changed_examples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def threshold(self) -> float:
        return self.noise_floor + self.tolerance

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "threshold": self.threshold}


def probe_set(prompts: pd.DataFrame, size: int) -> pd.DataFrame:
    """A spread-out sample of the question bank (every k-th by question id)."""
    ordered = prompts.sort_values("question_id", ignore_index=True)
    step = max(1, len(ordered) // max(size, 1))
    return ordered.iloc[::step].head(size).reset_index(drop=True)


class ProbeSetError(ValueError):
    """The stored probe set names questions the current question bank no longer has."""


def fixed_probe_set(questions: pd.DataFrame, size: int, stored: Path) -> pd.DataFrame:
    """The probe set, chosen once per baseline and stored (``stored``: the question ids, one per line): the
    first probe picks ``probe_set`` of the *whole* question bank and writes it; every later probe asks exactly
    those questions, whatever sample a run of the suite uses. A question the bank has lost is an error naming
    it (bump ``drift.baseline`` to choose a new set)."""
    if stored.is_file():
        ids = [line.strip() for line in stored.read_text(encoding="utf-8").splitlines() if line.strip()]
        known = set(questions["question_id"].astype(str))
        lost = [i for i in ids if i not in known]
        if lost:
            raise ProbeSetError(
                f"{stored}: {len(lost)} probe question(s) are not in the question bank ({', '.join(lost[:5])}); "
                "set drift.baseline to a new value to choose a new probe set"
            )
        chosen = questions.set_index(questions["question_id"].astype(str)).loc[ids]
        return chosen.reset_index(drop=True)
    chosen = probe_set(questions, size)
    stored.parent.mkdir(parents=True, exist_ok=True)
    stored.write_text("".join(f"{q}\n" for q in chosen["question_id"].astype(str)), encoding="utf-8")
    return chosen


def _normal(text: str | None) -> str | None:
    return None if text is None else re.sub(r"\s+", " ", text).strip().lower()


def change_rate(a: Sequence[str | None], b: Sequence[str | None]) -> float:
    """Share of positions whose answers differ (whitespace and case ignored)."""
    if len(a) != len(b) or not a:
        raise ValueError(f"probe answer lists differ in length ({len(a)} vs {len(b)}) or are empty")
    return sum(_normal(x) != _normal(y) for x, y in zip(a, b, strict=True)) / len(a)


def noise_floor(calibration: Sequence[Sequence[str | None]]) -> float:
    """The largest change rate between any two calibration probes of the unchanged model."""
    pairs = list(itertools.combinations(calibration, 2))
    return max((change_rate(a, b) for a, b in pairs), default=0.0)


def assess(calibration: Sequence[Sequence[str | None]], probe: Sequence[str | None], tolerance: float) -> DriftVerdict:
    """Compare a probe with the baseline (the first calibration probe), above the noise floor."""
    baseline = calibration[0]
    rate = change_rate(baseline, probe)
    floor = noise_floor(calibration)
    changed = [
        {"index": i, "baseline": b, "now": p}
        for i, (b, p) in enumerate(zip(baseline, probe, strict=True))
        if _normal(b) != _normal(p)
    ]
    return DriftVerdict(rate, floor, tolerance, rate > floor + tolerance, len(probe), changed[:5])


def probe(
    spec: ModelSpec,
    requests: Sequence[GenerationRequest],
    store: ResponseStore,
    settings: DriftSettings,
    cycle: str,
    options: EngineOptions | None = None,
) -> tuple[DriftVerdict, dict[str, Any]]:
    """One probe cycle: the calibration probes (asked once, then served from the store under their own
    epochs) and a fresh probe under epoch ``cycle``."""
    if spec.bundled is not None:
        raise ValueError(f"model {spec.name!r} is bundled (fixed, hashed weights): it is not probed for drift")
    calibration = []
    asked = 0
    for i in range(settings.calibration_probes):
        answers, stats = ask(spec, requests, store, epoch=f"drift-{settings.baseline}-calibration-{i}", options=options)
        asked += stats.asked
        calibration.append(list(answers["text"]))
    answers, stats = ask(spec, requests, store, epoch=f"drift-{settings.baseline}-{cycle}", options=options)
    asked += stats.asked
    verdict = assess(calibration, list(answers["text"]), settings.tolerance)
    return verdict, {"model_calls": asked, "failed": int(answers["error"].notna().sum())}
