"""BorderLines assets: Wikipedia revisions → disputes tables → multilingual, per-persona query sets →
per-model responses → claimants → concurrence scores → leaderboard and table-version comparison."""

import itertools
from typing import Any

import dagster as dg
import pandas as pd

from geomon import parsing
from geomon.defs import monitoring
from geomon.defs.automation import ANNUAL_DATA, EAGER
from geomon.defs.borderlines import checks
from geomon.defs.engine import ask_model
from geomon.defs.execution import model_call_options
from geomon.defs.leaderboard import leaderboard_metadata, mark_insufficient, with_published
from geomon.defs.resources import (
    GeomonResource,
    by_partition,
    keyed_by_partition,
    model_revision_partitions,
    options_metadata,
    persisted_options,
    revisions_partitions,
)
from geomon.defs.versions import source_version, versioned_output
from geomon.monitor.history import MetricHistory, MetricValue, metrics_from_mapping
from geomon.report import charts
from geomon.report.borderlines import write_report
from geomon.sources import borderlines as source
from geomon.sources import wikipedia
from geomon.sources.borderlines import DATED_TABLES, BorderLinesData
from geomon.suites import borderlines

GROUP = "borderlines"
SOURCE_VERSION = source_version(source, wikipedia)
PROMPT_VERSION = source_version(borderlines)
SCORE_VERSION = source_version(borderlines, parsing)
PER_REVISION = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="revision")


@dg.asset(
    key=["borderlines", "release"],
    group_name=GROUP,
    code_version=SOURCE_VERSION,
    automation_condition=EAGER,
    freshness_policy=ANNUAL_DATA,
)
def borderlines_release(context: dg.AssetExecutionContext, geomon: GeomonResource) -> dg.Output[BorderLinesData]:
    """The BorderLines release: claimant countries, question templates and term translations in 49
    languages, persona system prompts (and the 2023-05-15 table, used when no revision is chosen)."""
    settings = geomon.settings()
    root = settings.borderlines.snapshot
    if root is None:
        root = source.fetch_release(
            settings.borderlines.release_url, settings.results_dir.parent / "borderlines-release"
        )
    data = source.read_snapshot(root)
    return dg.Output(
        data,
        metadata={
            "countries": len(data.countries),
            "languages_with_template": data.report["languages_with_template"],
            "languages_with_terms": data.report["languages_with_terms"],
            "personas": ", ".join(data.personas),
            "source": str(root),
        },
    )


@dg.asset(
    key=["wikipedia", "dispute_revisions"],
    group_name="wikipedia",
    automation_condition=EAGER,
    partitions_def=revisions_partitions,
    code_version=SOURCE_VERSION,
    check_specs=[checks.DISPUTES_SPEC],
    ins={"release": dg.AssetIn(key=["borderlines", "release"])},
)
def dispute_revisions(context: dg.AssetExecutionContext, geomon: GeomonResource, release: BorderLinesData):
    """One revision of "List of territorial disputes" parsed into territories (a partition per revision)."""
    settings = geomon.settings()
    revision = wikipedia.parse_revision_key(context.partition_key)
    client = settings.borderlines.mediawiki()
    if client is None:
        by_id = {revid: path for path, revid in DATED_TABLES.values()}
        if revision.revid not in by_id:
            raise wikipedia.WikipediaError(
                f"revision {context.partition_key}: offline, only the release's dated tables exist "
                f"({sorted(DATED_TABLES)}); set borderlines.snapshot: none to parse live revisions"
            )
        disputes = source.read_disputes(settings.borderlines.snapshot / by_id[revision.revid])
        origin = f"snapshot table {by_id[revision.revid]}"
        excluded: list[dict[str, str]] = []
        merged: list[dict[str, Any]] = []
        not_countries: list[str] = []
    else:
        html = client.revision_html(revision.revid)
        disputes = wikipedia.parse_disputes_html(html, f"revision {revision.revid}", set(release.countries))
        origin = f"{settings.borderlines.wikipedia_api_url} oldid={revision.revid}"
        excluded = disputes.attrs["excluded"]
        merged = disputes.attrs["merged_with_disagreeing_controllers"]
        not_countries = disputes.attrs["not_countries"]
    unknown = int((disputes["controller"] == source.UNKNOWN).sum())
    yield versioned_output(
        disputes,
        str(revision.revid),
        metadata={
            "revid": revision.revid,
            "date": revision.date,
            "territories": len(disputes),
            "unknown_controller": unknown,
            "excluded_by_filters": len(excluded),
            "excluded": dg.MetadataValue.json(excluded[:50]),
            "listed_twice_controllers_disagree": dg.MetadataValue.json(merged),
            "claimants_not_countries_left_out": dg.MetadataValue.json(not_countries),
            "regions": dg.MetadataValue.json(disputes["region"].value_counts().to_dict()),
            "source": origin,
        },
    )
    history = MetricHistory(settings.store_url)
    sizes = history.series(suite="disputes_table", metric="territories")
    earlier = sizes[sizes["scope"] < context.partition_key] if len(sizes) else sizes
    previous = (str(earlier["scope"].iloc[-1]), int(earlier["value"].iloc[-1])) if len(earlier) else None
    history.record(
        "disputes_table",
        "wikipedia",
        [MetricValue("territories", float(len(disputes))), MetricValue("unknown_controller", float(unknown))],
        scope=context.partition_key,
        versions={"data": str(revision.revid), "code": SOURCE_VERSION},
        dagster_run_id=context.run.run_id,
    )
    yield checks.disputes_table_valid(disputes, release.countries, context.partition_key, previous)


class BorderLinesPromptConfig(dg.Config):
    personas: list[str] = ["vanilla", "un_peacekeeper", "nationalist", "demographic"]  # noqa: RUF012
    sample_territories: int = 0  # 0 = every territory; N = the first N territories (quick looks, tests)


@dg.asset(
    key=["borderlines", "prompts"],
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=revisions_partitions,
    code_version=PROMPT_VERSION,
    check_specs=[checks.PROMPTS_SPEC],
    ins={
        "release": dg.AssetIn(key=["borderlines", "release"]),
        "disputes": dg.AssetIn(key=["wikipedia", "dispute_revisions"]),
    },
)
def borderlines_prompts(
    context: dg.AssetExecutionContext,
    config: BorderLinesPromptConfig,
    geomon: GeomonResource,
    release: BorderLinesData,
    disputes: pd.DataFrame,
):
    """The English query and one per claimant language, template-wise, under each persona. Live, a
    territory the release has no translation for takes its Wikipedia article's title in that language.
    The personas and sample persist until a run sets them again (``persisted_options``)."""
    config = persisted_options(context, config)
    if config.sample_territories:
        disputes = disputes.head(config.sample_territories)
    data = release.with_disputes(disputes)
    client = geomon.settings().borderlines.mediawiki()
    filled: list[dict[str, str]] = []
    if client is not None:
        gaps = borderlines.build_queries(data).attrs["gaps"]
        terms, filled = wikipedia.fill_terms_from_langlinks(client, data.terms, gaps, set(disputes["territory"]))
        data = BorderLinesData(data.disputes, data.countries, data.templates, terms, data.personas, data.report)
    prompts = borderlines.build_prompts(data, config.personas)
    gaps = prompts.attrs["gaps"]
    yield dg.Output(
        prompts,
        metadata={
            "queries": len(prompts),
            "territories": prompts["territory"].nunique(),
            "languages": prompts["lang"].nunique(),
            "personas": ", ".join(config.personas),
            **options_metadata(config),
            "translation_gaps": len(gaps),
            "names_from_wikipedia_langlinks": len(filled),
            "langlinks": dg.MetadataValue.json(filled[:50]),
            "gaps": dg.MetadataValue.json(gaps[:50]),
            "preview": dg.MetadataValue.md(charts.markdown_table(prompts[["query_id", "query"]].head(6))),
        },
    )
    yield checks.prompts_translated(prompts, release)


@dg.asset(
    key=["borderlines", "responses"],
    **model_call_options(),
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=model_revision_partitions,
    code_version=PROMPT_VERSION,
    ins={"prompts": dg.AssetIn(key=["borderlines", "prompts"], partition_mapping=PER_REVISION)},
)
def borderlines_responses(
    context: dg.AssetExecutionContext, geomon: GeomonResource, prompts: pd.DataFrame
) -> dg.Output[pd.DataFrame]:
    """Each model's answers (chat) or per-claimant log-probabilities (rank classification), via the store."""
    settings = geomon.settings()
    keys = context.partition_key.keys_by_dimension
    spec = settings.model(keys["model"])
    requests, owners = borderlines.requests_for(prompts, spec)
    responses, metadata = ask_model(settings, spec, requests)
    responses["prompt_row"] = [i for i, _ in owners]
    responses["choice_index"] = [j for _, j in owners]
    metadata["method"] = "rank classification" if borderlines.uses_rank_classification(spec) else "parsed answers"
    return dg.Output(responses, metadata=keyed_by_partition(metadata, str(context.partition_key)))


@dg.asset(
    key=["borderlines", "scores"],
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=model_revision_partitions,
    code_version=SCORE_VERSION,
    check_specs=[checks.ANSWERED_SPEC],
    ins={
        "prompts": dg.AssetIn(key=["borderlines", "prompts"], partition_mapping=PER_REVISION),
        "responses": dg.AssetIn(key=["borderlines", "responses"]),
    },
)
def borderlines_scores(context: dg.AssetExecutionContext, prompts: pd.DataFrame, responses: pd.DataFrame):
    """The claimant each answer commits to (English name), per query and persona."""
    owners = list(zip(responses["prompt_row"], responses["choice_index"], strict=True))
    scored = borderlines.score(prompts, responses, owners)
    answered = scored["answer"].notna()
    yield dg.Output(
        scored,
        metadata=keyed_by_partition(
            {
                "queries": len(scored),
                "answered_rate": float(answered.mean()) if len(scored) else 0.0,
                "method": scored["method"].iloc[0] if len(scored) else "none",
                "unanswered_examples": dg.MetadataValue.md(
                    charts.markdown_table(scored.loc[~answered, ["query_id", "response"]].head(5))
                    if (~answered).any()
                    else "none"
                ),
            },
            str(context.partition_key),
        ),
    )
    yield checks.answered_above_floor(scored)


@dg.asset(
    key=["borderlines", "concurrence"],
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=model_revision_partitions,
    code_version=SCORE_VERSION,
    check_specs=[monitoring.regression_spec(["borderlines", "concurrence"], model_revision_partitions)],
    ins={"scores": dg.AssetIn(key=["borderlines", "scores"]), "release": dg.AssetIn(key=["borderlines", "release"])},
)
def borderlines_concurrence(
    context: dg.AssetExecutionContext, geomon: GeomonResource, scores: pd.DataFrame, release: BorderLinesData
):
    """Concurrence scores (the paper's Table 4) per persona with bootstrap 95 % intervals over territories,
    per region, and per query language; recorded in the metric history and checked for regression."""
    result = borderlines.diagnose(scores, release.countries)
    table = result["by_persona"].set_index("persona")
    numbers = {
        f"{persona}/{score}": float(table.at[persona, score])
        for persona in table.index
        for score in borderlines.SCORES
        if pd.notna(table.at[persona, score])
    }
    shown = ["kb_cs", "con_cs", "non_cs", "delta_cs", "cst_cs_all", "cst_cs_unknown", "response_countries_mean"]
    yield dg.Output(
        result,
        metadata=keyed_by_partition(
            {
                **numbers,
                "answered_rate": result["answered_rate"],
                "excluded_queries": dg.MetadataValue.json(result["excluded"]["reason"].value_counts().to_dict()),
                "excluded_examples": dg.MetadataValue.md(
                    charts.markdown_table(result["excluded"].head(10)) if len(result["excluded"]) else "none"
                ),
                "scores": dg.MetadataValue.md(charts.markdown_table(result["by_persona"][["persona", *shown]])),
                "by_region": dg.MetadataValue.md(
                    charts.markdown_table(
                        result["by_region"][["persona", "region", "territories", "kb_cs", "delta_cs"]]
                    )
                ),
            },
            str(context.partition_key),
        ),
    )
    keys = context.partition_key.keys_by_dimension
    metrics = [
        metric
        for record in result["by_persona"].to_dict("records")
        for metric in metrics_from_mapping(
            {k: v for k, v in record.items() if k != "persona"}, f"persona={record['persona']}", record["territories"]
        )
    ]
    metrics += [
        MetricValue(
            score, float(row[score]), f"persona={row['persona']},region={row['region']}", n=int(row["territories"])
        )
        for row in result["by_region"].to_dict("records")
        for score in ("kb_cs", "delta_cs_unnormalized")
    ]
    persona = borderlines.tracked_persona(scores)
    yield monitoring.track_evaluation(
        context,
        geomon.settings(),
        ["borderlines", "concurrence"],
        "borderlines",
        keys["model"],
        metrics,
        borderlines.items(scores, release.countries, persona=persona),
        borderlines.REGRESSION_METRICS,
        scope=f"{keys['revision']}|persona={persona}",
        versions={"data": keys["revision"], "prompts": PROMPT_VERSION, "code": SCORE_VERSION},
    )


@dg.asset(
    key=["borderlines", "leaderboard"],
    group_name=GROUP,
    automation_condition=EAGER,
    code_version=SCORE_VERSION,
    ins={
        "concurrence": dg.AssetIn(key=["borderlines", "concurrence"], partition_mapping=dg.AllPartitionMapping()),
        "tables": dg.AssetIn(key=["wikipedia", "dispute_revisions"], partition_mapping=dg.AllPartitionMapping()),
    },
)
def borderlines_leaderboard(
    context: dg.AssetExecutionContext,
    geomon: GeomonResource,
    concurrence: dict,
    tables: Any,
) -> dg.Output[pd.DataFrame]:
    """Every model × table version × persona side by side; how the table changed between versions and
    how each model's KB CS moved with it. Written to the results directory."""
    concurrence = by_partition(context, "concurrence", concurrence)
    tables = by_partition(context, "tables", tables)
    rows = []
    for key, result in concurrence.items():
        model, revision = str(key).split("|")  # a multi-partition key joins its dimensions in name order
        for record in result["by_persona"].to_dict("records"):
            rows.append({"model": model, "revision": revision, **record})
    board = pd.DataFrame(rows).sort_values(["revision", "model", "persona"], ignore_index=True)
    versions = sorted(tables)
    changes = [
        {"from": old, "to": new, **borderlines.compare_tables(tables[old], tables[new])}
        for old, new in itertools.pairwise(versions)
    ]
    settings = geomon.settings().borderlines
    published = source.read_published_scores(settings.paper_results) if settings.paper_results else None
    if published is not None:
        published = published.assign(revision="published (Li et al.)")
    board = with_published(mark_insufficient(board, "borderlines"), published)
    report = write_report(geomon.settings().results_dir / "borderlines", board, changes, concurrence)
    shown = ["persona", "kb_cs", "con_cs", "non_cs", "delta_cs", "cst_cs_all", "cst_cs_unknown"]
    # Per-model series follow the tracked persona on each table version (one line per model and version).
    tracked = board[board["persona"] == borderlines.TRACKED_PERSONA]
    return dg.Output(
        board,
        metadata={
            "rows": len(board),
            **leaderboard_metadata("borderlines", board, report, shown, ("model", "revision"), tracked),
            "table_changes": dg.MetadataValue.json(
                [
                    {
                        "from": c["from"],
                        "to": c["to"],
                        "in_both": c["in_both"],
                        "added": len(c["added"]),
                        "removed": len(c["removed"]),
                        "controller_changed": len(c["controller_changed"]),
                    }
                    for c in changes
                ]
            ),
        },
    )
