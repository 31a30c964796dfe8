"""A sample is a visible decision in the Dagster UI: the launchpad of a suite's prompts (the ``<suite>_prompts``
job, the prompts asset's options) proposes the sample the store holds now and names the profile it came from,
the prompts asset shows the plan's asks and time, and a run that would change the sample to one estimated above
``confirm_above_minutes`` / ``confirm_above_usd`` on the models it would ask is refused before asking any, saying
how to confirm, and leaves the asset, its checks and automation as they were (``geomon run`` asks the same
question on the command line). Dagster validates a launch's config by its types only, so the refusal is the
step's, before it asks."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg
import pandas as pd

from geomon.config import Settings
from geomon.defs.resources import OPTIONS_KEY, profile_sizes, settings_at_load
from geomon.defs.versions import SAMPLE
from geomon.suites import registry

CONFIRM = "confirm"  # the prompts' config field that confirms a run estimated above the limits


def confirm_field() -> dg.Field:
    return dg.Field(
        bool,
        default_value=False,
        is_required=False,
        description="Confirm a new sample estimated above confirm_above_minutes / confirm_above_usd (geomon.yaml) "
        "on the models it would ask; without it such a run stops before asking any.",
    )


def profile_of(settings: Settings, suite: str, options: dict[str, Any]) -> str:
    """The run profile whose options for ``suite`` are ``options`` (the automation profile first), else "chosen
    by hand"."""
    names = dict.fromkeys([settings.automation_profile, *registry.PROFILES, *settings.profiles])
    for name in names:
        if settings.run_options(suite, name) == options:
            return f"profile {name}"
    return "chosen by hand"


def sample_in_use(suite: str, prompts_key: list[str]) -> tuple[dict[str, Any], str]:
    """What the launchpad of ``suite``'s prompts proposes, and a line saying what it is: the options of the
    prompts' latest materialization in the Dagster instance (DAGSTER_HOME) as the code location loads — the
    sample the store holds now, and the profile it came from — else the automation profile's."""
    settings = settings_at_load()
    sizes = profile_sizes(suite)
    automation = f"the automation profile's ({settings.automation_profile if settings is not None else 'default'})"
    held, unread = _held_options(prompts_key) if settings is not None else (None, "")
    if held is None or set(held) != set(sizes):
        return sizes, f"{automation}: {unread or 'no sample materialized yet'}"
    shown = ", ".join(f"{k} {v}" for k, v in held.items())
    return held, f"the sample the store holds ({shown}: {profile_of(settings, suite, held)}) when the UI loaded"


def _held_options(prompts_key: list[str]) -> tuple[dict[str, Any] | None, str]:
    """The prompts' latest ``options`` metadata in the instance of DAGSTER_HOME (None: none yet), and why it could
    not be read, if it could not."""
    if not os.environ.get("DAGSTER_HOME"):
        return None, "no Dagster instance (DAGSTER_HOME) to read the sample from"
    try:
        with dg.DagsterInstance.get() as instance:
            records = instance.fetch_materializations(dg.AssetKey(prompts_key), limit=1).records
    except Exception as exc:  # the code location still loads; the launchpad says why
        return None, f"the Dagster instance could not be read ({exc})"
    entry = records[0].asset_materialization.metadata.get(OPTIONS_KEY) if records else None
    return (dict(entry.value), "") if entry is not None and isinstance(entry.value, dict) else (None, "")


REFUSED_TAG = "geomon/refused"  # on a run that refused a new sample above the limits: the runs list says so


@dataclass(frozen=True)
class Refusal:
    """A new sample refused before any ask: what it was, its profile, and why (the estimate above the limits)."""

    suite: str
    sample: str  # "sample_questions 400, seed 0"
    profile: str  # "profile default", "chosen by hand"
    over: str  # plan.above_limits: "about 5.7 h (23,874 asks …), above confirm_above_minutes 60"

    def line(self) -> str:
        """The run's one ``geomon:`` line: what was refused, why, and how to confirm."""
        from geomon import plan

        return (
            f"geomon: {self.suite} prompts at {self.sample} ({self.profile}) refused: the plan's estimate is "
            f"{self.over}; nothing was asked and the sample held is kept. To confirm: {plan.CONFIRM_HOW}"
        )


def refusal(
    settings: Settings,
    suite: str,
    plans: list[Any],
    options: dict[str, Any],
    previous: dict[str, Any],
    confirmed: bool,
) -> Refusal | None:
    """A run that changes the sample (``options`` against the ``previous`` materialization's) to one estimated
    above the limits on the models it would ask is refused, unless ``confirmed``; None when it goes ahead. A sample
    kept (automation, a click on Materialize) is never refused: it was decided before."""
    from geomon import plan

    if confirmed or options == previous:
        return None
    over = plan.above_limits(settings, plans)
    if not over:
        return None
    sample = ", ".join(f"{k} {v}" for k, v in options.items())
    return Refusal(suite, sample, profile_of(settings, suite, options), over)


def refuse(context: dg.AssetExecutionContext, refused: Refusal, checks: Sequence[str]) -> list[dg.AssetCheckResult]:
    """End a refused prompts step with nothing materialized and nothing left behind: ``refused`` is the run's one
    error line and its ``geomon/refused`` tag (the sample and why); the run succeeds, so the asset is not Failed;
    each of the step's ``checks`` restates its latest result on the materialization held. Dagster planned those
    checks when the run was created: left unevaluated, a blocking check's latest execution would read Skipped and
    hold automation back until the next materialization (``all_deps_blocking_checks_passed`` reads the latest)."""
    from dagster._core.event_api import PartitionKeyFilter
    from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

    context.log.error(refused.line())
    context.instance.add_run_tags(context.run.run_id, {REFUSED_TAG: f"{refused.sample}: {refused.over}"})
    partition = context.partition_key if context.has_partition_key else None
    done = {AssetCheckExecutionRecordStatus.SUCCEEDED, AssetCheckExecutionRecordStatus.FAILED}
    restated = []
    for name in checks:
        records = context.instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(context.asset_key, name),
            limit=1,
            status=done,
            partition_filter=PartitionKeyFilter(key=str(partition)) if partition is not None else None,
        )
        if not records or records[0].event is None:  # Dagster wants a result for each of the step's checks
            restated.append(
                dg.AssetCheckResult(
                    check_name=name,
                    passed=False,
                    severity=dg.AssetCheckSeverity.WARN,
                    description="not run: the refused run built no sample, and none was checked before",
                )
            )
            continue
        evaluation = records[0].event.dagster_event.event_specific_data
        restated.append(
            dg.AssetCheckResult(
                check_name=name,
                passed=evaluation.passed,
                severity=evaluation.severity,
                description=f"as checked in run {records[0].run_id[:8]} (a refused run, {context.run.run_id[:8]}, "
                "kept this sample)",
                metadata=evaluation.metadata,
            )
        )
    return restated


def mixed_samples(board: pd.DataFrame, labels: Sequence[str]) -> str:
    """A line for the top of a leaderboard whose rows compared side by side (one revision, as ``with_samples``
    groups them) were answered on different samples: which model is on which, and what happens next; "" when
    each comparison holds one sample."""
    if SAMPLE not in board or "model" not in board or board.empty:
        return ""
    rest = list(labels[1:])  # e.g. the revision: rows of different revisions are not compared
    together = board[rest].astype(str).agg("|".join, axis=1) if rest else pd.Series("", index=board.index)
    parts = []
    for group, rows in board.groupby(together):
        held = rows[rows[SAMPLE].astype(str) != ""]
        if held[SAMPLE].nunique() > 1:
            on = "; ".join(f"{', '.join(sorted(set(map(str, m))))} on {s}" for s, m in held.groupby(SAMPLE)["model"])
            parts.append(f"{group}: {on}" if group else on)
    if not parts:
        return ""
    return (
        f"Models answered on different samples, not comparable side by side: {' | '.join(parts)}. Automation "
        "re-runs the models left on an old sample (one whose run ended without answering, once, by the suite's "
        "sample sensor)."
    )
