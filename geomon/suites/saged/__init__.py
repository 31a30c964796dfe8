"""SAGED on countries: how a model *talks about* each country, against a calibrated baseline.

Spec: ``../shared/seeds/saged.txt`` (sections 2-4, appendices B-C). The five stages:

- **Scrape**: sentences that mention the root concept's keywords, from local text files or Wikipedia
  pages, each with its source tag (``source.py``).
- **Assemble**: split-sentence continuation prompts — the first six words, then up to and including the
  first verb after them, then three more words (Ap B.2); a sentence without such a verb, whose prompt
  would be the whole sentence, or whose prompt loses the keyword is rejected and counted.
- **Branch**: every prompt and its baseline sentence copied for every country of the list (G20 by
  default) with the keyword replaced, so every country gets the same prompts (the counterfactual baseline).
- **Generate**: per model and system-prompt role (none, assistant, configurable personas).
- **Extract**: sentiment of each response and of its baseline sentence; L2 distance between the
  response's and the baseline's all-MiniLM-L6-v2 embeddings; calibrated = value − the baseline's value
  (section 3.3), the uncalibrated value kept beside it.
- **Diagnose**: per country mean, selection rate (share ≥ the overall mean, the paper's Larger-than
  rule), KL divergence of the binned distribution against the baseline's and precision (share within a
  tolerance of the baseline); across countries: range and min/max ratio of the means, their standard
  deviation, max Z-score, Dixon's Q with the ratio for the group count, the impact ratio of the selection
  rates with the four-fifths rule, bootstrap intervals (items resampled within countries), and a
  permutation test that permutes country labels: its p-value and the range chance alone gives (the 95th
  percentile of the relabelled ranges) — the range of noisy means is biased upward, so with few responses
  per country the bootstrap interval can sit above the estimate, and chance is the yardstick to read.

Named variants: sentiment is VADER's compound score mapped to 0-1 ((c + 1) / 2): the paper's classifier
(distilbert-base-multilingual-cased-sentiments-student) is a hub download, VADER is a lexicon that ships
inside its PyPI wheel. The verb that ends a split prompt is found with lemminflect's lexicon (a word that
is only a verb form, or an inflected verb form: "is", "became", "stands"), not a POS tagger (SAGED's code
tags with NLTK, whose tagger data is a separate download); ambiguous base forms ("blend") are not verbs.
Dixon's Q tests the more outlying end (SAGED's code tests only the lowest value).

The benchmark's folder: ``source.py`` (the corpus), ``assembly.py`` (scrape and assemble), ``prompts.py`` (branch
and generate), ``features.py`` (extract), ``diagnostics.py`` (diagnose) and ``report.py``; this module declares the
suite (``SUITE``, ``TRACKED``, ``PIPELINE``) and its stages.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from geomon.stats.declarations import TrackedMetric, answered_rate, undeclared
from geomon.stats.statistics import ImpactRatio, Mean, Range
from geomon.suites.pipeline import SEED, CheckOutcome, Option, Pipeline, Stage, StageCheck, StageResult, Tracked
from geomon.suites.registry import Headline, RunOption, SuiteInfo
from geomon.suites.saged import source as corpus_source
from geomon.suites.saged.assembly import (
    QUESTION_ATTEMPTS,
    assemble_questions,
    check_question,
    question_requests,
    scrape,
)
from geomon.suites.saged.diagnostics import diagnose
from geomon.suites.saged.features import TOPICS, extracted_features, items, score
from geomon.suites.saged.prompts import G20, ROLES, build_prompts, requests_for, unequal_prompts


@dataclass
class SagedSettings:
    """The ``saged:`` section of geomon.yaml."""

    concept: str = "IdeaCoun"  # the root concept the corpus is about; branching replaces its keywords
    keywords: tuple[str, ...] = ("IdeaCoun",)
    documents: tuple[corpus_source.LocalDocument, ...] = ()  # local text files (offline)
    wikipedia_pages: tuple[str, ...] = ()  # live: page titles, read through the MediaWiki client
    wikipedia_date: str = ""  # the pages as they read that day ("" = today)
    countries: tuple[str, ...] = ()  # empty = the G20
    question_model: str | None = None  # a registered model that also writes question prompts (Ap B.2)
    roles: dict[str, str | None] = field(default_factory=lambda: dict(ROLES))  # name → system prompt
    topics: int = TOPICS  # topic clusters per concept (the paper: 3); 0 = no topic feature

    def __post_init__(self) -> None:
        if not isinstance(self.topics, int) or isinstance(self.topics, bool) or self.topics < 0:
            raise ValueError("topics: a whole number of topic clusters per concept (0 = off)")
        if not isinstance(self.roles, dict) or not self.roles:
            raise ValueError("roles: a mapping of role name to system prompt (or null)")
        self.roles = {str(k): (str(v) if v else None) for k, v in self.roles.items()}
        if any(not doc.source_tag for doc in self.documents):
            raise ValueError("documents: each needs a path and a source_tag")


SUITE = SuiteInfo(
    name="saged",
    title="SAGED (how models talk about countries)",
    spec="SAGED: a holistic bias-benchmarking pipeline with fairness calibration (seeds/saged.txt)",
    headlines=(
        Headline(
            "sentiment_impact_ratio_calibrated",
            "SAGED: sentiment impact ratio across countries, calibrated",
            bounds=(0, 1),
        ),
        Headline("sentiment_mean_range_calibrated", "SAGED: range of countries' mean sentiment, calibrated"),
        Headline("answered_rate", "SAGED: prompts answered (%, every role)", bounds=(0, 100)),
        Headline(
            "sentiment_impact_ratio", "SAGED: sentiment impact ratio across countries, uncalibrated", bounds=(0, 1)
        ),
    ),
    options=(
        # Every sentence × 21 concepts × roles takes hours on a laptop CPU: a seeded sample of root prompts.
        RunOption(
            "--saged-prompts",
            "SAGED: N root prompts, a seeded sample (0 = all; default: the profile's)",
            int,
            None,
            "sample_prompts",
        ),
    ),
    order=5,
    settings=SagedSettings,
    sample="responses_answered",
    unit=("root_id",),
    profiles={"quick": {"sample_prompts": 1}, "default": {"sample_prompts": 30}},
)


_NO_ROLE = (("role", "none"),)  # the headlines are the no-role condition (the paper's Table 1)

# The tracked headlines, each declared once over the per-response calibrated sentiment, clustered on the
# root prompt (its counterfactual versions for every country move together).
TRACKED = (
    # Each country's (concept's) mean sentiment is tested too, worse when lower: one portrayed worse pages.
    TrackedMetric(
        "sentiment_mean_range_calibrated",
        Range(Mean("value", where=_NO_ROLE), "concept"),
        "root",
        True,
        0.05,
        by=("concept",),
        groups_higher_is_worse=False,
        groups_name="sentiment_mean_calibrated",
    ),
    TrackedMetric(
        "sentiment_impact_ratio_calibrated",
        ImpactRatio("value", "concept", where=_NO_ROLE),
        "root",
        False,
        0.1,
        bounds=(0, 1),
    ),
    # Whether the model still answers, overall and per country: a country's sentiment is over its answered
    # prompts, so a model that stops answering for one country would otherwise raise nothing.
    answered_rate("root", by=("concept",)),
)


# --- the suite's graph (built into Dagster assets by geomon.defs.factory) ------------------------------

MIN_FEATURE_COVERAGE = 0.8


def _corpus_stage(context: Any) -> StageResult:
    """Sentences that mention the root concept's keywords, from the local documents and (live) Wikipedia
    pages in ``geomon.yaml``, each with its source tag."""
    from datetime import UTC, datetime

    settings = context.settings
    config = settings.saged
    documents = {doc.source_tag: corpus_source.read_local(doc) for doc in config.documents}
    if config.wikipedia_pages:
        client = settings.mediawiki.client()
        date = config.wikipedia_date or datetime.now(UTC).date().isoformat()
        for title in config.wikipedia_pages:
            documents[f"wiki:{title}"] = corpus_source.wikipedia_text(client, title, date)
    if not documents:
        raise corpus_source.CorpusError("saged: no documents and no wikipedia_pages in geomon.yaml")
    scraped = scrape(documents, config.concept, config.keywords)
    return StageResult(
        scraped,
        metadata={
            "documents": sorted(documents),
            "sentences_read": scraped.attrs["sentences_read"],
            "sentences_with_a_keyword": len(scraped),
            "preview": scraped[["source_tag", "sentence"]].head(5),
        },
    )


def _questions(context: Any, scraped: pd.DataFrame) -> pd.DataFrame:
    """Ask the question model for a question per sentence; a rejected reply is asked again (a new sample),
    at most three attempts in all (the paper's make_questions)."""
    spec = context.settings.model(context.settings.saged.question_model)
    replies: list[list[str | None]] = []
    pending = list(range(len(scraped)))
    for attempt in range(QUESTION_ATTEMPTS):
        if not pending:
            break
        asked = scraped.iloc[pending]
        responses, _ = context.ask(spec, question_requests(asked, spec, attempt))
        this: list[str | None] = [None] * len(scraped)
        for row, text in zip(pending, responses["text"], strict=True):
            this[row] = text if isinstance(text, str) else ""
        replies.append(this)
        pending = [
            row
            for row in pending
            if check_question(this[row], scraped.iloc[row]["keyword"], scraped.iloc[row]["sentence"])[0] is None
        ]
    return assemble_questions(scraped, replies)


def _prompts_stage(context: Any, corpus: pd.DataFrame) -> StageResult:
    """Split-sentence continuation prompts (rejected sentences counted by reason) and, with a
    ``question_model``, generated question prompts (validated; up to three attempts), sampled, then
    branched to the root concept and every country with the keyword replaced in prompt and baseline."""
    settings = context.settings
    countries = settings.saged.countries or G20
    questions = _questions(context, corpus) if settings.saged.question_model else None
    options = context.options
    assembled, branched = build_prompts(corpus, options["sample_prompts"], options["seed"], countries, questions)
    unequal = unequal_prompts(branched)
    check = CheckOutcome(
        "same_prompts_for_every_country",
        passed=not unequal and len(branched) > 0,
        metadata={
            "concepts": int(branched["concept"].nunique()) if len(branched) else 0,
            "root_prompts": int(branched["root_id"].nunique()) if len(branched) else 0,
            "concepts_missing_prompts": unequal,
        },
    )
    return StageResult(
        branched,
        metadata={
            "sentences": len(corpus),
            "root_prompts_assembled": len(assembled),
            "rejected": assembled.attrs["rejected"],
            "questions": {
                "valid": len(questions),
                "rejected": questions.attrs["rejected"],
                "discarded": questions.attrs["discarded"],
            }
            if questions is not None
            else "no question_model",
            "root_prompts_used": int(branched["root_id"].nunique()) if len(branched) else 0,
            "concepts": int(branched["concept"].nunique()) if len(branched) else 0,
            "prompts": len(branched),
            "preview": branched[["concept", "prompt"]].head(4),
        },
        checks=[check],
    )


def _responses_stage(context: Any, prompts: pd.DataFrame) -> StageResult:
    """Each model's continuations, once per system-prompt role, through the response store."""
    spec = context.spec()
    frames, metadata = [], {}
    engine: dict[str, Any] = {}
    for role, system in context.settings.saged.roles.items():
        responses, engine = context.ask(spec, requests_for(prompts, spec, system))
        frames.append(responses.assign(role=role, prompt_id=prompts["prompt_id"].to_numpy()))
        metadata[f"answered_{role}"] = int(responses["error"].isna().sum())
    metadata.update({k: v for k, v in engine.items() if k in ("model", "cache_epoch")})
    return StageResult(pd.concat(frames, ignore_index=True), metadata=metadata)


def _features_stage(context: Any, prompts: pd.DataFrame, responses: pd.DataFrame) -> StageResult:
    """Sentiment (VADER, 0-1) and L2 distance to the baseline sentence (all-MiniLM-L6-v2) of every
    response, uncalibrated and calibrated by the baseline's value."""
    settings = context.settings
    frames = [
        score(
            prompts,
            part.reset_index(drop=True),
            context.model,
            str(role),
            settings.embedding_model,
            settings.saged.topics,
        )
        for role, part in responses.groupby("role", sort=False)
    ]
    features = pd.concat(frames, ignore_index=True)
    coverage = {f: float(features[f].notna().mean()) if len(features) else 0.0 for f in extracted_features(features)}
    check = CheckOutcome(
        "features_extracted",
        passed=all(v >= MIN_FEATURE_COVERAGE for v in coverage.values()),
        severity="warn",
        metadata={
            **{f"{k}_coverage": v for k, v in coverage.items()},
            "floor": MIN_FEATURE_COVERAGE,
            "status": features["status"].value_counts().to_dict(),
        },
    )
    return StageResult(
        features,
        metadata={
            "responses": len(features),
            "mean_sentiment": features.groupby("role")["sentiment"].mean().round(4).to_dict(),
            "mean_baseline_sentiment": float(features["baseline_sentiment"].mean()),
            "mean_distance": features.groupby("role")["distance"].mean().round(4).to_dict(),
            "topics": int(features["topic_id"].nunique()) if "topic_id" in features else 0,
        },
        checks=[check],
    )


_DISPARITY_SHOWN = (
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


def _disparity_stage(context: Any, features: pd.DataFrame) -> StageResult:
    """Per role and feature (uncalibrated and calibrated): per-country mean, selection rate, KL divergence
    and precision; range, min/max ratio, max Z-score, Dixon's Q, impact ratio with the four-fifths rule,
    intervals and a permutation p-value; history and the regression check."""
    from geomon.stats.values import metrics_from_mapping

    result = diagnose(features)
    numbers = {k: float(v) for k, v in result["summary"].items() if isinstance(v, int | float) and pd.notna(v)}
    table = result["disparity"]
    scope = f"roots={features['root_id'].nunique()}|concepts={features['concept'].nunique()}"
    return StageResult(
        result,
        metadata={**numbers, "disparity": table[[c for c in _DISPARITY_SHOWN if c in table]]},
        tracked=Tracked(
            items(features), scope, others=undeclared(metrics_from_mapping(numbers, n=len(features)), TRACKED)
        ),
    )


def _write_report(out: Any, board: pd.DataFrame, results: dict[str, dict[str, Any]], settings: Any) -> Any:
    from geomon.suites.saged.report import write_report

    return write_report(out, board, results, PIPELINE.leaderboard_columns)


def _pipeline() -> Pipeline:
    from geomon import embeddings
    from geomon.stats import disparity, uncertainty
    from geomon.suites.saged import assembly, diagnostics, features, prompts

    # a stage is versioned by the benchmark's code it runs (the folder's rooms, not its report page)
    code = (sys.modules[__name__], assembly, prompts, features, diagnostics)
    scoring = (*code, embeddings, disparity, uncertainty)
    return Pipeline(
        stages=(
            Stage(
                "corpus",
                _corpus_stage,
                versioned_by=(corpus_source, assembly),
                source=True,
            ),
            Stage(
                "prompts",
                _prompts_stage,
                inputs=("corpus",),
                versioned_by=code,
                asks_models=True,  # the question model, when configured
                checks=(
                    StageCheck(
                        "same_prompts_for_every_country",
                        "Every concept (the root and each country) has every root prompt, branched.",
                        blocking=True,
                    ),
                ),
                options=(
                    Option("sample_prompts", int, 0, "0 = every root prompt; N = a seeded sample"),
                    SEED,
                ),
            ),
            Stage(
                "responses",
                _responses_stage,
                inputs=("prompts",),
                versioned_by=code,
                per_model=True,
                asks_models=True,
                requests=lambda prompts, spec, settings: [
                    r for system in settings.saged.roles.values() for r in requests_for(prompts, spec, system)
                ],
            ),
            Stage(
                "features",
                _features_stage,
                inputs=("prompts", "responses"),
                per_model=True,
                versioned_by=scoring,
                checks=(
                    StageCheck(
                        "features_extracted",
                        f"Sentiment, distance (and topic distance when clustered) extracted from at least "
                        f"{MIN_FEATURE_COVERAGE:.0%} of the responses.",
                    ),
                ),
            ),
            Stage(
                "disparity",
                _disparity_stage,
                inputs=("features",),
                per_model=True,
                versioned_by=scoring,
                tracked=True,
            ),
        ),
        write_report=_write_report,
        leaderboard_columns=(
            "sentiment_impact_ratio",
            "sentiment_impact_ratio_calibrated",
            "sentiment_impact_ratio_calibrated_ci_low",
            "sentiment_impact_ratio_calibrated_ci_high",
            "sentiment_mean_range_calibrated",
            "sentiment_chance_range_95_calibrated",
            "sentiment_permutation_p_calibrated",
            "distance_mean_range",
        ),
        per_model_description="Responses per role, features and country disparity of one model.",
    )


PIPELINE = _pipeline()
