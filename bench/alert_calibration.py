"""How far the alerts can be trusted: the verdict engine's family-wise false-alarm rate, the uniformity of its
null p-values, and its power against planted regressions beside the minimum detectable effect it claims.

Every release compares a model with a re-draw of itself: per-item outcomes are drawn twice from the same
per-item rates, in each suite's own per-item format, and every suite's declared tracked metrics
(``<suite>.TRACKED``: the production declarations) are tested and decided as one family across all six
suites (``geomon.stats.verdicts.decide``), exactly as ``geomon run`` decides a release. A release with any
``regression`` verdict is a false alarm. Then one group (a BLEnD country, a Gapminder language's questions) is
made worse by 5, 10 and 20 points, and the share of releases whose verdict on it is a significant worsening
is set beside the power the stated MDE implies. Last, Gapminder's real per-question grades: a real model
against a re-draw of itself.

    .venv/bin/python bench/alert_calibration.py [--releases 2000] [--resamples 999] [--seed 0]
"""

from __future__ import annotations

import argparse
import itertools
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from geomon.stats import verdicts
from geomon.stats.declared import paired_tests
from geomon.suites import registry

SHARED = Path(__file__).resolve().parents[2] / "shared"
Items = Callable[[np.random.Generator, dict], pd.DataFrame]

# Each suite's sample at `geomon run`'s default and at the paper's full size (items per release).
SIZES = {
    "default": {"worldbench": 40, "borderlines": 60, "gapminder": 20, "quench": 12, "saged": 6, "blend": 8},
    "paper": {"worldbench": 190, "borderlines": 251, "gapminder": 365, "quench": 400, "saged": 38, "blend": 500},
}
REGIONS = [f"region{i}" for i in range(7)]
INCOMES = ["low", "lower middle", "upper middle", "high"]
BLEND_COUNTRIES = [f"c{i:02d}" for i in range(16)]
CONCEPTS = [f"country{i:02d}" for i in range(21)]


# --- per-item rates ("the model") and re-draws of them, in each suite's items format ------------------------
# A model holds its fixed columns (names, groups, clusters) and its per-item rates; a draw adds the outcomes.


def worldbench_model(rng, n):
    fixed = pd.DataFrame(
        {"item": [f"C{i}" for i in range(n)], "region": rng.choice(REGIONS, n), "income_group": rng.choice(INCOMES, n)}
    )
    return {"fixed": fixed, "error": rng.beta(2, 3, n)}


def worldbench_draw(rng, m):
    e = m["error"]
    errors = rng.beta(e * 8 + 0.1, (1 - e) * 8 + 0.1, (11, e.size)).sum(axis=0)  # 11 indicators per country
    return m["fixed"].assign(error_sum=errors, answers=11)


def borderlines_model(rng, n):
    return {"fixed": pd.DataFrame({"item": [f"T{i}" for i in range(n)]}), "p": rng.beta(4, 2, (4, n))}


def borderlines_draw(rng, m):
    kb, con, non, cst = m["p"]
    return m["fixed"].assign(
        kb=rng.binomial(1, kb).astype(float),
        con=rng.binomial(1, con).astype(float),
        non=rng.binomial(3, non) / 3,  # three other claimants
        cst=rng.binomial(3, cst) / 3,
    )


def gapminder_model(rng, n, rates=None):
    rates = np.asarray(rates) if rates is not None else rng.beta(3, 2, n)
    return {"fixed": pd.DataFrame({"item": [f"q{i}" for i in range(rates.size)]}), "p": rates, "answers": 10}


def gapminder_draw(rng, m):
    correct = rng.binomial(m["answers"], m["p"])
    return m["fixed"].assign(
        correct=correct, very_wrong=rng.binomial(m["answers"] - correct, 0.3), decisive=m["answers"]
    )


def quench_model(rng, n):
    entities = 2 * n  # two masked entities per question, half the questions Indic
    modes = [
        pd.DataFrame(
            {
                "item": [f"e{i}|{mode}" for i in range(entities)],
                "question_id": np.repeat(np.arange(n), 2).astype(str),
                "mode": mode,
                "indic": np.repeat(np.arange(n) < n / 2, 2),
            }
        )
        for mode in ("normal", "cot")
    ]
    return {"fixed": pd.concat(modes, ignore_index=True), "p": np.tile(rng.beta(2, 2, entities), 2)}


def quench_draw(rng, m):
    return m["fixed"].assign(correct=rng.binomial(3, m["p"]) / 3)  # three judges


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
    return m["fixed"].assign(value=m["mean"] + rng.normal(0, 0.1, m["mean"].size))


def blend_model(rng, per_country):
    country = np.repeat(BLEND_COUNTRIES, per_country)
    modes = [
        pd.DataFrame(
            {
                "item": [f"{c}|{i}|{mode}" for i, c in enumerate(country)],
                "question": [f"{c}|{i}" for i, c in enumerate(country)],
                "country": country,
                "mode": mode,
            }
        )
        for mode in ("local", "english")
    ]
    return {"fixed": pd.concat(modes, ignore_index=True), "p": rng.beta(2, 3, 2 * country.size)}


def blend_draw(rng, m, worse: str = "", by: float = 0.0):
    p = m["p"]
    if worse:
        hit = ((m["fixed"]["country"] == worse) & (m["fixed"]["mode"] == "local")).to_numpy()
        p = np.where(hit, np.clip(p - by / 100, 0, 1), p)
    return m["fixed"].assign(value=rng.binomial(1, p) * 100.0)


MODELS = {
    "worldbench": (worldbench_model, worldbench_draw),
    "borderlines": (borderlines_model, borderlines_draw),
    "gapminder": (gapminder_model, gapminder_draw),
    "quench": (quench_model, quench_draw),
    "saged": (saged_model, saged_draw),
    "blend": (blend_model, blend_draw),
}


def release(rng, models, settings, draws=None, seed=0) -> list[verdicts.Verdict]:
    """One release: every suite's tracked metrics on a re-draw of the same model, decided as one family."""
    tests = []
    for suite, model in models.items():
        draw = MODELS[suite][1]
        before, after = draw(rng, model), (draws or {}).get(suite, draw)(rng, model)
        tests += paired_tests(registry.tracked(suite), before, after, resamples=settings.resamples, seed=seed)
    return verdicts.decide(tests, settings)


def upper_95(k: int, n: int) -> float:
    """The one-sided 95 % Clopper–Pearson upper bound of a rate k / n."""
    return float(stats.beta.ppf(0.95, k + 1, n - k)) if k < n else 1.0


def models_for(sizes: dict[str, int], seed: int, blend_per_country: int | None = None) -> dict:
    """The model every release of a replay re-draws: the same in every worker (built from ``seed``)."""
    rng = np.random.default_rng(seed)
    models = {s: MODELS[s][0](rng, n) for s, n in sizes.items()}
    if blend_per_country is not None:
        models["blend"] = blend_model(rng, blend_per_country)
    return models


def one_blas_thread() -> None:
    """Each worker process multiplies on one thread: the replay is spread over processes already, and a
    BLAS pool per process on the same cores makes them wait on each other."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


def replay(job: tuple) -> list[tuple[bool, list[float], int, tuple]]:
    """Releases ``first``…``last`` of one replay (one worker's share): per release, whether it raised a
    regression, its p-values, its family size and, with ``planted``, the verdict on the planted group."""
    sizes, seed, first, last, resamples, planted_points, blend_per_country, real_rates = job
    settings = verdicts.VerdictSettings(resamples=resamples)
    models = models_for(sizes, seed, blend_per_country)
    if real_rates is not None:
        models = {"gapminder": gapminder_model(None, 0, real_rates)}
    out = []
    for r in range(first, last):
        rng = np.random.default_rng([seed, r])
        draws = {}
        if planted_points:
            draws["blend"] = lambda g, m: blend_draw(g, m, BLEND_COUNTRIES[3], planted_points)
        decided = release(rng, models, settings, draws, seed=r)
        target = next(
            (v for v in decided if v.metric == "sem_b_local" and v.breakdown == f"country={BLEND_COUNTRIES[3]}"),
            None,
        )
        out.append(
            (
                any(v.verdict == verdicts.REGRESSION for v in decided),
                [v.p_value for v in decided if v.p_value is not None and v.verdict != verdicts.INSUFFICIENT],
                decided[0].family_size if decided else 0,
                (target.verdict, target.mde, target.family_size) if target is not None else (),
            )
        )
    return out


def run_all(pool: ProcessPoolExecutor, workers: int, releases: int, **job: object) -> list:
    bounds = np.linspace(0, releases, workers + 1).astype(int)
    jobs = [
        (job["sizes"], job["seed"], a, b, job["resamples"], job.get("planted", 0), job.get("blend"), job.get("real"))
        for a, b in itertools.pairwise(bounds)
        if b > a
    ]
    return [row for part in pool.map(replay, jobs) for row in part]


def null_releases(pool, workers, size: str, releases: int, resamples: int, seed: int) -> None:
    started = time.perf_counter()
    rows = run_all(pool, workers, releases, sizes=SIZES[size], seed=seed, resamples=resamples)
    alarms = sum(r[0] for r in rows)
    p_values = np.array([p for r in rows for p in r[1]])
    ks = stats.kstest(p_values, "uniform")
    sizes = ", ".join(f"{k} {v}" for k, v in SIZES[size].items())
    print(
        f"null releases, {size} sizes ({sizes}): {releases} releases, family of {np.median([r[2] for r in rows]):.0f} "
        f"tests; releases with any regression {alarms} = {alarms / releases:.2%} (95 % upper bound "
        f"{upper_95(alarms, releases):.2%}); {p_values.size} null p-values: KS D = {ks.statistic:.3f}, "
        f"share below 0.05 {np.mean(p_values < 0.05):.3f}, below 0.01 {np.mean(p_values < 0.01):.4f} "
        f"[{time.perf_counter() - started:.0f} s]"
    )


def planted(pool, workers, releases: int, resamples: int, seed: int) -> None:
    """One BLEnD country's local answers made worse (100 questions per country); the other suites at their
    defaults. Power: the share of releases whose verdict on that country is a significant worsening; beside
    it, the power the MDE stated in those verdicts implies at the planted size."""
    alpha, power = verdicts.VerdictSettings().alpha, verdicts.VerdictSettings().power
    for points in (5, 10, 20):
        started = time.perf_counter()
        # Power at the production engine's resolution (verdicts.resamples): a coarser p-value loses power
        # near the family's threshold that the stated MDE does not claim to lose.
        rows = run_all(
            pool, workers, releases, sizes=SIZES["default"], seed=seed, resamples=resamples, planted=points, blend=100
        )
        targets = [r[3] for r in rows if r[3]]
        hits = np.mean([t[0] in (verdicts.REGRESSION, verdicts.BELOW_THRESHOLD) for t in targets])
        implied = []
        for _, mde, family in targets:
            family_alpha = alpha / max(family, 1)
            se = mde / (stats.norm.ppf(1 - family_alpha / 2) + stats.norm.ppf(power))
            implied.append(verdicts.power_at(points, se, family_alpha))
        print(
            f"planted: country {BLEND_COUNTRIES[3]} {points} points worse: measured power {hits:.2f}, implied by the "
            f"stated MDE {np.nanmean(implied):.2f} (median MDE {np.median([t[1] for t in targets]):.1f} points, family "
            f"of {np.median([t[2] for t in targets]):.0f}) over {len(targets)} releases "
            f"[{time.perf_counter() - started:.0f} s]"
        )


def gapminder_real(pool, workers, releases: int, resamples: int, seed: int) -> None:
    """A real model's per-question correct rates (Gapminder's published grades) against re-draws of itself."""
    table = SHARED / "reference" / "gapminder" / "ddf--datapoints--correct_rate--by--question--model_configuration.csv"
    frame = pd.read_csv(table)
    config = frame["model_configuration"].value_counts().index[0]
    rates = np.clip(frame.loc[frame["model_configuration"] == config, "correct_rate"].to_numpy(dtype=float) / 100, 0, 1)
    started = time.perf_counter()
    rows = run_all(pool, workers, releases, sizes={}, seed=seed, resamples=resamples, real=rates)
    alarms = sum(r[0] for r in rows)
    print(
        f"Gapminder's real per-question rates ({config}, {rates.size} questions × 10 answers): {releases} re-draws, "
        f"false alarms {alarms} = {alarms / releases:.2%} (95 % upper bound {upper_95(alarms, releases):.2%}) "
        f"[{time.perf_counter() - started:.0f} s]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=2000, help="null releases per size")
    parser.add_argument("--planted", type=int, default=200, help="releases per planted effect size")
    parser.add_argument(
        "--resamples", type=int, default=999, help="sign-flip resamples per null test (planted: the production 4,999)"
    )
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    settings = verdicts.VerdictSettings(resamples=args.resamples)
    started = time.perf_counter()
    print(
        f"alpha {settings.alpha} (Holm, family-wise), q {settings.q} (BH), power {settings.power}, "
        f"{settings.resamples} resamples per test, {args.workers} worker process(es)"
    )
    with ProcessPoolExecutor(args.workers, initializer=one_blas_thread) as pool:
        for size in ("default", "paper"):
            null_releases(pool, args.workers, size, args.releases, args.resamples, args.seed)
        planted(pool, args.workers, args.planted, verdicts.VerdictSettings().resamples, args.seed)
        gapminder_real(pool, args.workers, args.releases, args.resamples, args.seed)
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
