"""The ``geomon`` command: run the benchmarks, list models, serve a bundled model, manage the store."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import math
import os
import signal
import sys
import time
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from geomon.config import ConfigError, load_settings
from geomon.engine.registry import RegistryError, model_weights

log = logging.getLogger("geomon")


class UsageError(ValueError):
    """A command-line value geomon refuses (an unknown name, a negative sample): one ``geomon:`` line, exit 1."""


def named_models(settings: Any, names: Sequence[str], flag: str) -> list[Any]:
    """The models ``names`` names, in order; an unknown one is a ``UsageError`` naming ``flag``."""
    try:
        return [settings.model(name.strip()) for name in names]
    except RegistryError as exc:
        raise UsageError(f"{flag}: {exc}") from None


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse the values argparse's types let through but no command can use, before anything runs."""
    from geomon.suites.registry import suites

    if args.command == "run":
        for option in {o.flag: o for info in suites().values() for o in info.options if o.is_sample}.values():
            value = getattr(args, option.dest, None)
            if value is not None and value < 0:
                raise UsageError(f"{option.flag} {value}: a sample size is 0 (all) or a positive number")
        if args.lanes < 1:
            raise UsageError(f"--lanes {args.lanes}: the suites run in 1 lane or more")
    if args.command == "plan" and args.detect is not None and not args.detect > 0:
        raise UsageError(f"--detect {args.detect:g}: the change to detect is a positive number (the headline's units)")
    if args.command == "trends":
        for breakdown in args.breakdown:
            group, _, value = breakdown.partition("=")
            if not group.strip() or not value.strip():
                raise UsageError(f"--breakdown {breakdown}: a group is COLUMN=VALUE, e.g. family=ideology")


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    for noisy in ("httpx", "httpx2", "openai", "urllib3", "alembic", "great_expectations"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if not verbose:
        # geomon uses Dagster's beta and preview APIs deliberately (observable sources, partition mappings):
        # their notices say nothing a user can act on. -v shows them.
        warnings.filterwarnings("ignore", message=r".* is currently in (beta|preview)")


def _dagster_home() -> Path:
    """DAGSTER_HOME defaults to the folder holding dagster.yaml (the repository root)."""
    home = os.environ.get("DAGSTER_HOME")
    if not home:
        if not Path("dagster.yaml").exists():
            raise ConfigError("set DAGSTER_HOME (a folder with dagster.yaml) or run from the repository root")
        home = str(Path.cwd())
        os.environ["DAGSTER_HOME"] = home
    return Path(home)


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
    home = _dagster_home()
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
                "names them). An imported history above (Gapminder's published results: make history) is real."
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


@dataclasses.dataclass
class RunOutcome:
    """What a run's failed checks come to: one line each, and the counts its exit status is gated on."""

    failed: list[str]
    regressions: int
    blocking: int

    @classmethod
    def of(cls, checks: Sequence[Any]) -> RunOutcome:
        return cls(
            failed=[describe_check(c) for c in checks],
            regressions=sum(c.check_name == "no_regression" for c in checks),
            blocking=sum(bool(getattr(c, "blocking", False)) for c in checks),
        )


def lanes_of(chosen: Sequence[Any], plans: Sequence[Any], lanes: int) -> list[list[Any]]:
    """The suites split into at most ``lanes`` lanes of about equal work, each in the registry's order: the
    longest first to the lane with the least, by the plan's asks still to make (each suite counts one more, so
    suites with every answer stored spread evenly)."""
    work = {suite.name: 1 + sum(p.to_ask for p in plans if p.suite == suite.name) for suite in chosen}
    groups: list[list[Any]] = [[] for _ in range(max(1, min(lanes, len(chosen))))]
    loads = [0] * len(groups)
    for suite in sorted(chosen, key=lambda s: work[s.name], reverse=True):
        least = loads.index(min(loads))
        groups[least].append(suite)
        loads[least] += work[suite.name]
    return [sorted(group, key=list(chosen).index) for group in groups if group]


def lane_argv(argv: Sequence[str], suites: Sequence[Any], report: Path) -> list[str]:
    """One lane's command line: this run's, with the lane's suites, in one lane, writing its outcome to
    ``report``."""
    kept: list[str] = []
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token.split("=", 1)[0] in ("--suite", "--lanes", "--lane-report"):
            skip = "=" not in token
        else:
            kept.append(token)
    return [*kept, "--suite", ",".join(s.name for s in suites), "--lane-report", str(report)]


class LaneFailed(RuntimeError):
    """A lane ended without its outcome; its ``geomon:`` line is printed."""

    def __init__(self, status: int) -> None:
        super().__init__(f"a lane ended with exit status {status}")
        self.status = status


# How a lane starts: this interpreter running geomon's command line (the tests start stand-ins).
LANE_COMMAND = (sys.executable, "-m", "geomon.cli")


def run_in_lanes(argv: Sequence[str], groups: Sequence[Sequence[Any]]) -> RunOutcome:
    """Each group of suites as a `geomon run` of its own, all at once; their outcomes together. Their progress
    goes to this terminal as it comes. A lane that fails (its `geomon:` line is its own; one killed by a signal is
    named here) ends the run with its exit status once every lane has ended, after the failed checks of the lanes
    that finished. SIGTERM stops the lanes as Ctrl-C does, and a lane dies with this process however it ends."""
    import subprocess
    import tempfile

    from geomon.engine.local import die_with_parent

    for group in groups:
        log.info("lane: %s", ", ".join(suite.title for suite in group))
    sys.stdout.flush()  # this run's lines before the lanes' own, in a pipe too

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    with tempfile.TemporaryDirectory(prefix="geomon-lanes-") as folder:
        reports = [Path(folder) / f"lane-{n}.json" for n in range(len(groups))]
        lanes: list[subprocess.Popen] = []
        try:
            for group, report in zip(groups, reports, strict=True):
                command = [*LANE_COMMAND, *lane_argv(argv, group, report)]
                lanes.append(subprocess.Popen(command, preexec_fn=lambda: die_with_parent(signal.SIGTERM)))
            statuses = [lane.wait() for lane in lanes]
        finally:
            signal.signal(signal.SIGTERM, previous)
            for lane in lanes:  # stopped as on Ctrl-C (Dagster ends the step); a terminal's Ctrl-C reached them too
                if lane.poll() is None:
                    lane.terminate()
            for lane in lanes:
                lane.wait()
        if 130 in statuses:  # an interrupted lane prints nothing: this run says it once
            raise KeyboardInterrupt
        finished = [RunOutcome(**json.loads(r.read_text())) for r, s in zip(reports, statuses, strict=True) if not s]
    outcome = RunOutcome(
        failed=[line for o in finished for line in o.failed],
        regressions=sum(o.regressions for o in finished),
        blocking=sum(o.blocking for o in finished),
    )
    failed = [(status, group) for status, group in zip(statuses, groups, strict=True) if status]
    if failed:
        for line in outcome.failed:
            print(f"geomon: {line}", file=sys.stderr)
        for status, group in failed:
            if status < 0:
                suites = ", ".join(suite.name for suite in group)
                print(f"geomon: the lane running {suites} was killed (signal {-status})", file=sys.stderr)
        raise LaneFailed(next((status for status, _ in failed if status > 0), 1))
    return outcome


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


TERMINAL_WIDTH = 120


def terminal_table(board_csv: Path, suite: Any) -> str:
    """A suite's leaderboard as plain text for a terminal: the model (and table version, persona) and the
    headline metrics, rounded, as many columns as fit in ``TERMINAL_WIDTH``; the rest is in the report."""
    import pandas as pd

    board = pd.read_csv(board_csv)
    keys = [c for c in ("model", "revision", "persona") if c in board]
    metrics = list(dict.fromkeys(h.metric for h in suite.headlines if h.metric in board))  # a column once
    for metric in metrics:  # each headline with its 95 % interval where the board has one
        low, high = f"{metric}_ci_low", f"{metric}_ci_high"
        if low in board and high in board:
            board[metric] = [
                "—" if pd.isna(v) else f"{v:.3g}" + (f" [{lo:.3g}, {hi:.3g}]" if pd.notna(lo) and pd.notna(hi) else "")
                for v, lo, hi in zip(board[metric], board[low], board[high], strict=True)
            ]
    shown = keys[:]
    for metric in metrics:
        text = board[[*shown, metric]].round(3).to_string(index=False)
        if max(len(line) for line in text.splitlines()) > TERMINAL_WIDTH:
            break
        shown.append(metric)
    table = board[shown].round(3).to_string(index=False, na_rep="—")
    # Which figures their samples cannot carry, said here as in the leaderboard and the report.
    notes = board["sample_note"].fillna("") if "sample_note" in board else pd.Series(dtype=str)
    marked = [
        f"  {' '.join(str(row[k]) for k in keys)}: {note}"
        for row, note in zip(board.to_dict("records"), notes, strict=False)
        if note
    ]
    return "\n".join([table, *(m if len(m) <= TERMINAL_WIDTH else m[: TERMINAL_WIDTH - 1] + "…" for m in marked)])


def describe_check(check: Any) -> str:
    """A failed check as one line: where, what, and its numbers as ``name=value``."""
    numbers = []
    for name, entry in check.metadata.items():
        value = getattr(entry, "value", entry)
        if isinstance(value, int | float | str) and len(str(value)) <= 40:
            numbers.append(f"{name}={value:.4g}" if isinstance(value, float) else f"{name}={value}")
    where = check.asset_key.to_user_string()
    partition = getattr(check, "partition", None)
    return f"check {check.check_name} on {where}{f' [{partition}]' if partition else ''} failed: {', '.join(numbers)}"


def write_trends(settings: Any, breakdowns: Sequence[str] = ()) -> tuple[Path, Any]:
    """The trends report and the results index from the whole history (with each group of ``breakdowns``
    charted too); returns the page and the table."""
    from geomon.monitor import results

    page, _, table = results.write_trends(settings.results_dir, settings.store_url, breakdowns)
    return page, table


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


def cmd_trends(args: argparse.Namespace) -> int:
    page, table = write_trends(load_settings(args.config), args.breakdown)
    shown = ["suite", "metric", "breakdown", "model", "evaluated_at", "value", "ci_low", "ci_high"]
    latest = table.groupby(["suite", "metric", "breakdown", "model", "scope"]).tail(1)[shown] if len(table) else table
    shown_table = latest.to_string(index=False, na_rep="", float_format=lambda v: f"{v:.4g}")
    print(shown_table if len(table) else "no history yet")
    print(f"\nReport: {page}")
    return 0


def _print_frame(frame, form: str) -> None:
    if form == "csv":
        print(frame.to_csv(index=False), end="")
    elif form == "json":
        print(frame.to_json(orient="records", force_ascii=False, indent=1))
    else:
        print(
            frame.to_string(index=False, na_rep="", float_format=lambda v: f"{v:.4g}")
            if len(frame)
            else "no evaluations"
        )


def warn_broken_suites() -> None:
    """One ``geomon:`` line per suite module that cannot load: left out, the others run."""
    from geomon.suites.registry import broken

    for why in broken().values():
        print(f"geomon: {why} (left out; the other suites run)", file=sys.stderr)


def suite_flags(args: argparse.Namespace, suite: Any) -> dict[str, Any]:
    """``geomon run``'s flags of ``suite`` (its ``RunOption``s, by dest; None where not given)."""
    return {option.dest: getattr(args, option.dest) for option in suite.options}


def flags_set(options: Sequence[Any], values: dict[str, Any]) -> list[str]:
    """``["--sample 3", "--territories 2"]``: the flags among ``options`` whose value in ``values`` (by dest) is
    set away from its default."""
    return [f"{o.flag} {values[o.dest]}" for o in options if values.get(o.dest) not in (None, o.default)]


def flags_given(args: argparse.Namespace) -> str:
    """``--sample 3, --territories 2``: the suite flags this run sets away from their defaults."""
    from geomon.suites.registry import suites

    options = {o.flag: o for info in suites().values() for o in info.options}.values()
    return ", ".join(flags_set(list(options), vars(args)))


def run_plan(
    settings: Any, specs: list[Any], chosen: list[Any], profile: str, flags: dict[str, dict[str, Any]]
) -> list[Any]:
    """``geomon plan``'s rows for a run at its ``flags`` (by suite): what it asks and what each headline can detect
    at its sample. A suite whose prompts cannot be built at these flags (an unknown persona, a year the data does
    not have) stops the run before anything is asked, naming the suite, the flags and why."""
    from geomon import plan
    from geomon.monitor.history import MetricHistory

    history, store, plans = MetricHistory(settings.store_url), settings.store(), []
    for info in chosen:
        given = flags.get(info.name, {})
        try:
            plans += plan.suite_plans(settings, specs, info, profile, store, history, flags=given)
        except plan.PlanError:
            raise
        except Exception as exc:  # the suite's own stages refused the options
            at = ", ".join(flags_set(info.options, given)) or f"profile {profile}'s options"
            why = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc  # a KeyError quotes its text
            raise UsageError(f"suite {info.name}: its prompts cannot be built at {at}: {why}") from exc
    return plans


def release_plans(settings: Any, plans: list[Any], models: Sequence[Any], profile: str) -> str:
    """Per serving-change release planned (a variant and its base): which of its comparisons the profile decides, per
    suite, before anything is asked."""
    changes = settings.serving_changes()
    lines = []
    for spec in (s for s in models if s.change):
        mine = [p for p in plans if p.model == spec.name]
        counts = [f"{p.suite} {sum(c.decidable for c in p.comparisons)} of {len(p.comparisons)}" for p in mine]
        named = [f"{p.suite} {c.name}" for p in mine for c in p.comparisons if c.decidable]
        lines.append(
            f"\nRelease {spec.name} vs {spec.variant_of} ({changes[spec.name]}): comparisons decidable at profile "
            f"{profile}: {', '.join(counts)}" + (f" — {'; '.join(named)}" if named else "")
        )
    return "".join(f"{line}\n" for line in lines)


def detectable(plans: list[Any], suite: str) -> str:
    """``mean_error ≥ 0.18, …``: the smallest change each headline of ``suite`` detects at this sample."""
    from geomon import plan

    first = next((p for p in plans if p.suite == suite), None)
    if first is None:
        return ""
    parts = [plan.headline_mde(first, h).replace(" ?", " ? (after a first run)") for h in first.headlines]
    decidable = sum(c.decidable for c in first.comparisons)
    sample = plan.cluster_count(first.headlines[0].clusters if first.headlines else 0)
    return (
        f"Detectable at this sample (80 % power, {sample}; "
        f"{decidable} of {len(first.comparisons)} comparisons decidable, `geomon plan` names the rest and why): "
        + ", ".join(parts)
    )


def confirm_plan(settings: Any, plans: list[Any], args: argparse.Namespace) -> bool:
    """Print what the run will ask (``geomon plan``'s totals) and, before a run estimated above
    ``confirm_above_minutes`` or ``confirm_above_usd``, ask on a terminal; elsewhere such a run is not started
    (the UI's runs refuse it the same way). ``--yes`` never asks."""
    from geomon import plan

    total = plan.totals(plans)
    unknown = f" (pace unknown for {', '.join(total['pace_unknown'])})" if total["pace_unknown"] else ""
    cost = f", about ${total['cost']:,.2f}" if total["cost"] is not None else ""
    given = flags_given(args)
    print(
        f"plan: profile {args.profile}{' with ' + given if given else ''}: {total['to_ask']:,} asks to make, "
        f"{total['stored']:,} already stored, "
        f"about {plan.duration(total['seconds'])}{unknown}{cost} (geomon plan shows each suite and what it can detect)"
    )
    over = plan.above_limits(settings, plans)
    if not over or args.yes:
        return True
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print(f"geomon: the plan's estimate is {over}; to confirm: {plan.CONFIRM_HOW}", file=sys.stderr)
        return False
    return input(f"The plan's estimate is {over}. Run it? [y/N] ").strip().lower() in ("y", "yes")


def cmd_plan(args: argparse.Namespace) -> int:
    """What a run will ask, cost and be able to detect, per model × suite, without calling a model (beyond
    ``--probe``'s few requests)."""
    from geomon import plan
    from geomon.monitor import release
    from geomon.monitor.history import MetricHistory
    from geomon.stats.values import MetricKey
    from geomon.suites.registry import check_profile, resolve

    settings = load_settings(args.config)
    models = named_models(settings, args.models.split(","), "--models") if args.models else settings.models
    chosen = resolve(args.suites, "--suites")
    check_profile(args.profile, settings.profiles)
    store = settings.store()
    history = MetricHistory(settings.store_url)
    if args.probe:
        for spec in models:
            if plan.pace(store, spec) is None:
                prompts, asking = plan.build_prompts(
                    settings, chosen[0].name, settings.run_options(chosen[0].name, args.profile)
                )
                plan.probe(settings, spec, asking.requests(prompts, spec, settings), store)
    plans = plan.make_plan(settings, models, chosen, args.profile, store, history, full_size=True)
    frame = plan.table(plans)
    _print_frame(frame, args.format)
    total = plan.totals(plans)
    unknown = total["pace_unknown"]
    print(
        f"\nprofile {args.profile}: {total['to_ask']:,} asks to make ({total['stored']:,} already stored), about "
        f"{plan.duration(total['seconds'])}"
        + (f" (+ unknown for {', '.join(unknown)}: --probe measures)" if unknown else "")
        + (f", about ${total['cost']:,.2f}" if total["cost"] is not None else "")
        + f"; MDE at {settings.verdicts.power:.0%} power, one-sided, at each suite's share of the release's "
        f"α = {settings.verdicts.alpha} over its comparisons with 30 clusters or more "
        f"({release.release_plan(settings.verdicts).describe()})."
    )
    for note in sorted({p.note for p in plans if p.note}):
        print(f"note: {note}")
    for suite, revisions in {p.suite: list(p.revision_answers) for p in plans if len(p.revision_answers) > 1}.items():
        print(
            f"note: {suite}: prompts and clusters are the newest revision's; asks count every revision a run "
            f"evaluates ({', '.join(revisions)})"
        )
    for info in chosen:  # the same sample for every model: said once per suite, for the model that asks most
        largest = max((p for p in plans if p.suite == info.name), key=lambda p: p.asks, default=None)
        blind = [c for c in largest.comparisons if not c.decidable] if largest else []
        if blind:
            print(
                f"{info.name}: {len(blind)} of {len(largest.comparisons)} comparisons not decidable at profile "
                f"{args.profile} ({largest.asks:,} asks; budget {largest.budget:,} per model and suite):"
            )
            print("\n".join(f"  {line}" for line in plan.blind_lines(largest)))
    print(release_plans(settings, plans, models, args.profile), end="")
    if args.fit:
        from geomon.stats import sufficiency

        print(
            f"\nThe sizes that decide every comparison the budget allows ({settings.budget.asks_per_suite:,} asks per "
            f"model and suite), and test every one it can (≥ {sufficiency.MIN_SAMPLE} clusters), for geomon.yaml:"
            f"\nprofiles:\n  {args.profile}:"
        )
        for info in chosen:
            fitted = plan.fit(settings, info, args.profile, models[0], store, history)
            print(f"    {fitted.line()}")
    if args.detect:
        print(f"\nTo detect a change of {args.detect:g} (each headline's units) at 80 % power:")
        for info in chosen:
            first = next(p for p in plans if p.suite == info.name)
            for h in first.headlines:
                paging = sum(c.in_family and not c.disparity for c in first.comparisons)
                need = plan.clusters_to_detect(h.sd, args.detect, settings, info.name, paging)
                where = MetricKey(h.metric, h.breakdown)
                if need is None:
                    print(f"  {info.name} {where}: unknown until a first comparison is stored")
                    continue
                value = first.options.get(first.sample_option)
                scale = need / max(h.clusters, 1)
                sizes = f"{first.sample_option} {math.ceil(value * scale)}" if value else "its full size"
                print(f"  {info.name} {where}: {need:,} clusters (now {h.clusters:,}): {sizes} ({h.source})")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from geomon.monitor.history import MetricHistory
    from geomon.monitor.views import history_table
    from geomon.suites.registry import suites

    settings = load_settings(args.config)
    history = MetricHistory(settings.store_url)
    held = history.evaluations()
    info = suites().get(args.suite)
    if info is None and args.suite not in set(held["suite"]):
        known = sorted(set(suites()) | set(held["suite"]))
        raise UsageError(
            f"--suite {args.suite}: no such suite nor imported benchmark in the metric history; known: "
            + ", ".join(known)
        )
    evaluated = held.loc[held["suite"] == args.suite, "model"]
    if args.model and args.model not in set(evaluated) | {s.name for s in settings.models}:
        raise UsageError(
            f"--model {args.model}: not a registered model nor one evaluated in {args.suite}; evaluated: "
            + (", ".join(sorted(set(evaluated))) or "none yet")
        )
    headlines = [(h.metric, h.breakdown) for h in info.headlines] if info is not None else None
    bounds = {h.metric: h.bounds for h in info.headlines} if info is not None else None
    breakdowns = True if args.breakdowns == "all" else args.breakdowns or False
    table = history_table(history, args.suite, headlines, args.model, breakdowns, bounds)
    if args.format == "table":
        table = table.drop(columns=["evaluation_id", "origin"])
    _print_frame(table, args.format)
    return 0


ITEM_CELL_CHARS = 60  # a table cell of `geomon items` (csv and json give every character)


def cmd_items(args: argparse.Namespace) -> int:
    """Every item of a model's latest evaluation in a suite as it was scored: prompt, reply, parsed answer, gold,
    score and status, filtered by group and outcome."""
    from geomon.monitor import release, views
    from geomon.monitor.history import MetricHistory

    settings = load_settings(args.config)
    try:
        evaluation, rows, total = views.item_rows(
            MetricHistory(settings.store_url), args.suite, args.model, args.group, args.score or "", args.limit
        )
    except release.TrackingError as exc:
        raise UsageError(f"items: {exc}") from None
    print(
        f"{args.suite} {args.model}: evaluation {evaluation.evaluation_id} of {evaluation.when:%Y-%m-%d %H:%M}, "
        f"{len(rows)} of {total} items",
        file=sys.stderr,
    )
    if args.format == "table":
        # One line per cell, cut: a reply's newlines would break the table.
        rows = rows.map(lambda v: _one_line(v, ITEM_CELL_CHARS) if isinstance(v, str) else v)
    _print_frame(rows, args.format)
    return 0


def _one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


FAIL_ON = ("check", "regression", "never")


def gate(fail_on: str, failed_checks: int, regressions: int) -> int:
    """The exit status a CI job gates a release on: ``check`` fails on a failed blocking check or a regression
    alert, ``regression`` on a regression alert only, ``never`` on neither."""
    if fail_on == "never":
        return 0
    if regressions or (fail_on == "check" and failed_checks):
        return 3
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from geomon.monitor import imports
    from geomon.monitor.history import MetricHistory
    from geomon.stats import verdicts

    settings = load_settings(args.config)
    started = time.monotonic()
    if args.kind == "gapminder-results":
        from geomon.sources import gapminder as source

        snapshot = settings.gapminder.snapshot
        bank = source.read_snapshot(snapshot) if snapshot is not None else None
        default_entities = snapshot / "ddf" / "ddf--entities--model_configuration.csv" if snapshot else None
        entities = Path(args.entities) if args.entities else default_entities
        if entities is None:
            raise ConfigError("import gapminder-results: --entities FILE (the model configurations) is needed offline")
        runs = imports.gapminder_runs(args.path, entities, bank)
    elif args.kind == "lm-eval":
        if args.suite:
            raise ConfigError("import lm-eval: each task is its own suite; --suite is for items and inspect")
        runs = imports.lm_eval_runs([args.path, *args.more], args.group, settings.verdicts, args.cluster)
    else:
        if not args.suite:
            raise ConfigError(f"import {args.kind}: --suite NAME (the benchmark these outcomes belong to)")
        if args.kind == "inspect":
            if args.cluster:
                raise ConfigError(
                    "import inspect: --cluster is for items files (inspect_ai's epochs cluster on the sample id)"
                )
            runs = imports.inspect_runs([args.path, *args.more], args.suite, args.group, settings.verdicts)
        else:
            runs = imports.item_runs(args.path, args.suite, args.group, settings.verdicts, args.cluster)
    from geomon.monitor import alerts, announce, release
    from geomon.monitor.history import StoredComparison
    from geomon.monitor.views import verdict_text

    several_suites = len({r.suite for r in runs}) > 1  # lm-eval: one evaluation per model and task
    history = MetricHistory(settings.store_url)
    if not alerts.notifiers(settings.alerts):
        log.warning("alerts go nowhere: no channel is configured (set %s)", settings.alerts.webhook_url_env)
    recorded = imports.record_runs(
        history,
        runs,
        settings.verdicts,
        settings.lineage(),
        announcer=announce.announcer(settings.alerts),
        hosted={spec.name for spec in settings.models},  # a model geomon runs; the others only arrive by import
    )
    shown_in_dagster = (
        report_to_dagster(history, recorded, settings, Path(args.path)) if args.kind == "gapminder-results" else ""
    )
    new = [r for r in recorded if not r.tracked.evaluation.reused]
    for r in recorded:
        quiet = (verdicts.NO_CHANGE, verdicts.INSUFFICIENT)  # counted in the summary; `geomon history` lists them
        compared = [StoredComparison.of(row) for row in r.tracked.verdicts]
        shown = ", ".join(verdict_text(v) for v in compared if v.verdict not in quiet)
        state = "already recorded" if r.tracked.evaluation.reused else "recorded"
        against = f" vs {r.tracked.against.removeprefix('predecessor ')}" if r.tracked.against else ""
        summary = verdicts.summary(compared) if compared else ""
        what = f"{r.run.suite} {r.run.model}" if several_suites else r.run.model
        print(f"{r.run.evaluated_at:%Y-%m-%d} {what}: {state}{against}{': ' + summary if summary else ''}")
        if shown:
            print(f"    {shown}")
        unpaged = [part for v in compared if not v.alpha for part in v.note.split("; ")]
        for note in dict.fromkeys(part for part in unpaged if part.endswith(release.NEVER_PAGED)):
            print(f"    α 0: {note}")  # decided, shown, never paged: say so, not only "watch"
        if r.run.note and r.run.note != imports.RATES_ONLY:
            print(f"    {r.run.note}")
        for evaluation_id, told in r.tracked.told.items():
            for line in told:
                whose = (
                    "" if evaluation_id == r.tracked.evaluation.evaluation_id else " (a later release decided again)"
                )
                print(f"    alert{whose}: {line}")
    excluded = sum(r.run.excluded for r in recorded)
    suite = runs[0].suite if runs else "<suite>"
    if args.kind == "gapminder-results":
        rates_only = sum(r.run.note == imports.RATES_ONLY for r in recorded)
        print(
            f"\n{len(recorded)} published model configurations from their per-question rates; each prompt "
            f"family's correct rate from the per-answer files of {sum(not r.run.note for r in recorded)} "
            f"({rates_only} have no per-answer file)"
        )
    print(
        f"\n{len(new)} new evaluation(s) of {len(recorded)} in {time.monotonic() - started:.1f}s "
        f"({excluded} answers without a recorded grade or outcome, counted); see `geomon history --suite {suite}`"
    )
    if shown_in_dagster:
        print(shown_in_dagster)
    return import_gate(history, recorded, args.fail_on)


def import_gate(history: Any, recorded: list[Any], fail_on: str) -> int:
    """An import's exit status (``gate``), with one ``geomon:`` line on stderr for each reason: the unacknowledged
    regressions the gates of every imported evaluation read, and of every evaluation the import decided again (a
    late predecessor's import that creates a page gates on it), as finally decided; and each evaluation that lacks
    items its baseline has (a failed check)."""
    from geomon.monitor import release
    from geomon.monitor.views import verdict_text

    decided = {e.evaluation_id: e for r in recorded for e in (r.tracked.evaluation, *r.tracked.redecided)}
    open_regressions = {
        (v.evaluation_id, *v.key): (e, v) for e in decided.values() for v in release.failing(history, e)
    }
    for e, v in open_regressions.values():
        print(
            f"geomon: {e.suite} {e.model}: {verdict_text(v)} against {v.against} (not acknowledged: "
            f"`geomon alerts ack {v.evaluation_id}`)",
            file=sys.stderr,
        )
    # An evaluation that lacks items its baseline has is a failed check: each absent item was compared as
    # unanswered, and a harness that drops what errored is what a release gate must see.
    short = _missing_items(history, list(decided.values()))
    for e, missing, against in short:
        print(
            f"geomon: {e.suite} {e.model} ({e.when:%Y-%m-%d}): {missing} of its baseline's items missing (against "
            f"{against}), compared as unanswered",
            file=sys.stderr,
        )
    return gate(fail_on, len(short), len(open_regressions))


def _missing_items(history: Any, evaluations: list[Any]) -> list[tuple[Any, int, str]]:
    """Each of ``evaluations`` whose stored comparisons count items its baseline has and it lacks, with how many
    and its baseline."""
    rows = history.comparisons([e.evaluation_id for e in evaluations])
    if rows.empty or "missing" not in rows:
        return []
    counted = rows[rows["missing"].fillna(0) > 0].drop_duplicates("evaluation_id")
    found = {r["evaluation_id"]: (int(r["missing"]), str(r["against"])) for r in counted.to_dict("records")}
    return [(e, *found[e.evaluation_id]) for e in evaluations if e.evaluation_id in found]


def report_to_dagster(history: Any, recorded: list[Any], settings: Any, folder: Path) -> str:
    """The imported Gapminder evaluations in the Dagster catalog of the instance in DAGSTER_HOME
    (``defs.history.report_import``); the folder imported, when it is geomon.yaml's ``gapminder_results``, as an
    observation of ``history/gapminder_results`` (the hourly observation then finds nothing new to import).
    Returns what it did in a line."""
    import dagster as dg

    from geomon.defs.automation import record_source_version
    from geomon.defs.history import RESULTS_KEY, report_import, results_version

    try:
        home = _dagster_home()
    except ConfigError as exc:
        return f"not shown in Dagster: {exc}"
    with dg.DagsterInstance.get() as instance:
        configured = settings.gapminder_results
        if configured is not None and configured.resolve() == folder.resolve():
            record_source_version(instance, dg.AssetKey(RESULTS_KEY), *results_version(configured))
        reported = report_import(instance, history, recorded)
    return (
        f"Dagster ({home}): {reported} model(s) new or decided again in history/gapminder_evaluations "
        "(each model a partition, with its no_regression check); `make ui` shows them"
    )


def cmd_alerts(args: argparse.Namespace) -> int:
    from geomon.monitor import alerts

    settings = load_settings(args.config)
    if args.action == "ack":
        return acknowledge(settings, args)
    if args.action == "list":
        return list_alerts(settings, args)
    if not alerts.notifiers(settings.alerts):  # said once, not also by deliver's log line and outcome
        print(
            f"geomon: alerts go nowhere: set {settings.alerts.webhook_url_env} (a webhook) or alerts.smtp_host and "
            "alerts.email_to in geomon.yaml",
            file=sys.stderr,
        )
        return 1
    alert = alerts.Alert(
        kind="test",
        title="test alert",
        summary="geomon's alert channels work: this message was sent by `geomon alerts test`.",
        url=settings.alerts.ui_url,
    )
    outcomes = alerts.deliver(alert, settings.alerts)
    for outcome in outcomes:
        print(outcome)
    return 1 if any(": failed: " in o for o in outcomes) else 0


def list_alerts(settings: Any, args: argparse.Namespace) -> int:
    """``geomon alerts list``: every regression the gates read, open ones first, with who acknowledged the rest;
    exit 3 while any is open (a CI step that fails on unacknowledged regressions), 0 otherwise."""
    from geomon.monitor import views
    from geomon.monitor.history import MetricHistory

    table = views.alert_list(MetricHistory(settings.store_url), suite=args.suite or None)
    still_open = int((table["state"] == "open").sum())
    if args.format == "csv":
        table.to_csv(sys.stdout, index=False)
    elif table.empty:
        print("No regression in the metric history: nothing open, nothing acknowledged.")
    else:
        print(table.to_string(index=False))
        print(
            f"{still_open} open, {len(table) - still_open} acknowledged"
            + (" (`geomon alerts ack EVALUATION --metric M --breakdown G` acknowledges one)" if still_open else "")
        )
    return 3 if still_open else 0


def acknowledge(settings: Any, args: argparse.Namespace) -> int:
    """``geomon alerts ack EVALUATION``: an operator has seen the regression; its no_regression check passes
    on the next run, and the acknowledgement is stored with who and when."""
    from geomon.monitor.history import MetricHistory

    if not args.evaluation:
        raise ConfigError(
            "alerts ack: give the evaluation id (the evaluation_id column of geomon history --format csv)"
        )
    who = args.by or os.environ.get("USER") or os.environ.get("USERNAME") or ""
    if not who:
        raise ConfigError("alerts ack: --by NAME (who acknowledges; $USER is not set)")
    if args.breakdown and not args.metric:
        raise ConfigError("alerts ack: --breakdown needs --metric (without both, every regression is acknowledged)")
    history = MetricHistory(settings.store_url)
    held = history.evaluations()
    if args.evaluation not in set(held["evaluation_id"]):
        raise ConfigError(f"alerts ack: no evaluation {args.evaluation!r} in the metric history")
    import pandas as pd

    from geomon.monitor import release, views
    from geomon.stats.values import MetricKey

    row = held[held["evaluation_id"] == args.evaluation].iloc[0]
    evaluation = next(
        e for e in history.evaluations_of(row["suite"], row["scope"], model=row["model"])
        if e.evaluation_id == args.evaluation
    )  # fmt: skip
    # What its gates read: its own regressions and its release's against the predecessor (``release.standing``).
    regressions = release.standing(history, evaluation)
    wanted = {"metric": args.metric, "breakdown": args.breakdown}
    covered = [r for r in regressions if release.acknowledged(pd.DataFrame([wanted]), r.key)]
    if args.metric and not covered:
        found = ", ".join(views.verdict_text(r) for r in regressions) or "none"
        raise ConfigError(
            f"alerts ack: evaluation {args.evaluation} has no regression on {MetricKey(args.metric, args.breakdown)}; "
            f"its regressions: {found}"
        )
    # Stored on the evaluation each regression was decided on, so every later evaluation's gate honours it.
    for evaluation_id in dict.fromkeys([*(r.evaluation_id for r in covered), args.evaluation]):
        history.acknowledge(evaluation_id, who, args.metric, args.note, args.breakdown)
    what = " (every regression)"
    if args.metric:
        what = f" ({args.metric}, {'every breakdown' if args.breakdown == '*' else args.breakdown or 'overall'})"
    print(f"acknowledged by {who}: {args.evaluation}{what}")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from geomon.engine.runner import model_identity

    settings = load_settings(args.config)
    for spec in settings.models:
        where = f"bundled {model_weights(spec)}" if spec.bundled else f"{spec.base_url} ({spec.model_id})"
        identity = model_identity(spec) if args.identity else ""
        print(f"{spec.name:28s} {spec.kind:5s} {where} {identity}")
    return 0


def cmd_serve_local(args: argparse.Namespace) -> int:
    from geomon.engine.local import running_server

    settings = load_settings(args.config)
    [spec] = named_models(settings, [args.model], "serve-local")
    if not spec.bundled:
        raise RegistryError(f"model {spec.name!r} is an endpoint ({spec.base_url}), not a bundled model")
    with running_server(
        model_weights(spec),
        alias=spec.name,
        slots=args.slots,
        port=args.port,
        threads=args.threads,
        host=args.host,
    ) as base_url:
        print(
            f"{spec.name} is served at {base_url} (OpenAI-compatible; model id {spec.name!r}). Ctrl-C stops it.",
            flush=True,
        )

        # Stop on Ctrl-C and on SIGTERM alike, even where the launching shell left SIGINT ignored (a
        # background job of a non-interactive shell inherits SIGINT ignored and would never stop).
        def stop(signum: int, frame: object) -> None:
            raise KeyboardInterrupt

        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, stop)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


UI_STOP_GRACE_S = 20.0  # after SIGTERM, how long dg dev and its children get before SIGKILL


def cmd_ui(args: argparse.Namespace) -> int:
    """`dg dev` (webserver and daemon) in its own process group, stopped with every child on Ctrl-C or
    SIGTERM — started in the background, `dg dev` itself ignores both and leaves its children running."""
    import subprocess

    _dagster_home()
    from geomon.monitor import alerts

    if not alerts.notifiers(load_settings(args.config).alerts):
        log.warning("alerts go nowhere: no channel is configured; `geomon alerts test` checks them")
    dg_cli = Path(sys.executable).with_name("dg")
    command = [str(dg_cli), "dev", "-w", "workspace.yaml", "-h", args.host, "-p", str(args.port)]
    proc = subprocess.Popen(command, start_new_session=True)
    print(f"Dagster UI on http://{args.host}:{args.port} (dg dev, pid {proc.pid}). Ctrl-C stops it.", flush=True)

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        stop_process_group(proc, UI_STOP_GRACE_S)
        return 0


def stop_process_group(proc: Any, grace_s: float) -> None:
    """SIGTERM to the whole group, then SIGKILL to whatever is left after ``grace_s``."""
    import subprocess

    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            return
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            continue
        with contextlib.suppress(ProcessLookupError):  # the leader is gone; its children may not be
            os.killpg(proc.pid, signal.SIGKILL)
        return


def cmd_ask(args: argparse.Namespace) -> int:
    """One question to one model through the store (a quick way to see a model answer)."""
    from geomon.engine.client import GenerationRequest
    from geomon.engine.runner import ask

    settings = load_settings(args.config)
    [spec] = named_models(settings, [args.model], "ask")
    if spec.kind == "chat":
        request = GenerationRequest("chat", messages=({"role": "user", "content": args.text},), params=spec.params)
    else:
        request = GenerationRequest(
            "completion", prompt=f"Question: {args.text}\nAnswer:", params={**spec.params, "stop": ["\n"]}
        )
    frame, stats = ask(spec, [request], settings.store(), options=settings.engine)
    row = frame.iloc[0]
    print(row["text"] if row["error"] is None else f"error: {row['error']}")
    print(f"({'from the store' if row['cached'] else 'asked'}; model calls: {stats.model_calls})", file=sys.stderr)
    return 0


def cmd_store(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    store = settings.store()
    summary = store.summary()
    if args.model and args.model not in set(summary["model"]):
        stored = ", ".join(summary["model"].drop_duplicates()) or "none"
        raise UsageError(f"--model {args.model}: no stored answers of this model; stored: {stored}")
    if args.action == "list":
        if args.model:
            summary = summary[summary["model"] == args.model]
        if args.epoch:
            summary = summary[summary["epoch"] == args.epoch]
        print(summary.to_string(index=False) if len(summary) else "the store is empty")
    elif args.action == "export":
        n = store.export(args.out, model=args.model, epoch=args.epoch)
        print(f"wrote {n} answers to {args.out}")
    elif args.action == "prune":
        before = datetime.fromisoformat(args.before).replace(tzinfo=UTC) if args.before else None
        deleted = store.prune(model=args.model, epoch=args.epoch, before=before, errors_only=args.errors_only)
        print(f"deleted {deleted['answers']} answers and {deleted['errors']} errors")
    return 0


def build_parser() -> argparse.ArgumentParser:
    # The module docstring, its reStructuredText literals as the plain text a terminal shows.
    parser = argparse.ArgumentParser(prog="geomon", description=__doc__.replace("``", ""))
    parser.add_argument("--config", help="settings file (default: $GEOMON_CONFIG or ./geomon.yaml)")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    from geomon.monitor.views import OUTCOMES
    from geomon.suites.registry import suites

    known = suites()
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
    fail_on_help = (
        "exit 3 when a regression alert fires (regression), or also when a blocking check fails or an imported "
        "evaluation lacks items its baseline has (check, the default); never: always 0 — for CI gates, "
        "docs/monitoring.md"
    )
    run.add_argument("--fail-on", choices=FAIL_ON, default="check", help=fail_on_help)
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
    run.set_defaults(func=cmd_run)

    planned = sub.add_parser("plan", help="what a run will ask, take, cost and detect, per model × suite")
    planned.add_argument("--suites", default=",".join(known), help=f"comma-separated: {', '.join(known)}")
    planned.add_argument("--models", help="comma-separated model names (default: all registered)")
    planned.add_argument("--profile", default="default", help="run profile: quick, default, paper or geomon.yaml's")
    planned.add_argument("--detect", type=float, help="propose the sample that detects a change of this size")
    planned.add_argument("--probe", action="store_true", help="ask 3 requests of a model whose pace is unknown")
    fit_help = "propose each suite's sample size that decides what the budget allows (from the first model's asks)"
    planned.add_argument("--fit", action="store_true", help=fit_help)
    planned.add_argument("--format", choices=["table", "csv", "json"], default="table")
    planned.set_defaults(func=cmd_plan)

    history = sub.add_parser("history", help="one row per evaluation and headline metric, with its verdict")
    history.add_argument("--suite", required=True, help=f"a suite ({', '.join(known)}) or an imported benchmark")
    history.add_argument("--model")
    history.add_argument("--format", choices=["table", "csv", "json"], default="table")
    history.add_argument(
        "--breakdowns",
        nargs="?",
        const="all",
        help="also every breakdown of the headlines (each country, language, group); or only those containing TEXT",
        metavar="TEXT",
    )
    history.set_defaults(func=cmd_history)

    items = sub.add_parser(
        "items", help="every item of a model's latest evaluation: prompt, reply, parsed answer and score (history)"
    )
    items.add_argument(
        "--suite",
        required=True,
        help="a suite declared with the kit (a YAML or kit Python suite); the built-in suites write each answer as "
        "scored to the per-model CSVs beside their reports",
    )
    items.add_argument("--model", required=True)
    items.add_argument(
        "--group", action="append", default=[], metavar="COLUMN=VALUE", help="only these items (repeatable)"
    )
    items.add_argument("--score", choices=OUTCOMES, help="only right (full marks), wrong, partial, unanswered, failed")
    items.add_argument("--limit", type=int, default=0, help="the first N items (default: every item)")
    items.add_argument("--format", choices=["table", "csv", "json"], default="table")
    items.set_defaults(func=cmd_items)

    imported = sub.add_parser("import", help="evaluations made elsewhere, into the history")
    imported.add_argument("kind", choices=["gapminder-results", "items", "inspect", "lm-eval"])
    imported.add_argument(
        "path",
        help="gapminder-results: Gapminder's published folder (the ddf--datapoints--*--by--question--"
        "model_configuration.csv rates; master_output_*.csv answers in its results/); items: a .csv, .jsonl or "
        ".parquet file; inspect: an inspect_ai eval log (.eval or .json); lm-eval: a results_*.json of "
        "--log_samples output, or the --output_path folder holding them",
    )
    imported.add_argument("more", nargs="*", help="inspect: more eval logs; lm-eval: more results or folders")
    imported.add_argument(
        "--entities", help="gapminder-results: the model configurations CSV (default: the snapshot's)"
    )
    imported.add_argument("--suite", help="items, inspect: the benchmark's name in the history")
    imported.add_argument(
        "--group",
        action="append",
        default=[],
        help="items: a group column; inspect: a sample metadata key; lm-eval: a document field (region or doc.region)",
    )
    imported.add_argument(
        "--cluster",
        default="",
        help="items: the column whose rows are one independent unit (a question whose prompt variations or "
        "epochs are separate rows); lm-eval: a document field; default: each item",
    )
    imported.add_argument("--fail-on", choices=FAIL_ON, default="check", help=fail_on_help)
    imported.set_defaults(func=cmd_import)

    alerts = sub.add_parser(
        "alerts",
        help="list: every open or acknowledged regression (exit 3 while any is open); test: send a test alert to "
        "every channel; ack: acknowledge an evaluation's regression",
    )
    alerts.add_argument("action", choices=["list", "test", "ack"])
    alerts.add_argument("evaluation", nargs="?", help="ack: the evaluation id (geomon history --format csv)")
    alerts.add_argument("--metric", default="", help="ack: only this metric's regression (default: all)")
    alerts.add_argument(
        "--breakdown",
        default="",
        help="ack: with --metric, only this breakdown (e.g. country=Kenya; default: the overall figure; '*': all)",
    )
    alerts.add_argument("--by", default="", help="ack: who acknowledges (default: $USER)")
    alerts.add_argument("--note", default="", help="ack: why (recorded with who and when)")
    alerts.add_argument("--suite", default="", help="list: one suite's regressions (default: every suite)")
    alerts.add_argument("--format", choices=["table", "csv"], default="table", help="list: how to print them")
    alerts.set_defaults(func=cmd_alerts)

    trends = sub.add_parser("trends", help="every headline metric per model over time (from the metric history)")
    trends.add_argument(
        "--breakdown",
        action="append",
        default=[],
        metavar="GROUP",
        help="also chart this group of every headline metric, e.g. family=ideology (repeatable); groups with an "
        "open regression of their own are always charted",
    )
    trends.set_defaults(func=cmd_trends)
    models = sub.add_parser("models", help="list registered models")
    models.add_argument("--identity", action="store_true", help="also print the identity the store keys on")
    models.set_defaults(func=cmd_models)

    serve = sub.add_parser("serve-local", help="serve a bundled model over an OpenAI-compatible API")
    serve.add_argument("model")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0 in a container)")
    serve.add_argument("--slots", type=int, default=8, help="sequences decoded together")
    serve.add_argument("--threads", type=int)
    serve.set_defaults(func=cmd_serve_local)

    ui = sub.add_parser("ui", help="the Dagster UI and daemon (dg dev); Ctrl-C or SIGTERM stops every process")
    ui.add_argument("--host", default="127.0.0.1")
    ui.add_argument("--port", type=int, default=3000)
    ui.set_defaults(func=cmd_ui)

    ask = sub.add_parser("ask", help="ask one model one question (through the store)")
    ask.add_argument("model")
    ask.add_argument("text")
    ask.set_defaults(func=cmd_ask)

    store = sub.add_parser("store", help="list, export or prune stored responses")
    store.add_argument("action", choices=["list", "export", "prune"])
    store.add_argument("--model")
    store.add_argument("--epoch")
    store.add_argument("--before", help="prune: only rows stored before this ISO date/time (UTC)")
    store.add_argument("--errors-only", action="store_true", help="prune: only the recorded errors")
    store.add_argument("--out", default="responses.jsonl", help="export: JSON Lines file")
    store.set_defaults(func=cmd_store)
    return parser


def root_cause(exc: BaseException) -> BaseException:
    """The error behind Dagster's wrappers: a failed step carries the asset's own exception in
    ``user_exception``; otherwise the chain of causes is followed to its first geomon error, or its end."""
    seen: set[int] = set()
    current = exc
    while id(current) not in seen:
        seen.add(id(current))
        if type(current).__module__.startswith("geomon."):
            return current
        inner = getattr(current, "user_exception", None) or current.__cause__ or current.__context__
        if inner is None:
            return current
        current = inner
    return current


def describe_failure(exc: BaseException) -> str:
    """One line: what failed and why. geomon's own errors already say what and where; anything else is
    named by its type, since it is unexpected."""
    cause = root_cause(exc)
    first = (str(cause).strip().splitlines() or [""])[0]
    if type(cause).__module__.startswith("geomon.") or isinstance(cause, ValueError | OSError):
        return first or type(cause).__name__
    return f"unexpected {type(cause).__name__}: {first} (run with -v for the traceback)"


INTERRUPTED = "geomon: interrupted; answers already received are stored and will not be asked again"


def interrupted(args: argparse.Namespace) -> int:
    """Exit status 130, said once: by the run, not by each of its lanes."""
    if not getattr(args, "lane_report", None):
        print(INTERRUPTED, file=sys.stderr)
    return 130


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv  # a run in lanes starts each lane with its own command line
    _setup_logging(args.verbose)
    try:
        check_arguments(args)
        return args.func(args)
    except KeyboardInterrupt:
        return interrupted(args)
    except (ConfigError, RegistryError) as exc:
        print(f"geomon: {exc}", file=sys.stderr)
        return 2
    except LaneFailed as exc:  # its line is printed
        return exc.status
    except Exception as exc:  # every failure ends in one line a person can act on; -v adds the traceback
        # Ctrl-C inside a Dagster step: while a model is asked (geomon's Interrupted) or between steps (Dagster's)
        if type(root_cause(exc)).__name__ in {"Interrupted", "DagsterExecutionInterruptedError"}:
            return interrupted(args)
        if args.verbose:
            import traceback

            traceback.print_exception(exc)
        print(f"geomon: {describe_failure(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
