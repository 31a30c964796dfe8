"""Did a metric get worse? A paired permutation test over the same items plus a minimum effect size.

Two evaluations of a metric (a model's previous and current run, or a predecessor and its successor)
are compared on the items both scored (countries, territories): under "no change", each item's two
values are exchangeable, so swapping them item by item (scipy.stats.permutation_test,
``permutation_type="samples"``) gives the null distribution of the metric's difference. A regression
needs both: p below ``alpha`` and a difference of at least ``min_effect`` in the worse direction, so
noise does not page anyone and a tiny but "significant" shift does not either.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class RegressionResult:
    metric: str
    before: float
    after: float
    effect: float  # after − before, signed so that positive = worse
    p_value: float
    items: int
    min_effect: float
    alpha: float
    regressed: bool
    # The same test in the better direction: p of a change at least this good under "no change".
    p_improvement: float = 1.0

    @property
    def improved(self) -> bool:
        return bool(self.p_improvement < self.alpha and -self.effect >= self.min_effect)

    @property
    def verdict(self) -> str:
        """``regression``, ``improvement`` or ``no change`` (a significant change smaller than the minimum
        effect is no change: it would page nobody)."""
        return "regression" if self.regressed else "improvement" if self.improved else "no change"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def paired_regression(
    metric: str,
    before: pd.DataFrame,
    after: pd.DataFrame,
    statistic: Callable[[pd.DataFrame], float],
    *,
    key: str = "item",
    higher_is_worse: bool = True,
    min_effect: float = 0.05,
    alpha: float = 0.01,
    resamples: int = 999,
    seed: int = 0,
) -> RegressionResult:
    """Compare ``statistic`` on the items (``key``) both frames share."""
    common = sorted(set(before[key]) & set(after[key]))
    if not common:
        raise ValueError(f"{metric}: the two evaluations share no {key}s; nothing to compare")
    old = before.set_index(key).loc[common].reset_index()
    new = after.set_index(key).loc[common].reset_index()
    rows = pd.concat([old, new], ignore_index=True)
    sign = 1.0 if higher_is_worse else -1.0
    n = len(common)

    def worse_by(x: np.ndarray, y: np.ndarray) -> float:
        return sign * (statistic(rows.iloc[y]) - statistic(rows.iloc[x]))

    observed = worse_by(np.arange(n), np.arange(n) + n)
    p_improvement = 1.0
    if observed == 0.0:
        p_value = 1.0  # identical values (or exactly the same statistic): no change, whatever the items
    else:
        from scipy import stats  # imported here: scipy.stats costs ~0.8 s, the code location must load fast

        result = stats.permutation_test(
            (np.arange(n), np.arange(n) + n),
            worse_by,
            permutation_type="samples",
            alternative="greater",
            n_resamples=resamples,
            vectorized=False,
            rng=np.random.default_rng(seed),
        )
        p_value = float(result.pvalue)
        # The null distribution is symmetric in what it exchanges; its lower tail gives the improvement's p
        # (counted as scipy counts the upper one: the observed arrangement included).
        null = np.asarray(result.null_distribution)
        p_improvement = float((np.sum(null <= observed + 1e-12 * abs(observed)) + 1) / (null.size + 1))
    return RegressionResult(
        metric=metric,
        before=float(statistic(old)),
        after=float(statistic(new)),
        effect=float(observed),
        p_value=p_value,
        items=n,
        min_effect=min_effect,
        alpha=alpha,
        regressed=bool(p_value < alpha and observed >= min_effect),
        p_improvement=p_improvement,
    )
