"""The alarm on a real model's own noise: how often a release that changed nothing pages, and how often real harm
does, on the bundled Gemma's real answers, through ``geomon run`` and a loopback webhook.

A/A. The same weights served again and again as releases (``variants:`` ``aa-0`` … ``aa-K`` of ``gemma3-270m``,
each at sampling temperature ``--temperature`` with its own seed — which seeds each request with a seed of its
own, so answers differ by chance alone and no release shares one random stream; each one's predecessor the one
before, ``predecessors:``). One ``geomon run`` asks them all at the bench's profile
(``--size``: each suite's sample), records every evaluation in a fresh metric history and decides each release
against its predecessor exactly as a user's run does, with the announcer posting to a loopback webhook (json
style). A release is a false page when the webhook received a ``regression`` message about it. Printed: k/K over
the releases whose pairs share no evaluation (aa-1, aa-3, …: independent trials) with its one-sided 95 %
Clopper–Pearson upper bound, the same over every release, the α its decisions were taken at, and how many of its
comparisons were decidable (MDE at most the minimum effect) — a null rate on comparisons that could never page
says little, and the figure says how many could.

Planted real harm. One more run asks a much weaker serving of the same model (``weak``: its weights
re-quantized to ``--weak`` at the same temperature). For releases 1 … P, the release's own answers to the items
of one group (``--plant``: a suite, a column and its value; ``blend:mode=local``, every local-language answer) are
replaced by the weak serving's real answers to the same items; each such release (``planted-k``, predecessor
``aa-(k−1)``) is recorded and decided with ``release.track`` and the same announcer — what ``geomon run`` calls
for an evaluation. Printed: the share that paged with the headline it harms (``--target``) a regression, with a
two-sided 95 % interval, beside the change and the MDE the verdicts stated.

    python bench/real_null.py                 # 118 A/A releases of BLEnD, 59 independent (2 questions a country)
    python bench/real_null.py --releases 10 --planted 10 --size 10   # power on planted harm (10 questions a country)
    python bench/real_null.py --releases 2 --planted 1   # a smoke run (minutes: too few to judge a rate)
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the loopback webhook and the snapshots' settings are the tests'

from geomon import plan  # noqa: E402
from geomon.config import load_settings  # noqa: E402
from geomon.monitor import announce, release, views  # noqa: E402
from geomon.monitor.history import EvaluationRun, MetricHistory  # noqa: E402
from geomon.stats import verdicts  # noqa: E402
from geomon.stats.verdicts import Comparison  # noqa: E402
from geomon.suites import registry  # noqa: E402
from geomon_tests.conftest import SHARED, offline_sections  # noqa: E402
from geomon_tests.loopback import Webhook, serve  # noqa: E402

HOOK_ENV = "GEOMON_REAL_NULL_HOOK"
BASE = "gemma3-270m"
PROFILE = "real-null"
# BLEnD's short answers are the cheapest generated ones here (≈ 2.5 a second): 2 questions per country are 32
# clusters (country × question), enough for its headlines to be tested; log-probability suites (BorderLines) do
# not sample, so a temperature changes nothing in them.
SIZES = {"blend": {"sample_questions": 2}, "worldbench": {"sample_countries": 30}}


def settings_file(folder: Path, args: argparse.Namespace) -> Path:
    """A geomon.yaml of the bench's own: a fresh history under ``folder``, the snapshots in ../shared, the A/A
    releases and the weak serving as variants, the alerts to the loopback webhook."""
    aa = [f"aa-{k}" for k in range(args.releases + 1)]
    sampling = {"temperature": args.temperature}
    variants = [{"name": name, "of": BASE, "params": {**sampling, "seed": 1000 + k}} for k, name in enumerate(aa)]
    variants.append({"name": "weak", "of": BASE, "quantize": args.weak, "params": {**sampling, "seed": 999}})
    suites = args.suites.split(",")
    doc = {
        "store_url": f"sqlite:///{folder / 'store.sqlite'}",
        "results_dir": str(folder / "results"),
        "worldbank": {"snapshot": str(SHARED / "snapshots" / "worldbank" / "wdi-2023-12")},
        **offline_sections(),
        "alerts": {"webhook_url_env": HOOK_ENV, "webhook_style": "json"},
        "profiles": {PROFILE: {s: {**SIZES.get(s, {}), **size_of(args.size, s)} for s in suites}},
        "variants": variants,
        "predecessors": {new: old for old, new in itertools.pairwise(aa)},
    }
    path = folder / "geomon.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def size_of(size: int | None, suite: str) -> dict[str, int]:
    """``--size`` as the suite's sample option (its first ``sample`` option: the clusters its comparisons have)."""
    if size is None:
        return {}
    return {plan.sample_option(suite): size}


def run(path: Path, suites: str, models: list[str]) -> float:
    """``geomon run`` of ``models`` in release order, as a user runs it; its wall seconds."""
    start = time.monotonic()
    command = [str(Path(sys.executable).with_name("geomon")), "--config", str(path), "run", "--profile", PROFILE]
    command += ["--suite", suites, "--models", ",".join(models), "--lanes", "1", "--fail-on", "never"]
    done = subprocess.run(command, capture_output=True, text=True, env=os.environ.copy())
    if done.returncode != 0:
        sys.exit(f"bench: geomon run exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return time.monotonic() - start


@contextlib.contextmanager
def webhook() -> Iterator[list[dict[str, Any]]]:
    """A loopback webhook, its URL in ``HOOK_ENV`` while it runs; yields the bodies it receives."""
    state: dict[str, Any] = {"posts": []}
    with serve(Webhook, state) as url:
        os.environ[HOOK_ENV] = f"{url}/hook"
        try:
            yield state["posts"]
        finally:
            os.environ.pop(HOOK_ENV, None)


def upper_bound(k: int, n: int) -> float:
    """The one-sided 95 % Clopper–Pearson upper bound of a rate seen k times in n."""
    return 1.0 if k >= n else float(stats.beta.ppf(0.95, k + 1, n - k))


def interval(k: int, n: int) -> tuple[float, float]:
    """The two-sided 95 % Clopper–Pearson interval of a rate seen k times in n."""
    low = 0.0 if k == 0 else float(stats.beta.ppf(0.025, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(0.975, k + 1, n - k))
    return low, high


def decided(history: MetricHistory, model: str) -> pd.DataFrame:
    """Every stored comparison of ``model``'s evaluations, with its suite."""
    evaluations = history.evaluations(model=model)
    if evaluations.empty:
        return pd.DataFrame(columns=["suite", "verdict", "mde", "min_effect", "alpha", "evaluation_id"])
    return history.comparisons(evaluations["evaluation_id"]).merge(evaluations[["evaluation_id", "suite"]])


def decidable(rows: pd.DataFrame) -> int:
    """Comparisons that could see a regression of their minimum effect, as the decision labelled them
    (``views.decidable``: what ``geomon run``'s closing screen counts)."""
    return len(views.decidable([Comparison.of(r) for r in rows.to_dict("records")])) if len(rows) else 0


def null_rows(history: MetricHistory, posts: list[dict], releases: int) -> list[dict[str, Any]]:
    """Per A/A release (aa-1 … aa-K): whether it paged, the α it was decided at, its decidable comparisons."""
    out = []
    for k in range(1, releases + 1):
        model = f"aa-{k}"
        rows = decided(history, model)
        pages = [p["body"] for p in posts if p["body"]["kind"] == "regression" and p["body"]["model"] == model]
        out.append(
            {
                "model": model,
                "paged": bool(pages),
                "titles": [b["title"] for b in pages],
                "spent": float(rows.groupby("evaluation_id")["alpha"].max().sum()) if len(rows) else 0.0,
                "comparisons": int(rows["p_value"].notna().sum()) if len(rows) else 0,
                "decidable": decidable(rows),
            }
        )
    return out


def plant(args: argparse.Namespace, path: Path, posts: list[dict]) -> list[dict[str, Any]]:
    """Releases 1 … P with one group's answers taken from the weak serving, each recorded and decided as ``geomon
    run`` records an evaluation; per release, whether it paged with ``--target`` a regression, and its numbers."""
    suite, _, where = args.plant.partition(":")
    column, _, value = where.partition("=")
    settings = load_settings(path)
    history = MetricHistory(settings.store_url)
    tracked = registry.suite(suite).tracked
    tell = announce.announcer(settings.alerts, changes={})
    release_plan = release.release_plan(settings.verdicts)
    recorded = history.evaluations(suite=suite, model="weak")
    if recorded.empty:
        sys.exit(f"bench: the weak serving has no {suite} evaluation to plant from")
    scope = str(recorded["scope"].iloc[-1])  # the release's sample, as every A/A release was asked it
    weak = history.evaluations_of(suite, scope, model="weak")[-1]
    out = []
    for k in range(1, args.planted + 1):
        own = history.evaluations_of(suite, scope, model=f"aa-{k}")[-1]
        items = own.items.copy()
        harmed = items[column].astype(str) == value
        if not harmed.any():
            sys.exit(f"bench: --plant {args.plant}: no {suite} item has {column} = {value!r}")
        weak_rows = weak.items.set_index(weak.items["item"].astype(str))
        keys = items.loc[harmed, "item"].astype(str)
        items.loc[harmed, weak_rows.columns] = weak_rows.loc[keys, weak_rows.columns].to_numpy()
        model = f"planted-{k}"
        when = datetime.now(UTC) + timedelta(minutes=k)
        run_ = EvaluationRun(suite, model, scope=scope, predecessor=f"aa-{k - 1}", evaluated_at=when, origin="geomon")
        figures = release.declared_figures(suite, tracked, items)
        start = len(posts)
        release.track(history, run_, figures, items, tracked, settings.verdicts, plan=release_plan, announcer=tell)
        rows = decided(history, model)
        target = rows[(rows["metric"] == args.target) & (rows["breakdown"].fillna("") == "")]
        paged = any(p["body"]["kind"] == "regression" for p in posts[start:])
        t = target.iloc[0] if len(target) else None
        out.append(
            {
                "model": model,
                "paged": paged and t is not None and t["verdict"] == verdicts.REGRESSION,
                "change": float(t["change"]) if t is not None else float("nan"),
                "mde": float(t["mde"]) if t is not None and t["mde"] is not None else float("nan"),
                "p": float(t["p_value"]) if t is not None and t["p_value"] is not None else float("nan"),
                "verdict": str(t["verdict"]) if t is not None else "not compared",
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--releases", type=int, default=118, help="A/A releases in a chain (every other one: the rate's denominator)"
    )
    parser.add_argument("--planted", type=int, default=0, help="releases with one group's answers made weak")
    parser.add_argument("--suites", default="blend", help="the suites every release runs")
    parser.add_argument("--size", type=int, default=None, help="each suite's sample (default: the bench's)")
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--weak", default="Q2_K", help="the weak serving's quantization type")
    parser.add_argument("--plant", default="blend:mode=local", help="suite:column=value: the items made weak")
    parser.add_argument("--target", default="sem_b_local", help="the headline the planted harm must page on")
    args = parser.parse_args(argv)
    started, cpu = time.monotonic(), time.process_time()
    with tempfile.TemporaryDirectory(prefix="geomon-real-null-") as tmp, webhook() as posts:
        folder = Path(tmp)
        path = settings_file(folder, args)
        os.environ["GEOMON_CONFIG"], os.environ["DAGSTER_HOME"] = str(path), str(folder)
        models = [f"aa-{k}" for k in range(args.releases + 1)]
        seconds = run(path, args.suites, models)
        history = MetricHistory(load_settings(path).store_url)
        rows = null_rows(history, posts, args.releases)
        # Consecutive releases share an evaluation (aa-k is aa-(k+1)'s predecessor); the odd ones' pairs — (aa-0,
        # aa-1), (aa-2, aa-3), … — share none, so they are independent trials and the bound is theirs.
        disjoint = rows[::2]
        paged, paged_disjoint = sum(r["paged"] for r in rows), sum(r["paged"] for r in disjoint)
        print(
            f"real null: {len(disjoint)} independent A/A releases of {BASE} at temperature {args.temperature} "
            f"({args.suites}, disjoint pairs, each request its own seed; {seconds:.0f} s of geomon run): "
            f"{paged_disjoint}/{len(disjoint)} paged, one-sided 95 % upper bound "
            f"{upper_bound(paged_disjoint, len(disjoint)):.3f}; all {len(rows)} consecutive releases (pairs share an "
            f"evaluation): {paged}/{len(rows)} paged; α spent per release max {max(r['spent'] for r in rows):.3f}; "
            f"comparisons per release {rows[0]['comparisons']}, decidable (MDE ≤ minimum effect) median "
            f"{sorted(r['decidable'] for r in rows)[len(rows) // 2]}"
        )
        for r in rows:
            if r["paged"]:
                print(f"  false page: {r['model']}: {'; '.join(r['titles'])}")
        if args.planted:
            run(path, args.plant.partition(":")[0], ["weak"])
            planted = plant(args, path, posts)
            hits = sum(r["paged"] for r in planted)
            low, high = interval(hits, len(planted))
            print(
                f"planted real harm ({args.plant}'s answers from {BASE} re-quantized {args.weak}): "
                f"{hits}/{len(planted)} paged on {args.target} (95 % {low:.2f}–{high:.2f})"
            )
            for r in planted:
                print(
                    f"  {r['model']}: {args.target} change {r['change']:.3g} (p {r['p']:.3g}), stated MDE "
                    f"{r['mde']:.3g}: {r['verdict']}"
                )
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"wall {time.monotonic() - started:.0f} s, CPU {time.process_time() - cpu + children.ru_utime:.0f} s "
        "(user, this process and geomon run's)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
