"""The values every layer passes around: a metric's figure with its breakdown, interval and sample, and the
identity of the evaluation they belong to. Below the suites and the monitor both: suites compute them, the
monitor stores them; and the scope that makes a series of them one benchmark."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple


class MetricKey(NamedTuple):
    """Which figure: a metric and its breakdown ("" the overall figure), read the one way every surface shows it."""

    metric: str
    breakdown: str = ""

    def __str__(self) -> str:
        """``correct_rate (language=en)``, or ``correct_rate`` for the overall figure."""
        return f"{self.metric} ({self.breakdown})" if self.breakdown else self.metric


@dataclass(frozen=True)
class MetricValue:
    metric: str
    value: float | None
    breakdown: str = ""
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    # A declared figure's cluster-bootstrap standard error: what a later comparison plans its MDE from when this
    # evaluation is its baseline (``compare.stored_spreads``), read instead of drawn again. None: not declared.
    se: float | None = None
    declared_as: str = ""  # ``declarations.declaration_digest`` of the declaration it was drawn under ("": none)


@dataclass(frozen=True)
class EvaluationRun:
    """What one evaluation is of and where it came from, as the history records it (``MetricHistory.record``):
    the suite, the model and the scope it is compared within; the versions of its ``data``, ``prompts`` and
    ``code``; the model's predecessor (the previous release of its line: a first evaluation's baseline); the
    Dagster run that made it ("" for an import); when the model was evaluated (None: when recorded); and its
    origin, "geomon" or ``import:<source>:<key>`` for an evaluation made elsewhere; and whether it comes from a
    *published history* (``published_history``: a source that publishes its whole record at once, Gapminder's
    published results — no evaluation of it made earlier is still to come, so its release order is final)."""

    suite: str
    model: str
    scope: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    predecessor: str = ""
    dagster_run_id: str = ""
    evaluated_at: datetime | None = None
    origin: str = "geomon"
    published_history: bool = False


GROUP_MARK, GROUPS_MARK = "=", ","  # a breakdown's group (``column=value``), and between its groups


def breakdown_by(breakdown: str, column: str, value: Any) -> str:
    """``breakdown`` narrowed to the group ``column=value`` (``persona=vanilla,country=Peru``; ``country=Peru``
    from the overall figure's ""): how every breakdown is written, read back by ``last_group``."""
    group = f"{column}{GROUP_MARK}{value}"
    return f"{breakdown}{GROUPS_MARK}{group}" if breakdown else group


def last_group(breakdown: str) -> tuple[str, str]:
    """(the breakdown up to its last group's column, that group's value): ``persona=vanilla,country=Peru`` →
    (``persona=vanilla,country``, ``Peru``); a breakdown without a group → (it, "")."""
    where, mark, value = breakdown.rpartition(GROUP_MARK)
    return (where, value) if mark else (breakdown, "")


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


SERIES_MARK = " @ "  # between a scope's key and the versions of what its figures mean
IMPORTED = "imported "  # the key of a metric imported from per-item outcomes begins so (it is in the file's units)


def series_scope(key: str, versions: dict[str, str]) -> str:
    """A scope that holds one benchmark: ``key`` (what runs side by side: a sample size, a table revision) and a
    short hash of each part of what the figures mean (``data``, ``prompt``, ``scorer``, ``code``; an import's
    ``items``). Evaluations are compared only within one scope, so a changed part starts a new series (named by
    ``series_change``) instead of being compared as if the model had changed."""
    hashed = ",".join(f"{name}={hashlib.sha256(text.encode()).hexdigest()[:8]}" for name, text in versions.items())
    return f"{key}{SERIES_MARK}{hashed}"


def series_key(scope: str) -> str:
    """The part of a scope that runs side by side (``series_scope``'s ``key``); a scope without versions is its
    own key."""
    return scope.split(SERIES_MARK, 1)[0]


def series_change(before: str, after: str) -> str:
    """Why ``after`` is a new series of the line ``before`` was on (``new series: scorer, code changed``); ""
    when it is the same series, or another line (another key: a table revision, a sample size)."""
    if before == after or series_key(before) != series_key(after):
        return ""
    old, new = (dict(_parts(s)) for s in (before, after))
    changed = [name for name in dict.fromkeys([*new, *old]) if old.get(name) != new.get(name)]
    return f"new series: {', '.join(changed) or 'scope'} changed"


def _parts(scope: str) -> list[tuple[str, str]]:
    versions = scope.split(SERIES_MARK, 1)[1] if SERIES_MARK in scope else ""
    return [tuple(part.split("=", 1)) for part in versions.split(",") if "=" in part]  # type: ignore[misc]
