"""Everyone told, once: the messages a release's decisions owe people, read from the record of what was sent.

After a suite's comparisons are decided (``release.track``), ``announce`` looks at each evaluation decided:
a ``regression`` no message has reached anyone about is sent now (the decision that created it may be a
re-decision, when a late predecessor's evaluation arrived); a regression that was sent and is a regression
no longer (the baseline changed) sends a ``resolved`` message. Every attempt is stored per comparison and
channel (``alert_deliveries``: channel, time, outcome, the message), so "already alerted" is read from that
record, never assumed; an alert that reached no channel (none configured, or every one failed) is tried
again the next time the evaluation is decided or re-run. An acknowledged regression is not sent again.
``geomon run`` (through the Dagster layer) and ``geomon import`` call the same function.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from geomon.monitor import alerts
from geomon.monitor.history import Evaluation, MetricHistory
from geomon.monitor.release import Announcer, Tracked, acknowledged, stored
from geomon.stats import power, verdicts
from geomon.stats.values import MetricKey
from geomon.stats.verdicts import Comparison

Link = Callable[[Evaluation], str]

SENT = "sent"
ALERT_NUMBERS = (
    "metric",
    "breakdown",
    "before",
    "after",
    "change",
    "p_value",
    "p_adjusted",
    "alpha",
    "mde",
    "min_effect",
    "power",
    "clusters",
)


def announcer(
    settings: alerts.AlertSettings, link: Link | None = None, changes: dict[str, str] | None = None
) -> Announcer:
    """``announce`` with these channels and links, as ``release.track`` calls it; ``changes``: by model, the
    serving change a variant is (``Settings.serving_changes``), which its regression alerts name."""

    def tell(history: MetricHistory, evaluations: Sequence[Evaluation]) -> dict[str, list[str]]:
        return announce(history, evaluations, settings, link, changes)

    return tell


def announce(
    history: MetricHistory,
    evaluations: Sequence[Evaluation],
    settings: alerts.AlertSettings,
    link: Link | None = None,
    changes: dict[str, str] | None = None,
) -> dict[str, list[str]]:
    """Send what each evaluation's stored verdicts owe (module docstring); per evaluation id, one line per
    channel and message ("webhook: sent", "already alerted: webhook at …", "resolved: webhook: sent")."""
    out = {}
    for evaluation in evaluations:
        change = (changes or {}).get(evaluation.model, "")
        out[evaluation.evaluation_id] = _announce_one(history, evaluation, settings, link, change)
    return out


Finding = tuple[str, MetricKey]  # (release, comparison): one finding in a suite's scope, one page


def _announce_one(
    history: MetricHistory, evaluation: Evaluation, settings: alerts.AlertSettings, link: Link | None, change: str
) -> list[str]:
    result = stored(history, evaluation)
    decided = result.verdicts
    regressions = {(c.release, c.key): c for c in decided if c.verdict == verdicts.REGRESSION}
    # A finding's messages, whichever of the model's evaluations in this scope held its decision when they were
    # sent (an earlier-dated copy arriving late takes the release's first look over: the same finding, no page).
    series = history.evaluations_of(evaluation.suite, evaluation.scope, model=evaluation.model, items=False)
    ids = [e.evaluation_id for e in series] or [evaluation.evaluation_id]
    record = history.deliveries(ids)
    now_decided = history.comparisons(ids)
    mine = decided[0].release if decided else ""
    told: dict[Finding, dict[str, Any]] = {}  # the last kind of message that reached someone, per finding
    for row in record[record["outcome"] == SENT].to_dict("records"):
        # Sent before deliveries named their release: this evaluation's, as decided now.
        release = row["release"] or (mine if row["evaluation_id"] == evaluation.evaluation_id else "")
        told[(release, MetricKey(str(row["metric"]), str(row["breakdown"] or "")))] = row
    acks = history.acknowledgements([evaluation.evaluation_id])
    new = [
        c
        for finding, c in regressions.items()
        if told.get(finding, {}).get("kind") != "regression" and not acknowledged(acks, c.key)
    ]
    lines = []
    url = link(evaluation) if link is not None else settings.ui_url
    if new:
        alert = regression_alert(evaluation, result.against, new, url, change)
        lines += _send(history, evaluation, alert, "regression", [(c.release, c.key) for c in new], settings)
    withdrawn = _withdrawn(told, now_decided)
    for release, keys in withdrawn.items():
        current = [Comparison.of(r) for r in now_decided[now_decided["release"] == release].to_dict("records")]
        alert = resolved_alert(evaluation, release, keys, current, url)
        sent = _send(history, evaluation, alert, "resolved", [(release, k) for k in keys], settings)
        lines += [f"resolved: {line}" for line in sent]
    earlier = [told[f] for f in regressions if told.get(f, {}).get("kind") == "regression"]
    if earlier:
        first = min(earlier, key=lambda row: row["sent_at"])
        lines.append(f"already alerted: {first['channel']} at {_when(first['sent_at'])}")
    return lines


def _withdrawn(told: dict[Finding, dict[str, Any]], decided: pd.DataFrame) -> dict[str, list[MetricKey]]:
    """The findings a message told as regressions that the release-order decision of the same pair (its release's
    comparison as stored now) no longer finds: per release, their comparisons. A finding whose release holds no
    decision now stands (a copy re-based the evaluation that paged: nothing withdrew it)."""
    out: dict[str, list[MetricKey]] = {}
    for (release, key), row in told.items():
        if row["kind"] != "regression":
            continue
        same = (decided["release"] == release) & (decided["metric"] == key.metric)
        now = decided[same & (decided["breakdown"] == key.breakdown)]
        if len(now) and not (now["verdict"] == verdicts.REGRESSION).any():
            out.setdefault(release, []).append(key)
    return out


def _when(moment: Any) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if hasattr(moment, "strftime") else str(moment)


def _send(
    history: MetricHistory,
    evaluation: Evaluation,
    alert: alerts.Alert,
    kind: str,
    findings: list[Finding],
    settings: alerts.AlertSettings,
) -> list[str]:
    """Deliver on every channel and store each outcome per finding (its release and comparison)."""
    outcomes = alerts.deliver(alert, settings)
    now = datetime.now(UTC)
    message = alert.text()
    rows = []
    for outcome in outcomes:
        if outcome == alerts.NO_CHANNEL:
            channel, result = "none", f"not sent: {alerts.NO_CHANNEL}"
        else:
            channel, _, result = outcome.partition(": ")
        for release, (metric, breakdown) in findings:
            rows.append(
                {
                    "evaluation_id": evaluation.evaluation_id,
                    "release": release,
                    "metric": metric,
                    "breakdown": breakdown,
                    "kind": kind,
                    "channel": channel,
                    "outcome": result[:500],
                    "sent_at": now,
                    "message": message,
                }
            )
    history.record_deliveries(rows)
    return outcomes


def regression_alert(
    evaluation: Evaluation, against: str, regressions: Sequence[Comparison], url: str, change: str = ""
) -> alerts.Alert:
    """The alert of regression verdicts: every comparison that regressed, and the worst change (relative to its
    minimum effect) with its numbers; ``change``: the serving change the release is (a variant), named first."""
    worst = max(regressions, key=lambda r: abs(r.change or 0.0) / max(r.min_effect or 0.0, 1e-12))
    suite, model = evaluation.suite, evaluation.model
    served = f"A serving change of {against.removeprefix('predecessor ')}: {change}. " if change else ""
    return alerts.Alert(
        kind="regression",
        title=f"{suite}: {model} regressed on {', '.join(sorted({str(r.key) for r in regressions}))}",
        summary=f"{served}{model} vs {against} ({evaluation.scope or 'default scope'}): {worst.key} "
        f"{worst.before:.4g} → {worst.after:.4g} (change {worst.change:+.4g}, worse when "
        f"{worst.worse_when}) over {worst.clusters} clusters; one-sided p = {worst.p_value:.3g}, "
        f"Holm-adjusted {worst.p_adjusted:.3g} over the suite's {worst.family_size} comparisons (weighted: the "
        "comparisons that cannot decide weigh less), decided "
        f"at α = {worst.alpha or 0:.3g} (the look's part of the suite's share of the release's α): a significant "
        f"worsening, estimated at least the minimum effect {worst.min_effect:.3g}. {_chance(worst)}",
        model=model,
        suite=suite,
        url=url,
        numbers={k: getattr(worst, k) for k in ALERT_NUMBERS},
    )


def _chance(comparison: Comparison) -> str:
    """What the test could see: its minimum detectable effect, its power at the minimum effect, and the chance a
    worsening of exactly the minimum effect would have paged (``power.page_probability``)."""
    chance = comparison.power
    if chance is None or not math.isfinite(float(chance)):
        return f"Minimum detectable effect {comparison.mde:.3g}."
    underpowered = comparison.decidability == verdicts.Decidability.UNDERPOWERED_REGRESSION  # below the stated power
    weak = " This comparison is underpowered: a page from it is weak evidence of that size." if underpowered else ""
    return (
        f"Minimum detectable effect {comparison.mde:.3g}; power {chance:.0%} at the minimum effect, where a worsening "
        f"of exactly that size pages with probability {power.page_probability(float(chance)):.0%}.{weak}"
    )


def resolved_alert(
    evaluation: Evaluation,
    release: str,
    withdrawn: Sequence[MetricKey],
    now: Sequence[Comparison],
    url: str,
) -> alerts.Alert:
    """The message that withdraws regressions of ``release`` sent earlier (``withdrawn``): what the release-order
    decision of the same pair (``now``: its comparisons as stored) finds for each."""
    current = {c.key: c for c in now}
    lines = []
    for key in withdrawn:
        verdict = current.get(key)
        lines.append(f"{key}: now {verdict.verdict if verdict else 'not compared'}")
    return alerts.Alert(
        kind="resolved",
        title=f"{evaluation.suite}: {evaluation.model} resolved on {', '.join(sorted(map(str, withdrawn)))}",
        summary=f"{release}: the regression alerted earlier was decided again on the release-order pair and is "
        f"withdrawn — {'; '.join(lines)}.",
        model=evaluation.model,
        suite=evaluation.suite,
        url=url,
    )


def told_summary(decided: Sequence[Tracked]) -> str:
    """What the announcer did for these decisions (each ``Tracked.told``: per evaluation id, one line per
    channel and message), as people read it: a sentence, then a Markdown table of model, evaluated, suite and
    what was told — never the raw record keyed by evaluation id. "No alert was due." when nothing was."""
    from geomon.report import charts

    evaluations = {e.evaluation_id: e for t in decided for e in (t.evaluation, *t.redecided)}
    rows = []
    for tracked in decided:
        for evaluation_id, lines in tracked.told.items():
            evaluation = evaluations.get(evaluation_id)
            for line in lines:
                rows.append(
                    {
                        "model": evaluation.model if evaluation else evaluation_id,
                        "evaluated": f"{evaluation.when:%Y-%m-%d}" if evaluation else "",
                        "suite": evaluation.suite if evaluation else "",
                        "what was told": line,
                    }
                )
    if not rows:
        return "No alert was due."
    table = pd.DataFrame(rows).drop_duplicates()
    sent = table["what was told"].str.contains(": sent", regex=False).sum()
    nowhere = table["what was told"].str.contains(alerts.NO_CHANNEL, regex=False).sum()
    models = table["model"].nunique()
    said = f"{len(table)} alert outcome(s) for {models} model(s): {sent} sent"
    said += f", {nowhere} reached no channel ({alerts.NO_CHANNEL}: `geomon alerts test` checks them)" if nowhere else ""
    return f"{said}.\n\n{charts.markdown_table(table)}"
