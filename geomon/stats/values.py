"""The values every layer passes around: a metric's figure with its breakdown, interval and sample. Below
the suites and the monitor both: suites compute them, the monitor stores them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MetricValue:
    metric: str
    value: float | None
    breakdown: str = ""
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None


def unit(bounds: tuple[float, float] | None) -> str:
    """A change's unit as a suffix: percentage points for a percentage (bounds 0–100), else the metric's own."""
    return " pts" if bounds is not None and tuple(bounds) == (0, 100) else ""


def finite(x: Any) -> float | None:
    """``x`` as a float, or None where it is missing, NaN or infinite."""
    if x is None:
        return None
    x = float(x)
    return x if x == x and abs(x) != float("inf") else None


def metrics_from_mapping(numbers: dict[str, Any], breakdown: str = "", n: int | None = None) -> list[MetricValue]:
    """``{"kb_cs": 61.2, "kb_cs_ci_low": 55.0, "kb_cs_ci_high": 67.1, ...}`` → MetricValues with intervals."""
    out = []
    for name, value in numbers.items():
        if name.endswith(("_ci_low", "_ci_high")) or not isinstance(value, int | float) or isinstance(value, bool):
            continue
        out.append(
            MetricValue(
                name,
                float(value),
                breakdown,
                finite(numbers.get(f"{name}_ci_low")),
                finite(numbers.get(f"{name}_ci_high")),
                n,
            )
        )
    return out
