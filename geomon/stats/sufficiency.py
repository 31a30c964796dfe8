"""When a figure's sample cannot carry a conclusion: the number is kept, the claim is not made.

A figure is marked ``insufficient sample`` with its reasons when it rests on fewer than ``MIN_SAMPLE``
items, when its interval could not be computed although the suite computes one, when its interval is as
wide as the metric's whole range, or when it lies outside that range (a ratio of noisy means can). The
leaderboards, reports, trends and ``geomon history`` show the mark; a regression on such a figure never
alerts anyone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

MIN_SAMPLE = 30  # items (questions, territories, answers) below which no figure is read as a finding
PREFIX = "insufficient sample: "
PROFILE_PREFIX = "not decidable at this profile: "
# The same for an imported evaluation: its sample was the publisher's, not a run profile's.
PUBLISHED_PREFIX = "too few shared items to detect the minimum effect: "
SAMPLE_PREFIX = "not decidable at this sample"  # fewer clusters than MIN_SAMPLE, or a value outside its range


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def underpowered(mde: Any, min_effect: Any) -> str:
    """``MDE 0.4 > min effect 0.03`` where a comparison's planned minimum detectable effect (at the stated power)
    exceeds its minimum effect — its power to find a worsening of the minimum effect is below the stated power, so
    its "no detectable change" is not "no regression" — else "" (also where either is unknown or no minimum effect
    is declared: nothing to measure the MDE against)."""
    if not (_finite(mde) and _finite(min_effect) and min_effect > 0) or mde <= min_effect:
        return ""
    return f"MDE {mde:.3g} > min effect {min_effect:.3g}"


def reasons(
    value: Any,
    ci_low: Any = None,
    ci_high: Any = None,
    n: Any = None,
    bounds: tuple[float, float] | None = None,
    expects_interval: bool = False,
    min_sample: int = MIN_SAMPLE,
) -> str:
    """``insufficient sample: <why>; <why>`` or "" for a figure that can carry its claim."""
    if not _finite(value):
        return ""
    why = []
    if _finite(n) and n < min_sample:
        why.append(f"n = {int(n)} < {min_sample}")
    has_interval = _finite(ci_low) and _finite(ci_high)
    if expects_interval and not has_interval:
        why.append("no interval")
    if bounds is not None:
        low, high = bounds
        if has_interval and ci_high - ci_low >= high - low:
            why.append(f"the interval [{ci_low:.3g}, {ci_high:.3g}] spans the whole range [{low:g}, {high:g}]")
        if not low <= value <= high:
            why.append(f"{value:.3g} is outside the range [{low:g}, {high:g}]")
    return PREFIX + "; ".join(why) if why else ""


def assess(
    summary: Mapping[str, Any], metrics: Sequence[tuple[str, tuple[float, float] | None]], sample: str
) -> dict[str, str]:
    """Each headline metric of one model's ``summary`` → its mark ("" when it can carry its claim);
    ``sample`` names the summary's sample size."""
    n = summary.get(sample) if sample else None
    return {
        metric: reasons(
            summary.get(metric),
            summary.get(f"{metric}_ci_low"),
            summary.get(f"{metric}_ci_high"),
            # A tracked headline's own sample (its clusters: questions, countries, territories) where known.
            summary.get(f"{metric}_n", n),
            bounds,
            expects_interval=f"{metric}_ci_low" in summary,
        )
        for metric, bounds in metrics
        if metric in summary
    }
