"""One definition per tracked metric: a statistic declared over a suite's per-item rows.

A suite declares each headline it tracks once (``TrackedMetric``): the statistic over its per-item rows
(``Mean``, ``Ratio``, ``Range``, ``Difference``, ``ImpactRatio``), the column it is clustered on (question,
country, territory), which direction is worse and its minimum effect (the smallest worsening that pages; a
disparity's is shown, never paged). That one declaration gives the headline's value, its interval (a cluster
bootstrap), its sample size for the sufficiency rule (its clusters) and its paired test (``paired_test``: a
sign-flip test over clusters on the items two evaluations share, one-sided toward worse — the claim a regression
alert makes — with the other side's p for improvements). How a release is decided from these tests is described
once, in ``geomon.stats.verdicts``. The leaderboard, the history, the alerts and the trends all read these numbers.

Every statistic is evaluated on *weights*: a matrix of resamples × rows. The observed value weighs every
row 1; a bootstrap resample weighs each cluster by how often it was drawn; a sign-flip resample of two
stacked evaluations gives each cluster's rows to one arm or the other. Means and ratios reduce to sums
per cluster first, so thousands of resamples cost a small matrix product.
"""

from __future__ import annotations

import bisect
import collections
import functools
import hashlib
import math
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

import numpy as np
import pandas as pd

from geomon.stats.values import MetricValue

_F = TypeVar("_F", bound=Callable[..., Any])


@functools.cache
def _blas() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _one_blas_thread(function: _F) -> _F:
    """Run ``function`` with BLAS on one thread: its products are small and many (a chunk of flips or draws times
    a vector), where a second BLAS thread gains nothing and, waiting for a busy core, made each 100× slower."""

    @functools.wraps(function)
    def limited(*args: Any, **kwargs: Any) -> Any:
        with _blas().limit(limits=1, user_api="blas"):
            return function(*args, **kwargs)

    return limited  # type: ignore[return-value]


class DeclarationError(ValueError):
    """A tracked metric's declaration does not fit the rows it is given (a missing column, duplicated items)."""


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
    # ordered by group: ``_cluster_codes``), so the groups together cost about one product over all clusters.
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


@dataclass(frozen=True)
class TrackedMetric:
    """One tracked headline, declared once: ``statistic`` over the per-item rows, ``cluster`` the column of
    its independent unit (resampled and flipped together), ``higher_is_worse`` the direction of a
    regression, ``min_effect`` the smallest worsening that pages (in the metric's units; a disparity never pages:
    its minimum effect is what its test's power is planned at), ``breakdown`` the
    label its value carries in the history (``persona=vanilla``), ``by`` group columns whose groups are
    also compared one by one (``country``: a drop in one country is a verdict of its own), ``bounds`` the
    metric's possible range."""

    name: str
    statistic: Statistic
    cluster: str = "item"
    higher_is_worse: bool = False
    min_effect: float = 0.0
    breakdown: str = ""
    by: tuple[str, ...] = ()
    bounds: tuple[float, float] | None = None
    # Which way the groups' own values are worse, where it is not the metric's (a range of sentiment is worse
    # when higher; a country's sentiment when lower). None: the metric's.
    groups_higher_is_worse: bool | None = None
    # The name the groups' values carry, where it is not the metric's (a range of regions' mean errors: each
    # region's is ``mean_error``, ``region=…``). "": the metric's.
    groups_name: str = ""
    # The groups' own minimum effect and bounds, where they are not the metric's (a gap between families' correct
    # rates is 10 points and unbounded; each family's rate is a percentage that alerts at 5). None: the metric's.
    groups_min_effect: float | None = None
    groups_bounds: tuple[float, float] | None = None
    # What an item the baseline has and the compared evaluation lacks scores in the statistic's column (an answer
    # rate: 0, unanswered; an intention-to-treat mean: 0, wrong); None: nothing, it is left out of the mean as an
    # unanswered item is (``absent_items``). Not part of what a figure is drawn under (no repr: the digest).
    absent: float | None = field(default=None, repr=False)

    def columns(self) -> set[str]:
        """The columns the per-item rows must hold."""
        return {"item", self.cluster, *self.statistic.columns(), *self.by}

    @property
    def worse(self) -> str:
        return "higher" if self.higher_is_worse else "lower"

    def declares(self, metric: str, breakdown: str) -> bool:
        """Whether a figure named ``metric`` with ``breakdown`` is one of this declaration's: its headline, or one of
        its groups (``<by>=…``, after the headline's breakdown)."""
        if (metric, breakdown) == (self.name, self.breakdown):
            return True
        within = f"{self.breakdown}," if self.breakdown else ""
        return metric == (self.groups_name or self.name) and any(
            breakdown.startswith(f"{within}{column}=") for column in self.by
        )

    def name_for(self, statistic: Any) -> str:
        """The metric name one of its parts is recorded under: the headline's, or its groups'."""
        return self.name if statistic is self.statistic or not self.groups_name else self.groups_name

    def min_effect_for(self, statistic: Any) -> float:
        """The minimum effect of one of its parts: the headline's, or its groups'."""
        if statistic is self.statistic or self.groups_min_effect is None:
            return self.min_effect
        return self.groups_min_effect

    def bounds_for(self, statistic: Any) -> tuple[float, float] | None:
        """The bounds of one of its parts: the headline's, or its groups'."""
        if statistic is self.statistic or self.groups_bounds is None:
            return self.bounds
        return self.groups_bounds

    def higher_is_worse_for(self, statistic: Any) -> bool:
        """The direction of one of its parts: the headline's, or its groups'."""
        if statistic is self.statistic or self.groups_higher_is_worse is None:
            return self.higher_is_worse
        return self.groups_higher_is_worse

    @property
    def group(self) -> str:
        """The column the metric's groups are read by (its first ``by``, a range's groups), or ""."""
        return self.by[0] if self.by else self.statistic.by if isinstance(self.statistic, Range) else ""

    def check(self, frame: pd.DataFrame, where: str) -> None:
        missing = sorted(self.columns() - set(frame.columns))
        if missing:
            raise DeclarationError(
                f"{where}: tracked metric {self.name} needs column(s) {missing} in the per-item rows "
                f"(they have {sorted(frame.columns)})"
            )
        if not frame["item"].duplicated().any() and frame["item"].map(type).nunique() <= 1:
            return
        keys = frame["item"].astype(str)
        duplicated = sorted(keys[keys.duplicated()].unique())
        if duplicated:
            raise DeclarationError(
                f"{where}: item keys appear more than once ({len(duplicated)}: {', '.join(duplicated[:5])}"
                f"{', …' if len(duplicated) > 5 else ''}); each item must be one row to be paired"
            )

    def parts(self, frame: pd.DataFrame) -> list[tuple[str, Any]]:
        """(breakdown, statistic) for the headline and, with ``by``, each of its groups: the group's value of
        the statistic's pooled mean (a Range's ``of``, else the statistic itself)."""
        out = [(self.breakdown, self.statistic)]
        inner = self.statistic.of if isinstance(self.statistic, Range) else self.statistic
        for column in self.by:
            if not isinstance(inner, Mean | Ratio):
                raise DeclarationError(f"tracked metric {self.name}: by={column} needs a Mean or Ratio inside")
            # A group of the rows the statistic reads: rows of another level (no group), or a group none of whose rows
            # has a value (English, never a claimant's language), are in none.
            valued = inner.parts(frame)[1] != 0 if len(frame) else np.zeros(0, dtype=bool)
            present = frame[column][frame[column].notna().to_numpy() & valued]
            for group in sorted(present.astype(str).unique()):
                where = (*inner.where, (column, group))
                part = replace(inner, where=where)
                label = f"{column}={group}"
                out.append((f"{self.breakdown},{label}" if self.breakdown else label, part))
        return out


# --- estimates: value, interval, sample --------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    metric: str
    breakdown: str
    value: float
    ci_low: float
    ci_high: float
    items: int
    clusters: int  # the sample size of the sufficiency rule (a group statistic: its smallest group's clusters)
    se: float = math.nan  # the bootstrap standard error (a gap's: of its signed contrast, ``_signed_gap``)


def _cluster_codes(frame: pd.DataFrame, cluster: str, group: str = "") -> tuple[np.ndarray, int]:
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


def _bootstrap_weights(
    codes: np.ndarray, clusters: int, resamples: int, rng: np.random.Generator, strata: np.ndarray | None = None
) -> Weights:
    """Clusters drawn with replacement; with ``strata`` (each cluster's group), within each group, so every
    group keeps its own number of clusters in every resample (a group statistic is never missing a group)."""
    if strata is None:
        counts = rng.multinomial(clusters, np.full(clusters, 1.0 / clusters), size=resamples).astype(float)
    else:
        counts = np.zeros((resamples, clusters))
        for stratum in np.unique(strata):
            members = np.flatnonzero(strata == stratum)
            drawn = rng.multinomial(members.size, np.full(members.size, 1.0 / members.size), size=resamples)
            counts[:, members] = drawn
    return Weights(counts, codes, np.zeros(len(codes)), np.ones(len(codes)))


def _strata(frame: pd.DataFrame, codes: np.ndarray, clusters: int, group: str) -> np.ndarray | None:
    """Each cluster's group, where clusters are nested in the groups of ``group`` (else None)."""
    if not group or not clusters:
        return None
    groups = pd.Series(frame[group].astype(str).to_numpy()).groupby(codes).agg(["first", "nunique"])
    if len(groups) != clusters or not (groups["nunique"] == 1).all():
        return None
    return pd.factorize(groups["first"])[0]


def _smallest_group(statistic: Any, frame: pd.DataFrame, codes: np.ndarray, used: np.ndarray) -> int | None:
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


# The last estimates drawn, by (metric, resamples, seed, the rows' content): an evaluation's headline is
# estimated by its suite's tracked stage and again when it is recorded (the same rows, the same seed), and a
# bootstrap is the costly part of both; the second reads the first's numbers, which are the same by construction.
_DRAWN: collections.OrderedDict[tuple[Any, ...], list[Estimate]] = collections.OrderedDict()
_DRAWN_KEPT = 64
_DRAWN_LOCK = threading.Lock()  # steps may estimate from threads


def _content(frame: pd.DataFrame, columns: set[str]) -> bytes:
    """A digest of ``columns`` of ``frame`` in row order (names, types and values): equal for equal rows."""
    chosen = frame[sorted(columns)]
    digest = hashlib.blake2b(repr([(c, str(t)) for c, t in chosen.dtypes.items()]).encode(), digest_size=32)
    digest.update(pd.util.hash_pandas_object(chosen, index=False).to_numpy().tobytes())
    return digest.digest()


RESAMPLES = 1000  # a declared figure's cluster bootstrap: its interval and its standard error


def drawn_as(metric: TrackedMetric) -> TrackedMetric:
    """What a metric's draw depends on: its declaration without the minimum effects (never read by a draw)."""
    return replace(metric, min_effect=0.0, groups_min_effect=None)


def declaration_digest(metric: TrackedMetric) -> str:
    """A digest of what a metric's figures were drawn under (``drawn_as``: its statistic, cluster, groups, bounds),
    recorded with them, so a later reader uses a recorded standard error only under the same declaration. A
    declaration whose text is not stable across processes (a function in it) gets a digest that never matches."""
    return hashlib.blake2b(repr(drawn_as(metric)).encode(), digest_size=8).hexdigest()


def estimates(
    metric: TrackedMetric, frame: pd.DataFrame, *, resamples: int = RESAMPLES, seed: int = 0, where: str = ""
) -> list[Estimate]:
    """The metric (and each of its groups with ``by``) on ``frame``: value, 95 % percentile interval from a
    cluster bootstrap, items and clusters counted where the statistic has a value. Drawn once per metric, rows,
    resamples and seed in a process (``_DRAWN``; the minimum effects, which a draw never reads, are not part of
    what is drawn: the figures and a comparison's plan share one draw)."""
    metric.check(frame, where or metric.name)
    key = (drawn_as(metric), resamples, seed, _content(frame, metric.columns()))
    try:
        with _DRAWN_LOCK:
            drawn = _DRAWN.get(key)
    except TypeError:  # a statistic holding an unhashable value: drawn every time
        return _estimates(metric, frame, resamples=resamples, seed=seed)
    if drawn is None:
        drawn = _estimates(metric, frame, resamples=resamples, seed=seed)
    with _DRAWN_LOCK:
        _DRAWN[key] = drawn
        _DRAWN.move_to_end(key)
        while len(_DRAWN) > _DRAWN_KEPT:
            _DRAWN.popitem(last=False)
    return list(drawn)


@_one_blas_thread
def _estimates(metric: TrackedMetric, frame: pd.DataFrame, *, resamples: int, seed: int) -> list[Estimate]:
    frame = _categorical(frame, metric.columns())
    if frame.empty:
        return [Estimate(metric.name, b, math.nan, math.nan, math.nan, 0, 0) for b, _ in metric.parts(frame)]
    codes, clusters = _cluster_codes(frame, metric.cluster, metric.group)
    strata = _strata(frame, codes, clusters, metric.group)
    draws = _bootstrap_weights(codes, clusters, resamples, np.random.default_rng(seed), strata) if resamples else None
    parts = metric.parts(frame)
    statistics = [statistic for _, statistic in parts]
    values = evaluate(statistics, frame, Weights.rows(np.ones(len(frame))))
    boots = evaluate(statistics, frame, draws) if draws is not None else [None] * len(parts)
    out = []
    for (breakdown, statistic), value, boot in zip(parts, values, boots, strict=True):
        value = float(value[0])
        low = high = se = math.nan
        if boot is not None and math.isfinite(value):
            boot = boot[np.isfinite(boot)]
            if boot.size >= 0.9 * resamples:  # an interval only where nearly every resample has the figure
                low, high = (float(q) for q in np.quantile(boot, [0.025, 0.975]))
                signed = _signed_gap(statistic, frame, draws)
                signed = boot if signed is None else signed[np.isfinite(signed)]
                se = float(np.std(signed)) if signed.size >= 0.9 * resamples else math.nan
        rows = _rows_with_value(statistic, frame)
        sample = _smallest_group(statistic, frame, codes, rows)
        clustered = int(np.unique(codes[rows]).size) if sample is None else sample
        bounds = metric.bounds_for(statistic)
        if isinstance(statistic, Mean | Ratio) and bounds is not None and math.isfinite(value):
            low, high = _no_narrower_than_wilson(value, low, high, clustered, bounds)
        out.append(Estimate(metric.name_for(statistic), breakdown, value, low, high, int(rows.sum()), clustered, se))
    return out


def _signed_gap(statistic: Any, frame: pd.DataFrame, draws: Weights) -> np.ndarray | None:
    """A gap that is a size (a range, an absolute difference) drawn as the signed contrast between the groups that
    define it in the data: the range's highest and lowest group, the difference's two sides. Its standard error
    is the gap's: the size's own draws fold at 0, so a gap near 0 would state a spread, and plan an MDE, well
    below what its groups allow. None for any other statistic."""
    if isinstance(statistic, Difference) and statistic.absolute:
        return statistic.minuend.weighted(frame, draws) - statistic.subtrahend.weighted(frame, draws)
    if not isinstance(statistic, Range):
        return None
    point = group_values(statistic.of, statistic.by, frame, Weights.rows(np.ones(len(frame))))[0][0]
    present = np.flatnonzero(np.isfinite(point))
    if present.size < 2:
        return None
    order = present[np.argsort(point[present], kind="stable")]
    values, _ = group_values(statistic.of, statistic.by, frame, draws)
    return values[:, order[-1]] - values[:, order[0]]


def _no_narrower_than_wilson(
    value: float, low: float, high: float, clusters: int, bounds: tuple[float, float]
) -> tuple[float, float]:
    """A bounded mean's interval widened to at least the Wilson score interval of a proportion over its
    clusters: a small group whose answers were all right (or all wrong) has a percentile bootstrap interval of
    zero width, narrower than its few clusters allow."""
    if clusters <= 0:
        return low, high
    lo, hi = bounds
    p = _share(value, bounds)
    z, n = 1.959964, clusters
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    w_low, w_high = lo + (centre - half) * (hi - lo), lo + (centre + half) * (hi - lo)
    if not (math.isfinite(low) and math.isfinite(high)):
        return w_low, w_high
    return min(low, w_low), max(high, w_high)


def agresti_coull_se(value: float, clusters: int, bounds: tuple[float, float] | None) -> float:
    """The Agresti–Coull standard error of a bounded mean ``value`` over ``clusters`` (two successes and two
    failures added: never 0 at the bounds); NaN without bounds or clusters."""
    if bounds is None or clusters <= 0 or not math.isfinite(value):
        return math.nan
    p = (_share(value, bounds) * clusters + 2) / (clusters + 4)
    return (bounds[1] - bounds[0]) * math.sqrt(p * (1 - p) / (clusters + 4))


def _share(value: float, bounds: tuple[float, float]) -> float:
    """A bounded value as a share of its range, clipped to [0, 1]."""
    low, high = bounds
    return min(max((value - low) / (high - low), 0.0), 1.0)


def _rows_with_value(statistic: Any, frame: pd.DataFrame) -> np.ndarray:
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


# --- the paired test ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedTest:
    """One metric (or one of its groups) compared on the items two evaluations share. ``change`` is after −
    before in the metric's units; ``p_value`` is one-sided toward *worse* (the claim a regression alert makes:
    the change is at least this far in the worse direction), ``p_better`` one-sided toward better (None when
    the statistic is undefined on either side, or nothing is shared); ``se`` the standard deviation of the
    sign-flip null (the change's standard error under no change), from which the minimum detectable effect
    follows; ``null_size`` how many sign-flips the p-values count (2^k when ``exact``: every flip of the k
    clusters that differ)."""

    metric: str
    breakdown: str
    before: float
    after: float
    change: float
    p_value: float | None
    se: float
    items: int
    clusters: int
    higher_is_worse: bool
    min_effect: float
    bounds: tuple[float, float] | None = None
    note: str = ""  # why there is no p-value
    p_better: float | None = None
    exact: bool = False
    null_size: int = 0
    disparity: bool = False  # a statistic between groups (a range, gap, impact ratio): shown, never paged
    # The standard error the MDE and power are stated at, planned before the new data (``compare.planned``);
    # NaN: ``se``.
    planned_se: float = math.nan
    # The change's standard error planned from the pair pooled (``compare.planned``): what weighs it in Holm. The
    # sign-flip test conditions on each cluster's two evaluations as a pair, not on which is the baseline.
    weighing_se: float = math.nan
    # The clusters this comparison reads whose rows differ between the two evaluations (None: not counted). None
    # differing is the one thing that takes it out of the Holm family: known from what the sign-flip test
    # conditions on, never from the change it observed.
    differing: int | None = None

    @property
    def worse(self) -> bool:
        return self.change > 0 if self.higher_is_worse else self.change < 0


def _categorical(frame: pd.DataFrame, columns: set[str]) -> pd.DataFrame:
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


def _aligned(before: pd.DataFrame, after: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows of the items both share, in the order of their keys (compared as text: a stored key may have been
    read back as a number): the clusters are numbered, and the seeded sign-flips drawn, the same way whatever order
    the rows were stored in, so a pair's p-values and planned error never depend on it."""
    b_keys, a_keys = before["item"].astype(str), after["item"].astype(str)
    if len(b_keys) == len(a_keys) and (b_keys.to_numpy() == a_keys.to_numpy()).all():
        order = np.argsort(b_keys.to_numpy(), kind="stable")
        return (
            before.assign(item=b_keys).iloc[order].reset_index(drop=True),
            after.assign(item=a_keys).iloc[order].reset_index(drop=True),
        )
    b = before.assign(item=b_keys).set_index("item")
    a = after.assign(item=a_keys).set_index("item")
    shared = sorted(set(b.index) & set(a.index))
    return b.loc[shared].reset_index(), a.loc[shared].reset_index()


def paired_test(
    metric: TrackedMetric,
    before: pd.DataFrame,
    after: pd.DataFrame,
    *,
    resamples: int = 4999,
    seed: int = 0,
    chunk: int = 1000,
    precision: Precision | None = None,
) -> list[PairedTest]:
    """Each part of ``metric`` (the headline and, with ``by``, its groups) compared on the shared items: under
    no change, a cluster's before and after rows are exchangeable, so flipping whole clusters between the two
    arms gives the null distribution of the change (one-sided each way; identical data gives p = 1). Exact
    (every flip enumerated) when few clusters differ, else ``resamples`` random flips, refined near the
    decision's thresholds (``Precision``). A statistic that is undefined (NaN) on either side has no p-value.
    Errors in the statistic are not swallowed."""
    return paired_tests([metric], before, after, resamples=resamples, seed=seed, chunk=chunk, precision=precision)


@_one_blas_thread
def paired_tests(
    metrics: Sequence[TrackedMetric],
    before: pd.DataFrame,
    after: pd.DataFrame,
    *,
    resamples: int = 4999,
    seed: int = 0,
    chunk: int = 1000,
    precision: Precision | None = None,
) -> list[PairedTest]:
    """``paired_test`` of each metric on the same two evaluations, which are checked, paired and stacked once."""
    for metric in metrics:
        metric.check(before, f"{metric.name}, the earlier evaluation")
        metric.check(after, f"{metric.name}, the later evaluation")
    old, new = _aligned(before, after)
    columns = set().union(*(m.columns() for m in metrics)) if metrics else set()
    stacked = _categorical(pd.concat([old, new], ignore_index=True), columns)
    return [
        test
        for metric in metrics
        for test in _paired(
            metric, old, new, stacked, resamples=resamples, seed=seed, chunk=chunk, precision=precision or Precision()
        )
    ]


@dataclass(frozen=True)
class Precision:
    """How precise a paired test's p-values must be. With at most ``exact_up_to`` clusters that differ between
    the two evaluations every sign-flip is enumerated (2^k: the exact p-value); otherwise random flips, and a
    p-value whose Monte Carlo error (four standard errors) straddles one of ``thresholds`` (the levels the
    decision compares it with) is computed again with ``max_resamples``, so no verdict near a threshold
    depends on the seed."""

    exact_up_to: int = 16
    thresholds: tuple[float, ...] = ()
    max_resamples: int = 99_999
    min_clusters: int = 0  # below it a comparison is an insufficient sample, never decided: no refinement


def _paired(
    metric: TrackedMetric,
    old: pd.DataFrame,
    new: pd.DataFrame,
    stacked: pd.DataFrame,
    *,
    resamples: int,
    seed: int,
    chunk: int,
    precision: Precision,
) -> list[PairedTest]:
    n = len(new)
    codes, clusters = _cluster_codes(new, metric.cluster, metric.group) if n else (np.zeros(0, dtype=int), 0)
    parts = metric.parts(stacked if n else new)
    if n == 0:
        return [_undefined(metric, st, b, math.nan, math.nan, 0, 0, "no items in common") for b, st in parts]
    statistics = [statistic for _, statistic in parts]
    arms = np.concatenate([np.zeros(n), np.ones(n)])
    b_values = [float(v[0]) for v in evaluate(statistics, stacked, Weights.rows(1 - arms))]
    a_values = [float(v[0]) for v in evaluate(statistics, stacked, Weights.rows(arms))]
    differs = _differing_rows(metric, old, new)
    differing = np.unique(codes[differs]) if clusters else np.zeros(0, dtype=int)
    exact = differing.size <= precision.exact_up_to
    if exact:
        flips = _Flips.every(differing, clusters)
    else:
        flips = _Flips.coins(np.random.default_rng(seed), resamples, clusters)
    nulls = _nulls(statistics, stacked, codes, flips, chunk)
    out = []
    for (breakdown, statistic), b_value, a_value, null in zip(parts, b_values, a_values, nulls, strict=True):
        used = _rows_with_value(statistic, stacked)
        used_pairs = used[:n] | used[n:]
        items, used_clusters = int(used_pairs.sum()), int(np.unique(codes[used_pairs]).size)
        smallest = _smallest_group(statistic, new, codes, used_pairs)
        used_clusters = used_clusters if smallest is None else smallest
        if not (math.isfinite(b_value) and math.isfinite(a_value)):
            side = "before" if not math.isfinite(b_value) else "after"
            undefined = _undefined(
                metric, statistic, breakdown, b_value, a_value, items, used_clusters, f"undefined {side}"
            )
            out.append(undefined)
            continue
        change = a_value - b_value
        null = null[np.isfinite(null)]
        higher_is_worse = metric.higher_is_worse_for(statistic)
        p_worse, p_better = _one_sided(change, null, higher_is_worse, exact)
        # The null's spread from the one draw every decision of this pair makes (seeded): what its MDE and weight are
        # planned from, the same whichever levels refine the p-value below (they depend on the look's α).
        spread = float(np.std(null)) if null.size else math.nan
        decidable = used_clusters >= precision.min_clusters  # an insufficient sample is never decided
        if not exact and decidable and _near(min(p_worse, p_better), null.size, precision.thresholds):
            more = _Flips.coins(np.random.default_rng([seed, 1]), precision.max_resamples, clusters)
            (null,) = _nulls([statistic], stacked, codes, more, chunk)
            null = null[np.isfinite(null)]
            p_worse, p_better = _one_sided(change, null, higher_is_worse, exact)
        out.append(
            PairedTest(
                metric.name_for(statistic),
                breakdown,
                b_value,
                a_value,
                change,
                p_worse,
                spread,
                items,
                used_clusters,
                higher_is_worse,
                metric.min_effect_for(statistic),
                metric.bounds_for(statistic),
                note=_moved(statistic, stacked, n) if change else "",
                p_better=p_better,
                exact=exact,
                null_size=int(null.size),
                disparity=is_disparity(statistic),
                differing=int(np.unique(codes[differs & used_pairs]).size),
            )
        )
    return out


ANSWERED_RATE = "answered_rate"


def answered_rate(
    cluster: str, by: tuple[str, ...] = (), where: Where = (), breakdown: str = "", min_effect: float = 5.0
) -> TrackedMetric:
    """Whether the model still answers, overall and per group (``by``): the percent of the asked items answered
    (``answered``: 1, 0 for an unanswered or refused reply, NaN for a failed request — an outage is not a model
    that stopped answering), lower is worse. Every suite tracks it: a score over the answered items alone would
    look better when a model stops answering the ones it gets wrong."""
    return TrackedMetric(
        ANSWERED_RATE,
        Mean("answered", where=where, scale=100),
        cluster,
        False,
        min_effect,
        breakdown,
        by=by,
        bounds=(0.0, 100.0),
        absent=0.0,  # an item the evaluation lacks is an item it did not answer
    )


def outcome_columns(statistic: Any) -> set[str]:
    """The columns a statistic reads its outcomes from (not the groups and filters it selects rows by)."""
    if isinstance(statistic, Mean):
        return {statistic.column, *([statistic.per] if statistic.per else [])}
    if isinstance(statistic, Ratio):
        return {statistic.numerator, statistic.denominator}
    if isinstance(statistic, Range):
        return outcome_columns(statistic.of)
    if isinstance(statistic, Difference):
        return outcome_columns(statistic.minuend) | outcome_columns(statistic.subtrahend)
    if isinstance(statistic, ImpactRatio):
        return {statistic.column}
    raise DeclarationError(f"no outcome columns known for {type(statistic).__name__}")


def absent_items(metrics: Sequence[TrackedMetric], before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """``after`` with a row for each item ``before`` has and it lacks: an absent item is an outcome, never a row
    left out of the pairing (a harness that drops the items that errored would otherwise switch the guardrail off).
    Its groups, filters and cluster are the baseline's; its outcomes are none (NaN: out of an answered-only mean,
    as an unanswered item is), except where a metric says what an absent item scores (``TrackedMetric.absent``:
    an answer rate's 0, an intention-to-treat mean's 0). Where no metric says (Gapminder's published rates: each
    configuration was published on its own questions), the evaluations are compared on the items they share."""
    if all(m.absent is None for m in metrics):  # no declaration says what an absent item is: the shared items
        return after
    have = set(after["item"].astype(str))
    lacking = before[~before["item"].astype(str).isin(have).to_numpy()]
    if lacking.empty:
        return after
    rows = lacking.copy()
    for metric in metrics:
        for column in outcome_columns(metric.statistic) & set(rows.columns):
            rows[column] = np.nan
    for metric in metrics:
        if metric.absent is not None and isinstance(metric.statistic, Mean) and metric.statistic.column in rows:
            rows[metric.statistic.column] = metric.absent
    rows = rows.reindex(columns=after.columns) if set(rows.columns) != set(after.columns) else rows[after.columns]
    return pd.concat([after, rows], ignore_index=True)


def undeclared(values: Iterable[MetricValue], tracked: Sequence[TrackedMetric]) -> list[MetricValue]:
    """The figures of ``values`` no tracked metric declares: what a tracked stage hands in beside its items (a
    declared figure is computed from the items, once, by whoever records them)."""
    return [v for v in values if not any(m.declares(v.metric, v.breakdown) for m in tracked)]


def is_disparity(statistic: Any) -> bool:
    """A statistic between groups: it can widen because one group got better, so its change is shown (``disparity
    widened``), and the groups' own tests are what page."""
    return isinstance(statistic, Range | Difference | ImpactRatio)


def _moved(statistic: Any, stacked: pd.DataFrame, n: int) -> str:
    """For a range, the group that moved most between the two evaluations (``country=Kenya 60 → 85``): whether
    a gap widened because a group got worse or because another got better."""
    if not isinstance(statistic, Range):
        return ""
    arms = np.concatenate([np.zeros(n), np.ones(n)])
    before, names = group_values(statistic.of, statistic.by, stacked, Weights.rows(1 - arms))
    after, _ = group_values(statistic.of, statistic.by, stacked, Weights.rows(arms))
    moves = after[0] - before[0]
    if not np.isfinite(moves).any():
        return ""
    g = int(np.nanargmax(np.abs(moves)))
    return f"moved most: {statistic.by}={names[g]} {before[0][g]:.4g} → {after[0][g]:.4g}"


def _differing_rows(metric: TrackedMetric, old: pd.DataFrame, new: pd.DataFrame) -> np.ndarray:
    """The rows that differ between the two evaluations in a column the statistic reads: flipping a cluster with
    none swaps identical rows and changes nothing."""
    columns = sorted(metric.columns() - {"item"})
    differs = np.zeros(len(new), dtype=bool)
    for column in columns:
        differs |= _cells_differ(old[column], new[column])
    return differs


def _cells_differ(before: pd.Series, after: pd.Series) -> np.ndarray:
    """Row by row, whether two columns' cells differ: as numbers where both read as numbers (a value stored as 100
    and read back from the history's JSON as 100.0 is the same value), two missing cells never, else as text."""
    # Two missing cells are the same outcome however they were stored (NaN in memory, None read back from the store).
    as_text = (before.astype(str).to_numpy() != after.astype(str).to_numpy()) & ~(
        before.isna().to_numpy() & after.isna().to_numpy()
    )
    try:
        a = pd.to_numeric(before, errors="coerce").to_numpy(dtype=float)
        b = pd.to_numeric(after, errors="coerce").to_numpy(dtype=float)
    except (TypeError, ValueError):  # cells no number parser reads (lists, mappings): their text
        return as_text
    # As numbers, to the precision the history stores them with (a rate of 11/12 read back as 0.9166666667).
    return np.where(~np.isnan(a) & ~np.isnan(b), ~np.isclose(a, b, rtol=1e-9, atol=1e-9), as_text)


class _Flips:
    """Sign-flips (1: a cluster's rows swap arms), made a chunk at a time so that 99,999 flips of thousands of
    clusters never sit in memory at once: every flip of the clusters that differ (exact), or fair coins."""

    def __init__(self, total: int, clusters: int, make: Any) -> None:
        self.total, self.clusters, self.make = total, clusters, make

    @classmethod
    def every(cls, differing: np.ndarray, clusters: int) -> _Flips:
        k = differing.size

        def make(start: int, size: int) -> np.ndarray:
            patterns = (np.arange(start, start + size)[:, None] >> np.arange(k)[None, :]) & 1
            flips = np.zeros((size, clusters))
            flips[:, differing] = patterns
            return flips

        return cls(2**k, clusters, make)

    @classmethod
    def coins(cls, rng: np.random.Generator, resamples: int, clusters: int) -> _Flips:
        return cls(resamples, clusters, lambda start, size: _coin_flips(rng, size, clusters))


def _nulls(
    statistics: list[Any], stacked: pd.DataFrame, codes: np.ndarray, flips: _Flips, chunk: int
) -> list[np.ndarray]:
    """Each statistic's change (after arm − before arm) under each of ``flips``, drawn a chunk at a time."""
    n = len(codes)
    stacked_codes = np.concatenate([codes, codes])
    # A flipped cluster's before rows join the after arm and its after rows leave it; the mirror moves them back.
    to_after = np.concatenate([np.zeros(n), np.ones(n)]), np.concatenate([np.ones(n), -np.ones(n)])
    to_before = np.concatenate([np.ones(n), np.zeros(n)])
    total = flips.total
    nulls = [np.empty(total) for _ in statistics]
    for start in range(0, total, chunk):
        flip = flips.make(start, min(chunk, total - start))
        both = evaluate(statistics, stacked, Weights(flip, stacked_codes, *to_after, mirror=to_before))
        for null, values in zip(nulls, both, strict=True):
            null[start : start + chunk] = values[: len(flip)] - values[len(flip) :]
    return nulls


def _one_sided(change: float, null: np.ndarray, higher_is_worse: bool, exact: bool) -> tuple[float, float]:
    """(p toward worse, p toward better): the share of flips at least as far in that direction as the change.
    Exact enumeration counts the observed flip among its 2^k; random flips add it ((count + 1) / (N + 1)). A
    change of 0 is an outcome like any other: where clusters differ (20 of 40 items, net zero) the flips that move
    it either way count; p = 1 both ways only when no flip moves it."""
    tolerance = 1e-9 * max(1.0, abs(change))
    if null.size == 0:
        return 1.0, 1.0
    toward_worse = null if higher_is_worse else -null
    observed = change if higher_is_worse else -change
    worse_count = float(np.sum(toward_worse >= observed - tolerance))
    better_count = float(np.sum(toward_worse <= observed + tolerance))
    if exact:
        return worse_count / null.size, better_count / null.size
    return (worse_count + 1) / (null.size + 1), (better_count + 1) / (null.size + 1)


def _near(p: float, resamples: int, thresholds: Sequence[float]) -> bool:
    """Whether a Monte Carlo p-value from ``resamples`` flips could lie on either side of a threshold."""
    error = 4 * math.sqrt(max(p * (1 - p), 1 / resamples) / resamples)
    at = bisect.bisect_right(thresholds, p - error)  # thresholds are sorted (``power.holm_levels``)
    return at < len(thresholds) and thresholds[at] < p + error


def evaluate(statistics: list[Any], frame: pd.DataFrame, weights: Weights) -> list[np.ndarray]:
    """Each statistic under ``weights``."""
    return [statistic.weighted(frame, weights) for statistic in statistics]


def _coin_flips(rng: np.random.Generator, resamples: int, clusters: int) -> np.ndarray:
    """Resamples × clusters fair coins as 0.0 / 1.0, eight from each random byte."""
    packed = rng.integers(0, 256, size=(resamples, (clusters + 7) // 8), dtype=np.uint8)
    return np.unpackbits(packed, axis=1, count=clusters).astype(float)


def _undefined(
    metric: TrackedMetric,
    statistic: Any,
    breakdown: str,
    before: float,
    after: float,
    items: int,
    clusters: int,
    note: str,
) -> PairedTest:
    """A part of ``metric`` with no p-value, under the name and direction its part is recorded with."""
    change = after - before if math.isfinite(before) and math.isfinite(after) else math.nan
    return PairedTest(
        metric.name_for(statistic),
        breakdown,
        before,
        after,
        change,
        None,
        math.nan,
        items,
        clusters,
        metric.higher_is_worse_for(statistic),
        metric.min_effect_for(statistic),
        metric.bounds_for(statistic),
        note,
    )


def with_min_effects(metrics: Sequence[TrackedMetric], overrides: Mapping[str, float]) -> list[TrackedMetric]:
    """The metrics with the minimum effects the settings give (by metric name: a metric's, or its groups' where
    they are recorded under another name), the declared ones otherwise."""
    out = []
    for m in metrics:
        if m.name in overrides:
            m = replace(m, min_effect=float(overrides[m.name]))
        if m.groups_name and m.groups_name in overrides:
            m = replace(m, groups_min_effect=float(overrides[m.groups_name]))
        out.append(m)
    return out
