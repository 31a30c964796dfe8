"""What a test can see, before and after the data: the one minimum detectable effect and everything it rests on.

Every surface that states what a comparison could detect reads it here: the verdicts (``stats.verdicts``: a
comparison's MDE and power at its first Holm level), the plan (``geomon plan``: the MDE at a profile's sample and
the clusters a change needs), the calibration bench (the chance a true worsening pages) and QUENCH's report (the
smallest gap a sample could detect). The MDE is one-sided — a regression alert claims a worsening — at a level
and a power: (z(1 − α) + z(power)) × the change's standard error (the normal approximation to the sign-flip null).

The standard error a decision states it at is planned from the pair's paired differences (``paired_se``: the
sign-flip null's spread, which the test conditions on, plus a worsening of the minimum effect), the same error that
sets its Holm weight and its decidability label; else the worst case a bounded metric's range allows
(``worst_case_spread``); a spread at rounding noise is none (``rounding_noise``). Before any pair exists,
``geomon plan`` plans from one evaluation's spread (``planned_se``: two such samples, as if independent — the most a
pair can spread). The level is the comparison's first in its suite's weighted Holm family (``first_level``), its
weight fixed from the pair (``paired_se``, ``paging_weights``); ``holm_levels`` lists every level a step may test
at.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

from geomon.stats.bootstrap import agresti_coull_se
from geomon.stats.signflip import PairedTest

_NORMAL = NormalDist()  # the standard normal (the stdlib's: scipy's costs a millisecond a call)


def minimum_detectable_effect(se: float, alpha: float, power: float) -> float:
    """The smallest worsening a one-sided test at ``alpha`` detects with probability ``power``, for a change
    whose standard error is ``se`` (the normal approximation to the sign-flip null)."""
    if not math.isfinite(se) or not 0 < alpha < 1:
        return math.nan
    return float((_NORMAL.inv_cdf(1 - alpha) + _NORMAL.inv_cdf(power)) * se)


def power_at(effect: float, se: float, alpha: float) -> float:
    """The probability that a one-sided test at ``alpha`` detects a worsening of ``effect`` (``se`` as above):
    what the stated minimum detectable effect claims, for the calibration bench to check."""
    if not (math.isfinite(se) and se > 0 and 0 < alpha < 1):
        return math.nan
    return float(1 - _NORMAL.cdf(_NORMAL.inv_cdf(1 - alpha) - abs(effect) / se))


def page_chance(effect: float, se: float, alpha: float, min_effect: float) -> float:
    """The probability that a true worsening of ``effect`` pages: found significant at ``alpha`` *and* estimated at
    least ``min_effect`` — what a regression alert requires. At ``effect`` = ``min_effect`` it is
    ``page_probability``'s min(power, ½); far beyond the minimum effect, ``power_at``."""
    if not (math.isfinite(se) and se > 0 and 0 < alpha < 1):
        return math.nan
    threshold = max(_NORMAL.inv_cdf(1 - alpha) * se, abs(min_effect))
    return float(1 - _NORMAL.cdf((threshold - abs(effect)) / se))


def page_probability(power: float) -> float:
    """The chance that a true worsening of exactly the minimum effect pages: found significant (``power``) *and*
    estimated at least the minimum effect (half the time at most, the estimate centred on it)."""
    return min(power, 0.5) if math.isfinite(power) else math.nan


def clusters_to_detect(sd: float | None, change: float, alpha: float, power: float) -> int | None:
    """The clusters a comparison whose change spreads ``sd`` per cluster needs for its MDE at ``alpha`` and
    ``power`` to be at most ``change`` (None where the spread is unknown or the change is none)."""
    if sd is None or change <= 0:
        return None
    z = minimum_detectable_effect(1.0, alpha, power)
    return math.ceil((z * sd / change) ** 2)


def planned_mde(n_a: int, n_b: int, sd: float = 0.5, alpha: float = 0.05, power: float = 0.8) -> float:
    """The MDE of a difference between two independent samples of ``n_a`` and ``n_b`` units with standard
    deviation ``sd`` (0.5: the worst case of a yes/no score), before any answer is seen."""
    if n_a < 1 or n_b < 1:
        return float("nan")
    return minimum_detectable_effect(sd * float(np.sqrt(1 / n_a + 1 / n_b)), alpha, power)


# Holm's levels: where a comparison's MDE is stated, and where a p-value's precision matters.


def first_level(alpha: float, weight: float = 1.0, total: float = 1.0) -> float:
    """The level Holm's first step tests a comparison of ``weight`` at, in a family of total weight ``total``:
    α·w/Σw (α/m in an unweighted family of m). Its MDE and power are stated there."""
    return float(alpha * weight / total)  # a Python float: what is stored (PostgreSQL reads no np.float64)


def paging_weights(ratios: Sequence[float], alpha: float, power: float, weight: float) -> np.ndarray:
    """Each comparison's weight in a suite's weighted Holm, fixed before the test (from the pair pooled): 1 for
    the comparisons that can decide (a worsening of the minimum effect found with ``power`` at the first level
    they get: α / the family's total weight), ``weight`` for the rest. ``ratios``: each comparison's minimum
    effect over its planned standard error (NaN where either is unknown: weight 1, nothing says it cannot decide).
    The decidable ones are the largest set of the strongest comparisons that all decide at the level they get,
    so a hopeless comparison never lowers the level of one that could decide by more than its weight; the set
    never splits comparisons of equal ratio (tied comparisons get equal weights)."""
    r = np.asarray(ratios, dtype=float)
    if not 0 < alpha < 1:  # a look with no α (spent, or a share of 0): nothing is decided, nothing to weigh
        return np.ones(r.size)
    known = np.flatnonzero(np.isfinite(r))
    strongest = known[np.argsort(-r[known], kind="stable")]
    out = np.ones(r.size)
    unknown = r.size - known.size
    z_power = _NORMAL.inv_cdf(power)
    for k in range(known.size, -1, -1):
        if 0 < k < known.size and math.isclose(r[strongest[k - 1]], r[strongest[k]], rel_tol=1e-9):
            continue  # tied comparisons (accuracy and accuracy_itt with every item answered) weigh the same
        total = unknown + k + weight * (known.size - k)
        if k == 0 or r[strongest[k - 1]] >= _NORMAL.inv_cdf(1 - alpha / total) + z_power:
            out[strongest[k:]] = weight
            return out
    return out


def first_levels(ratios: Sequence[float], alpha: float, power: float, weight: float) -> tuple[np.ndarray, list[float]]:
    """The weights of a suite's comparisons that can page (``paging_weights``) and each one's ``first_level`` at
    ``alpha``: what the decision tests them at, and what the plan states their MDE at."""
    weights = paging_weights(ratios, alpha, power, weight)
    total = sum(weights)  # in order, as a family adds them
    return weights, [first_level(alpha, w, total) for w in weights]


def holm_levels(alpha: float, m: int, weight: float = 1.0) -> tuple[float, ...]:
    """The levels Holm's steps may compare a p-value of a family of ``m`` with (α/m, α/(m−1), …, α; weighted, α·w/S
    for a weight w of 1 or ``weight`` and S any weight left in the family): where a p-value's precision
    matters."""
    if weight >= 1:
        return tuple(alpha / j for j in range(max(m, 1), 0, -1))
    left = {k + weight * u for k in range(m + 1) for u in range(m + 1 - k)} - {0}
    return tuple(sorted({alpha * min(w / s, 1.0) for s in left for w in (1.0, weight)}))


# The standard error an MDE is stated at: planned from the baseline before the new data.

NOISE = 1e-6  # a spread below this share of a metric's range (or of its value) is rounding, not spread


def rounding_noise(bounds: tuple[float, float] | None, value: float) -> float:
    """The largest spread that is rounding, not spread: ``NOISE`` of a bounded metric's range, else of its value
    (at least 1); what neither a planned nor a stated MDE may rest on."""
    if bounds is not None:
        return NOISE * (bounds[1] - bounds[0])
    return NOISE * (max(1.0, abs(value)) if math.isfinite(value) else 1.0)


def worst_case_spread(bounds: tuple[float, float], gap: bool = False) -> float:
    """The per-cluster standard deviation of a bounded metric's change between two evaluations in the worst case
    its range allows: each cluster a coin flip at either end of the range, in each evaluation — the range × √½
    for a mean; for a gap between two groups (clusters: the smaller group's), each side such a mean, the range × 1
    (√2 more). What an MDE is planned from before any spread is known."""
    return (bounds[1] - bounds[0]) * (1.0 if gap else math.sqrt(0.5))


class Spread(NamedTuple):
    """A comparison's spread in one evaluation (its baseline): what its planned standard error rests on."""

    se: float  # the cluster-bootstrap standard error (0: at rounding noise)
    value: float
    clusters: int
    bounded_mean: bool  # a mean of bounded outcomes: its standard error has the Agresti–Coull floor


UNKNOWN = Spread(math.nan, math.nan, 0, False)  # a comparison the baseline has no spread of


def planned_se(spread: Spread, bounds: tuple[float, float] | None) -> float:
    """The standard error ``geomon plan`` states a comparison's MDE at before any pair exists, from one
    evaluation's ``spread``: that side's standard error (the bootstrap's; for a mean of bounded outcomes never
    below the Agresti–Coull standard error of its value over its clusters: a baseline at 100 % is not a
    certainty) × √2 — two evaluations of that sample as if independent (a pair that answers items alike spreads
    less: ``paired_se``, what the decision plans at; near the end of a range its minimum-effect term can be the
    larger, so this is no bound on it); NaN where there is
    nothing to plan from."""
    floor = agresti_coull_se(spread.value, spread.clusters, bounds) if spread.bounded_mean else math.nan
    own = max((x for x in (spread.se, floor) if math.isfinite(x)), default=math.nan)
    return math.sqrt(2) * own


def paired_se(t: PairedTest) -> float:
    """The standard error a comparison's MDE, power, label and weight are planned at, from the pair itself: the
    sign-flip null's (``t.se``: √(Σ d²)/n for a mean of the n clusters' changes d, a function of each cluster's two
    evaluations as an unordered pair — the same under every flip the test counts where the flips are enumerated (at
    most ``exact_up_to`` differing clusters), within the Monte Carlo error of the seeded random flips otherwise (a
    few percent: a weight can move only for a comparison within that of its cut), so a weight read from it keeps the
    p-value's conditional level), with a worsening of the minimum effect δ added as it would add to Σ d²: in
    clusters that move as far as the pair's differing ones do (their root mean square u = se·n/√k over the k that
    differ; a bounded metric's range w where none does — a yes/no score's δ·n items flipped), δ·u/n, never below an
    even spread's δ²/n. So a pair with no differing cluster is not planned at 0 (any change detected), and a serving
    change that answers most items alike is planned as the paired test sees it, not as two independent samples. The
    stated power assumes a regression moves clusters as far as the pair's own churn does: where the churn is single
    rows of many-row clusters and a regression turns whole clusters, it is optimistic. NaN where the pair has no
    null or no clusters, or where no cluster differs and the metric has no range."""
    if not (math.isfinite(t.se) and t.clusters > 0) or (not t.differing and t.bounds is None):
        return math.nan  # nothing moved and no range says how far a cluster can: no plan (never an MDE of 0)
    delta = abs(t.min_effect)
    width = t.bounds[1] - t.bounds[0] if t.bounds is not None else delta
    unit = t.se * t.clusters / math.sqrt(t.differing) if t.differing else width
    return math.sqrt(t.se**2 + delta * max(min(unit, width), delta) / t.clusters)


def planned_ratio(t: PairedTest) -> float:
    """A comparison's minimum effect over the standard error it is weighed by (``weighing_se``: ``paired_se``;
    NaN where it is unknown). Never the baseline's spread alone: a baseline high by chance would plan a smaller
    error, weigh its comparison more and test it at a higher level exactly when the new evaluation looks worse
    (regression to the mean), spending more than α."""
    se = t.weighing_se
    planned = math.isfinite(se) and se > rounding_noise(t.bounds, t.before)
    return t.min_effect / se if t.min_effect > 0 and planned else math.nan


def stated_se(t: PairedTest) -> float:
    """The standard error a comparison's MDE and power are stated at: planned before the data where it was, else
    the sign-flip null's."""
    se = t.planned_se if math.isfinite(t.planned_se) else t.se
    # A spread at rounding noise is none: an MDE of 0 would claim any change is detected.
    return se if math.isfinite(se) and se > rounding_noise(t.bounds, t.before) else math.nan
