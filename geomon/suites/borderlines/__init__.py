"""BorderLines (Li et al.): does a model answer "who owns this territory?" differently per language?

The benchmark's folder: ``source.py`` (the release: countries, templates, translations, personas, its dated
tables), ``wikipedia.py`` (the disputes table's revisions, parsed), ``prompts.py`` (the English query and one per
claimant language, under each persona), ``scoring.py`` (the claimant each answer commits to: parsed from a chat
answer, or by rank classification over the claimants' log-probabilities; the tracked rows), ``diagnostics.py``
(the concurrence scores of the paper's Table 4, with bootstrap intervals over territories, per region and
language) and ``report.py``; this module declares the suite (``SUITE``, ``TRACKED``, ``PIPELINE``), its
``borderlines:`` settings and its stages.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from geomon.sources.mediawiki import MediaWikiClient, MediaWikiError, Revision
from geomon.stats.declarations import TrackedMetric, answered_rate, undeclared
from geomon.stats.statistics import Difference, Mean
from geomon.suites.borderlines import diagnostics, prompts, scoring, source, wikipedia
from geomon.suites.borderlines.diagnostics import SCORES, diagnose, table_changes
from geomon.suites.borderlines.prompts import (
    build_prompts,
    build_queries,
    prompts_expectations,
    prompts_frame,
    requests_for,
)
from geomon.suites.borderlines.scoring import TRACKED_PERSONA, items, score, tracked_persona
from geomon.suites.borderlines.source import UNKNOWN, BorderLinesData
from geomon.suites.kit import ranks_candidates
from geomon.suites.pipeline import Option, Pipeline, Revisions, Stage, StageCheck, StageResult, Tracked
from geomon.suites.registry import Headline, RunOption, SuiteInfo


@dataclass
class BorderLinesSettings:
    """The ``borderlines:`` section of geomon.yaml (the MediaWiki API it asks live is ``mediawiki:``, shared)."""

    snapshot: Path | None = None  # the release directory; its dated tables stand in for revisions offline
    release_url: str = source.DEFAULT_RELEASE_URL
    revisions: tuple[str, ...] = ("2021-08-31", "2023-05-15", "latest")  # dated versions to evaluate
    latest_every_days: int = 30  # how often the page's latest revision becomes a new version to evaluate
    paper_results: Path | None = None  # the release's scores_for_all.csv: the paper's rows beside geomon's


def _mediawiki(settings: Any) -> MediaWikiClient | None:
    """The MediaWiki client a live run reads revisions with; None offline (the release's dated tables stand in)."""
    return None if settings.borderlines.snapshot is not None else settings.mediawiki.client()


PERSONAS = ("vanilla", "un_peacekeeper", "nationalist", "demographic")
SUITE = SuiteInfo(
    name="borderlines",
    title="BorderLines",
    spec="Li et al., This Land is {Your, My} Land (seeds/borderlines.txt)",
    headlines=(
        Headline("kb_cs", "BorderLines: KB concurrence (English vs the table), %", "persona=vanilla", (0, 100)),
        Headline("delta_cs_unnormalized", "BorderLines: Con − Non concurrence (bias), pp", "persona=vanilla"),
        Headline(
            "abs_delta_cs_unnormalized",
            "BorderLines: |Con − Non| concurrence (the claimants' languages disagree), pp",
            "persona=vanilla",
            (0, 100),
        ),
        Headline("cst_cs_all", "BorderLines: consistency across languages, %", "persona=vanilla"),
        Headline(
            "claimant_concurrence",
            "BorderLines: claimant-language answers naming the controller, %",
            "persona=vanilla",
            (0, 100),
        ),
        Headline("answered_rate", "BorderLines: queries answered with a claimant, %", "persona=vanilla", (0, 100)),
        Headline(
            "kb_probability",
            "BorderLines: the English query's probability on the controller (rank classification), %",
            "persona=vanilla",
            (0, 100),
        ),
        Headline(
            "claimant_probability",
            "BorderLines: claimant-language queries' probability on the controller (rank classification), %",
            "persona=vanilla",
            (0, 100),
        ),
    ),
    options=(
        RunOption(
            "--territories",
            "BorderLines: the first N territories (0 = all; default: the profile's)",
            int,
            None,
            "sample_territories",
        ),
        RunOption(
            "--personas",
            "BorderLines: personas on the newest table (older tables: the first one; default: the profile's — "
            "every persona, the quick profile the paper's own prompt, vanilla)",
            str,
            None,
            "personas",
        ),
    ),
    order=2,
    settings=BorderLinesSettings,
    sample="territories",
    unit=("territory",),
    # quick: every territory, the paper's own (vanilla) prompts only — rank classification is a CPU's cheapest
    # scoring, and a release's probability headlines are decidable on this many territories (docs/serving-changes.md)
    profiles={"quick": {"sample_territories": 80, "personas": ["vanilla"]}, "default": {"sample_territories": 251}},
)

_VANILLA = f"persona={TRACKED_PERSONA}"

# The tracked headlines, each declared once over the tracked rows (geomon.stats.declarations), clustered on the
# territory (its queries in every claimant language move together).


def _share(name: str, column: str, by: tuple[str, ...] = ()) -> TrackedMetric:
    """A share of the tracked persona's rows over territories, in percent; 5 points lower pages."""
    return TrackedMetric(name, Mean(column, scale=100), "territory", False, 5.0, _VANILLA, by=by, bounds=(0, 100))


TRACKED = (
    _share("kb_cs", "kb"),
    # The paper's gap as a size (either language side ahead: a signed gap that shrinks may be one reversing); a
    # disparity, shown and never paged (it also moves when the non-controllers improve).
    TrackedMetric(
        "abs_delta_cs_unnormalized",
        Difference(Mean("con", scale=100), Mean("non", scale=100), absolute=True),
        "territory",
        True,
        5.0,
        _VANILLA,
        bounds=(0, 100),
    ),
    _share("cst_cs_all", "cst"),
    # Each claimant language's answers naming the controller: a language whose answers drift to another
    # claimant pages by name.
    _share("claimant_concurrence", "concurs", by=("lang",)),
    # Whether the model still answers, overall and per claimant language: the scores are over the answered
    # queries, so a model that stops answering would otherwise look no worse.
    answered_rate("territory", by=("lang",), breakdown=_VANILLA),
    # geomon's variant of the two concurrences under rank classification (not the paper's: its scores take the
    # likeliest claimant): the probability the model puts on the controller among the claimants. A change of
    # serving that moves every territory's probability a little is decidable on tens of territories, where a
    # yes/no score needs hundreds (docs/serving-changes.md). Per region and per claimant language.
    _share("kb_probability", "kb_p", by=("region",)),
    _share("claimant_probability", "concurs_p", by=("lang",)),
)


# --- the suite's graph (geomon.suites.pipeline): the Dagster factory builds its assets from it -------------

MIN_ANSWERED_RATE = 0.5  # below it a model rarely commits to a claimant: its scores are not comparable
# the revision column of the release's published scores (not the paper's tables: its BLOOM and BLOOMZ rows
# come from an older table; docs/suites/borderlines.md)
PUBLISHED_REVISION = "release scores (Li et al.)"


def _release_stage(context: Any) -> StageResult:
    """The BorderLines release: claimant countries, question templates and term translations in 49
    languages, persona system prompts (and the 2023-05-15 table, used when no revision is chosen)."""
    settings = context.settings
    root = settings.borderlines.snapshot
    if root is None:
        root = source.fetch_release(
            settings.borderlines.release_url, settings.results_dir.parent / "borderlines-release"
        )
    data = source.read_snapshot(root)
    return StageResult(
        data,
        metadata={
            "countries": len(data.countries),
            "languages_with_template": data.report["languages_with_template"],
            "languages_with_terms": data.report["languages_with_terms"],
            "personas": ", ".join(data.personas),
            "source": str(root),
        },
    )


def _read_revision(settings: Any, revision: Revision, release: BorderLinesData) -> tuple[pd.DataFrame, str]:
    """One revision's disputes table and where it came from: parsed live, or offline the release's table
    of that date (other revisions are an error naming the ones that exist)."""
    client = _mediawiki(settings)
    if client is not None:
        html = client.revision_html(revision.revid)
        disputes = wikipedia.parse_disputes_html(html, f"revision {revision.revid}", set(release.countries))
        return disputes, f"{settings.mediawiki.api_url} oldid={revision.revid}"
    by_id = {revid: path for path, revid in source.DATED_TABLES.values()}
    if revision.revid not in by_id:
        raise MediaWikiError(
            f"revision {wikipedia.revision_key(revision)}: offline, only the release's dated tables exist "
            f"({sorted(source.DATED_TABLES)}); set borderlines.snapshot: none to parse live revisions"
        )
    disputes = source.read_disputes(settings.borderlines.snapshot / by_id[revision.revid])
    return disputes, f"snapshot table {by_id[revision.revid]}"


def _dispute_revisions_stage(context: Any, release: BorderLinesData) -> StageResult:
    """One revision of "List of territorial disputes" parsed into territories (a partition per revision)."""
    from geomon import quality
    from geomon.stats.values import EvaluationRun, MetricValue

    revision = wikipedia.parse_revision_key(context.revision)
    disputes, origin = _read_revision(context.settings, revision, release)
    unknown = int((disputes["controller"] == UNKNOWN).sum())
    history = context.history()
    sizes = history.series(suite="disputes_table", metric="territories")
    earlier = sizes[sizes["scope"] < context.revision] if len(sizes) else sizes
    previous = (str(earlier["scope"].iloc[-1]), int(earlier["value"].iloc[-1])) if len(earlier) else None
    history.record(
        EvaluationRun(
            "disputes_table",
            "wikipedia",
            scope=context.revision,
            versions={"data": str(revision.revid), "code": context.code_version},
            dagster_run_id=context.run_id,
        ),
        [MetricValue("territories", float(len(disputes))), MetricValue("unknown_controller", float(unknown))],
    )
    report = quality.validate(
        source.unaccounted_rows(disputes, release.countries),
        "disputes_table",
        source.disputes_expectations(previous and previous[1]),
    )
    check = quality.outcome(
        report,
        "disputes_table_valid",
        revision=context.revision,
        territories=len(disputes),
        previous_revision=previous[0] if previous else "none",
        previous_territories=previous[1] if previous else 0,
    )
    excluded = disputes.attrs.get("excluded", [])
    return StageResult(
        disputes,
        metadata={
            "revid": revision.revid,
            "date": revision.date,
            "territories": len(disputes),
            "unknown_controller": unknown,
            "excluded_by_filters": len(excluded),
            "excluded": excluded[:50],
            "listed_twice_controllers_disagree": disputes.attrs.get("merged_with_disagreeing_controllers", []),
            "claimants_not_countries_left_out": disputes.attrs.get("not_countries", []),
            "regions": disputes["region"].value_counts().to_dict(),
            "source": origin,
        },
        checks=[check],
        data_version=str(revision.revid),
    )


def _prompts_stage(context: Any, release: BorderLinesData, dispute_revisions: pd.DataFrame) -> StageResult:
    """The English query and one per claimant language, template-wise, under each persona. Live, a
    territory the release has no translation for takes its Wikipedia article's title in that language."""
    from geomon import quality

    personas = list(context.options["personas"])
    disputes = dispute_revisions
    if context.options["sample_territories"]:
        disputes = disputes.head(context.options["sample_territories"])
    data = release.with_disputes(disputes)
    client = _mediawiki(context.settings)
    filled: list[dict[str, str]] = []
    if client is not None:
        gaps = build_queries(data).attrs["gaps"]
        terms, filled = wikipedia.fill_terms_from_langlinks(client, data.terms, gaps, set(disputes["territory"]))
        data = BorderLinesData(data.disputes, data.countries, data.templates, terms, data.personas, data.report)
    prompts = build_prompts(data, personas)
    gaps = prompts.attrs["gaps"]
    report = quality.validate(
        prompts_frame(prompts), "borderlines_prompts", prompts_expectations(sorted(release.templates))
    )
    check = quality.outcome(report, "prompts_translated", queries=len(prompts), translation_gaps=len(gaps))
    return StageResult(
        prompts,
        metadata={
            "queries": len(prompts),
            "territories": prompts["territory"].nunique(),
            "languages": prompts["lang"].nunique(),
            "personas": ", ".join(personas),
            "translation_gaps": len(gaps),
            "names_from_wikipedia_langlinks": len(filled),
            "langlinks": filled[:50],
            "gaps": gaps[:50],
            "preview": prompts[["query_id", "query"]].head(6),
        },
        checks=[check],
    )


def _responses_stage(context: Any, prompts: pd.DataFrame) -> StageResult:
    """Each model's answers (chat) or per-claimant log-probabilities (rank classification), via the store."""
    spec = context.spec()
    requests, owners = requests_for(prompts, spec)
    responses, metadata = context.ask(spec, requests)
    responses["prompt_row"] = [i for i, _ in owners]
    responses["choice_index"] = [j for _, j in owners]
    metadata["method"] = "rank classification" if ranks_candidates(spec) else "parsed answers"
    return StageResult(responses, metadata=metadata)


def _scores_stage(context: Any, prompts: pd.DataFrame, responses: pd.DataFrame) -> StageResult:
    """The claimant each answer commits to (English name), per query and persona."""
    from geomon import quality

    owners = list(zip(responses["prompt_row"], responses["choice_index"], strict=True))
    scored = score(prompts, responses, owners)
    answered = scored["answer"].notna()
    rate = float(answered.mean()) if len(scored) else 0.0
    check = quality.read_rate_outcome(
        scored,
        "answer",
        MIN_ANSWERED_RATE,
        "answered_above_floor",
        rate_name="answered_rate",
        count_name="queries",
        error="error",
    )
    return StageResult(
        scored,
        metadata={
            "queries": len(scored),
            "answered_rate": rate,
            "method": scored["method"].iloc[0] if len(scored) else "none",
            "unanswered_examples": scored.loc[~answered, ["query_id", "response"]].head(5),
        },
        checks=[check],
    )


def _concurrence_stage(context: Any, scores: pd.DataFrame, release: BorderLinesData) -> StageResult:
    """Concurrence scores (the paper's Table 4) per persona with bootstrap 95 % intervals over territories,
    per region, and per query language; recorded in the metric history and checked for regression."""
    from geomon.stats.values import MetricValue, metrics_from_mapping

    result = diagnose(scores, release.countries)
    table = result["by_persona"].set_index("persona")
    numbers = {
        f"{persona}/{name}": float(table.at[persona, name])
        for persona in table.index
        for name in SCORES
        if pd.notna(table.at[persona, name])
    }
    shown = ["kb_cs", "con_cs", "non_cs", "delta_cs", "cst_cs_all", "cst_cs_unknown", "response_countries_mean"]
    metrics = [
        metric
        for record in result["by_persona"].to_dict("records")
        for metric in metrics_from_mapping(
            {k: v for k, v in record.items() if k != "persona"}, f"persona={record['persona']}", record["territories"]
        )
    ]
    metrics += [
        MetricValue(
            name, float(row[name]), f"persona={row['persona']},region={row['region']}", n=int(row["territories"])
        )
        for row in result["by_region"].to_dict("records")
        for name in ("kb_cs", "delta_cs_unnormalized")
    ]
    persona = tracked_persona(scores)
    tracked = Tracked(
        items(scores, release.countries, persona=persona),
        # Two runs are compared on the same table version and persona.
        scope=f"{context.revision}|persona={persona}",
        data_version=context.revision,
        others=undeclared(metrics, TRACKED),
    )
    return StageResult(
        result,
        metadata={
            **numbers,
            "answered_rate": result["answered_rate"],
            "excluded_queries": result["excluded"]["reason"].value_counts().to_dict(),
            "excluded_examples": result["excluded"].head(10),
            "scores": result["by_persona"][["persona", *shown]],
            "by_region": result["by_region"][["persona", "region", "territories", "kb_cs", "delta_cs"]],
        },
        tracked=tracked,
    )


def _write_report(
    out: Any, board: pd.DataFrame, results: dict[str, Any], settings: Any, dispute_revisions: dict[str, pd.DataFrame]
) -> Any:
    from geomon.suites.borderlines.report import write_report

    return write_report(out, board, table_changes(dispute_revisions), results)


def _board_metadata(board: pd.DataFrame, dispute_revisions: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """The leaderboard's row count and, per pair of successive revisions, how the table changed."""
    counted = ("added", "removed", "controller_changed")
    return {
        "rows": len(board),
        "table_changes": [
            {"from": c["from"], "to": c["to"], "in_both": c["in_both"], **{k: len(c[k]) for k in counted}}
            for c in table_changes(dispute_revisions)
        ],
    }


def _published(settings: Any) -> pd.DataFrame | None:
    path = settings.borderlines.paper_results
    return source.read_published_scores(path).assign(revision=PUBLISHED_REVISION) if path else None


def _revisions(settings: Any) -> list[str]:
    """The configured revisions (dates, ``latest``, revision ids) as partition keys, oldest first."""
    bl = settings.borderlines
    return [wikipedia.revision_key(r) for r in wikipedia.resolve_revisions(bl.revisions, _mediawiki(settings))]


def _watch(settings: Any, cursor: str | None) -> tuple[list[str], str | None]:
    """The revisions the sensor registers: the configured dated versions and, at most every
    ``borderlines.latest_every_days``, the page's latest revision (the cursor remembers when it was last
    taken). The page is edited often; evaluating every edit would re-ask every model."""
    bl = settings.borderlines
    wanted = list(bl.revisions)
    now = datetime.now(UTC)
    last_latest = datetime.fromisoformat(cursor) if cursor else None
    take_latest = "latest" in wanted and (
        last_latest is None or now - last_latest >= timedelta(days=bl.latest_every_days)
    )
    if not take_latest:
        wanted = [w for w in wanted if w != "latest"]
    keys = [wikipedia.revision_key(r) for r in wikipedia.resolve_revisions(wanted, _mediawiki(settings))]
    return keys, now.isoformat() if take_latest else cursor


def _revision_options(options: dict[str, Any], revisions: list[str]) -> dict[str, dict[str, Any]]:
    """``geomon run``'s options per revision: every persona on the newest table, the first on the older
    ones (KB CS over table versions costs one persona per older table)."""
    personas = options.get("personas") or TRACKED_PERSONA  # the flag's text, or the stage option's list
    personas = [p for p in (personas.split(",") if isinstance(personas, str) else personas) if p]
    return {
        key: {
            "personas": personas if key == revisions[-1] else personas[:1],
            "sample_territories": options.get("territories") or 0,
        }
        for key in revisions
    }


def _pipeline() -> Pipeline:
    from geomon import parsing
    from geomon.sources import mediawiki

    # A stage is versioned by the benchmark's code it runs (the folder's rooms, not its report page); the stages
    # that read a reply by the parser too. The table's revisions by the release, the table's parser and the client.
    code = (sys.modules[__name__], prompts, scoring, diagnostics)
    reads_replies = (*code, parsing)
    table = (source, wikipedia, mediawiki)
    return Pipeline(
        stages=(
            Stage("release", _release_stage, versioned_by=table, source=True),
            Stage(
                "dispute_revisions",
                _dispute_revisions_stage,
                key="wikipedia/dispute_revisions",
                inputs=("release",),
                per_revision=True,
                versioned_by=table,
                checks=(
                    StageCheck(
                        "disputes_table_valid",
                        "≥ 2 claimants, controller among them or Unknown, claimants with country info (the "
                        "release's own quirks named in the suite's source.py), no collapse against the "
                        "previous revision.",
                        blocking=True,
                    ),
                ),
            ),
            Stage(
                "prompts",
                _prompts_stage,
                inputs=("release", "dispute_revisions"),
                per_revision=True,
                versioned_by=code,
                checks=(
                    StageCheck(
                        "prompts_translated",
                        "No empty query; every non-English query differs from its English one (no silent fallback).",
                        blocking=True,
                    ),
                ),
                options=(
                    Option("personas", list, PERSONAS, "the personas asked (their system prompts)"),
                    Option("sample_territories", int, 0, "0 = every territory; N = the first N territories"),
                ),
            ),
            Stage(
                "responses",
                _responses_stage,
                inputs=("prompts",),
                per_model=True,
                asks_models=True,
                versioned_by=code,
                requests=lambda prompts, spec, settings: requests_for(prompts, spec)[0],
            ),
            Stage(
                "scores",
                _scores_stage,
                inputs=("prompts", "responses"),
                per_model=True,
                versioned_by=reads_replies,
                checks=(
                    StageCheck(
                        "answered_above_floor",
                        "Concurrence scores from a model that commits to a claimant in few answers are not comparable.",
                    ),
                ),
            ),
            Stage(
                "concurrence",
                _concurrence_stage,
                inputs=("scores", "release"),
                per_model=True,
                versioned_by=reads_replies,
                tracked=True,
            ),
        ),
        write_report=_write_report,
        leaderboard_columns=("persona", "kb_cs", "con_cs", "non_cs", "delta_cs", "cst_cs_all", "cst_cs_unknown"),
        per_model_description="Responses, claimants and concurrence scores of one model on one table revision.",
        published=_published,
        revisions=Revisions(
            partitions="dispute_revisions",
            resolve=_revisions,
            options=_revision_options,
            watch=_watch,
            scopes=lambda section: len(section.revisions),  # each configured revision is decided in a release
        ),
        board_rows=lambda result: result["by_persona"].to_dict("records"),
        report_inputs=("dispute_revisions",),
        board_metadata=_board_metadata,
        # Each model's line on each table version follows the persona the regression check follows.
        series_rows=lambda own: own[own["persona"] == TRACKED_PERSONA],
    )


PIPELINE = _pipeline()
