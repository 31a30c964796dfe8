"""How far the alerts can be trusted, measured on the path production takes: what a webhook receives.

Every release is a predecessor ``m<r>-old`` and its successor ``m<r>-new`` (whose predecessor it names). Each
suite's evaluation of each model is recorded with ``geomon.monitor.release.track`` — what ``geomon run``
calls — with the release plan built once (``release.release_plan``: every suite decided at its look's
α), in a SQLite metric history (one file per worker job; model names are unique per release), and with the
announcer ``geomon run`` uses (``announce.announcer``) pointed at a loopback webhook (json style). The
evaluations arrive as they do in production: the release's suites in shuffled order, dated across midnight
(each evaluation at day D 23:50 or D+1 00:10), and in about a third of the releases the predecessor's
evaluations are recorded after the successor's (the engine then decides the successor again when its
baseline arrives, and must deliver then). What is counted is what the webhook received: a release is a
false alarm when the webhook received a ``regression`` message about its successor.

- Registered suites, null (a): both models' per-item outcomes are independent re-draws from the same
  per-item rates, at ``geomon run``'s default sample sizes (each suite's ``default`` profile) and at the
  paper's (``SIZES``); each suite's production declarations (``registry.suite(name).tracked``) are tested. The
  draws are answers (graded, scored, featured) that each suite's own ``items()`` turns into its tracked rows — what its
  Dagster step records — so a column a new declaration needs is made there, not here (BorderLines' two-level
  rows are built here: its ``items()`` needs the disputes table).
- A whole release on several scopes: the six suites, BorderLines on three scopes (``borderlines.revisions``'s
  three revisions), then two imported suites; each tier prints the α its decisions were taken at, summed over
  the successor's evaluations (suite × scope), beside the release's α.
- Two predecessor evaluations late: every unit's successor recorded first, then the predecessor dated with it
  (after it in release order: the successor's fallback baseline), then the predecessor dated the day before
  (the release-order baseline: the successor is decided again).
- BorderLines and Gapminder, clustered null: in every draw each territory's rates (its queries' in every
  language included) and each question's correct rate (shared by its prompt families) are shifted by a shock
  of their log-odds, drawn afresh for each model. The same draws are recorded as declared and again with
  every declaration clustered on ``item`` (each row its own unit); beside the alerts, each headline
  comparison's mean squared z (change / standard error, about 1 when the standard error is right) shows
  which tests the clustering protects.
- Imported suites (three suites geomon does not register, each taking an import slot), written as per-item
  CSV files (a question answered in several prompt variations, one row each, a language group) and
  recorded suite by suite with ``imports.item_runs(..., cluster="question")`` and ``imports.record_runs`` —
  what ``geomon import items --cluster question`` calls. Null (a): independent re-draws; null (b), a
  clustered null: in every draw each question's rate is shifted by a shock shared by its variations (drawn
  afresh for each model). The same files are imported again without a cluster (each row its own unit, the
  question ignored): under (b) that test is too confident and should alarm more — the bench can tell a
  clustered test from an unclustered one.
- Imported only: a model whose release is one imported suite (10 countries × 40 questions × 2 variations,
  ``--group country --cluster question``), null, and with one country 35 points worse (the expected change
  after clipping at 0).
- Planted at the minimum effect: BLEnD alone at the default size, every local answer made worse so that the
  expected change of its headline ``sem_b_local`` is its declared minimum effect (the drop before clipping at
  0 solved for it), in the usual schedule and with two predecessor evaluations late. The measured power (the
  share of releases whose webhook received a regression naming the planted comparison) is set beside the
  chance of a page the verdict claims — significant and estimated at least the minimum effect, what a regression
  alert requires: ``page_chance(change, MDE / (z(1 − L) + z(power)), L, min effect)`` at its first (weighted) Holm
  level L
  (the planned standard error the MDE was built from, not the new data's null one; ½ at exactly the minimum
  effect, as the alert says) — and the stated power at the minimum effect.
- Gapminder's real per-question correct rates (its published grades), a model against re-draws of itself
  (only the gapminder suite in the release), when the reference table is there.

Each rate is printed as k/n with its one-sided 95 % Clopper–Pearson upper bound (power: a two-sided 95 %
interval), and every tier also counts what would show a broken delivery path: regressions stored for the
successor that the webhook did not receive (or the reverse), alerts about predecessors and ``resolved``
messages. A null tier whose decisions were taken at more than α in all, or whose alarm rate's lower bound is
above α, prints ``PROMISE FAILS``; a planted tier whose measured power's upper bound is below the claimed
power prints ``POWER BELOW CLAIM``.

    .venv/bin/python bench/alert_calibration.py [--quick] [--releases 200] [--paper 20] [--scopes 100]
        [--late 60] [--planted 100] [--imported 60] [--imported-only 100] [--clustered 60] [--real 100]
        [--workers 2] [--seed 0]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from geomon.monitor import announce, imports, release
from geomon.monitor.alerts import AlertSettings
from geomon.monitor.history import EvaluationRun, MetricHistory
from geomon.stats import power, verdicts
from geomon.suites import blend, gapminder, quench, registry, saged, worldbench

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the loopback webhook of the tests
    sys.path.insert(0, str(ROOT))
from geomon_tests.loopback import Webhook, serve  # noqa: E402

SHARED = ROOT.parent / "shared"
SELF, CHILDREN = resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN
Items = Callable[[np.random.Generator, dict], pd.DataFrame]

# The option each suite's run profiles size its sample with, in the units its model below takes: countries,
# territories, questions, questions, root prompts, questions per country.
SAMPLE_OPTION = {
    "worldbench": "sample_countries",
    "borderlines": "sample_territories",
    "gapminder": "sample_questions",
    "quench": "sample_questions",
    "saged": "sample_prompts",
    "blend": "sample_questions",
}
# Each suite's sample at `geomon run`'s default (read from the suite's own `default` profile) and at the
# paper's full size (items per release).
SIZES = {
    "default": {s: int(registry.suites()[s].profiles["default"][option]) for s, option in SAMPLE_OPTION.items()},
    "paper": {"worldbench": 190, "borderlines": 251, "gapminder": 365, "quench": 400, "saged": 38, "blend": 500},
}
INDICATORS = 11  # WorldBench indicators asked per country
REGIONS = [f"region{i}" for i in range(7)]
INCOMES = ["low", "lower middle", "upper middle", "high"]
BLEND_COUNTRIES = [f"c{i:02d}" for i in range(16)]
CONCEPTS = [f"country{i:02d}" for i in range(21)]

WEBHOOK_ENV = "GEOMON_CALIBRATION_WEBHOOK_URL"  # the loopback webhook's URL, set in each worker job
ALERTS = AlertSettings(webhook_url_env=WEBHOOK_ENV, webhook_style="json")
SCOPE = "calibration"
ORIGIN = "calibration"
DAYS = (datetime(2025, 3, 1, 23, 50, tzinfo=UTC), datetime(2025, 3, 2, 0, 10, tzinfo=UTC))  # across midnight
LATE_SHARE = 1 / 3  # releases whose predecessor's evaluations are recorded after the successor's
PLANTED_METRIC = "sem_b_local"  # BLEnD's headline, planted worse by its declared minimum effect
# The imported-only releases: one suite no module registers, COUNTRIES countries of COUNTRY_QUESTIONS questions
# asked in two variations each (``--group country --cluster question``); planted: one country COUNTRY_DROP points
# worse.
COUNTRY_SUITE = "imported_countries"
COUNTRIES, COUNTRY_QUESTIONS, COUNTRY_DROP = 10, 40, 35.0
IMPORTED = ("imported_a", "imported_b", "imported_c")  # suites no module registers: each takes an import slot
QUESTIONS, VARIATIONS = 80, 6  # per imported suite: questions, each asked in this many prompt variations
LANGUAGES = ("en", "local")  # the imported suites' group column (a gap and each language's accuracy)
SHOCK = 1.5  # the clustered null: sd of a question's shared shift of its log-odds, drawn afresh per draw
CLUSTERED = ("borderlines", "gapminder")  # the registered suites whose draws take a shared per-cluster shock
# Their clustered null's shock: larger than the imports' since a territory has only four queries (a question's
# families share a question row already), so a smaller shared shock is hard to tell from none.
REGISTERED_SHOCK = 3.0
DECLARED = "declared"  # a suite's metrics clustered as its declarations say (`tracked`)


# --- per-item rates ("the model") and re-draws of them, in each suite's items format ------------------------
# A model holds its fixed columns (names, groups, clusters) and its per-item rates; a draw adds the outcomes.


def worldbench_model(rng, n):
    fixed = pd.DataFrame(
        {"item": [f"C{i}" for i in range(n)], "region": rng.choice(REGIONS, n), "income_group": rng.choice(INCOMES, n)}
    )
    return {"fixed": fixed, "error": rng.beta(2, 3, n), "answer_rate": rng.beta(30, 1.5, n)}


def worldbench_draw(rng, m):
    """Eleven indicators asked per country, some not answered, each answered one with its error: the scores
    ``worldbench.items`` turns into the suite's tracked rows."""
    e, countries = m["error"], m["fixed"].shape[0]
    answered = rng.binomial(INDICATORS, m["answer_rate"])
    asked = np.arange(INDICATORS)[:, None] < answered  # indicators × countries
    errors = rng.beta(e * 8 + 0.1, (1 - e) * 8 + 0.1, (INDICATORS, countries))
    scores = pd.DataFrame(
        {
            "iso3": np.tile(m["fixed"]["item"].to_numpy(), INDICATORS),
            "region": np.tile(m["fixed"]["region"].to_numpy(), INDICATORS),
            "income_group": np.tile(m["fixed"]["income_group"].to_numpy(), INDICATORS),
            "error": np.where(asked, errors, np.nan).ravel(),
            "status": np.where(asked, "answered", "unanswered").ravel(),
        }
    )
    return worldbench.items(scores)


BORDERLINES_LANGUAGES = ("es", "fr", "zh", "ru", "ar", "hi")
BORDERLINES_REGIONS = ("Africa", "Asia", "Europe", "Americas")
PROBABILITY_NOISE = 0.5  # a draw's jitter of the log-odds of a probability on the controller (a run's own)


def borderlines_model(rng, n):
    """Per territory its four values' rates and its region; per query (its three claimants' languages and English)
    its rate of naming the controller and of being answered; and the log-odds of the probability rank
    classification puts on the controller, per territory (English) and per query: the suite's two levels of
    tracked rows."""
    territories = pd.DataFrame(
        {
            "item": [f"T{i}" for i in range(n)],
            "territory": [f"T{i}" for i in range(n)],
            "region": [BORDERLINES_REGIONS[i % len(BORDERLINES_REGIONS)] for i in range(n)],
        }
    )
    queries = [
        {"item": f"T{i}|{lang}", "territory": f"T{i}", "lang": lang, "claimant": lang != "en"}
        for i in range(n)
        for lang in (*rng.choice(BORDERLINES_LANGUAGES, 3, replace=False), "en")
    ]
    queries = pd.DataFrame(queries)
    return {
        "fixed": territories,
        "queries": queries,
        "territory_of_query": np.repeat(np.arange(n), 4),
        "p": rng.beta(4, 2, (4, n)),
        "concurs": rng.beta(4, 2, len(queries)),
        "answers": rng.beta(30, 1.5, len(queries)),
        "kb_logit": rng.normal(0.3, 1.5, n),
        "concurs_logit": rng.normal(0.3, 1.5, len(queries)),
    }


def shifted(p: np.ndarray, shift: np.ndarray | float) -> np.ndarray:
    """Rates ``p`` with their log-odds moved by ``shift``."""
    return special.expit(special.logit(p) + shift)


def borderlines_draw(rng, m, shock: float = 0.0):
    """With ``shock``, every rate of a territory (its values' and its queries') moved in this draw by a normal
    shock of its log-odds that they share: the territory is the cluster."""
    territory = rng.normal(0, shock, m["fixed"].shape[0]) if shock else np.zeros(m["fixed"].shape[0])
    kb, con, non, cst = shifted(m["p"], territory)
    territories = m["fixed"].assign(
        kb=rng.binomial(1, kb).astype(float),
        con=rng.binomial(1, con).astype(float),
        non=rng.binomial(3, non) / 3,  # three other claimants
        cst=rng.binomial(3, cst) / 3,
        kb_p=special.expit(m["kb_logit"] + territory + rng.normal(0, PROBABILITY_NOISE, territory.size)),
    )
    query = territory[m["territory_of_query"]]
    answered = rng.binomial(1, shifted(m["answers"], query)).astype(float)
    concurs = np.where(answered > 0, rng.binomial(1, shifted(m["concurs"], query)), 0.0)
    concurs_p = special.expit(m["concurs_logit"] + query + rng.normal(0, PROBABILITY_NOISE, query.size))
    claimant = m["queries"]["claimant"]
    queries = m["queries"].assign(
        answered=answered,
        concurs=np.where(claimant, concurs, np.nan),
        concurs_p=np.where(claimant, concurs_p, np.nan),
    )
    return pd.concat([territories, queries.drop(columns="claimant")], ignore_index=True)


GAPMINDER_FAMILIES = ("plain", "persona", "expert", "short", "reasoning")


def gapminder_model(rng, n, rates=None):
    rates = np.asarray(rates) if rates is not None else rng.beta(3, 2, n)
    ids = [f"q{i}" for i in range(rates.size)]
    fixed = pd.DataFrame({"question_id": ids, "topic": [f"sdg{i % 17 + 1}" for i in range(rates.size)]})
    return {"fixed": fixed, "p": rates, "answers": 2}  # two answers in each of five prompt families


def gapminder_draw(rng, m, shock: float = 0.0):
    """Each question's answers graded family by family (``answers`` per prompt family): indecisive (no option
    read), else correct at the question's rate, else very wrong or wrong; ``gapminder.items`` turns the grades
    into the suite's tracked rows. With ``shock``, a question's correct rate moved in this draw by a normal
    shock of its log-odds that its families share: the question is the cluster."""
    questions, answers = m["p"].size, len(GAPMINDER_FAMILIES) * m["answers"]
    p = shifted(m["p"], rng.normal(0, shock, questions)) if shock else m["p"]
    draw = rng.random((answers, questions))
    correct = draw < 0.95 * p  # 5 % indecisive, then correct at p among the decisive
    very_wrong = (draw >= 0.95 * p) & (draw < 0.95 * p + 0.95 * (1 - p) * 0.3)
    other = np.where(draw > 0.95, "indecisive", "wrong")
    grade = np.where(correct, "correct", np.where(very_wrong, "very_wrong", other))
    graded = pd.DataFrame(
        {
            "model": "m",
            "question_id": np.tile(m["fixed"]["question_id"].to_numpy(), answers),
            "topic": np.tile(m["fixed"]["topic"].to_numpy(), answers),
            "family": np.repeat(np.repeat(GAPMINDER_FAMILIES, m["answers"]), questions),
            "grade": grade.ravel(),
        }
    )
    return gapminder.items(graded)


def quench_model(rng, n):
    entities = 2 * n  # two masked entities per question, half the questions Indic
    modes = [
        pd.DataFrame(
            {
                "item": [f"e{i}|{mode}" for i in range(entities)],
                "question_id": np.repeat(np.arange(n), 2).astype(str),
                "mode": mode,
                "indic": np.repeat(np.arange(n) < n / 2, 2),
                "questions": np.repeat(np.where(np.arange(n) < n / 2, "Indic", "non-Indic"), 2),
            }
        )
        for mode in ("normal", "cot")
    ]
    return {"fixed": pd.concat(modes, ignore_index=True), "p": np.tile(rng.beta(2, 2, entities), 2)}


def quench_draw(rng, m):
    """Each (entity, mode) prompt answered or not, an answered one scored by three judges: the scores
    ``quench.items`` turns into the suite's tracked rows."""
    answered = rng.binomial(1, 0.97, m["p"].size) > 0
    fixed = m["fixed"]
    scores = pd.DataFrame(
        {
            "prompt_id": fixed["item"],
            "question_id": fixed["question_id"],
            "mode": fixed["mode"],
            "indic": fixed["indic"],
            "correct_answer_score": np.where(answered, rng.binomial(3, m["p"]) / 3, np.nan),
            "status": np.where(answered, "answered", "unanswered"),
        }
    )
    return quench.items(scores)


def saged_model(rng, roots):
    root, concept = np.meshgrid(np.arange(roots), np.arange(len(CONCEPTS)), indexing="ij")
    fixed = pd.DataFrame(
        {
            "item": [f"r{r}|{CONCEPTS[c]}" for r, c in zip(root.ravel(), concept.ravel(), strict=True)],
            "concept": [CONCEPTS[c] for c in concept.ravel()],
            "role": "none",
            "root": [f"r{r}" for r in root.ravel()],
        }
    )
    return {"fixed": fixed, "mean": rng.normal(0.1, 0.15, roots * len(CONCEPTS))}


def saged_draw(rng, m):
    """Each response's calibrated sentiment (none when not answered): the features ``saged.items`` turns into
    the suite's tracked rows."""
    answered = rng.binomial(1, 0.97, m["mean"].size) > 0
    fixed = m["fixed"]
    features = pd.DataFrame(
        {
            "role": fixed["role"],
            "prompt_id": fixed["root"] + "|" + fixed["concept"],
            "concept": fixed["concept"],
            "sentiment_calibrated": m["mean"] + rng.normal(0, 0.1, m["mean"].size),
            "status": np.where(answered, "answered", "unanswered"),
        }
    )
    return saged.items(features)


def blend_model(rng, per_country):
    country = np.repeat(BLEND_COUNTRIES, per_country)
    modes = [
        pd.DataFrame(
            {
                "item": [f"{c}|{i}|{mode}" for i, c in enumerate(country)],
                "question_id": [str(i) for i in range(country.size)],
                "country": country,
                "mode": mode,
                "asked_in": "English" if mode == "english" else [f"language of {c}" for c in country],
            }
        )
        for mode in ("local", "english")
    ]
    return {"fixed": pd.concat(modes, ignore_index=True), "p": rng.beta(2, 3, 2 * country.size)}


BLEND_ANSWERED = 0.97  # the share of replies that answer (the rest are empty or hedge)


def blend_draw(rng, m, by: float = 0.0):
    """Each prompt answered or not (an unanswered reply scores 0, as the paper scores it), an answered one
    right (SEM-B 100) at its rate: the scores ``blend.items`` turns into the suite's tracked rows. ``by``: every
    local prompt that many points less likely right (clipped at 0)."""
    p, fixed = m["p"], m["fixed"]
    if by:
        p = np.where((fixed["mode"] == "local").to_numpy(), np.clip(p - by / 100, 0, 1), p)
    answered = rng.binomial(1, BLEND_ANSWERED, p.size) > 0
    scores = fixed.rename(columns={"item": "prompt_id"}).assign(
        sem_b=np.where(answered, rng.binomial(1, p) * 100.0, 0.0),
        status=np.where(answered, "answered", "unanswered"),
    )
    return blend.items(scores)


MODELS = {
    "worldbench": (worldbench_model, worldbench_draw),
    "borderlines": (borderlines_model, borderlines_draw),
    "gapminder": (gapminder_model, gapminder_draw),
    "quench": (quench_model, quench_draw),
    "saged": (saged_model, saged_draw),
    "blend": (blend_model, blend_draw),
}


def imported_model(
    rng: np.random.Generator,
    questions: int = QUESTIONS,
    variations: int = VARIATIONS,
    group: str = "language",
    labels: Callable[[int], str] = lambda q: LANGUAGES[q % 2],
) -> dict:
    """An imported suite's per-row rates: each question's log-odds, and a fixed offset per prompt variation;
    ``group`` the column a question's ``labels(q)`` goes in (its language, its country)."""
    question = np.repeat(np.arange(questions), variations)
    fixed = pd.DataFrame(
        {
            "item": [f"q{q}|v{v}" for q, v in zip(question, np.tile(np.arange(variations), questions), strict=True)],
            "question": [f"q{q}" for q in question],
            group: [labels(q) for q in question],
        }
    )
    logit = rng.normal(0.5, 1.2, questions)[question] + rng.normal(0, 0.3, question.size)
    return {"fixed": fixed, "question": question, "p": special.expit(logit), "questions": questions, "group": group}


def imported_draw(
    rng: np.random.Generator, m: dict, shock: float = 0.0, worse: tuple[str, float] | None = None
) -> pd.DataFrame:
    """Correct (1) or not per row; with ``shock``, each question's log-odds shifted in this draw by a normal
    shock its variations share (the clustered null); ``worse`` (label, points): that group's rows that many
    points less likely correct (clipped at 0)."""
    p = shifted(m["p"], rng.normal(0, shock, m["questions"])[m["question"]]) if shock else m["p"]
    if worse:
        hit = (m["fixed"][m["group"]] == worse[0]).to_numpy()
        p = np.where(hit, np.clip(p - worse[1] / 100, 0, 1), p)
    return m["fixed"].assign(correct=rng.binomial(1, p))


def country_model(rng: np.random.Generator, questions: int = COUNTRY_QUESTIONS) -> dict:
    """The imported-only suite: ``COUNTRIES`` countries of ``questions`` questions, each asked in two variations."""
    return imported_model(rng, COUNTRIES * questions, 2, "country", lambda q: f"k{q // questions:02d}")


# --- one release through the production path ----------------------------------------------------------------

# What one evaluation is of: (suite, scope). A suite evaluated on several scopes in one release (BorderLines'
# revisions) has one unit per scope.
Unit = tuple[str, str]


def units_of(suites: list[str], scopes: dict[str, int] | None = None) -> list[Unit]:
    """The release's units: each suite once, or on ``scopes[suite]`` scopes (revision 1, 2, …)."""
    scopes = scopes or {}
    out = []
    for suite in suites:
        count = scopes.get(suite, 1)
        out += [(suite, SCOPE if count == 1 else f"{SCOPE}|revision {k + 1}") for k in range(count)]
    return out


def schedule(
    rng: np.random.Generator, units: list[Unit], late_twice: bool = False
) -> tuple[bool, list[tuple[str, Unit]], dict]:
    """How a release's evaluations arrive: (late, [(role, unit)] in recording order, {(role, unit): date}).
    The evaluations in shuffled order; within each unit the predecessor's (``old``) first, except in a late
    release, where each unit's successor evaluation (``new``) is recorded before its predecessor's.
    ``late_twice``: every release late, the predecessor evaluated twice and both recorded after the successor:
    first ``old`` dated with the successor (after it in release order, so the successor's fallback baseline),
    then ``old2`` dated the day before (its release-order baseline: the successor is decided again)."""
    roles = ("new", "old", "old2") if late_twice else ("old", "new")
    late = late_twice or bool(rng.random() < LATE_SHARE)
    events = [(role, u) for role in roles for u in units]
    order = [events[i] for i in rng.permutation(len(events))]
    arrival = roles if not late or late_twice else ("new", "old")
    for unit in units:  # put each unit's evaluations in the release's order, keeping the positions shuffled
        places = sorted(k for k, e in enumerate(order) if e[1] == unit)
        for k, role in zip(places, arrival, strict=True):
            order[k] = (role, unit)
    if late_twice:
        when = {e: DAYS[0] if e[0] == "old2" else DAYS[1] for e in events}
    else:
        when = {e: DAYS[int(rng.integers(2))] for e in events}
    return late, order, when


@functools.cache
def tracked(suite: str, cluster: str = DECLARED) -> tuple:
    """The suite's production declarations (``registry.suite(suite).tracked``); with ``cluster`` a column, every
    declaration clustered on it instead (``item``: each row its own unit, the mutation the clustered null
    exposes)."""
    declared = tuple(registry.suite(suite).tracked)
    return declared if cluster == DECLARED else tuple(replace(m, cluster=cluster) for m in declared)


def min_effect(suite: str, metric: str) -> float:
    """A registered suite's declared minimum effect of ``metric``."""
    return next(m.min_effect for m in tracked(suite) if m.name == metric)


def names(r: int, prefix: str = "m") -> dict[str, str]:
    """Release ``r``'s models by role (``old2``: the predecessor's second evaluation)."""
    return {"old": f"{prefix}{r}-old", "old2": f"{prefix}{r}-old", "new": f"{prefix}{r}-new"}


def registered_draws(
    models: dict,
    units: list[Unit],
    rng: np.random.Generator,
    worse: float = 0.0,
    shock: float = 0.0,
    late_twice: bool = False,
) -> tuple[bool, list[tuple[str, Unit, pd.DataFrame, datetime]]]:
    """One release's evaluations, in the order they arrive: (late, [(role, unit, items, evaluated_at)]).
    ``worse``: the successor's BLEnD local answers made worse by that many points (before clipping at 0);
    ``shock``: the sd of the shared per-cluster shock of the suites whose draws take one (the clustered null)."""
    late, order, when = schedule(rng, units, late_twice)
    out = []
    for role, unit in order:
        suite = unit[0]
        if worse and suite == "blend" and role == "new":
            items = blend_draw(rng, models[suite], by=worse)
        else:
            items = MODELS[suite][1](rng, models[suite], **({"shock": shock} if shock else {}))
        out.append((role, unit, items, when[(role, unit)]))
    return late, out


def record_release(
    history: MetricHistory,
    r: int,
    evaluations: list[tuple[str, Unit, pd.DataFrame, datetime]],
    settings: verdicts.VerdictSettings,
    plan: verdicts.ReleasePlan,
    tell: release.Announcer,
    cluster: str = DECLARED,
) -> None:
    """Release ``r``'s evaluations recorded with ``release.track`` as ``geomon run`` records them (their
    metrics computed there from the declarations, clustered as ``tracked(suite, cluster)`` says)."""
    model = names(r)
    for role, (suite, scope), items, evaluated_at in evaluations:
        declared = tracked(suite, cluster)
        run = EvaluationRun(
            suite,
            model[role],
            scope=scope,
            predecessor=model["old"] if role == "new" else "",
            evaluated_at=evaluated_at,
            origin=ORIGIN,
        )
        figures = release.declared_figures(suite, declared, items)
        release.track(history, run, figures, items, declared, settings, plan=plan, announcer=tell)


def imported_files(
    r: int,
    models: dict,
    rng: np.random.Generator,
    shock: float,
    folder: Path,
    worse: tuple[str, float] | None = None,
) -> tuple:
    """Release ``r`` of the imported suites as per-item CSV files, one per suite and model (what a harness
    writes: model, item, question, the group column, evaluated_at, correct, predecessor); ``worse``: the
    successor's rows of one group made worse (``imported_draw``); returns (late, [(role, suite, path)] in the
    order they are imported)."""
    late, order, when = schedule(rng, [(s, "") for s in models])
    model = names(r)
    out = []
    for role, (suite, _) in order:
        m = models[suite]
        frame = imported_draw(rng, m, shock, worse if role == "new" else None).assign(
            model=model[role],
            evaluated_at=when[(role, (suite, ""))].strftime("%Y-%m-%dT%H:%M:%S"),
            predecessor=model["old"] if role == "new" else "",
        )
        path = folder / f"{suite}-{model[role]}.csv"
        columns = ["model", "item", "question", m["group"], "evaluated_at", "correct", "predecessor"]
        frame[columns].to_csv(path, index=False)
        out.append((role, suite, path, m["group"]))
    return late, out


def import_release(
    history: MetricHistory,
    files: list[tuple[str, str, Path, str]],
    settings: verdicts.VerdictSettings,
    plan: verdicts.ReleasePlan,
    tell: release.Announcer,
    cluster: str,
) -> None:
    """The files imported one by one, as ``geomon import items <file> --suite <suite> --group <group>
    [--cluster question]`` imports them."""
    for _, suite, path, group in files:
        runs = imports.item_runs(path, suite, [group], settings, cluster=cluster)
        imports.record_runs(history, runs, settings, plan=plan, announcer=tell)


# --- what the webhook received ------------------------------------------------------------------------------


@contextlib.contextmanager
def webhook() -> Iterator[list[dict]]:
    """A loopback webhook for the announcer (its URL in ``WEBHOOK_ENV`` while it runs); yields its posts."""
    state: dict[str, Any] = {"posts": []}
    before = os.environ.get(WEBHOOK_ENV)
    with serve(Webhook, state) as url:
        os.environ[WEBHOOK_ENV] = url
        try:
            yield state["posts"]
        finally:
            if before is None:
                os.environ.pop(WEBHOOK_ENV, None)
            else:
                os.environ[WEBHOOK_ENV] = before


def alerted(title: str) -> set[str]:
    """The comparisons a regression alert names (its title: ``suite: model regressed on a, b (x=y)``)."""
    return set(title.split(" regressed on ", 1)[-1].split(", "))


def outcome(
    history: MetricHistory, posts: list[dict], r: int, late: bool, target: tuple[str, str, str] | None = None
) -> dict:
    """What release ``r`` delivered (``posts``: the webhook's posts while it was recorded) beside what the
    history stored for it; ``target`` (suite, metric, breakdown): the planted comparison's numbers as its verdict
    states them."""
    model = names(r)
    bodies = [p["body"] for p in posts]
    alerts = [b for b in bodies if b["kind"] == "regression" and b["model"] == model["new"]]
    suite_of = history.evaluations(model=model["new"]).set_index("evaluation_id")["suite"]
    stored = history.comparisons(suite_of.index)
    stored = stored.assign(suite=suite_of.reindex(stored["evaluation_id"]).to_numpy())
    stored_suites = set(stored.loc[stored["verdict"] == verdicts.REGRESSION, "suite"])
    delivered = {b["suite"] for b in alerts}
    row = {
        "late": late,
        "alarm": bool(alerts),
        "suites": sorted(delivered),
        "titles": [b["title"] for b in alerts],
        "undelivered": len(stored_suites - delivered),
        "unstored": len(delivered - stored_suites),
        "about_old": sum(b["model"] == model["old"] for b in bodies),
        "resolved": sum(b["kind"] == "resolved" for b in bodies),
        "family_sizes": {s: int(g["family_size"].max()) for s, g in stored.groupby("suite")},
        # the α the successor's decisions were taken at: each evaluation (one per suite and scope) once
        "spent": float(stored.groupby("evaluation_id")["alpha"].max().sum()) if len(stored) else 0.0,
        "decisions": int(stored["evaluation_id"].nunique()),
        "z": headline_z(stored),
    }
    if target is not None:
        suite, metric, breakdown = target
        label = f"{metric} ({breakdown})" if breakdown else metric
        hit = stored[(stored["suite"] == suite) & (stored["metric"] == metric) & (stored["breakdown"] == breakdown)]
        t = hit.iloc[0]
        # The first level it was stated at (weighted Holm); an older history without it: the unweighted one.
        stored_level = t.get("level")
        unweighted = t["alpha"] / max(t["family_size"], 1)
        level = float(stored_level) if stored_level is not None and np.isfinite(stored_level) else unweighted
        row |= {
            "target_alerted": any(label in alerted(b["title"]) for b in alerts if b["suite"] == suite),
            "target_verdict": t["verdict"],
            # Holm-significant toward worse (estimated past the minimum effect or not): what the stated power claims
            "target_significant": t["verdict"] in (verdicts.REGRESSION, verdicts.BELOW_THRESHOLD, verdicts.REBASED),
            "target": {k: float(t[k]) for k in ("se", "family_size", "alpha", "change", "mde", "power", "min_effect")}
            | {"level": float(level), "planned_se": stated_se(float(t["mde"]), float(level))},
        }
    return row


def stated_se(mde: float, level: float, power: float = verdicts.VerdictSettings().power) -> float:
    """The standard error a stated MDE rests on: MDE = (z(1 − level) + z(power)) × se."""
    if not (np.isfinite(mde) and 0 < level < 1):
        return float("nan")
    return mde / float(stats.norm.ppf(1 - level) + stats.norm.ppf(power))


def headline_z(stored: pd.DataFrame) -> dict[tuple[str, str], float]:
    """Each headline comparison's change in standard errors, per (suite, metric) of the registered suites:
    under a null whose standard errors are right, its square averages about 1 over releases; a test that
    ignores a shared shock has too small standard errors and a larger average."""
    headline = [
        row.suite in SAMPLE_OPTION and row.breakdown in {m.breakdown for m in tracked(row.suite)} and row.se > 0
        for row in stored.itertuples()
    ]
    rows = stored[headline]
    return {(s, m): c / e for s, m, c, e in zip(rows["suite"], rows["metric"], rows["change"], rows["se"], strict=True)}


# --- worker jobs --------------------------------------------------------------------------------------------


def models_for(sizes: dict[str, int], seed: int) -> dict:
    """The model every release of a tier re-draws: the same in every worker (built from ``seed``)."""
    rng = np.random.default_rng(seed)
    return {s: MODELS[s][0](rng, n) for s, n in sizes.items()}


def country_models(seed: int) -> dict:
    """The imported-only tiers' model (built from ``seed``)."""
    return {COUNTRY_SUITE: country_model(np.random.default_rng([seed, 9]))}


def language_models(seed: int, questions: int, variations: int) -> dict:
    """The imported tiers' three suites (built from ``seed``)."""
    rng = np.random.default_rng([seed, 7])
    return {s: imported_model(rng, questions, variations) for s in IMPORTED}


def real_gapminder_rates() -> tuple[str, np.ndarray] | None:
    table = SHARED / "reference" / "gapminder" / "ddf--datapoints--correct_rate--by--question--model_configuration.csv"
    if not table.is_file():
        return None
    frame = pd.read_csv(table)
    config = frame["model_configuration"].value_counts().index[0]
    rates = frame.loc[frame["model_configuration"] == config, "correct_rate"].to_numpy(dtype=float) / 100
    return str(config), np.clip(rates, 0, 1)


def one_blas_thread() -> None:
    """Each worker process multiplies on one thread: the tiers are spread over processes already."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


def run_job(job: dict) -> tuple[list[dict], float]:
    """Releases ``first``…``last`` of one tier with a fresh webhook; per release, for each of the job's
    ``clusters`` (each way of clustering the same draws, recorded in a fresh history of its own), its
    ``outcome``; and the job's seconds.

    ``kind`` ``registered``: the ``suites`` (all) at ``size`` (a tier's name or sizes), ``scopes`` {suite: how
    many scopes}, ``imports`` (that many of the imported suites too, imported after them), ``late_twice``
    (``schedule``), ``points`` (BLEnD's local answers that much worse in the successor, the target its
    headline), ``shock`` (the clustered null); ``real``: Gapminder at ``rates``; ``imported``: ``design``
    ``languages`` (three suites of ``shape`` questions × variations, ``shock``) or ``countries`` (the
    imported-only suite; ``points``: country k00 that much worse, the target its accuracy)."""
    started = time.perf_counter()
    kind, seed, resamples = job["kind"], job["seed"], job["resamples"]
    settings = verdicts.VerdictSettings(resamples=resamples)
    plan = release.release_plan(settings)  # once, as `geomon run` and `geomon import` build it
    tell = announce.announcer(ALERTS)
    shock, points = job.get("shock", 0.0), job.get("points", 0.0)
    rows = []
    with tempfile.TemporaryDirectory() as folder, webhook() as posts:
        folder = Path(folder)
        clusters = job.get("clusters", (DECLARED,))
        histories = {c: MetricHistory(f"sqlite:///{folder}/{c or 'rows'}.db") for c in clusters}
        if kind == "imported":
            if job.get("design") == "countries":
                models, worse = country_models(seed), ("k00", points) if points else None
                target = (COUNTRY_SUITE, "accuracy", "country=k00") if points else None
            else:
                models, worse, target = language_models(seed, *job.get("shape", (QUESTIONS, VARIATIONS))), None, None
            for r in range(job["first"], job["last"]):
                rng = np.random.default_rng([seed, 7, r])
                late, files = imported_files(r, models, rng, shock, folder, worse)
                out = {}
                for cluster, history in histories.items():
                    start = len(posts)
                    import_release(history, files, settings, plan, tell, cluster)
                    out[cluster] = outcome(history, posts[start:], r, late, target)
                rows.append(out)
                for _, _, path, _ in files:
                    path.unlink()
            return rows, time.perf_counter() - started
        if kind == "real":
            models = {"gapminder": gapminder_model(None, 0, job["rates"])}
        else:
            sizes = job["size"] if isinstance(job["size"], dict) else SIZES[job["size"]]  # a tier, or sizes
            models = models_for(sizes, seed)
            models = {s: m for s, m in models.items() if s in job.get("suites", models)}
        units = units_of(list(models), job.get("scopes"))
        target = ("blend", PLANTED_METRIC, "") if points else None
        extra = dict(itertools.islice(language_models(seed, QUESTIONS, VARIATIONS).items(), job.get("imports", 0)))
        for r in range(job["first"], job["last"]):
            rng = np.random.default_rng([seed, r])
            late, evaluations = registered_draws(models, units, rng, points, shock, job.get("late_twice", False))
            files = imported_files(r, extra, rng, 0.0, folder)[1] if extra else []
            out = {}
            for cluster, history in histories.items():
                start = len(posts)
                record_release(history, r, evaluations, settings, plan, tell, cluster)
                import_release(history, files, settings, plan, tell, "question")
                out[cluster] = outcome(history, posts[start:], r, late, target)
            rows.append(out)
    return rows, time.perf_counter() - started


# --- the figures --------------------------------------------------------------------------------------------


def upper_95(k: int, n: int) -> float:
    """The one-sided 95 % Clopper–Pearson upper bound of a rate k / n."""
    return float(stats.beta.ppf(0.95, k + 1, n - k)) if k < n else 1.0


def lower_95(k: int, n: int) -> float:
    """The one-sided 95 % Clopper–Pearson lower bound of a rate k / n."""
    return float(stats.beta.ppf(0.05, k, n - k + 1)) if k > 0 else 0.0


def interval_95(k: int, n: int) -> tuple[float, float]:
    """The two-sided 95 % Clopper–Pearson interval of a rate k / n."""
    low = float(stats.beta.ppf(0.025, k, n - k + 1)) if k > 0 else 0.0
    high = float(stats.beta.ppf(0.975, k + 1, n - k)) if k < n else 1.0
    return low, high


def rate(k: int, n: int) -> str:
    return f"{k}/{n} = {k / max(n, 1):.2%} (95 % upper bound {upper_95(k, n):.2%})"


def delivery(rows: list[dict]) -> str:
    """What would show a broken delivery path (all zero when the webhook received what the history stored)."""
    late = [r for r in rows if r["late"]]
    return (
        f"{len(late)} with a late predecessor; stored regressions not delivered {sum(r['undelivered'] for r in rows)}, "
        f"delivered but not stored {sum(r['unstored'] for r in rows)}, alerts about predecessors "
        f"{sum(r['about_old'] for r in rows)}, resolved messages {sum(r['resolved'] for r in rows)}"
    )


def families(rows: list[dict]) -> str:
    sizes: dict[str, list[int]] = {}
    for r in rows:
        for suite, m in r["family_sizes"].items():
            sizes.setdefault(suite, []).append(m)
    return ", ".join(f"{s} {int(np.median(v))}" for s, v in sorted(sizes.items()))


def pre_clip_drop(p: np.ndarray, change: float, scale: float = 1.0) -> float:
    """The drop (points) to take off rates ``p`` before clipping at 0 so that their mean falls by ``change``
    points (× ``scale``, the share that counts): the planted effect exactly the one named."""
    most = float(np.mean(p) * 100 * scale)
    if change >= most:
        raise SystemExit(f"bench: a drop of {change:g} points is more than the rates' mean ({most:.1f})")
    return float(optimize.brentq(lambda d: np.mean(p - np.clip(p - d / 100, 0, 1)) * 100 * scale - change, 0, 100))


def blend_points(seed: int, change: float, sizes: dict[str, int]) -> float:
    """BLEnD's local answers' pre-clip drop whose expected headline change is ``change`` (an unanswered reply
    is a miss either way, so only the answered share moves), in the model a tier at ``sizes`` draws."""
    model = models_for(sizes, seed)["blend"]
    local = (model["fixed"]["mode"] == "local").to_numpy()
    return pre_clip_drop(model["p"][local], change, BLEND_ANSWERED)


def country_points(seed: int, change: float) -> float:
    """Country k00's pre-clip drop whose expected accuracy change is ``change``."""
    model = country_models(seed)[COUNTRY_SUITE]
    return pre_clip_drop(model["p"][(model["fixed"]["country"] == "k00").to_numpy()], change)


# --quick runs a few releases per tier: what runs and what it prints, never a rate to judge a promise by.
JUDGED = True
CANNOT_JUDGE = "--quick: too few releases to judge a rate (no PROMISE FAILS / POWER BELOW CLAIM is read from them)"


def promise(rows: list[dict], alpha: float) -> str:
    """Whether a null tier keeps the release's promise (at most ``alpha`` of releases alarm): ``FAILS`` when
    its decisions were taken at more than α in all, or the alarm rate's 95 % lower bound is above α."""
    k, n = sum(r["alarm"] for r in rows), len(rows)
    spent = [r["spent"] for r in rows] or [0.0]
    over = max(spent) > alpha * (1 + 1e-9)
    line = (
        f"α the successor's decisions were taken at, Σ over its evaluations (suite × scope): median "
        f"{np.median(spent):.4g}, max {max(spent):.4g} (decisions per release: median "
        f"{np.median([r['decisions'] for r in rows] or [0]):.0f})"
    )
    if not JUDGED:
        return f"{line}; {CANNOT_JUDGE}"
    if over or lower_95(k, n) > alpha:
        why = [f"spends {max(spent):.4g} > α {alpha:g}"] if over else []
        why += [f"alarm rate's 95 % lower bound {lower_95(k, n):.2%} > α"] if lower_95(k, n) > alpha else []
        return f"{line}; PROMISE FAILS: {'; '.join(why)}"
    return f"{line}; promise (≤ α {alpha:g}) holds within the bound"


def report_null(title: str, rows: list[dict], seconds: float, alpha: float) -> None:
    k = sum(r["alarm"] for r in rows)
    suites: dict[str, int] = {}
    for r in rows:
        for s in r["suites"]:
            suites[s] = suites.get(s, 0) + 1
    by_suite = ", ".join(f"{s} {n}" for s, n in sorted(suites.items())) or "none"
    print(
        f"{title}: false regression alerts received by the webhook, per release: {rate(k, len(rows))}; by suite: "
        f"{by_suite}; testable comparisons per suite (median): {families(rows)}; {delivery(rows)} "
        f"[{seconds:.0f} s in its workers]\n  {promise(rows, alpha)}"
    )


def report_planted(title: str, suite: str, label: str, rows: list[dict], change: float, seconds: float) -> None:
    """Measured power (the webhook received a regression naming ``label`` of ``suite``) beside what the verdict
    claims: the chance that the planted change pages — significant and estimated at least the minimum effect —
    from the stated MDE's standard error (``page_chance(change, MDE's se, α / family size, min effect)``: ½ for a
    change of exactly the minimum effect, the MDE's power far beyond it), and the stated power at the minimum
    effect; ``FAILS`` when the measured power's 95 % upper bound is below the claim."""
    n = len(rows)
    if not n:
        return
    k = sum(r["target_alerted"] for r in rows)
    stored_k = sum(r["target_verdict"] == verdicts.REGRESSION for r in rows)
    low, high = interval_95(k, n)
    targets = [r["target"] for r in rows]
    claimed = float(
        np.nanmean([power.page_chance(change, t["planned_se"], t["level"], t["min_effect"]) for t in targets])
    )
    stated = float(np.nanmedian([t["power"] for t in targets]))
    fails = f"POWER BELOW CLAIM: measured {k / n:.2f} (95 % upper {high:.2f}) < claimed {claimed:.2f}"
    at_min_effect = bool(np.isclose(abs(change), np.median([t["min_effect"] for t in targets])))
    significant = sum(r.get("target_significant", False) for r in rows)
    s_low, s_high = interval_95(significant, n)
    # At a change of exactly the minimum effect the stated power is the claim: Holm-significant that often.
    gap = significant / n - stated
    power_line = (
        f"Holm-significant at the planted change {significant}/{n} = {significant / n:.2f} (95 % interval "
        f"{s_low:.2f}–{s_high:.2f}) against the stated power {stated:.2f}: "
        + (CANNOT_JUDGE if not JUDGED else "within 5 points" if abs(gap) <= 0.05 else f"{gap:+.2f} off the stated")
    )
    print(
        f"{title}: measured power (webhook received a regression naming {label}) {k}/{n} = {k / n:.2f} (95 % "
        f"interval {low:.2f}–{high:.2f}; stored regression verdicts {stored_k}); claimed by the stated MDE "
        f"{claimed:.2f} (mean page_chance({change:+.3g}, MDE / (z(1 − L) + z(0.8)), L, min effect), L its first "
        "level); stated "
        f"power at the minimum effect {stated:.2f}; median stated MDE "
        f"{np.nanmedian([t['mde'] for t in targets]):.3g}, planned se "
        f"{np.nanmedian([t['planned_se'] for t in targets]):.3g} (the new data's null se "
        f"{np.nanmedian([t['se'] for t in targets]):.3g}), family {np.median([t['family_size'] for t in targets]):.0f}"
        f", α {np.median([t['alpha'] for t in targets]):.4g}; mean observed change "
        f"{np.mean([t['change'] for t in targets]):+.2f}; releases also alarming on another suite "
        f"{sum(any(s != suite for s in r['suites']) for r in rows)}; {delivery(rows)} "
        f"[{seconds:.0f} s in its workers]\n  "
        + (CANNOT_JUDGE if not JUDGED else fails if high < claimed else "power as claimed, within the interval")
        + (f"\n  {power_line}" if at_min_effect else "")
    )


def z2(rows: list[dict]) -> str:
    """Per headline comparison, the mean of its squared z over the releases (``headline_z``)."""
    by: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        for key, z in r["z"].items():
            by.setdefault(key, []).append(z * z)
    return ", ".join(f"{s} {m} {np.nanmean(v):.2f}" for (s, m), v in sorted(by.items()))


def jobs_of(tier: str, releases: int, chunks: int, **job: Any) -> list[dict]:
    bounds = np.linspace(0, releases, max(1, min(chunks, releases)) + 1).astype(int)
    return [{"tier": tier, "first": int(a), "last": int(b), **job} for a, b in itertools.pairwise(bounds) if b > a]


def tiers_of(args: argparse.Namespace, chunks: int, sizes: dict[str, int] | None = None) -> dict[str, list[dict]]:
    """Every tier's worker jobs (a tier of 0 releases has none); ``sizes``: every registered tier at these
    sizes instead of the default profile's and the paper's (the fixed-seed tests' fast tier)."""
    base = {"seed": args.seed, "resamples": args.resamples}
    registered = {"kind": "registered", "size": sizes or "default", **base}
    blend_drop = blend_points(args.seed, min_effect("blend", PLANTED_METRIC), sizes or SIZES["default"])
    tiers = {
        "default": jobs_of("default", args.releases, chunks, **registered),
        "paper": jobs_of("paper", args.paper, chunks, **(registered | {"size": sizes or "paper"})),
        "scopes": jobs_of("scopes", args.scopes, chunks, scopes={"borderlines": 3}, imports=2, **registered),
        "late twice": jobs_of("late twice", args.late, chunks, late_twice=True, **registered),
        "planted": jobs_of("planted", args.planted, chunks, suites=("blend",), points=blend_drop, **registered),
        "planted, late twice": jobs_of(
            "planted, late twice",
            args.planted,
            chunks,
            suites=("blend",),
            points=blend_drop,
            late_twice=True,
            **registered,
        ),
        "clustered": jobs_of(
            "clustered",
            args.clustered,
            chunks,
            suites=CLUSTERED,
            shock=REGISTERED_SHOCK,
            clusters=(DECLARED, "item"),
            **registered,
        ),
        "imported (a)": jobs_of(
            "imported (a)", args.imported, chunks, kind="imported", shock=0.0, clusters=("question", ""), **base
        ),
        "imported (b)": jobs_of(
            "imported (b)", args.imported, chunks, kind="imported", shock=SHOCK, clusters=("question", ""), **base
        ),
        "imported only": jobs_of(
            "imported only",
            args.imported_only,
            chunks,
            kind="imported",
            design="countries",
            clusters=("question",),
            **base,
        ),
        "imported only, planted": jobs_of(
            "imported only, planted",
            args.imported_only,
            chunks,
            kind="imported",
            design="countries",
            points=country_points(args.seed, COUNTRY_DROP),
            clusters=("question",),
            **base,
        ),
    }
    real = real_gapminder_rates() if args.real else None
    if real is not None:
        tiers["real"] = jobs_of("real", args.real, chunks, kind="real", rates=real[1], config=real[0], **base)
    return tiers


# --quick: each tier's releases (at most)
QUICK = {
    "releases": 1, "paper": 1, "scopes": 1, "late": 1, "planted": 2, "imported": 2, "imported_only": 6,
    "clustered": 2, "real": 4,
}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=200, help="null releases at the default sizes")
    parser.add_argument("--paper", type=int, default=20, help="null releases at the paper's sizes")
    parser.add_argument("--scopes", type=int, default=100, help="null releases with BorderLines on three scopes")
    parser.add_argument("--late", type=int, default=60, help="null releases, two predecessor evaluations late")
    parser.add_argument("--planted", type=int, default=100, help="releases with BLEnD's drop, per schedule")
    parser.add_argument("--imported", type=int, default=60, help="releases of the imported suites, per null")
    parser.add_argument("--imported-only", type=int, default=100, help="imported-only releases, null and planted")
    parser.add_argument(
        "--clustered", type=int, default=60, help="releases of BorderLines and Gapminder under the clustered null"
    )
    parser.add_argument("--real", type=int, default=100, help="re-draws of Gapminder's real rates (0: none)")
    parser.add_argument("--quick", action="store_true", help=f"at most {QUICK} releases per tier")
    parser.add_argument("--resamples", type=int, default=verdicts.VerdictSettings().resamples)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.quick:  # every tier runs, a few releases each: that it runs and what it prints, not its rates
        global JUDGED
        JUDGED = False
        for name, releases in QUICK.items():
            setattr(args, name, min(getattr(args, name), releases))
    started = time.perf_counter()
    settings = verdicts.VerdictSettings(resamples=args.resamples)
    alpha = settings.alpha
    print("command:", " ".join([".venv/bin/python", "bench/alert_calibration.py", *(argv or sys.argv[1:])]))
    print(
        f"{release.release_plan(settings).describe()}; Holm within a suite on one-sided p-values; "
        f"{settings.resamples} sign-flip resamples per test (p-values near a threshold refined to "
        f"{settings.max_resamples}, exact with ≤ {settings.exact_up_to} differing clusters: the verdicts do not "
        f"hinge on the resamples, and lowering them only makes more p-values need refining); {args.workers} "
        "worker process(es); every figure is what the loopback webhook received"
    )
    tiers = tiers_of(args, 2 * args.workers)
    results: dict[str, list] = {tier: [] for tier in tiers}
    seconds = dict.fromkeys(tiers, 0.0)
    with ProcessPoolExecutor(args.workers, initializer=one_blas_thread) as pool:
        futures = [(job["tier"], pool.submit(run_job, job)) for jobs in tiers.values() for job in jobs]
        for tier, future in futures:
            rows, spent = future.result()
            results[tier] += rows
            seconds[tier] += spent
    for size in ("default", "paper"):
        sizes = ", ".join(f"{k} {v}" for k, v in SIZES[size].items())
        rows = [r[DECLARED] for r in results[size]]
        report_null(f"registered suites, null (a), {size} sizes ({sizes})", rows, seconds[size], alpha)
    report_null(
        "a whole release, several scopes: every registered suite at the default sizes, BorderLines on three scopes "
        f"(revisions), then two imported suites ({', '.join(IMPORTED[:2])}, cluster question), null (a)",
        [r[DECLARED] for r in results["scopes"]],
        seconds["scopes"],
        alpha,
    )
    report_null(
        "two predecessor evaluations late: every registered suite at the default sizes, null; the successor recorded "
        "first, then the predecessor dated with it (a fallback baseline), then the predecessor dated the day before "
        "(the release-order baseline: decided again)",
        [r[DECLARED] for r in results["late twice"]],
        seconds["late twice"],
        alpha,
    )
    for cluster, how in ((DECLARED, "clustered as declared"), ("item", "each row its own unit (the mutation)")):
        title = (
            f"{' and '.join(CLUSTERED)} at the default sizes, clustered null: a shock of sd {REGISTERED_SHOCK:g} "
            f"(log-odds) shared by a territory's queries and by a question's prompt families, {how}"
        )
        rows = [r[cluster] for r in results["clustered"]]
        report_null(title, rows, seconds["clustered"] / 2, alpha)
        print(f"  mean squared z of each headline comparison (about 1 when its standard error is right): {z2(rows)}")
    for tier, what in (
        ("imported (a)", "independent re-draws"),
        ("imported (b)", f"clustered null: a shock of sd {SHOCK:g} (log-odds) shared by a question's variations"),
    ):
        for cluster, how in (("question", 'cluster="question"'), ("", "without a cluster (each row its own unit)")):
            title = (
                f"imported {', '.join(IMPORTED)} ({QUESTIONS} questions × {VARIATIONS} variations, suite by suite), "
                f"null {tier[-3:]} {what}, imported {how}"
            )
            report_null(title, [r[cluster] for r in results[tier]], seconds[tier] / 2, alpha)
    only = f"imported only: {COUNTRY_SUITE}, {COUNTRIES} countries × {COUNTRY_QUESTIONS} questions × 2 variations"
    report_null(f"{only}, null", [r["question"] for r in results["imported only"]], seconds["imported only"], alpha)
    report_planted(
        f"{only}, country k00 {COUNTRY_DROP:g} points worse",
        COUNTRY_SUITE,
        "accuracy (country=k00)",
        [r["question"] for r in results["imported only, planted"]],
        -COUNTRY_DROP,
        seconds["imported only, planted"],
    )
    effect = min_effect("blend", PLANTED_METRIC)
    for tier, how in (("planted", "the usual schedule"), ("planted, late twice", "two predecessor evaluations late")):
        report_planted(
            f"{tier}: blend alone at the default size, every local answer worse so that {PLANTED_METRIC} falls by its "
            f"minimum effect ({effect:g} points expected), {how}",
            "blend",
            PLANTED_METRIC,
            [r[DECLARED] for r in results[tier]],
            -effect,
            seconds[tier],
        )
    if "real" in tiers:
        job = tiers["real"][0]
        report_null(
            f"Gapminder's real per-question rates ({job['config']}, {job['rates'].size} questions × 10 answers), "
            "gapminder only",
            [r[DECLARED] for r in results["real"]],
            seconds["real"],
            alpha,
        )
    cpu = sum(resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime for who in (SELF, CHILDREN))
    print(f"total {time.perf_counter() - started:.0f} s wall, {cpu:.0f} s CPU (this process and its workers)")


if __name__ == "__main__":
    main()
