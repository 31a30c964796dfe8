"""`geomon run`: the suites' graphs for every registered model, in turn or in lanes, and the closing screen."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from geomon.cli.common import FAIL_ON, FAIL_ON_HELP, UsageError, dagster_home, gate, named_models
from geomon.cli.lanes import RunOutcome, lanes_of, run_in_lanes
from geomon.cli.plan import confirm_plan, detectable, run_plan
from geomon.cli.tables import terminal_table
from geomon.config import load_settings
from geomon.engine.registry import model_weights

log = logging.getLogger("geomon")


def cmd_run(args: argparse.Namespace) -> int:
    import dagster as dg

    if args.epoch:
        os.environ["GEOMON_CACHE_EPOCH"] = args.epoch
    from geomon.suites.registry import check_profile, resolve

    settings = load_settings(args.config)
    if args.config:  # the runs' resources read the same file
        os.environ["GEOMON_CONFIG"] = str(Path(args.config).resolve())
    specs = named_models(settings, args.models.split(","), "--models") if args.models else settings.models
    names = [s.name for s in specs]
    for spec in specs:  # a variant's weights are made (re-quantized, once) or refused here, before anything is asked
        if spec.change is not None and spec.bundled:
            model_weights(spec)
    chosen = resolve(args.suite, "--suite")
    check_profile(args.profile, settings.profiles)
    lane = bool(args.lane_report)  # a lane of another `geomon run`, which warned, planned and confirmed
    if not lane:
        warn_broken_suites()
    home = dagster_home()
    from geomon.plan import PlanError

    try:
        plans = run_plan(settings, specs, chosen, args.profile, {s.name: suite_flags(args, s) for s in chosen})
    except PlanError as exc:  # the plan is advice: a run does not need it
        if not lane:  # the run that started this lane said so
            print(f"geomon: no plan before this run ({exc})", file=sys.stderr)
        plans = []
    if plans and not lane and not confirm_plan(settings, plans, args):
        print(
            "geomon: not run (the plan's estimate is above confirm_above_minutes / confirm_above_usd)", file=sys.stderr
        )
        return 1
    from geomon.monitor import alerts

    if not lane and not alerts.notifiers(settings.alerts):  # said once, not per alert
        log.warning(
            "alerts go nowhere: no channel is configured (set %s, or alerts.smtp_host and email_to); "
            "`geomon alerts test` checks them",
            settings.alerts.webhook_url_env,
        )
    started = time.monotonic()
    groups = lanes_of(chosen, plans, args.lanes)
    with dg.DagsterInstance.get() as instance:
        if len(groups) > 1:
            from geomon.defs.runs import register_models

            register_models(instance, names)  # once, here: two lanes adding the same new model would collide
            outcome = run_in_lanes(args.argv, groups)
        else:
            outcome = run_in_turn(instance, args, settings, chosen, names, plans)
        if lane:  # that run reports
            Path(args.lane_report).write_text(json.dumps(dataclasses.asdict(outcome)))
            return 0
        for line in outcome.failed:
            print(f"geomon: {line}", file=sys.stderr)
        print(f"\nDone in {time.monotonic() - started:.0f}s for {', '.join(names)}.")
        for suite in chosen:
            report = settings.results_dir / suite.name / "report.html"
            board = report.parent / "leaderboard.csv"
            if board.exists():
                print(f"\n{suite.title}:\n{terminal_table(board, suite)}")
            print(detectable(plans, suite.name))
            print(f"Results: {report.parent} (leaderboard.csv and per-model CSVs)\nReport:  {report}")
        from geomon.defs.drift import record_trends

        page = record_trends(instance, settings)  # monitor/trends materialized, as the catalog shows it
        print(f"\nTrends (every evaluation in the history, over real dates): {page}")
        print(imported_regressions(settings))
        print(serving_releases(settings, specs), end="")
        print(f"Every report: {settings.results_dir / 'index.html'}")
        if args.profile == "quick":
            print(
                "Profile quick demonstrates the machinery: the bundled models are too small, and these samples too "
                "few, to say anything about the world; most comparisons are not decidable at it (`geomon plan` "
                "names them). An imported history above (a benchmark's published results: make history) is real."
            )
        if args.profile != "paper":
            print(
                f"Profile {args.profile}; each paper's full size: make run PROFILE=paper "
                "(geomon plan --profile paper says what it asks first)"
            )
    print(f"Dagster instance: {home} — open the UI with `make ui` (dg dev, http://127.0.0.1:3000)")
    regressions, blocking = outcome.regressions, outcome.blocking
    status = gate(args.fail_on, blocking, regressions)
    if status:
        print(
            f"geomon: exit {status}: {regressions} regression check(s), {blocking} blocking check(s) failed "
            f"(--fail-on {args.fail_on})",
            file=sys.stderr,
        )
    return status


def run_in_turn(
    instance: Any, args: argparse.Namespace, settings: Any, chosen: Sequence[Any], names: list[str], plans: list[Any]
) -> RunOutcome:
    """The chosen suites one after another in this process, each model's partitions in turn."""
    from geomon.defs.factory import suite_runs
    from geomon.defs.runs import failed_checks

    # Dagster's console log prints a failed step with its stack trace; geomon prints one line per failure
    # (the run's events, with the trace, stay in the UI). -v shows everything.
    level = "DEBUG" if args.verbose else "CRITICAL"
    results = []
    for suite in chosen:
        log.info("%s for %s", suite.title, ", ".join(names))
        # A model whose every ask is stored may be unchanged since its last run: the plan says what it would read.
        ran, described = suite_runs(suite.name).run_from_options(
            instance,
            names,
            suite_flags(args, suite),
            settings,
            level,
            profile=args.profile,
            plans=[] if args.rerun else plans,
        )
        log.info("%s done (%s)", suite.title, described)
        print(unchanged_line(suite.title, ran), end="")
        results += ran
    return RunOutcome.of(failed_checks(results))


def unchanged_line(title: str, results: list[Any]) -> str:
    """``WorldBench: gemma3-270m, smollm2-135m-instruct unchanged since the last run …``, or nothing when every
    model ran."""
    from geomon.defs.runs import Unchanged

    kept = [r for r in results if isinstance(r, Unchanged)]
    if not kept:
        return ""
    what = ", ".join(" at ".join(r.partition.split("|")) for r in kept)
    return (
        f"{title}: {what} unchanged since the last run (assets fresh, every answer stored): their stages were not "
        "run again, only the decision against the history as it is now (`--rerun` runs everything)\n"
    )


def imported_regressions(settings: Any) -> str:
    """The closing screen's lines on the imported history: each open regression, model vs baseline, metric,
    change in its units and p (``views.open_regressions``)."""
    from geomon.monitor import views
    from geomon.monitor.history import MetricHistory
    from geomon.suites import registry

    found = views.open_regressions(MetricHistory(settings.store_url), imported_only=True)
    bounds = {(suite, metric): bound for suite, metric, _, _, bound in registry.headline_catalog()}
    lines = [
        f"  {suite} {views.verdict_phrase(model, row, bounds.get((suite, row.metric)))}" for suite, model, row in found
    ]
    if not found:
        return "No open regression among the imported evaluations."
    head = f"{len(found)} open regression(s) among the imported evaluations (`geomon alerts ack` acknowledges one):"
    return "\n".join([head, *lines])


def serving_releases(settings: Any, specs: Sequence[Any]) -> str:
    """The closing screen's lines on each serving-change release the run evaluated (``views.release_decided``)."""
    from geomon.monitor import views
    from geomon.monitor.history import MetricHistory
    from geomon.suites import registry

    history = MetricHistory(settings.store_url)
    bounds = {(suite, metric): bound for suite, metric, _, _, bound in registry.headline_catalog()}
    changes = settings.serving_changes()
    blocks = ["\n".join(views.release_decided(history, s.name, changes[s.name], bounds)) for s in specs if s.change]
    return "".join(f"\n{block}\n" for block in blocks)


def warn_broken_suites() -> None:
    """One ``geomon:`` line per suite module that cannot load: left out, the others run."""
    from geomon.suites.registry import broken

    for why in broken().values():
        print(f"geomon: {why} (left out; the other suites run)", file=sys.stderr)


def suite_flags(args: argparse.Namespace, suite: Any) -> dict[str, Any]:
    """``geomon run``'s flags of ``suite`` (its ``RunOption``s, by dest; None where not given)."""
    return {option.dest: getattr(args, option.dest) for option in suite.options}


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse the sample sizes and lane counts argparse's types let through but a run cannot use."""
    from geomon.suites.registry import suites

    for option in {o.flag: o for info in suites().values() for o in info.options if o.is_sample}.values():
        value = getattr(args, option.dest, None)
        if value is not None and value < 0:
            raise UsageError(f"{option.flag} {value}: a sample size is 0 (all) or a positive number")
    if args.lanes < 1:
        raise UsageError(f"--lanes {args.lanes}: the suites run in 1 lane or more")


def register(sub: Any, known: dict[str, Any]) -> None:
    """``geomon run`` and its flags, each suite's own from the registry (``known``)."""
    run = sub.add_parser("run", help="materialize the suites' graphs for every registered model")
    run.add_argument("--suite", default=",".join(known), help=f"comma-separated: {', '.join(known)}")
    run.add_argument("--models", help="comma-separated model names (default: all registered)")
    run.add_argument(
        "--profile",
        default="default",
        help="run profile: quick (minutes), default, paper (each paper's full size) or one geomon.yaml defines; "
        "it sets every suite's sample, the flags below override it",
    )
    for info in known.values():  # each suite's own options, from the registry
        group = run.add_argument_group(info.title)
        for option in info.options:
            group.add_argument(option.flag, type=option.type, default=option.default, help=option.help)
    run.add_argument("--epoch", help="cache epoch: a new value re-asks every question on purpose (old answers stay)")
    run.add_argument("--fail-on", choices=FAIL_ON, default="check", help=FAIL_ON_HELP)
    run.add_argument("--yes", action="store_true", help="never ask before a run estimated above the limits")
    run.add_argument(
        "--rerun",
        action="store_true",
        help="run every model again, also one whose answers are all stored and whose assets are fresh (by default "
        "such a model is not run again: its last results and checks stand)",
    )
    run.add_argument(
        "--lanes",
        type=int,
        default=1,
        help="run the suites in this many processes at once, each lane its suites one after another (default 1): "
        "one lane's scoring fills the cores another's model leaves idle; each lane starts its own local model "
        "servers (make run: 2)",
    )
    run.add_argument("--lane-report", help=argparse.SUPPRESS)  # where a lane writes its outcome for its run
    run.set_defaults(func=cmd_run, check=check_arguments)
