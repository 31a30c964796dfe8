"""One verdict engine: a release's comparisons decided together, as one family.

A new evaluation compared with its predecessor is one decision, and every suite × metric × breakdown
compared in it is one family of tests. Holm's step-down procedure at ``alpha`` (family-wise) decides
``regression`` and ``improvement``; Benjamini–Hochberg at ``q`` flags ``watch`` (shown, never alerts); a
significant worsening smaller than the metric's minimum effect is ``regression (below alert threshold)``
(real, but it pages nobody); the rest is ``no detectable change``, stated with the minimum detectable
effect at the family's α and the stated power. A comparison whose sample cannot carry a claim (the one
rule of ``stats.sufficiency``) is ``insufficient sample``, and one whose statistic is undefined (NaN) is
``undefined``: neither gets a p-value in the family.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

from geomon.stats import sufficiency
from geomon.stats.declared import PairedTest

REGRESSION = "regression"
BELOW_THRESHOLD = "regression (below alert threshold)"
IMPROVEMENT = "improvement"
WATCH = "watch"
NO_CHANGE = "no detectable change"
INSUFFICIENT = "insufficient sample"
UNDEFINED = "undefined"
VERDICTS = (REGRESSION, BELOW_THRESHOLD, IMPROVEMENT, WATCH, NO_CHANGE, INSUFFICIENT, UNDEFINED)


@dataclass(frozen=True)
class VerdictSettings:
    """``geomon.yaml``'s ``verdicts:`` section: the family-wise error rate of the alerting decision, the false
    discovery rate of ``watch`` flags, the power the minimum detectable effect is stated at, the resamples of
    each paired test, and minimum effects by metric name (overriding the suites' declared ones; imported
    evaluations use ``imported_min_effects``)."""

    alpha: float = 0.05
    q: float = 0.10
    power: float = 0.80
    resamples: int = 4999
    min_effects: dict[str, float] = field(default_factory=dict)
    # Evaluations imported from elsewhere (``geomon import items`` / ``inspect``): accuracy in percent, a
    # raw score (0-1), and the gap between groups in the same units.
    imported_min_effects: dict[str, float] = field(
        default_factory=lambda: {"accuracy": 5.0, "score": 0.05, "gap": 5.0, "score_gap": 0.05}
    )

    def __post_init__(self) -> None:
        for name in ("alpha", "q", "power"):
            value = getattr(self, name)
            if not 0 < value < 1:
                raise ValueError(f"verdicts.{name}: {value} must lie strictly between 0 and 1")
        if self.resamples < 99:
            raise ValueError(f"verdicts.resamples: {self.resamples} is too few for a p-value (at least 99)")


@dataclass(frozen=True)
class Verdict:
    """A comparison as every surface shows it."""

    metric: str
    breakdown: str
    before: float
    after: float
    change: float  # after − before, in the metric's own units
    worse_when: str  # "higher" or "lower"
    p_value: float | None
    p_adjusted: float | None  # Holm, over the family
    q_value: float | None  # Benjamini–Hochberg, over the family
    mde: float  # the smallest |change| detected with ``power`` at the family's α
    items: int
    clusters: int
    min_effect: float
    family_size: int
    verdict: str
    note: str = ""

    @property
    def alerts(self) -> bool:
        return self.verdict == REGRESSION

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error control under any dependence)."""
    p = np.asarray(p_values, dtype=float)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out


def benjamini_hochberg(p_values: Sequence[float]) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (q-values): false discovery rate control."""
    from scipy import stats

    p = np.asarray(p_values, dtype=float)
    return stats.false_discovery_control(p, method="bh") if p.size else p


_NORMAL = NormalDist()  # the standard normal (the stdlib's: scipy's costs a millisecond a call)


def minimum_detectable_effect(se: float, alpha: float, power: float) -> float:
    """The smallest |change| a two-sided test at ``alpha`` detects with probability ``power``, for a change
    whose standard error is ``se`` (the normal approximation to the sign-flip null)."""
    if not math.isfinite(se):
        return math.nan
    return float((_NORMAL.inv_cdf(1 - alpha / 2) + _NORMAL.inv_cdf(power)) * se)


def power_at(effect: float, se: float, alpha: float) -> float:
    """The probability that a two-sided test at ``alpha`` detects a change of ``effect`` (``se`` as above):
    what the stated minimum detectable effect claims, for the calibration bench to check."""
    if not (math.isfinite(se) and se > 0):
        return math.nan
    z = _NORMAL.inv_cdf(1 - alpha / 2)
    return float(1 - _NORMAL.cdf(z - abs(effect) / se) + _NORMAL.cdf(-z - abs(effect) / se))


def decide(
    tests: Sequence[PairedTest], settings: VerdictSettings, min_sample: int = sufficiency.MIN_SAMPLE
) -> list[Verdict]:
    """The family's verdicts, in the order of ``tests``."""
    notes = []
    for t in tests:
        if t.p_value is None:
            notes.append((UNDEFINED, t.note or "undefined"))
            continue
        why = sufficiency.reasons(t.after, n=t.clusters, bounds=t.bounds, min_sample=min_sample)
        notes.append((INSUFFICIENT, why) if why else ("", ""))
    testable = [i for i, (kind, _) in enumerate(notes) if not kind]
    m = len(testable)
    adjusted = dict(zip(testable, holm([tests[i].p_value for i in testable]), strict=True))
    q_values = dict(zip(testable, benjamini_hochberg([tests[i].p_value for i in testable]), strict=True))
    family_alpha = settings.alpha / max(m, 1)  # Holm's first step: what the smallest p must clear
    out = []
    for i, t in enumerate(tests):
        kind, note = notes[i]
        p_adj, q = adjusted.get(i), q_values.get(i)
        if kind:
            verdict = kind
        elif p_adj < settings.alpha and t.change != 0:
            alerting = REGRESSION if abs(t.change) >= t.min_effect else BELOW_THRESHOLD
            verdict = alerting if t.worse else IMPROVEMENT
        elif q < settings.q and t.change != 0:
            verdict = WATCH
        else:
            verdict = NO_CHANGE
        out.append(
            Verdict(
                metric=t.metric,
                breakdown=t.breakdown,
                before=t.before,
                after=t.after,
                change=t.change,
                worse_when="higher" if t.higher_is_worse else "lower",
                p_value=t.p_value,
                p_adjusted=None if p_adj is None else float(p_adj),
                q_value=None if q is None else float(q),
                mde=minimum_detectable_effect(t.se, family_alpha, settings.power),
                items=t.items,
                clusters=t.clusters,
                min_effect=t.min_effect,
                family_size=m,
                verdict=verdict,
                note=note,
            )
        )
    return out


def summary(verdicts: Sequence[Verdict] | Sequence[Mapping[str, Any]]) -> str:
    """``2 regressions, 1 watch, 12 no detectable change`` (the counts, worst first)."""
    names = [v.verdict if isinstance(v, Verdict) else v["verdict"] for v in verdicts]
    counts = [(k, names.count(k)) for k in VERDICTS if names.count(k)]
    return ", ".join(f"{n} {k}" for k, n in counts) or "nothing compared"
