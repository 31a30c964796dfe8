"""How far the alerts can be trusted, measured on the path production takes: what a webhook receives.

Every release is a predecessor ``m<r>-old`` and its successor ``m<r>-new`` (whose predecessor it names). Each
suite's evaluation of each model is recorded with ``geomon.monitor.tracking.track`` — what ``geomon run``
calls — with the release plan built once (``tracking.release_plan``: every suite decided at its share of
α), in a SQLite metric history (one file per worker job; model names are unique per release), and with the
announcer ``geomon run`` uses (``announce.announcer``) pointed at a loopback webhook (json style). The
evaluations arrive as they do in production: the release's suites in shuffled order, dated across midnight
(each evaluation at day D 23:50 or D+1 00:10), and in about a third of the releases the predecessor's
evaluations are recorded after the successor's (the engine then decides the successor again when its
baseline arrives, and must deliver then). What is counted is what the webhook received: a release is a
false alarm when the webhook received a ``regression`` message about its successor.

- Registered suites, null (a): both models' per-item outcomes are independent re-draws from the same
  per-item rates, in each suite's own per-item format, at ``geomon run``'s default sample sizes (each suite's
  ``default`` profile) and at the paper's (``SIZES``); each suite's production declarations
  (``registry.tracked``) are tested.
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
- Planted: one BLEnD country's local answers made worse (``--points`` before clipping at 0; the change
  expected after clipping is computed from the clipped rates) with the other suites as in null (a); the
  measured power (the share of releases whose webhook received a regression naming ``sem_b_local
  (country=…)`` about the successor) beside the power the stated MDE claims (``verdicts.power_at`` of the
  expected change, at the stored comparison's ``se`` and its first Holm level ``alpha / family_size``).
- Gapminder's real per-question correct rates (its published grades), a model against re-draws of itself
  (only the gapminder suite in the release), when the reference table is there.

Each rate is printed as k/n with its one-sided 95 % Clopper–Pearson upper bound (power: a two-sided 95 %
interval), and every tier also counts what would show a broken delivery path: regressions stored for the
successor that the webhook did not receive (or the reverse), alerts about predecessors and ``resolved``
messages.

    .venv/bin/python bench/alert_calibration.py [--releases 300] [--paper 30] [--planted 60] [--points 24]
        [--clustered 100] [--imported 100] [--real 200] [--workers 2] [--seed 0]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import os
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
from scipy import special, stats

from geomon.monitor import announce, imports, tracking
from geomon.monitor.alerts import AlertSettings
from geomon.monitor.history import MetricHistory
from geomon.stats import verdicts
from geomon.suites import registry

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the loopback webhook of the tests
    sys.path.insert(0, str(ROOT))
from geomon_tests.loopback import Webhook, serve  # noqa: E402

SHARED = ROOT.parent / "shared"
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
PLANTED_COUNTRY = BLEND_COUNTRIES[3]
PLANTED_PER_COUNTRY = 100  # BLEnD questions per country in the planted tier (the default's 8 are too few)
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
    e = m["error"]
    answered = rng.binomial(11, m["answer_rate"])  # 11 indicators asked per country, some not answered
    errors = rng.beta(e * 8 + 0.1, (1 - e) * 8 + 0.1, (11, e.size))
    errors = np.where(np.arange(11)[:, None] < answered, errors, 0.0).sum(axis=0)
    return m["fixed"].assign(error_sum=errors, answers=answered, answered=answered, asked=11)


BORDERLINES_LANGUAGES = ("es", "fr", "zh", "ru", "ar", "hi")


def borderlines_model(rng, n):
    """Per territory its four values' rates; per query (its three claimants' languages and English) its rate of
    naming the controller and of being answered: the suite's two levels of tracked rows."""
    territories = pd.DataFrame({"item": [f"T{i}" for i in range(n)], "territory": [f"T{i}" for i in range(n)]})
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
    )
    query = territory[m["territory_of_query"]]
    answered = rng.binomial(1, shifted(m["answers"], query)).astype(float)
    concurs = np.where(answered > 0, rng.binomial(1, shifted(m["concurs"], query)), 0.0)
    queries = m["queries"].assign(answered=answered, concurs=np.where(m["queries"]["claimant"], concurs, np.nan))
    return pd.concat([territories, queries.drop(columns="claimant")], ignore_index=True)


GAPMINDER_FAMILIES = ("plain", "persona", "expert", "short", "reasoning")


def gapminder_model(rng, n, rates=None):
    rates = np.asarray(rates) if rates is not None else rng.beta(3, 2, n)
    ids = [f"q{i}" for i in range(rates.size)]
    fixed = pd.DataFrame({"item": ids, "question": ids, "topic": [f"sdg{i % 17 + 1}" for i in range(rates.size)]})
    return {"fixed": fixed, "p": rates, "answers": 2}  # two answers in each of five prompt families


def gapminder_draw(rng, m, shock: float = 0.0):
    """Each question's answers drawn family by family: the suite's two levels of tracked rows (per question, and
    per question and prompt family). With ``shock``, a question's correct rate moved in this draw by a normal
    shock of its log-odds that its families share: the question is the cluster."""
    shape = (len(GAPMINDER_FAMILIES), m["p"].size)
    indecisive = rng.binomial(m["answers"], 0.05, shape)  # no option read from the answer
    decisive = m["answers"] - indecisive
    correct = rng.binomial(decisive, shifted(m["p"], rng.normal(0, shock, m["p"].size)) if shock else m["p"])
    very_wrong = rng.binomial(decisive - correct, 0.3)
    questions = m["fixed"].assign(
        correct=correct.sum(axis=0),
        very_wrong=very_wrong.sum(axis=0),
        decisive=decisive.sum(axis=0),
        indecisive=indecisive.sum(axis=0),
        n=m["answers"] * len(GAPMINDER_FAMILIES),
    )
    families = [
        pd.DataFrame(
            {
                "item": [f"{q}|{family}" for q in m["fixed"]["question"]],
                "question": m["fixed"]["question"],
                "family": family,
                "family_correct": correct[f],
                "family_decisive": decisive[f],
            }
        )
        for f, family in enumerate(GAPMINDER_FAMILIES)
    ]
    return pd.concat([questions, *families], ignore_index=True)


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
    answered = rng.binomial(1, 0.97, m["p"].size).astype(float)
    correct = np.where(answered > 0, rng.binomial(3, m["p"]) / 3, np.nan)  # three judges
    return m["fixed"].assign(correct=correct, answered=answered)


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
    answered = rng.binomial(1, 0.97, m["mean"].size).astype(float)
    value = np.where(answered > 0, m["mean"] + rng.normal(0, 0.1, m["mean"].size), np.nan)
    return m["fixed"].assign(value=value, answered=answered)


def blend_model(rng, per_country):
    country = np.repeat(BLEND_COUNTRIES, per_country)
    modes = [
        pd.DataFrame(
            {
                "item": [f"{c}|{i}|{mode}" for i, c in enumerate(country)],
                "question": [f"{c}|{i}" for i, c in enumerate(country)],
                "country": country,
                "mode": mode,
                "asked_in": "English" if mode == "english" else [f"language of {c}" for c in country],
            }
        )
        for mode in ("local", "english")
    ]
    return {"fixed": pd.concat(modes, ignore_index=True), "p": rng.beta(2, 3, 2 * country.size)}


BLEND_ANSWERED = 0.97  # the share of replies that answer (the rest are empty or hedge)


def blend_draw(rng, m, worse: str = "", by: float = 0.0):
    p = m["p"]
    if worse:
        hit = ((m["fixed"]["country"] == worse) & (m["fixed"]["mode"] == "local")).to_numpy()
        p = np.where(hit, np.clip(p - by / 100, 0, 1), p)
    answered = rng.binomial(1, BLEND_ANSWERED, p.size).astype(float)  # unanswered: a miss, as the paper scores it
    return m["fixed"].assign(value=np.where(answered > 0, rng.binomial(1, p) * 100.0, 0.0), answered=answered)


MODELS = {
    "worldbench": (worldbench_model, worldbench_draw),
    "borderlines": (borderlines_model, borderlines_draw),
    "gapminder": (gapminder_model, gapminder_draw),
    "quench": (quench_model, quench_draw),
    "saged": (saged_model, saged_draw),
    "blend": (blend_model, blend_draw),
}


def imported_model(rng: np.random.Generator, questions: int = QUESTIONS, variations: int = VARIATIONS) -> dict:
    """An imported suite's per-row rates: each question's log-odds, and a fixed offset per prompt variation."""
    question = np.repeat(np.arange(questions), variations)
    fixed = pd.DataFrame(
        {
            "item": [f"q{q}|v{v}" for q, v in zip(question, np.tile(np.arange(variations), questions), strict=True)],
            "question": [f"q{q}" for q in question],
            "language": [LANGUAGES[q % 2] for q in question],
        }
    )
    logit = rng.normal(0.5, 1.2, questions)[question] + rng.normal(0, 0.3, question.size)
    return {"fixed": fixed, "question": question, "logit": logit, "questions": questions}


def imported_draw(rng: np.random.Generator, m: dict, shock: float = 0.0) -> pd.DataFrame:
    """Correct (1) or not per row; with ``shock``, each question's log-odds shifted in this draw by a normal
    shock its variations share (the clustered null)."""
    logit = m["logit"] + (rng.normal(0, shock, m["questions"])[m["question"]] if shock else 0.0)
    return m["fixed"].assign(correct=rng.binomial(1, 1 / (1 + np.exp(-logit))))


# --- one release through the production path ----------------------------------------------------------------


def schedule(rng: np.random.Generator, suites: list[str]) -> tuple[bool, list[tuple[str, str]], dict]:
    """How a release's evaluations arrive: (late, [(role, suite)] in recording order, {(role, suite): date}).
    The twelve (or six) evaluations in shuffled order; within each suite the predecessor's first, except in a
    late release, where each suite's successor evaluation is recorded before its predecessor's."""
    late = bool(rng.random() < LATE_SHARE)
    events = [(role, s) for role in ("old", "new") for s in suites]
    order = [events[i] for i in rng.permutation(len(events))]
    first = "new" if late else "old"
    for suite in suites:  # put each suite's pair in the release's order, keeping the positions shuffled
        i, j = sorted(k for k, e in enumerate(order) if e[1] == suite)
        second = "old" if first == "new" else "new"
        order[i], order[j] = (first, suite), (second, suite)
    when = {e: DAYS[int(rng.integers(2))] for e in events}
    return late, order, when


@functools.cache
def tracked(suite: str, cluster: str = DECLARED) -> tuple:
    """The suite's production declarations (``registry.tracked``), read once (the registry reads every suite
    file again on each call); with ``cluster`` a column, every declaration clustered on it instead (``item``:
    each row its own unit, the mutation the clustered null exposes)."""
    declared = tuple(registry.tracked(suite))
    return declared if cluster == DECLARED else tuple(replace(m, cluster=cluster) for m in declared)


def names(r: int, prefix: str = "m") -> dict[str, str]:
    return {"old": f"{prefix}{r}-old", "new": f"{prefix}{r}-new"}


def registered_draws(
    models: dict, rng: np.random.Generator, worse: tuple[str, float] | None = None, shock: float = 0.0
) -> tuple[bool, list[tuple[str, str, pd.DataFrame, datetime]]]:
    """One release's evaluations, in the order they arrive: (late, [(role, suite, items, evaluated_at)]).
    ``worse``: the successor's BLEnD answers of one country's local questions made worse by that many points;
    ``shock``: the sd of the shared per-cluster shock of the suites whose draws take one (the clustered null)."""
    late, order, when = schedule(rng, list(models))
    out = []
    for role, suite in order:
        if worse and suite == "blend" and role == "new":
            items = blend_draw(rng, models[suite], *worse)
        else:
            items = MODELS[suite][1](rng, models[suite], **({"shock": shock} if shock else {}))
        out.append((role, suite, items, when[(role, suite)]))
    return late, out


def record_release(
    history: MetricHistory,
    r: int,
    evaluations: list[tuple[str, str, pd.DataFrame, datetime]],
    settings: verdicts.VerdictSettings,
    plan: verdicts.ReleasePlan,
    tell: tracking.Announcer,
    cluster: str = DECLARED,
) -> None:
    """Release ``r``'s evaluations recorded with ``tracking.track`` as ``geomon run`` records them (their
    metrics computed there from the declarations, clustered as ``tracked(suite, cluster)`` says)."""
    model = names(r)
    for role, suite, items, evaluated_at in evaluations:
        tracking.track(
            history,
            suite,
            model[role],
            [],
            items,
            tracked(suite, cluster),
            settings,
            scope=SCOPE,
            predecessor=model["old"] if role == "new" else None,
            evaluated_at=evaluated_at,
            origin=ORIGIN,
            plan=plan,
            announcer=tell,
        )


def imported_files(r: int, models: dict, rng: np.random.Generator, shock: float, folder: Path) -> tuple:
    """Release ``r`` of the imported suites as per-item CSV files, one per suite and model (what a harness
    writes: model, item, question, language, evaluated_at, correct, predecessor); returns (late, [(role, suite,
    path)] in the order they are imported)."""
    late, order, when = schedule(rng, list(models))
    model = names(r)
    out = []
    for role, suite in order:
        frame = imported_draw(rng, models[suite], shock).assign(
            model=model[role],
            evaluated_at=when[(role, suite)].strftime("%Y-%m-%dT%H:%M:%S"),
            predecessor=model["old"] if role == "new" else "",
        )
        path = folder / f"{suite}-{model[role]}.csv"
        frame[["model", "item", "question", "language", "evaluated_at", "correct", "predecessor"]].to_csv(
            path, index=False
        )
        out.append((role, suite, path))
    return late, out


def import_release(
    history: MetricHistory,
    files: list[tuple[str, str, Path]],
    settings: verdicts.VerdictSettings,
    plan: verdicts.ReleasePlan,
    tell: tracking.Announcer,
    cluster: str,
) -> None:
    """The files imported one by one, as ``geomon import items <file> --suite <suite> --group language
    [--cluster question]`` imports them."""
    for _, suite, path in files:
        runs = imports.item_runs(path, suite, ["language"], settings, cluster=cluster)
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


def outcome(
    history: MetricHistory, posts: list[dict], r: int, late: bool, target: tuple[str, str] | None = None
) -> dict:
    """What release ``r`` delivered (``posts``: the webhook's posts while it was recorded) beside what the
    history stored for it; ``target`` (suite, breakdown of sem_b_local): the planted comparison's numbers."""
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
        "z": headline_z(stored),
    }
    if target is not None:
        suite, breakdown = target
        label = f"sem_b_local ({breakdown})"
        hit = stored[(stored["metric"] == "sem_b_local") & (stored["breakdown"] == breakdown)]
        t = hit.iloc[0]
        row |= {
            "target_alerted": any(label in b["title"] for b in alerts if b["suite"] == suite),
            "target_verdict": t["verdict"],
            "target": {k: float(t[k]) for k in ("se", "family_size", "alpha", "change", "mde")},
        }
    return row


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


def models_for(sizes: dict[str, int], seed: int, blend_per_country: int | None = None) -> dict:
    """The model every release of a tier re-draws: the same in every worker (built from ``seed``)."""
    rng = np.random.default_rng(seed)
    models = {s: MODELS[s][0](rng, n) for s, n in sizes.items()}
    if blend_per_country is not None:
        models["blend"] = blend_model(rng, blend_per_country)
    return models


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
    ``outcome``; and the job's seconds."""
    started = time.perf_counter()
    kind, seed, resamples = job["kind"], job["seed"], job["resamples"]
    settings = verdicts.VerdictSettings(resamples=resamples)
    plan = tracking.release_plan(settings)  # once, as `geomon run` and `geomon import` build it
    tell = announce.announcer(ALERTS)
    shock = job.get("shock", 0.0)
    rows = []
    with tempfile.TemporaryDirectory() as folder, webhook() as posts:
        folder = Path(folder)
        clusters = job.get("clusters", (DECLARED,))
        histories = {c: MetricHistory(f"sqlite:///{folder}/{c or 'rows'}.db") for c in clusters}
        if kind == "imported":
            rng = np.random.default_rng([seed, 7])
            shape = job.get("questions", QUESTIONS), job.get("variations", VARIATIONS)
            models = {s: imported_model(rng, *shape) for s in IMPORTED}
            for r in range(job["first"], job["last"]):
                late, files = imported_files(r, models, np.random.default_rng([seed, 7, r]), shock, folder)
                out = {}
                for cluster, history in histories.items():
                    start = len(posts)
                    import_release(history, files, settings, plan, tell, cluster)
                    out[cluster] = outcome(history, posts[start:], r, late)
                rows.append(out)
                for _, _, path in files:
                    path.unlink()
            return rows, time.perf_counter() - started
        if kind == "real":
            models = {"gapminder": gapminder_model(None, 0, job["rates"])}
        else:
            sizes = job["size"] if isinstance(job["size"], dict) else SIZES[job["size"]]  # a tier, or sizes
            models = models_for(sizes, seed, job.get("blend"))
            models = {s: m for s, m in models.items() if s in job.get("suites", models)}
        worse = (PLANTED_COUNTRY, job["points"]) if job.get("points") else None
        target = ("blend", f"country={PLANTED_COUNTRY}") if worse else None
        for r in range(job["first"], job["last"]):
            late, evaluations = registered_draws(models, np.random.default_rng([seed, r]), worse, shock)
            out = {}
            for cluster, history in histories.items():
                start = len(posts)
                record_release(history, r, evaluations, settings, plan, tell, cluster)
                out[cluster] = outcome(history, posts[start:], r, late, target)
            rows.append(out)
    return rows, time.perf_counter() - started


# --- the figures --------------------------------------------------------------------------------------------


def upper_95(k: int, n: int) -> float:
    """The one-sided 95 % Clopper–Pearson upper bound of a rate k / n."""
    return float(stats.beta.ppf(0.95, k + 1, n - k)) if k < n else 1.0


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
        f"{len(late)} with a late predecessor, {sum(r['alarm'] for r in late)} of whose alarms came from the "
        f"re-decision; stored regressions not delivered {sum(r['undelivered'] for r in rows)}, delivered but not "
        f"stored {sum(r['unstored'] for r in rows)}, alerts about predecessors {sum(r['about_old'] for r in rows)}, "
        f"resolved messages {sum(r['resolved'] for r in rows)}"
    )


def families(rows: list[dict]) -> str:
    sizes: dict[str, list[int]] = {}
    for r in rows:
        for suite, m in r["family_sizes"].items():
            sizes.setdefault(suite, []).append(m)
    return ", ".join(f"{s} {int(np.median(v))}" for s, v in sorted(sizes.items()))


def expected_drop(models: dict, points: float) -> float:
    """The planted country's sem_b_local change in expectation (points), from the clipped rates (a rate below
    the planted drop cannot fall below 0) of the replies that answer (an unanswered one is a miss either way)."""
    blend = models["blend"]
    hit = ((blend["fixed"]["country"] == PLANTED_COUNTRY) & (blend["fixed"]["mode"] == "local")).to_numpy()
    p = blend["p"][hit]
    return float(np.mean(np.clip(p - points / 100, 0, 1) - p) * 100 * BLEND_ANSWERED)


def report_null(title: str, rows: list[dict], seconds: float) -> None:
    k = sum(r["alarm"] for r in rows)
    suites: dict[str, int] = {}
    for r in rows:
        for s in r["suites"]:
            suites[s] = suites.get(s, 0) + 1
    by_suite = ", ".join(f"{s} {n}" for s, n in sorted(suites.items())) or "none"
    print(
        f"{title}: false regression alerts received by the webhook, per release: {rate(k, len(rows))}; by suite: "
        f"{by_suite}; testable comparisons per suite (median): {families(rows)}; {delivery(rows)} "
        f"[{seconds:.0f} core-s]"
    )


def report_planted(rows: list[dict], points: float, change: float, seconds: float) -> None:
    n = len(rows)
    if not n:
        return
    k = sum(r["target_alerted"] for r in rows)
    stored_k = sum(r["target_verdict"] == verdicts.REGRESSION for r in rows)
    low, high = interval_95(k, n)
    targets = [r["target"] for r in rows]
    claimed = [verdicts.power_at(change, t["se"], t["alpha"] / t["family_size"]) for t in targets]
    others = sum(any(s != "blend" for s in r["suites"]) for r in rows)
    print(
        f"planted: blend {PLANTED_COUNTRY}'s local answers {points:g} points worse before clipping (expected "
        f"change {change:+.2f} points after clipping at 0), {PLANTED_PER_COUNTRY} questions per country: measured "
        f"power (webhook received a regression naming sem_b_local (country={PLANTED_COUNTRY})) {k}/{n} = "
        f"{k / n:.2f} (95 % interval {low:.2f}–{high:.2f}; stored regression verdicts {stored_k}); claimed by the "
        f"stated MDE {np.nanmean(claimed):.2f} (mean power_at(expected change, se, alpha / family_size); median "
        f"se {np.median([t['se'] for t in targets]):.2f}, family {np.median([t['family_size'] for t in targets]):.0f}"
        f", alpha {np.median([t['alpha'] for t in targets]):.4g}, stated MDE "
        f"{np.median([t['mde'] for t in targets]):.1f} points; mean observed change "
        f"{np.mean([t['change'] for t in targets]):+.2f}); releases also alarming on another suite {others}; "
        f"{delivery(rows)} [{seconds:.0f} core-s]"
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=300, help="null releases at the default sizes")
    parser.add_argument("--paper", type=int, default=30, help="null releases at the paper's sizes")
    parser.add_argument("--planted", type=int, default=60, help="releases with the planted drop")
    parser.add_argument("--points", type=float, default=24.0, help="the planted drop before clipping (points)")
    parser.add_argument("--imported", type=int, default=100, help="releases of the imported suites, per null")
    parser.add_argument(
        "--clustered", type=int, default=100, help="releases of BorderLines and Gapminder under the clustered null"
    )
    parser.add_argument("--real", type=int, default=200, help="re-draws of Gapminder's real rates (0: none)")
    parser.add_argument("--resamples", type=int, default=verdicts.VerdictSettings().resamples)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    settings = verdicts.VerdictSettings(resamples=args.resamples)
    print("command:", " ".join([".venv/bin/python", "bench/alert_calibration.py", *(argv or sys.argv[1:])]))
    print(
        f"{tracking.release_plan(settings).describe()}; Holm within a suite on one-sided p-values; "
        f"{settings.resamples} sign-flip resamples per test (p-values near a threshold refined to "
        f"{settings.max_resamples}, exact with ≤ {settings.exact_up_to} differing clusters: the verdicts do not "
        f"hinge on the resamples, and lowering them only makes more p-values need refining); {args.workers} "
        "worker process(es); every figure is what the loopback webhook received"
    )
    base = {"seed": args.seed, "resamples": args.resamples}
    chunks = 2 * args.workers
    real = real_gapminder_rates() if args.real else None
    tiers: dict[str, list[dict]] = {
        "paper": jobs_of("paper", args.paper, chunks, kind="registered", size="paper", **base),
        "planted": jobs_of(
            "planted",
            args.planted,
            chunks,
            kind="registered",
            size="default",
            blend=PLANTED_PER_COUNTRY,
            points=args.points,
            **base,
        ),
        "default": jobs_of("default", args.releases, chunks, kind="registered", size="default", **base),
        "clustered": jobs_of(
            "clustered",
            args.clustered,
            chunks,
            kind="registered",
            size="default",
            suites=CLUSTERED,
            shock=REGISTERED_SHOCK,
            clusters=(DECLARED, "item"),
            **base,
        ),
        "imported (a)": jobs_of(
            "imported (a)", args.imported, chunks, kind="imported", shock=0.0, clusters=("question", ""), **base
        ),
        "imported (b)": jobs_of(
            "imported (b)", args.imported, chunks, kind="imported", shock=SHOCK, clusters=("question", ""), **base
        ),
    }
    if real is not None:
        tiers["real"] = jobs_of("real", args.real, chunks, kind="real", rates=real[1], **base)
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
        report_null(f"registered suites, null (a), {size} sizes ({sizes})", rows, seconds[size])
    for cluster, how in ((DECLARED, "clustered as declared"), ("item", "each row its own unit (the mutation)")):
        title = (
            f"{' and '.join(CLUSTERED)} at the default sizes, clustered null: a shock of sd {REGISTERED_SHOCK:g} "
            f"(log-odds) shared by a territory's queries and by a question's prompt families, {how}"
        )
        rows = [r[cluster] for r in results["clustered"]]
        report_null(title, rows, seconds["clustered"] / 2)
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
            report_null(title, [r[cluster] for r in results[tier]], seconds[tier] / 2)
    models = models_for(SIZES["default"], args.seed, PLANTED_PER_COUNTRY)
    planted = [r[DECLARED] for r in results["planted"]]
    report_planted(planted, args.points, expected_drop(models, args.points), seconds["planted"])
    if real is not None:
        report_null(
            f"Gapminder's real per-question rates ({real[0]}, {real[1].size} questions × 10 answers), gapminder only",
            [r[DECLARED] for r in results["real"]],
            seconds["real"],
        )
    print(f"total {time.perf_counter() - started:.0f} s wall")


if __name__ == "__main__":
    main()
