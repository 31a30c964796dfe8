"""One verdict engine: a release is one decision, and each suite's part of it is final when it arrives.

A *release* is a model identity compared with its baseline (its previous run, or its predecessor's
evaluation). Its family-wise promise: the probability of *any* false regression alert over the whole release
— every suite, import, metric and group — is at most ``alpha``. The scheme (an α-spending plan, fixed before
any result arrives):

- ``ReleasePlan`` shares α among the suites a release can hold: every registered suite a weight (1 unless
  ``verdicts.shares`` says otherwise; none for a model that only arrives by import) and ``import_slots`` shares
  for imported suites outside the plan. A suite's *share* is α × its weight ÷ the plan's total weight: with the
  six bundled suites and two import slots α/8, and a seventh registered suite makes every share α/9 (for releases
  not yet begun: the plan is stored with the release's first decision, ``MetricHistory.record_decision``).
- **The look's α** (``ReleasePlan.look``) is the one level a decision is taken at: the suite's share ÷ its scopes
  (``verdicts.scopes``: BorderLines' revisions; 1 for every other suite) × 80 % for the scope's *first look*, or
  × 20 % (``verdicts.reserve``) for its *reserve*. Which look a decision takes, and whether any α is left for it,
  is ``ReleasePlan.take_look``'s (the release-order pair's first look; the reserve for a provisional baseline,
  ``release.provisional``).
- When a suite's evaluation is compared with its baseline, its comparisons (metrics × groups) are decided
  together by Holm's step-down procedure at the look's α, on *one-sided* p-values toward worse: the
  claim a regression alert makes. Nothing another suite does later changes that decision, so the decision
  is final, whatever the order and the days the suites arrive on; by the union bound the release's
  family-wise error rate is at most the sum of its looks' α, ≤ α.

This docstring and docs/monitoring.md's "One release, one decision" are the scheme's two descriptions; every
other place names the look's α and points here.

``regression``: Holm-significant worsening at least the metric's minimum effect (pages); ``regression (below
alert threshold)``: Holm-significant but smaller (shown); ``disparity widened``: a gap between groups (a
range, a difference, an impact ratio) Holm-significantly wider — decided in a family of the disparities
alone, shown and never paged, since a gap also widens when the best group improves (the groups' own tests
page when one gets worse); ``improvement``: Holm-significant one-sided toward
better at the same look's α (shown, never paged); ``watch``: a worsening Benjamini–Hochberg flags at ``q``
(shown, never paged); ``no detectable change`` with its minimum detectable effect at the test's first
Holm level and the stated power. ``insufficient sample`` (the one rule of ``stats.sufficiency``) and
``undefined`` (a NaN statistic) get no p-value in the family; a comparison where no cluster differs from the
baseline (``PairedTest.differing`` 0: p = 1 both ways, it cannot be significant) is ``no detectable change``
outside the family — a change of 0 among differing clusters stays in it, with its p-value — so a
suite's unchanged answer rates do not lower the level of the comparisons that could page (Tarone). Holm is
weighted, with weights fixed from what the sign-flip test conditions on (the pair's paired differences,
``power.paired_se``; ``power.paging_weights``): a comparison whose
planned power to find a worsening of its minimum effect is below the stated power at the level it would get is
*undecidable* and weighs ``undecidable_weight`` (0.25), the others 1, so hopeless comparisons cost the decidable
ones little of their level and still page a large worsening. An undecidable comparison keeps its verdict — a
regression still pages, saying it is underpowered — but any other verdict of it says ``not decidable at this
profile``: its silence is no evidence of no regression. A page claims a significant worsening *estimated* at least
the minimum effect: a true worsening of exactly the minimum effect pages at most half the time
(``power.page_probability``). What a test can see — the MDE, power, Holm's levels, the planned standard
error — is ``stats.power``'s.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, get_type_hints

import numpy as np

from geomon.stats import power, sufficiency
from geomon.stats.signflip import PairedTest
from geomon.stats.values import MetricKey

REGRESSION = "regression"
BELOW_THRESHOLD = "regression (below alert threshold)"
# Found by a look with no α left (its scope's looks, slots or share spent): shown, never paged.
REBASED = "regression (no α left)"
IMPROVEMENT = "improvement"
WIDENED = "disparity widened"
WATCH = "watch"
NO_CHANGE = "no detectable change"
INSUFFICIENT = "insufficient sample"
UNDEFINED = "undefined"
VERDICTS = (REGRESSION, BELOW_THRESHOLD, REBASED, WIDENED, IMPROVEMENT, WATCH, NO_CHANGE, INSUFFICIENT, UNDEFINED)


class Decidability(StrEnum):
    """What keeps a comparison's verdict from being read at face value, stored in its own column
    (``metric_comparisons.decidability``, as its text) so no surface parses it back from the note."""

    DECIDABLE = ""  # nothing: its verdict says what it says (an undefined one says so itself)
    UNDECIDABLE_SAMPLE = "not decidable at this sample"  # too few clusters, or a value outside its range: not tested
    UNDERPOWERED_PROFILE = "not decidable at this profile"  # its MDE above its minimum effect at the run's profile
    UNDERPOWERED_PUBLISHED = "underpowered as published"  # the same for an imported evaluation (the publisher's sample)
    UNDERPOWERED_REGRESSION = "regression paged underpowered"  # it pages, below the stated power at the minimum effect


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
    # p-values near a decision's threshold are computed again with this many flips; with at most
    # ``exact_up_to`` differing clusters every flip is enumerated (``signflip.Precision``).
    max_resamples: int = 99_999
    exact_up_to: int = 16
    # The release plan: suite name → weight in the α-sharing (registered suites default to 1; 0 takes a suite
    # out of the plan: its comparisons are shown, never paged), and the shares kept for imported suites that
    # geomon does not register (each such suite takes one).
    shares: dict[str, float] = field(default_factory=dict)
    import_slots: int = 2
    # Suite name → how many scopes it decides in one release (BorderLines: its revisions; the config fills it in):
    # its share is split evenly among them, and a scope beyond them is decided at α 0 (shown, never paged).
    scopes: dict[str, int] = field(default_factory=dict)
    # The part of each scope's α kept for one more look: a decision against a fallback baseline (a predecessor
    # evaluated on a later day than its successor: provisional). The first look belongs to the release-order pair.
    reserve: float = 0.2
    # A comparison its baseline's spread already calls undecidable (below ``power`` at its minimum effect, at the
    # level it would get) keeps this weight in a suite's weighted Holm, the others 1: it can still page a large
    # worsening, and costs the comparisons that can decide little of their level (``power.paging_weights``).
    undecidable_weight: float = 0.25
    # An imported item set sharing at least this part of the larger set's items with an earlier evaluation of the
    # suite is the same benchmark with items missing or added (``imports.same_benchmark``); each item of the
    # baseline's it lacks is compared as unanswered. Below it: a new series.
    min_overlap: float = 0.9
    min_effects: dict[str, float] = field(default_factory=dict)
    # Evaluations imported from elsewhere (``geomon import items`` / ``inspect``): accuracy in percent, a
    # raw score (0-1), and the gap between groups in the same units.
    imported_min_effects: dict[str, float] = field(
        default_factory=lambda: {"accuracy": 5.0, "score": 0.05, "gap": 5.0, "score_gap": 0.05, "answered_rate": 5.0}
    )

    def __post_init__(self) -> None:
        for name in ("alpha", "q", "power"):
            value = getattr(self, name)
            if not 0 < value < 1:
                raise ValueError(f"verdicts.{name}: {value} must lie strictly between 0 and 1")
        if self.resamples < 99:
            raise ValueError(f"verdicts.resamples: {self.resamples} is too few for a p-value (at least 99)")
        if self.max_resamples < self.resamples:
            raise ValueError(f"verdicts.max_resamples: {self.max_resamples} is below resamples ({self.resamples})")
        if not 0 <= self.exact_up_to <= 20:
            raise ValueError(f"verdicts.exact_up_to: {self.exact_up_to} must lie in 0..20 (2^20 flips at most)")
        if not 0 < self.reserve < 1:
            raise ValueError(f"verdicts.reserve: {self.reserve} must lie strictly between 0 and 1")
        if not 0 < self.min_overlap <= 1:
            raise ValueError(f"verdicts.min_overlap: {self.min_overlap} must lie in (0, 1]")
        if not 0 < self.undecidable_weight <= 1:
            raise ValueError(f"verdicts.undecidable_weight: {self.undecidable_weight} must lie in (0, 1]")
        for suite, count in self.scopes.items():
            if not (isinstance(count, int) and count >= 1):
                raise ValueError(f"verdicts.scopes.{suite}: {count!r} must be a whole number ≥ 1")
        if self.import_slots < 0:
            raise ValueError(f"verdicts.import_slots: {self.import_slots} must not be negative")
        for suite, weight in self.shares.items():
            if not (isinstance(weight, int | float) and math.isfinite(weight) and weight >= 0):
                raise ValueError(f"verdicts.shares.{suite}: {weight!r} must be a number ≥ 0")


class LookKind(StrEnum):
    """Which of a scope's looks in a release a decision is taken at (``ReleasePlan.look``)."""

    FIRST = "first"  # the release-order pair's
    RESERVE = "reserve"  # a decision against a fallback baseline (provisional: ``release.provisional``)
    SPENT = "spent"  # none: no α left (its scope's looks, the import slots or the suite's share spent)


@dataclass(frozen=True)
class Look:
    """One look a release took at a suite's scope: the pair it belongs to (the evaluation and its baseline), its
    kind, its α, and why that α is 0 (``SPENT``; "" otherwise). ``id``: its stored row (None: not stored yet)."""

    suite: str
    scope: str
    evaluation_id: str
    against_evaluation_id: str
    kind: LookKind
    alpha: float
    why: str = ""
    id: int | None = None

    @property
    def pair(self) -> tuple[str, str]:
        return self.evaluation_id, self.against_evaluation_id


@dataclass(frozen=True)
class ReleasePlan:
    """How a release's α is shared among its suites, scopes and looks, fixed by its first decision and stored with
    it (module docstring)."""

    alpha: float
    weights: Mapping[str, float]  # every planned suite's weight
    import_slots: int = 2
    scopes: Mapping[str, int] = field(default_factory=dict)  # a suite's scopes per release (1 when not named)
    reserve: float = 0.2  # the part of a scope's α kept for its second look

    @classmethod
    def of(cls, settings: VerdictSettings, registered: Sequence[str], hosted: bool = True) -> ReleasePlan:
        """The plan of a release: every registered suite a weight of 1 when geomon runs the model (``hosted``);
        for a model that only arrives by import, none — the suites that never run for it reserve nothing, so
        its imports share α between ``verdicts.shares`` and the import slots. ``verdicts.shares`` wins."""
        planned = {name: 1.0 for name in registered} if hosted else {}
        weights = planned | {k: float(v) for k, v in settings.shares.items()}
        return cls(settings.alpha, weights, settings.import_slots, dict(settings.scopes), settings.reserve)

    @property
    def total(self) -> float:
        return sum(self.weights.values()) + self.import_slots

    def share(self, suite: str) -> float:
        """The α this suite's comparisons are decided at over all its scopes and looks: its weight's part of the
        release's α; a suite outside the plan takes one import slot (0 when the plan keeps none)."""
        weight = self.weights.get(suite, 1.0 if self.import_slots else 0.0)
        return self.alpha * weight / self.total if self.total > 0 else 0.0

    def look(self, suite: str, kind: LookKind = LookKind.FIRST) -> float:
        """The α of one look at one of the suite's scopes: its share split evenly among its scopes, then between
        the first look and the reserve."""
        part = self.reserve if kind == LookKind.RESERVE else 1.0 - self.reserve if kind == LookKind.FIRST else 0.0
        return self.share(suite) / self.scopes.get(suite, 1) * part

    def take_look(
        self, looks: Sequence[Look], suite: str, scope: str, pair: tuple[str, str], provisional: bool
    ) -> Look:
        """The look a decision of ``pair`` (an evaluation, its baseline) takes in a release that took ``looks``
        (stored, in the order taken), pure: in its scope, **the first look belongs to the release-order pair** and
        the reserve to a pair against a fallback baseline (``provisional``). A look is a property of the pair,
        never of the arrival: deciding the same pair again takes the look it took; when another pair holds the
        look of its kind (an earlier-dated evaluation arrived: the release-order pair changed), the look moves to
        this pair (its stored row, its α counted once). A scope, slot or share with no α left is ``SPENT`` (α 0),
        saying why. Never more than the release's α in all."""
        mine = [look for look in looks if (look.suite, look.scope) == (suite, scope)]
        again = [look for look in mine if look.pair == pair]
        if again:
            return again[0]
        kind = LookKind.RESERVE if provisional else LookKind.FIRST
        held = [look for look in mine if look.kind == kind]
        if held:  # the pair that held it is no longer the release order's: the look moves, nothing is spent
            return replace(held[0], evaluation_id=pair[0], against_evaluation_id=pair[1])
        if why := self._no_alpha(looks, suite, scope):
            return Look(suite, scope, *pair, LookKind.SPENT, 0.0, why)
        return Look(suite, scope, *pair, kind, self.look(suite, kind))

    def _no_alpha(self, looks: Sequence[Look], suite: str, scope: str) -> str:
        """Why ``suite``'s ``scope`` has no α left after ``looks`` (its weight is 0; no import slot or scope
        left), or ""."""
        holding = [look for look in looks if look.kind != LookKind.SPENT]
        if suite in self.weights and self.share(suite) == 0:
            return "α 0: its weight in verdicts.shares is 0"
        if suite not in self.weights:
            if not self.import_slots:
                return "α 0: not in the release plan, which keeps no import slots"
            holders = list(dict.fromkeys(look.suite for look in holding if look.suite not in self.weights))
            if suite not in holders and len(holders) >= self.import_slots:
                return (
                    f"no α left: the release's {self.import_slots} import slot(s) are taken by {', '.join(holders)} "
                    "(in the order they arrived): name this suite in verdicts.shares to page on it"
                )
        scopes = list(dict.fromkeys(look.scope for look in holding if look.suite == suite))
        planned = self.scopes.get(suite, 1)
        if scope not in scopes and len(scopes) >= planned:
            return (
                f"no α left: suite {suite}'s share covers {planned} scope(s) per release, taken by "
                f"{', '.join(scopes)}: raise verdicts.scopes.{suite} to page on more"
            )
        return ""

    def describe(self) -> str:
        planned = ", ".join(f"{name} {self.share(name):.4g}" for name in sorted(self.weights))
        slots = f"; {self.import_slots} import slot(s) of {self.alpha / self.total:.4g}" if self.import_slots else ""
        split = "".join(f"; {name} over {n} scopes" for name, n in sorted(self.scopes.items()) if n > 1)
        reserve = f"; each scope's first look {1 - self.reserve:.0%} of it, a reserve of {self.reserve:.0%}"
        return f"α {self.alpha:g} per release: {planned or 'no planned suite'}{slots}{split}{reserve}"

    def to_json(self) -> str:
        return json.dumps(
            {"alpha": self.alpha, "weights": dict(self.weights), "import_slots": self.import_slots,
             "scopes": dict(self.scopes), "reserve": self.reserve},
            sort_keys=True,
        )  # fmt: skip

    @classmethod
    def from_json(cls, text: str) -> ReleasePlan:
        return cls(**json.loads(text))


def _text(chars: int) -> Any:
    """A text field of ``Comparison``: stored in a column of ``chars`` characters ("" where none)."""
    return field(default="", metadata={"chars": chars})


@dataclass(frozen=True)
class Comparison:
    """One comparison of an evaluation with its baseline and the verdict its family gave it — the one record of
    it: what ``decide`` returns, what ``metric_comparisons`` stores (its columns derive from these fields:
    ``monitor.history``), and what every surface reads (the alerts, the checks' text, the verdict tables). Numbers
    the database holds as NULL read as None (NaN where they came through a DataFrame)."""

    metric: str = field(metadata={"chars": 200})
    breakdown: str = _text(300)
    verdict: str = _text(40)  # one of ``VERDICTS``
    decidability: Decidability = field(default=Decidability.DECIDABLE, metadata={"chars": 40})
    note: str = _text(500)  # why the verdict is what it is (never the look: ``look``, ``alpha_zero``)
    against: str = _text(300)  # "previous run" or "predecessor <model>"
    release: str = _text(400)  # ``Evaluation.release_against``: "<model> vs <baseline model>", or a re-run's own
    evaluation_id: str = _text(36)
    against_evaluation_id: str = _text(36)
    before: float | None = None
    after: float | None = None
    change: float | None = None  # after − before, in the metric's own units
    worse_when: str = _text(10)  # "higher" or "lower"
    se: float | None = None  # the change's standard error under no change (the sign-flip null)
    # One-sided in the direction the metric moved (toward worse when it did not move): the verdict's claim.
    p_value: float | None = None
    p_adjusted: float | None = None  # Holm over the suite's comparisons, in that direction
    q_value: float | None = None  # Benjamini–Hochberg, over the suite's comparisons
    mde: float | None = None  # the smallest worsening detected with the stated power at its first Holm level
    power: float | None = None  # the chance to detect a worsening of ``min_effect`` (at its first Holm level)
    level: float | None = None  # its first Holm level, α × its weight ÷ the family's total weight
    min_effect: float | None = None
    alpha: float | None = None  # the look's α it was decided at (``ReleasePlan.look``), Holm's to spend
    items: int | None = None
    clusters: int | None = None
    family_size: int | None = None  # the comparisons Holm decided together
    missing: int | None = None  # the baseline's items the evaluation lacks (compared as unanswered)
    look: str = _text(20)  # the ``LookKind`` it was decided at ("": decided before looks were kept)
    alpha_zero: str = _text(500)  # why that look had no α (``LookKind.SPENT``: shown, never paged); "" otherwise
    # Its evaluation's, where a reader joined them (``views.open_regressions``): not stored with the comparison.
    evaluated_at: datetime | None = field(default=None, metadata={"stored": False})
    origin: str = field(default="", metadata={"stored": False})

    @property
    def key(self) -> MetricKey:
        return MetricKey(self.metric, self.breakdown)

    @property
    def alerts(self) -> bool:
        return self.verdict == REGRESSION

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> Comparison:
        """A stored row (``MetricHistory.comparisons``' records, or some of its columns): the fields it names, the
        others their defaults; text read NULL as ""; a count read as a float (a column pandas widened because
        another row of the same read holds NULL) as an int, NaN as None."""
        given = {name: value for name, value in row.items() if name in FIELD_TYPES}
        text = {name: str(given[name] or "") for name in given if FIELD_TYPES[name] is str}
        counts = {
            name: None if value is None or value != value else int(value)
            for name, value in given.items()
            if FIELD_TYPES[name] == int | None
        }
        decidability = {"decidability": Decidability(given["decidability"] or "")} if "decidability" in given else {}
        return cls(**(given | text | counts | decidability))


FIELD_TYPES = get_type_hints(Comparison)
STORED = [f for f in fields(Comparison) if f.metadata.get("stored", True)]  # its columns (``monitor.history``)


UNDERPOWERED_PAGE = "paged by an underpowered comparison"
UNCHANGED_NOTE = "no cluster differs from the baseline: left out of the Holm family (it cannot be significant)"


def holm(p_values: Sequence[float], weights: Sequence[float] | None = None) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error control under any dependence); with ``weights`` (fixed
    before the data), the weighted Holm: a comparison's p-value is divided by its weight and each step compares it
    with α over the weight still in the family, so a comparison of weight w is first tested at α·w/Σw."""
    p = np.asarray(p_values, dtype=float)
    m = p.size
    if m == 0:
        return p
    w = np.ones(m) if weights is None else np.asarray(weights, dtype=float)
    order = np.argsort(p / w, kind="stable")
    remaining = np.cumsum(w[order][::-1])[::-1]  # the weight still in the family at each step
    stepped = np.maximum.accumulate(remaining * p[order] / w[order])
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out


def benjamini_hochberg(p_values: Sequence[float]) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (q-values): false discovery rate control."""
    from scipy import stats

    p = np.asarray(p_values, dtype=float)
    return stats.false_discovery_control(p, method="bh") if p.size else p


def decide(
    tests: Sequence[PairedTest],
    settings: VerdictSettings,
    alpha: float | None = None,
    min_sample: int = sufficiency.MIN_SAMPLE,
    profiled: bool = True,
) -> list[Comparison]:
    """One suite's comparisons of one evaluation, decided together at ``alpha`` (the look's α, ``ReleasePlan.look``;
    the settings' whole α when None), in the order of ``tests``. ``profiled``: the sample was a geomon run
    profile's (False for an imported evaluation: its sample was the publisher's, and no profile or plan of
    geomon's could have changed it, so its notes say so instead of pointing at ``geomon plan``)."""
    alpha = settings.alpha if alpha is None else alpha
    notes = []
    for t in tests:
        if t.p_value is None:
            notes.append((UNDEFINED, t.note or "undefined"))
            continue
        why = sufficiency.reasons(t.after, n=t.clusters, bounds=t.bounds, min_sample=min_sample)
        # Never decided either way: the sample (the run profile's size) cannot carry a claim about this comparison.
        hint = "; `geomon plan --detect`" if profiled else ""
        blind = f"{sufficiency.SAMPLE_PREFIX} ({why.removeprefix(sufficiency.PREFIX)}{hint})"
        notes.append((INSUFFICIENT, blind) if why else ("", ""))
    # No cluster differs from the baseline: the sign-flip null is one point, p = 1 both ways, so the comparison
    # cannot be significant at any level. Given the clusters' absolute differences (what the sign-flip test
    # conditions on) that is known before the test: leaving it out of Holm's count spends nothing (Tarone). A change
    # of 0 where clusters differ is an outcome, never a reason: it stays, with its p-value.
    for i, t in enumerate(tests):
        if not notes[i][0] and t.differing == 0 and not t.disparity:
            notes[i] = (NO_CHANGE, UNCHANGED_NOTE)
    testable = [i for i, (kind, _) in enumerate(notes) if not kind]
    # Two families at the same α: what can page (a metric, a group), and the disparities between groups (shown
    # only: a gap widens when the best group improves; the groups' own tests are what page).
    paging = [i for i in testable if not tests[i].disparity]
    between = [i for i in testable if tests[i].disparity]
    # The plan, before the data: each comparison that could page weighs 1 where the pair's spread says it can
    # decide, else ``undecidable_weight``; its MDE and power are stated at its first level, α·weight / the family's
    # total weight — the level Holm tests it at. An unchanged one (outside the family) states the level it would get
    # joining it.
    unchanged = [i for i, (_, note) in enumerate(notes) if note == UNCHANGED_NOTE]
    ratios = [power.planned_ratio(tests[i]) for i in paging]
    planned_weights, levels = power.first_levels(ratios, alpha, settings.power, settings.undecidable_weight)
    weights = dict(zip(paging, planned_weights, strict=True))
    first_levels = dict(zip(paging, levels, strict=True))
    for i in unchanged:
        joined = power.first_levels(
            [*ratios, power.planned_ratio(tests[i])], alpha, settings.power, settings.undecidable_weight
        )
        first_levels[i] = joined[1][-1]
    # The disparities: unweighted, shown only.
    first_levels.update({i: power.first_level(alpha, 1.0, len(between)) for i in between})
    adjusted, improved, q_values = {}, {}, {}
    for family in (paging, between):
        worse_p = [tests[i].p_value for i in family]
        better_p = [1.0 if tests[i].p_better is None else tests[i].p_better for i in family]
        weight = [weights.get(i, 1.0) for i in family]
        adjusted.update(zip(family, holm(worse_p, weight), strict=True))
        improved.update(zip(family, holm(better_p, weight), strict=True))
        q_values.update(zip(family, benjamini_hochberg(worse_p), strict=True))
    m = len(paging)
    out = []
    for i, t in enumerate(tests):
        kind, note = notes[i]
        p_adj, q = adjusted.get(i), q_values.get(i)
        if kind:
            verdict = kind
        elif p_adj < alpha and t.worse and t.disparity:
            verdict = WIDENED
        elif p_adj < alpha and t.worse:
            verdict = REGRESSION if abs(t.change) >= t.min_effect else BELOW_THRESHOLD
        elif improved.get(i, 1.0) < alpha and t.change != 0 and not t.worse:
            verdict = IMPROVEMENT
        elif q is not None and q < settings.q and t.worse:
            verdict = WATCH
        else:
            verdict = NO_CHANGE
        # What is shown is the claim the verdict makes: toward worse, or toward better for a change for the better.
        better = not kind and t.change != 0 and not t.worse
        shown_p = t.p_better if better else t.p_value
        shown_adjusted = improved.get(i) if better else p_adj
        planned = power.stated_se(t)
        level = first_levels.get(i, alpha)
        mde = power.minimum_detectable_effect(planned, level, settings.power)
        chance = power.power_at(t.min_effect, planned, level) if t.min_effect > 0 else math.nan
        # An unchanged comparison states its MDE like any other: no cluster moved in this sample, but a test that
        # could not have seen its minimum effect does not make "no change" a claim about the model.
        weak = sufficiency.underpowered(mde, t.min_effect) if kind in ("", NO_CHANGE) and verdict != REGRESSION else ""
        decidability = Decidability.UNDECIDABLE_SAMPLE if kind == INSUFFICIENT else Decidability.DECIDABLE
        if verdict == REGRESSION and chance < settings.power:
            decidability = Decidability.UNDERPOWERED_REGRESSION
            # It pages (its false-alarm control holds), but it says how little a test this weak could see.
            note = "; ".join(
                n for n in (f"{UNDERPOWERED_PAGE} ({chance:.0%} power at the minimum effect)", t.note) if n
            )
        if weak:
            # The verdict stands (the false-alarm control does not rest on power), but a test this weak misses
            # most regressions worth paging: its silence is no evidence of none.
            decidability = Decidability.UNDERPOWERED_PROFILE if profiled else Decidability.UNDERPOWERED_PUBLISHED
            weak = (
                f"{sufficiency.PROFILE_PREFIX}{weak} (`geomon plan --detect`)"
                if profiled
                else sufficiency.PUBLISHED_PREFIX + weak
            )
            note = "; ".join(n for n in (weak, note or t.note) if n)
        out.append(
            Comparison(
                metric=t.metric,
                breakdown=t.breakdown,
                before=t.before,
                after=t.after,
                change=t.change,
                worse_when="higher" if t.higher_is_worse else "lower",
                p_value=shown_p,
                p_adjusted=None if shown_adjusted is None else float(shown_adjusted),
                q_value=None if q is None else float(q),
                mde=mde,
                items=t.items,
                clusters=t.clusters,
                min_effect=t.min_effect,
                family_size=len(between) if t.disparity else m,
                verdict=verdict,
                note=note,
                alpha=alpha,
                power=chance,
                level=level,
                decidability=decidability,
            )
        )
    return out


# The terse verdicts in words, where a summary stands alone (a partition's metadata, without the table's legend).
MEANINGS = {
    WATCH: "significant before Holm's correction only: worth a look, never paged",
    UNDEFINED: "its statistic cannot be computed on a side: not tested",
}


def summary(verdicts: Sequence[Any], explained: bool = False) -> str:
    """``2 regressions, 1 watch, 12 no detectable change`` (the counts, worst first): of ``Comparison`` records
    (anything with a ``verdict``) or of their stored rows. ``explained``: each terse verdict present
    said in words after them (``…; watch: significant before Holm's correction only …``)."""
    names = [v["verdict"] if isinstance(v, Mapping) else v.verdict for v in verdicts]
    counts = [(k, names.count(k)) for k in VERDICTS if names.count(k)]
    said = ", ".join(f"{n} {k}" for k, n in counts) or "nothing compared"
    meanings = [f"{k}: {MEANINGS[k]}" for k, _ in counts if explained and k in MEANINGS]
    return "; ".join([said, *meanings])
