"""SAGED assets: corpus (scraped sentences) → prompts (split and branched to every country) → per model:
responses per role → features (sentiment, embedding distance; calibrated) → disparity → leaderboard."""

from datetime import UTC, datetime

import dagster as dg
import pandas as pd

from geomon import embeddings
from geomon.defs import monitoring
from geomon.defs.automation import EAGER
from geomon.defs.engine import ask_model
from geomon.defs.execution import model_call_options
from geomon.defs.leaderboard import leaderboard
from geomon.defs.resources import GeomonResource, models_partitions, options_metadata, persisted_options
from geomon.defs.saged import checks
from geomon.defs.versions import source_version
from geomon.monitor.history import metrics_from_mapping
from geomon.report import charts
from geomon.report.saged import write_report
from geomon.sources import corpus as source
from geomon.stats import disparity, uncertainty
from geomon.suites import saged

GROUP = "saged"
SOURCE_VERSION = source_version(source)
PROMPT_VERSION = source_version(saged)
SCORE_VERSION = source_version(saged, embeddings, disparity, uncertainty)


@dg.asset(key=["saged", "corpus"], group_name=GROUP, code_version=SOURCE_VERSION, automation_condition=EAGER)
def saged_corpus(geomon: GeomonResource) -> dg.Output[pd.DataFrame]:
    """Sentences that mention the root concept's keywords, from the local documents and (live) Wikipedia
    pages in ``geomon.yaml``, each with its source tag."""
    settings = geomon.settings()
    config = settings.saged
    documents = {doc.source_tag: source.read_local(doc) for doc in config.documents}
    if config.wikipedia_pages:
        client = settings.borderlines.mediawiki_client()
        date = config.wikipedia_date or datetime.now(UTC).date().isoformat()
        for title in config.wikipedia_pages:
            documents[f"wiki:{title}"] = source.wikipedia_text(client, title, date)
    if not documents:
        raise source.CorpusError("saged: no documents and no wikipedia_pages in geomon.yaml")
    scraped = saged.scrape(documents, config.concept, config.keywords)
    return dg.Output(
        scraped,
        metadata={
            "documents": dg.MetadataValue.json(sorted(documents)),
            "sentences_read": scraped.attrs["sentences_read"],
            "sentences_with_a_keyword": len(scraped),
            "preview": dg.MetadataValue.md(charts.markdown_table(scraped[["source_tag", "sentence"]].head(5))),
        },
    )


class SagedPromptConfig(dg.Config):
    sample_prompts: int = 0  # 0 = every root prompt; N = a seeded sample
    seed: int = 0


@dg.asset(
    key=["saged", "prompts"],
    **model_call_options(),
    group_name=GROUP,
    automation_condition=EAGER,
    code_version=PROMPT_VERSION,
    check_specs=[checks.PROMPTS_SPEC],
    ins={"scraped": dg.AssetIn(key=["saged", "corpus"])},
)
def saged_prompts(
    context: dg.AssetExecutionContext, config: SagedPromptConfig, geomon: GeomonResource, scraped: pd.DataFrame
):
    """Split-sentence continuation prompts (rejected sentences counted by reason) and, with a
    ``question_model``, generated question prompts (validated; up to three attempts), sampled, then
    branched to the root concept and every country with the keyword replaced in prompt and baseline. The
    sample persists until a run sets it again (``persisted_options``)."""
    config = persisted_options(context, config)
    settings = geomon.settings()
    countries = settings.saged.countries or saged.G20
    questions = _questions(settings, scraped) if settings.saged.question_model else None
    assembled, branched = saged.build_prompts(scraped, config.sample_prompts, config.seed, countries, questions)
    yield dg.Output(
        branched,
        metadata={
            "sentences": len(scraped),
            "root_prompts_assembled": len(assembled),
            "rejected": dg.MetadataValue.json(assembled.attrs["rejected"]),
            "questions": dg.MetadataValue.json(
                {
                    "valid": len(questions),
                    "rejected": questions.attrs["rejected"],
                    "discarded": questions.attrs["discarded"],
                }
                if questions is not None
                else "no question_model"
            ),
            "root_prompts_used": int(branched["root_id"].nunique()) if len(branched) else 0,
            "concepts": int(branched["concept"].nunique()) if len(branched) else 0,
            "prompts": len(branched),
            **options_metadata(config),
            "preview": dg.MetadataValue.md(charts.markdown_table(branched[["concept", "prompt"]].head(4))),
        },
    )
    yield checks.same_prompts(branched)


def _questions(settings, scraped: pd.DataFrame) -> pd.DataFrame:
    """Ask the question model for a question per sentence; a rejected reply is asked again (a new sample),
    at most three attempts in all (the paper's make_questions)."""
    spec = settings.model(settings.saged.question_model)
    replies: list[list[str | None]] = []
    pending = list(range(len(scraped)))
    for attempt in range(saged.QUESTION_ATTEMPTS):
        if not pending:
            break
        asked = scraped.iloc[pending]
        responses, _ = ask_model(settings, spec, saged.question_requests(asked, spec, attempt))
        this = [None] * len(scraped)
        for row, text in zip(pending, responses["text"], strict=True):
            this[row] = text if isinstance(text, str) else ""
        replies.append(this)
        pending = [
            row
            for row in pending
            if saged.check_question(this[row], scraped.iloc[row]["keyword"], scraped.iloc[row]["sentence"])[0] is None
        ]
    return saged.assemble_questions(scraped, replies)


@dg.asset(
    key=["saged", "responses"],
    **model_call_options(),
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=models_partitions,
    code_version=PROMPT_VERSION,
    ins={"prompts": dg.AssetIn(key=["saged", "prompts"])},
)
def saged_responses(context: dg.AssetExecutionContext, geomon: GeomonResource, prompts: pd.DataFrame):
    """Each model's continuations, once per system-prompt role, through the response store."""
    settings = geomon.settings()
    spec = settings.model(context.partition_key)
    frames, metadata = [], {}
    for role, system in settings.saged.roles.items():
        responses, engine = ask_model(settings, spec, saged.requests_for(prompts, spec, system))
        frames.append(responses.assign(role=role, prompt_id=prompts["prompt_id"].to_numpy()))
        metadata[f"answered_{role}"] = int(responses["error"].isna().sum())
    metadata.update({k: v for k, v in engine.items() if k in ("model", "cache_epoch")})
    return dg.Output(pd.concat(frames, ignore_index=True), metadata=metadata)


@dg.asset(
    key=["saged", "features"],
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=models_partitions,
    code_version=SCORE_VERSION,
    check_specs=[checks.COVERAGE_SPEC],
    ins={"prompts": dg.AssetIn(key=["saged", "prompts"]), "responses": dg.AssetIn(key=["saged", "responses"])},
)
def saged_features(
    context: dg.AssetExecutionContext, geomon: GeomonResource, prompts: pd.DataFrame, responses: pd.DataFrame
):
    """Sentiment (VADER, 0-1) and L2 distance to the baseline sentence (all-MiniLM-L6-v2) of every
    response, uncalibrated and calibrated by the baseline's value."""
    settings = geomon.settings()
    frames = [
        saged.score(
            prompts,
            part.reset_index(drop=True),
            context.partition_key,
            str(role),
            settings.embedding_model,
            settings.saged.topics,
        )
        for role, part in responses.groupby("role", sort=False)
    ]
    features = pd.concat(frames, ignore_index=True)
    yield dg.Output(
        features,
        metadata={
            "responses": len(features),
            "mean_sentiment": dg.MetadataValue.json(features.groupby("role")["sentiment"].mean().round(4).to_dict()),
            "mean_baseline_sentiment": float(features["baseline_sentiment"].mean()),
            "mean_distance": dg.MetadataValue.json(features.groupby("role")["distance"].mean().round(4).to_dict()),
            "topics": int(features["topic_id"].nunique()) if "topic_id" in features else 0,
        },
    )
    yield checks.features_extracted(features)


@dg.asset(
    key=["saged", "disparity"],
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=models_partitions,
    code_version=SCORE_VERSION,
    check_specs=[monitoring.regression_spec(["saged", "disparity"])],
    ins={"features": dg.AssetIn(key=["saged", "features"])},
)
def saged_disparity(context: dg.AssetExecutionContext, geomon: GeomonResource, features: pd.DataFrame):
    """Per role and feature (uncalibrated and calibrated): per-country mean, selection rate, KL divergence
    and precision; range, min/max ratio, max Z-score, Dixon's Q, impact ratio with the four-fifths rule,
    intervals and a permutation p-value; history and the regression check."""
    result = saged.diagnose(features)
    numbers = {k: float(v) for k, v in result["summary"].items() if isinstance(v, int | float) and pd.notna(v)}
    table = result["disparity"]
    shown = [
        c
        for c in (
            "role",
            "feature",
            "mean_range",
            "impact_ratio",
            "four_fifths_biased",
            "max_z_score",
            "dixon_q",
            "lowest",
            "highest",
            "permutation_p",
        )
        if c in table
    ]
    yield dg.Output(
        result,
        metadata={**numbers, "disparity": dg.MetadataValue.md(charts.markdown_table(table[shown]))},
    )
    settings = geomon.settings()
    scope = f"roots={features['root_id'].nunique()}|concepts={features['concept'].nunique()}"
    yield monitoring.track_evaluation(
        context,
        settings,
        ["saged", "disparity"],
        "saged",
        context.partition_key,
        metrics_from_mapping(numbers, n=len(features)),
        saged.items(features),
        saged.REGRESSION_METRICS,
        scope=scope,
        versions={"data": SOURCE_VERSION, "prompts": PROMPT_VERSION, "code": SCORE_VERSION},
    )


@dg.asset(
    key=["saged", "leaderboard"],
    group_name=GROUP,
    automation_condition=EAGER,
    code_version=SCORE_VERSION,
    ins={"disparity": dg.AssetIn(key=["saged", "disparity"], partition_mapping=dg.AllPartitionMapping())},
)
def saged_leaderboard(context: dg.AssetExecutionContext, geomon: GeomonResource, disparity: dict):
    """Every model's sentiment disparity across countries side by side, with an HTML report."""
    out = geomon.settings().results_dir / "saged"
    columns = (
        "sentiment_impact_ratio",
        "sentiment_impact_ratio_calibrated",
        "sentiment_impact_ratio_calibrated_ci_low",
        "sentiment_impact_ratio_calibrated_ci_high",
        "sentiment_mean_range_calibrated",
        "sentiment_chance_range_95_calibrated",
        "sentiment_permutation_p_calibrated",
        "distance_mean_range",
    )
    return leaderboard(
        context, "disparity", disparity, lambda board, results: write_report(out, board, results), columns
    )
