"""`geomon import`: evaluations made elsewhere (an items file, inspect_ai logs, lm-evaluation-harness samples, and
the results a suite's authors published, by the kinds the registered suites' importers offer) into the metric
history, decided, announced and gated on."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from geomon.cli.common import FAIL_ON, FAIL_ON_HELP, dagster_home, gate
from geomon.config import ConfigError, load_settings

log = logging.getLogger("geomon")


@dataclasses.dataclass(frozen=True)
class Importer:
    """One kind of ``geomon import``: how its files become runs (``read(args, settings)``), and, where it has
    them, what it adds once they are recorded: ``shown(history, recorded, settings, path)`` (a line on where else
    they are shown) and ``closing(recorded)`` (a line on what the import read, and the note it counts).
    ``published_history``: its files are a publisher's whole record, every evaluation known at once
    (``EvaluationRun.published_history``)."""

    read: Callable[[argparse.Namespace, Any], list[Any]]
    shown: Callable[[Any, list[Any], Any, Path], str] | None = None
    closing: Callable[[list[Any]], str] | None = None
    counted: str = ""  # a run's note the closing line already counts: not printed under each run
    published_history: bool = False


def published_kind(kind: str, importer: Any) -> Importer:
    """A suite's importer (``registry.Importer``) as a kind of ``geomon import``: its folder read with its own
    options, shown in the Dagster catalog where the suite's published history is, and closed by its summary."""

    def read(args: argparse.Namespace, settings: Any) -> list[Any]:
        from geomon.monitor import imports

        options = {option.dest: getattr(args, option.dest) for option in importer.options}
        return imports.read_published(kind, args.path, settings, options)

    def closing(recorded: list[Any]) -> str:
        return "\n" + importer.summary([r.run.note for r in recorded])

    def shown(history: Any, recorded: list[Any], settings: Any, folder: Path) -> str:
        return report_to_dagster(kind, history, recorded, settings, folder)

    return Importer(
        read,
        shown=shown,
        closing=closing if importer.summary else None,
        counted=importer.counted,
        published_history=True,  # a suite's importer reads its publisher's whole record
    )


def lm_eval_runs(args: argparse.Namespace, settings: Any) -> list[Any]:
    """lm-evaluation-harness's ``--log_samples`` results: one evaluation per model and task."""
    from geomon.monitor import imports

    if args.suite:
        raise ConfigError("import lm-eval: each task is its own suite; --suite is for items and inspect")
    return imports.lm_eval_runs([args.path, *args.more], args.group, settings.verdicts, args.cluster)


def _suite_named(args: argparse.Namespace) -> str:
    if not args.suite:
        raise ConfigError(f"import {args.kind}: --suite NAME (the benchmark these outcomes belong to)")
    return args.suite


def inspect_runs(args: argparse.Namespace, settings: Any) -> list[Any]:
    """inspect_ai eval logs, into the suite ``--suite`` names."""
    from geomon.monitor import imports

    suite = _suite_named(args)
    if args.cluster:
        raise ConfigError("import inspect: --cluster is for items files (inspect_ai's epochs cluster on the sample id)")
    return imports.inspect_runs([args.path, *args.more], suite, args.group, settings.verdicts)


def item_runs(args: argparse.Namespace, settings: Any) -> list[Any]:
    """An items file (.csv, .jsonl, .parquet), into the suite ``--suite`` names."""
    from geomon.monitor import imports

    suite = _suite_named(args)
    return imports.item_runs(args.path, suite, args.group, settings.verdicts, args.cluster)


def cmd_import(args: argparse.Namespace) -> int:
    from geomon.monitor import imports
    from geomon.monitor.history import MetricHistory
    from geomon.stats import verdicts

    settings = load_settings(args.config)
    started = time.monotonic()
    importer = importers()[args.kind]
    runs = importer.read(args, settings)
    from geomon.monitor import alerts, announce
    from geomon.monitor.views import unpaged, verdict_text

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
        published_history=importer.published_history,
    )
    shown_elsewhere = importer.shown(history, recorded, settings, Path(args.path)) if importer.shown else ""
    new = [r for r in recorded if not r.tracked.evaluation.reused]
    for r in recorded:
        quiet = (verdicts.NO_CHANGE, verdicts.INSUFFICIENT)  # counted in the summary; `geomon history` lists them
        compared = r.tracked.verdicts
        shown = ", ".join(verdict_text(v) for v in compared if v.verdict not in quiet)
        state = "already recorded" if r.tracked.evaluation.reused else "recorded"
        against = f" vs {r.tracked.against.removeprefix('predecessor ')}" if r.tracked.against else ""
        summary = verdicts.summary(compared) if compared else ""
        what = f"{r.run.suite} {r.run.model}" if several_suites else r.run.model
        print(f"{r.run.evaluated_at:%Y-%m-%d} {what}: {state}{against}{': ' + summary if summary else ''}")
        if shown:
            print(f"    {shown}")
        for note in dict.fromkeys(filter(None, map(unpaged, compared))):
            print(f"    α 0: {note}")  # decided, shown, never paged: say so, not only "watch"
        if r.run.note and r.run.note != importer.counted:
            print(f"    {r.run.note}")
        for evaluation_id, told in r.tracked.told.items():
            for line in told:
                whose = (
                    "" if evaluation_id == r.tracked.evaluation.evaluation_id else " (a later release decided again)"
                )
                print(f"    alert{whose}: {line}")
    excluded = sum(r.run.excluded for r in recorded)
    suite = runs[0].suite if runs else "<suite>"
    if importer.closing:
        print(importer.closing(recorded))
    print(
        f"\n{len(new)} new evaluation(s) of {len(recorded)} in {time.monotonic() - started:.1f}s "
        f"({excluded} answers without a recorded grade or outcome, counted); see `geomon history --suite {suite}`"
    )
    if shown_elsewhere:
        print(shown_elsewhere)
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


def report_to_dagster(kind: str, history: Any, recorded: list[Any], settings: Any, folder: Path) -> str:
    """The imported evaluations in the Dagster catalog of the instance in DAGSTER_HOME, in the published history
    of the suite whose importer ``kind`` is (``defs.history.report_import``); the folder imported, when it is the one
    geomon.yaml names for it, as an observation of its results asset (the hourly observation then finds nothing new
    to import). Returns what it did in a line."""
    import dagster as dg

    from geomon.defs.automation import record_source_version
    from geomon.defs.history import report_import, results_version
    from geomon.defs.monitoring import published_history

    try:
        home = dagster_home()
    except ConfigError as exc:
        return f"not shown in Dagster: {exc}"
    published = published_history(kind)
    with dg.DagsterInstance.get() as instance:
        configured = settings.published.get(kind)
        if configured is not None and configured.resolve() == folder.resolve():
            record_source_version(instance, dg.AssetKey(published.results_key), *results_version(published, configured))
        reported = report_import(instance, history, recorded, published)
    return (
        f"Dagster ({home}): {reported} model(s) new or decided again in {'/'.join(published.evaluations_key)} "
        "(each model a partition, with its no_regression check); `make ui` shows them"
    )


def importers() -> dict[str, Importer]:
    """Each kind of `geomon import`, by the name its command line gives: the registered suites' importers (their
    published results), then the kinds any benchmark's files can be."""
    from geomon.suites import registry

    return {
        **{kind: published_kind(kind, importer) for kind, (_, importer) in registry.importers().items()},
        "items": Importer(item_runs),
        "inspect": Importer(inspect_runs),
        "lm-eval": Importer(lm_eval_runs),
    }


def register(sub: Any, known: dict[str, Any]) -> None:
    """``geomon import KIND PATH``: one kind per importer (``importers``); a suite's importer adds its own options."""
    from geomon.suites import registry

    offered = registry.importers()
    imported = sub.add_parser("import", help="evaluations made elsewhere, into the history")
    imported.add_argument("kind", choices=list(importers()))
    imported.add_argument(
        "path",
        help="; ".join(
            [
                *(f"{kind}: {importer.path}" for kind, (_, importer) in offered.items()),
                "items: a .csv, .jsonl or .parquet file; inspect: an inspect_ai eval log (.eval or .json); lm-eval: "
                "a results_*.json of --log_samples output, or the --output_path folder holding them",
            ]
        ),
    )
    imported.add_argument("more", nargs="*", help="inspect: more eval logs; lm-eval: more results or folders")
    for kind, (_, importer) in offered.items():
        for option in importer.options:
            imported.add_argument(option.flag, help=f"{kind}: {option.help}", type=option.type, default=option.default)
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
    imported.add_argument("--fail-on", choices=FAIL_ON, default="check", help=FAIL_ON_HELP)
    imported.set_defaults(func=cmd_import)
