"""`geomon plan`: what a run will ask, take, cost and detect, per model × suite; and the plan a run prints and
confirms before it asks."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from typing import Any

from geomon.cli.common import UsageError, named_models
from geomon.cli.tables import print_frame
from geomon.config import load_settings


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


def release_plans(settings: Any, history: Any, plans: list[Any], models: Sequence[Any], profile: str) -> str:
    """Per serving-change release planned (a variant and its base): which of its comparisons the profile decides, per
    suite, before anything is asked — planned from the release's last decision where it has one (paired), else as
    for one model."""
    from geomon import plan

    changes = settings.serving_changes()
    lines = []
    for spec in (s for s in models if s.change):
        mine = {p.suite: plan.paired_comparisons(history, p) for p in plans if p.model == spec.name}
        counts = [f"{suite} {sum(c.decidable for c in cs)} of {len(cs)}" for suite, cs in mine.items()]
        named = [f"{suite} {c.name}" for suite, cs in mine.items() for c in cs if c.decidable]
        paired = sum(c.source == plan.PAIRED for cs in mine.values() for c in cs)
        basis = (
            f"{paired} of {sum(map(len, mine.values()))} planned from its last decision (paired), the rest as for one "
            "model"
            if paired
            else "planned as for one model: how much a release changes is known once both models are asked (a "
            "run's decision plans from the pair's differences)"
        )
        lines.append(
            f"\nRelease {spec.name} vs {spec.variant_of} ({changes[spec.name]}): comparisons decidable at profile "
            f"{profile}: {', '.join(counts)}" + (f" — {'; '.join(named)}" if named else "") + f" ({basis})"
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
    print_frame(frame, args.format)
    total = plan.totals(plans)
    unknown = total["pace_unknown"]
    print(
        f"\nprofile {args.profile}: {total['to_ask']:,} asks to make ({total['stored']:,} already stored), about "
        f"{plan.duration(total['seconds'])}"
        + (f" (+ unknown for {', '.join(unknown)}: --probe measures)" if unknown else "")
        + (f", about ${total['cost']:,.2f}" if total["cost"] is not None else "")
        + f"; MDE at {settings.verdicts.power:.0%} power, one-sided, at each suite's first look's α "
        f"(α = {settings.verdicts.alpha} per release) over its comparisons with 30 clusters or more "
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
    print(release_plans(settings, history, plans, models, args.profile), end="")
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


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse a change to detect that is not positive."""
    if args.detect is not None and not args.detect > 0:
        raise UsageError(f"--detect {args.detect:g}: the change to detect is a positive number (the headline's units)")


def register(sub: Any, known: dict[str, Any]) -> None:
    """``geomon plan``."""
    planned = sub.add_parser("plan", help="what a run will ask, take, cost and detect, per model × suite")
    planned.add_argument("--suites", default=",".join(known), help=f"comma-separated: {', '.join(known)}")
    planned.add_argument("--models", help="comma-separated model names (default: all registered)")
    planned.add_argument("--profile", default="default", help="run profile: quick, default, paper or geomon.yaml's")
    planned.add_argument("--detect", type=float, help="propose the sample that detects a change of this size")
    planned.add_argument("--probe", action="store_true", help="ask 3 requests of a model whose pace is unknown")
    fit_help = "propose each suite's sample size that decides what the budget allows (from the first model's asks)"
    planned.add_argument("--fit", action="store_true", help=fit_help)
    planned.add_argument("--format", choices=["table", "csv", "json"], default="table")
    planned.set_defaults(func=cmd_plan, check=check_arguments)
