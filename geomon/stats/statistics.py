"""The statistics a suite declares over its per-item rows (``Mean``, ``Ratio``, ``Range``, ``Difference``,
``ImpactRatio``), each evaluated on *weights*: a matrix of resamples × rows.

The observed value weighs every row 1; a bootstrap resample (``geomon.stats.bootstrap``) weighs each cluster by how
often it was drawn; a sign-flip resample of two stacked evaluations (``geomon.stats.signflip``) gives each cluster's
rows to one arm or the other. Means and ratios reduce to sums per cluster first, so thousands of resamples cost a
small matrix product. Which statistic a headline is, over which clusters, is declared in
``geomon.stats.declarations``.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np
import pandas as pd

_F = TypeVar("_F", bound=Callable[..., Any])


@functools.cache
def _blas() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread(function: _F) -> _F:
    """Run ``function`` with BLAS on one thread: its products are small and many (a chunk of flips or draws times
    a vector), where a second BLAS thread gains nothing and, waiting for a busy core, made each 100× slower."""

    @functools.wraps(function)
    def limited(*args: Any, **kwargs: Any) -> Any:
        with _blas().limit(limits=1, user_api="blas"):
            return function(*args, **kwargs)

    return limited  # type: ignore[return-value]


Where = tuple[tuple[str, Any], ...]


_CACHE: dict[int, dict[Any, Any]] = {}  # per frame (by id, dropped with it): columns read once per frame


def _cached(frame: pd.DataFrame, key: Any, compute: Any) -> Any:
    """``compute()`` once per frame and key: a statistic's parts are read for every resample chunk and group,
    and a frame's columns do not change while it is tested."""
    store = _CACHE.get(id(frame))
    if store is None:
        store = _CACHE[id(frame)] = {}
        weakref.finalize(frame, _CACHE.pop, id(frame), None)
    if key not in store:
        store[key] = compute()
    return store[key]


def _numbers(frame: pd.DataFrame, column: str) -> np.ndarray:
    return _cached(frame, ("numbers", column), lambda: pd.to_numeric(frame[column], errors="coerce").to_numpy(float))


def _cached_parts(frame: pd.DataFrame, pooled: Any) -> tuple[np.ndarray, np.ndarray]:
    """A pooled statistic's per-row parts, once per frame: every resample chunk, group and test of a frame reads
    them (tens of thousands of times in an import). Read-only, as they are shared."""

    def compute() -> tuple[np.ndarray, np.ndarray]:
        parts = pooled._parts(frame)
        for array in parts:
            array.setflags(write=False)
        return parts

    return _cached(frame, ("parts", pooled), compute)


def _mask(frame: pd.DataFrame, where: Where) -> np.ndarray:
    return _cached(frame, ("mask", where), lambda: _compute_mask(frame, where))


def _compute_mask(frame: pd.DataFrame, where: Where) -> np.ndarray:
    mask = np.ones(len(frame), dtype=bool)
    for column, wanted in where:
        values = frame[column]
        if isinstance(values.dtype, pd.CategoricalDtype):  # compare the integer code, not every string
            categories = values.cat.categories
            code = categories.get_loc(wanted) if wanted in categories else -2
            mask &= values.cat.codes.to_numpy() == code
            continue
        matches = values.astype(bool) == wanted if isinstance(wanted, bool) else values.eq(wanted)
        mask &= matches.to_numpy()
    return mask


class Statistic(Protocol):
    """A number from per-item rows, evaluated under weights (resamples × rows) → one value per resample."""

    def columns(self) -> set[str]: ...

    def weighted(self, frame: pd.DataFrame, weights: Weights) -> np.ndarray: ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class Mean:
    """The mean of ``column`` over the rows that have it (and match ``where``), × ``scale``; with ``per``, of
    each row's ``column / per`` (a per-question rate; rows with ``per`` = 0 have none)."""

    column: str
    per: str = ""
    where: Where = ()
    scale: float = 1.0

    def columns(self) -> set[str]:
        return {self.column, *([self.per] if self.per else []), *(c for c, _ in self.where)}

    def parts(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Per row: (numerator, denominator) of the weighted mean."""
        return _cached_parts(frame, self)

    def _parts(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        x = _numbers(frame, self.column)
        if self.per:
            per = _numbers(frame, self.per)
            with np.errstate(invalid="ignore", divide="ignore"):
                x = np.where(per > 0, x / per, np.nan)
        keep = np.isfinite(x) & _mask(frame, self.where)
        return np.where(keep, x * self.scale, 0.0), keep.astype(float)

    def weighted(self, frame: pd.DataFrame, weights: Weights) -> np.ndarray:
        return _ratio_of(weights, *self.parts(frame))

    def describe(self) -> str:
        value = f"{self.column}/{self.per}" if self.per else self.column
        scaled = f" × {self.scale:g}" if self.scale != 1 else ""
        return f"mean of {value}{scaled}{_where_text(self.where)}"


@dataclass(frozen=True)
class Ratio:
    """Σ ``numerator`` ÷ Σ ``denominator`` over the rows matching ``where``, × ``scale`` (a pooled rate)."""

    numerator: str
    denominator: str
    where: Where = ()
    scale: float = 1.0

    def columns(self) -> set[str]:
        return {self.numerator, self.denominator, *(c for c, _ in self.where)}

    def parts(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Per row: (numerator, denominator) of the pooled rate."""
        return _cached_parts(frame, self)

    def _parts(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        num = _numbers(frame, self.numerator)
        den = _numbers(frame, self.denominator)
        keep = np.isfinite(num) & np.isfinite(den) & _mask(frame, self.where)
        return np.where(keep, num * self.scale, 0.0), np.where(keep, den, 0.0)

    def weighted(self, frame: pd.DataFrame, weights: Weights) -> np.ndarray:
        return _ratio_of(weights, *self.parts(frame))

    def describe(self) -> str:
        scaled = f" × {self.scale:g}" if self.scale != 1 else ""
        return f"Σ {self.numerator} / Σ {self.denominator}{scaled}{_where_text(self.where)}"


Pooled = Mean | Ratio


class Weights:
    """Resample weights of rows (resamples × rows) given per cluster: row j of resample r weighs
    ``base[j] + sign[j] · per_cluster[r, codes[j]]``. A bootstrap draws clusters (base 0, sign 1); a sign-flip
    of two stacked evaluations gives each cluster to one arm (base 0 / sign 1 for the rows it moves in,
    base 1 / sign −1 for the rows it moves out). With ``mirror`` (the other arm's base) the resamples are both
    arms at once, the first half one arm and the second the other: they share the flips, so one product serves
    both. Products reduce rows to clusters first and multiply only the clusters a vector touches, so thousands
    of resamples of thousands of rows cost a small matrix product."""

    def __init__(
        self,
        per_cluster: np.ndarray,
        codes: np.ndarray,
        base: np.ndarray,
        sign: np.ndarray,
        mirror: np.ndarray | None = None,
    ) -> None:
        self.per_cluster, self.codes, self.base, self.sign, self.mirror = per_cluster, codes, base, sign, mirror

    @classmethod
    def rows(cls, base: np.ndarray) -> Weights:
        """One resample weighing row j by ``base[j]`` (the observed statistic: all ones, or one arm)."""
        n = len(base)
        return cls(np.zeros((1, 1)), np.zeros(n, dtype=int), np.asarray(base, dtype=float), np.zeros(n))

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        """Each resample's weighted sum of the per-row vector ``x``."""
        x = np.asarray(x, dtype=float)
        clusters = self.per_cluster.shape[1]
        by_cluster = np.bincount(self.codes, weights=self.sign * x, minlength=clusters)
        used = np.flatnonzero(by_cluster)
        if used.size == 0:
            moved = np.zeros(self.per_cluster.shape[0])
        elif used[-1] - used[0] + 1 <= max(used.size * 2, clusters // 4):
            # A group's clusters, numbered together: multiply that block (a view, no copy).
            block = slice(used[0], used[-1] + 1)
            moved = self.per_cluster[:, block] @ by_cluster[block]
        else:
            moved = self.per_cluster @ by_cluster
        if self.mirror is None:
            return self.base @ x + moved
        return np.concatenate([self.base @ x + moved, self.mirror @ x - moved])

    def dense(self) -> np.ndarray:
        moved = self.sign[None, :] * self.per_cluster[:, self.codes]
        if self.mirror is None:
            return self.base[None, :] + moved
        return np.vstack([self.base[None, :] + moved, self.mirror[None, :] - moved])


def _ratio_of(weights: Weights, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    top, bottom = weights @ num, weights @ den
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan)


def _group_codes(frame: pd.DataFrame, by: str) -> tuple[np.ndarray, list[str]]:
    def compute() -> tuple[np.ndarray, list[str]]:
        codes, names = pd.factorize(frame[by].astype(str), sort=True)
        return codes, [str(n) for n in names]

    return _cached(frame, ("groups", by), compute)


def group_values(of: Pooled, by: str, frame: pd.DataFrame, weights: Weights) -> tuple[np.ndarray, list[str]]:
    """``of`` per group of ``by``: resamples × groups (NaN where a group has nothing), and the group names."""
    num, den = of.parts(frame)
    codes, names = _group_codes(frame, by)
    # One product per group: a group's rows touch only its clusters (contiguous when the clusters are
    # ordered by group: ``cluster_codes``), so the groups together cost about one product over all clusters.
    columns = [
        _ratio_of(weights, np.where(codes == g, num, 0.0), np.where(codes == g, den, 0.0)) for g in range(len(names))
    ]
    if not columns:  # no group at all: every resample has none
        return np.empty((len(weights @ np.zeros(len(frame))), 0)), names
    return np.stack(columns, axis=1), names


@dataclass(frozen=True)
class Range:
    """max − min over the groups of ``by`` of ``of`` (a disparity: the worst group's distance to the best);
    NaN with fewer than two groups."""

    of: Pooled
    by: str

    def columns(self) -> set[str]:
        return {*self.of.columns(), self.by}

    def weighted(self, frame: pd.DataFrame, weights: Weights) -> np.ndarray:
        values, _ = group_values(self.of, self.by, frame, weights)
        if values.shape[1] == 0:
            return np.full(values.shape[0], np.nan)
        present = np.isfinite(values)
        enough = present.sum(axis=1) >= 2
        high = np.where(present, values, -np.inf).max(axis=1)
        low = np.where(present, values, np.inf).min(axis=1)
        return np.where(enough, high - low, np.nan)

    def describe(self) -> str:
        return f"max − min over {self.by} of the {self.of.describe()}"


@dataclass(frozen=True)
class Difference:
    """``minuend`` − ``subtrahend``, or its size (``absolute``): a tracked gap is absolute, so that its change
    means the same whichever side is ahead (a signed gap that shrinks may be a gap closing or one reversing)."""

    minuend: Pooled
    subtrahend: Pooled
    absolute: bool = False

    def columns(self) -> set[str]:
        return self.minuend.columns() | self.subtrahend.columns()

    def weighted(self, frame: pd.DataFrame, weights: Weights) -> np.ndarray:
        gap = self.minuend.weighted(frame, weights) - self.subtrahend.weighted(frame, weights)
        return np.abs(gap) if self.absolute else gap

    def describe(self) -> str:
        gap = f"({self.minuend.describe()}) − ({self.subtrahend.describe()})"
        return f"|{gap}|" if self.absolute else gap


@dataclass(frozen=True)
class ImpactRatio:
    """The four-fifths rule's min ÷ max over the groups of ``by`` of the selection rate: the share of a
    group's values at or above the mean of all values (SAGED's Larger-than standard)."""

    column: str
    by: str
    where: Where = ()

    def columns(self) -> set[str]:
        return {self.column, self.by, *(c for c, _ in self.where)}

    def weighted(self, frame: pd.DataFrame, weights: Weights) -> np.ndarray:
        x = _numbers(frame, self.column)
        keep = np.isfinite(x) & _mask(frame, self.where)
        w = weights.dense() * keep[None, :]
        x = np.where(keep, x, 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            standard = (w @ x) / w.sum(axis=1)
        codes, names = _group_codes(frame, self.by)
        onehot = np.zeros((len(frame), len(names)))
        grouped = codes >= 0  # a row with no group (factorize's −1) is in none, not in the last
        onehot[np.flatnonzero(grouped), codes[grouped]] = 1.0
        selected = (x[None, :] >= standard[:, None]) * w
        with np.errstate(invalid="ignore", divide="ignore"):
            rates = (selected @ onehot) / (w @ onehot)
            high, low = np.nanmax(np.where(np.isfinite(rates), rates, np.nan), axis=1), np.nanmin(rates, axis=1)
            return np.where(high > 0, low / np.where(high > 0, high, 1.0), np.nan)

    def describe(self) -> str:
        return f"min ÷ max over {self.by} of the share of {self.column} ≥ its mean{_where_text(self.where)}"


def _where_text(where: Where) -> str:
    return " where " + " and ".join(f"{c} = {v}" for c, v in where) if where else ""


def cluster_codes(frame: pd.DataFrame, cluster: str, group: str = "") -> tuple[np.ndarray, int]:
    """Each row's cluster number; with ``group`` and clusters nested in its groups, clusters numbered group by
    group, so a group's clusters are one contiguous block (its products read a slice, not a copy)."""
    codes, names = pd.factorize(frame[cluster].astype(str))
    if group and len(names):
        groups = frame[group].astype(str).to_numpy()
        first = pd.Series(groups).groupby(codes).agg(["first", "nunique"])
        if (first["nunique"] == 1).all():  # nested: renumber by (group, cluster)
            order = np.lexsort((np.asarray(names, dtype=str), first["first"].to_numpy(dtype=str)))
            renumber = np.empty(len(names), dtype=int)
            renumber[order] = np.arange(len(names))
            codes = renumber[codes]
    return codes, len(names)


def smallest_group(statistic: Any, frame: pd.DataFrame, codes: np.ndarray, used: np.ndarray) -> int | None:
    """For a statistic over groups (a range, an impact ratio) or between two parts (a difference), the clusters of
    its smallest group or part among the rows it uses: the sample a between-group claim rests on (None for any
    other statistic)."""
    if isinstance(statistic, Difference):
        sides = [
            np.unique(codes[used & (part.parts(frame)[1] != 0)]).size
            for part in (statistic.minuend, statistic.subtrahend)
        ]
        return int(min(sides))
    by = getattr(statistic, "by", "")
    if not by or not isinstance(statistic, Range | ImpactRatio):
        return None
    groups = frame[by].astype(str).to_numpy()[used]
    counts = pd.Series(codes[used]).groupby(groups).nunique()
    return int(counts.min()) if len(counts) else 0


def rows_with_value(statistic: Any, frame: pd.DataFrame) -> np.ndarray:
    """The rows a statistic uses (its pooled parts' denominators), for the sample counts."""
    parts = [statistic] if isinstance(statistic, Mean | Ratio) else []
    if isinstance(statistic, Range):
        parts = [statistic.of]
    elif isinstance(statistic, Difference):
        parts = [statistic.minuend, statistic.subtrahend]
    if not parts:
        columns = [c for c in statistic.columns() if c in frame]
        return frame[columns].notna().all(axis=1).to_numpy() if columns else np.ones(len(frame), dtype=bool)
    used = np.zeros(len(frame), dtype=bool)
    for part in parts:
        used |= part.parts(frame)[1] != 0
    return used


def categorical(frame: pd.DataFrame, columns: set[str]) -> pd.DataFrame:
    """``frame`` with its text columns among ``columns`` as categories: the groups and filters a statistic
    reads then compare integer codes, not strings, however many parts read them."""
    text = [
        c
        for c in columns
        if c in frame
        and c != "item"
        and not pd.api.types.is_numeric_dtype(frame[c])
        and not pd.api.types.is_bool_dtype(frame[c])
    ]
    return frame.assign(**{c: frame[c].astype("category") for c in text}) if text else frame


def is_disparity(statistic: Any) -> bool:
    """A statistic between groups: it can widen because one group got better, so its change is shown (``disparity
    widened``), and the groups' own tests are what page."""
    return isinstance(statistic, Range | Difference | ImpactRatio)


def evaluate(statistics: list[Any], frame: pd.DataFrame, weights: Weights) -> list[np.ndarray]:
    """Each statistic under ``weights``."""
    return [statistic.weighted(frame, weights) for statistic in statistics]
