"""QUENCH assets: question bank → prompts → per-model answers → rationales (given the predicted and the
gold answer) → judgements (the jury) and similarities (embeddings) → scores → Indic gap → leaderboard."""

import dagster as dg
import pandas as pd

from geomon import embeddings, jury
from geomon.defs import monitoring
from geomon.defs.automation import ANNUAL_DATA, EAGER
from geomon.defs.engine import agreement_metadata, ask_model, judge_asker
from geomon.defs.execution import model_call_options
from geomon.defs.leaderboard import leaderboard
from geomon.defs.quench import checks
from geomon.defs.resources import GeomonResource, models_partitions, options_metadata, persisted_options
from geomon.defs.versions import source_version
from geomon.monitor.history import metrics_from_mapping
from geomon.report import charts
from geomon.report.quench import write_report
from geomon.sources import quench as source
from geomon.stats import agreement, uncertainty
from geomon.suites import quench

GROUP = "quench"
SOURCE_VERSION = source_version(source)
PROMPT_VERSION = source_version(quench)
JUDGE_VERSION = source_version(quench, jury)
SCORE_VERSION = source_version(quench, jury, embeddings, agreement, uncertainty)


@dg.asset(
    key=["quench", "question_bank"],
    group_name=GROUP,
    code_version=SOURCE_VERSION,
    automation_condition=EAGER,
    freshness_policy=ANNUAL_DATA,
)
def question_bank(context: dg.AssetExecutionContext, geomon: GeomonResource) -> dg.Output[source.QuenchRelease]:
    """QUENCH's questions, one row per masked entity with its answer, rationale, themes and Indic flag."""
    settings = geomon.settings()
    root = settings.quench.snapshot
    if root is None:
        root = source.fetch_release(settings.quench.archive_url, settings.results_dir.parent / "quench-release")
    release = source.read_release(root)
    report = release.report
    metadata = {
        key: dg.MetadataValue.json(value[:50]) if isinstance(value, list) else value for key, value in report.items()
    }
    return dg.Output(release, metadata={**metadata, "source": str(root)})


class QuenchPromptConfig(dg.Config):
    sample_questions: int = 0  # 0 = all 400; N = a seeded sample, half Indic
    seed: int = 0


@dg.asset(
    key=["quench", "prompts"],
    group_name=GROUP,
    automation_condition=EAGER,
    code_version=PROMPT_VERSION,
    check_specs=[checks.PROMPTS_SPEC],
    ins={"release": dg.AssetIn(key=["quench", "question_bank"])},
)
def quench_prompts(context: dg.AssetExecutionContext, config: QuenchPromptConfig, release: source.QuenchRelease):
    """One entity-prediction prompt per masked entity and mode (no CoT / CoT), as the release asks. The sample
    persists until a run sets it again (``persisted_options``)."""
    config = persisted_options(context, config)
    prompts = quench.build_prompts(release.items[release.items["indic"].notna()], config.sample_questions, config.seed)
    yield dg.Output(
        prompts,
        metadata={
            "prompts": len(prompts),
            "entities": int(prompts["entity_id"].nunique()) if len(prompts) else 0,
            "questions": int(prompts["question_id"].nunique()) if len(prompts) else 0,
            "indic_entities": int(prompts.drop_duplicates("entity_id")["indic"].sum()) if len(prompts) else 0,
            **options_metadata(config),
            "preview": dg.MetadataValue.md(charts.markdown_table(prompts[["prompt_id", "system", "user"]].head(2))),
        },
    )
    yield checks.prompts_filled(prompts)


@dg.asset(
    key=["quench", "answers"],
    **model_call_options(),
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=models_partitions,
    code_version=PROMPT_VERSION,
    ins={"prompts": dg.AssetIn(key=["quench", "prompts"])},
)
def quench_answers(context: dg.AssetExecutionContext, geomon: GeomonResource, prompts: pd.DataFrame):
    """Each model's entity predictions (through the response store) and the entity read from each reply;
    replies without one are unanswered: counted, never scored as wrong."""
    settings = geomon.settings()
    spec = settings.model(context.partition_key)
    responses, engine = ask_model(settings, spec, quench.requests_for(prompts, spec))
    answers = quench.parse_answers(prompts, responses, spec.kind)
    return dg.Output(
        answers,
        metadata={
            **engine,
            "status": dg.MetadataValue.json(answers["status"].value_counts().to_dict()),
            "read_as": dg.MetadataValue.json(answers["read_as"].value_counts().head(12).to_dict()),
            "model": dg.MetadataValue.json(spec.describe()),
        },
    )


@dg.asset(
    key=["quench", "rationales"],
    **model_call_options(),
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=models_partitions,
    code_version=PROMPT_VERSION,
    check_specs=[checks.RATIONALE_PROMPTS_SPEC],
    ins={"prompts": dg.AssetIn(key=["quench", "prompts"]), "answers": dg.AssetIn(key=["quench", "answers"])},
)
def quench_rationales(
    context: dg.AssetExecutionContext, geomon: GeomonResource, prompts: pd.DataFrame, answers: pd.DataFrame
):
    """The model's rationale for its own answer (where it gave one) and for the gold answer, same mode."""
    settings = geomon.settings()
    spec = settings.model(context.partition_key)
    asked = quench.rationale_prompts(prompts, answers)
    responses, engine = ask_model(settings, spec, quench.rationale_requests(asked, spec))
    rationales = quench.parse_rationales(asked, responses, spec.kind)
    yield dg.Output(
        rationales,
        metadata={
            **engine,
            "asked": dg.MetadataValue.json(asked["given"].value_counts().to_dict()),
            "not_asked_without_an_answer": int((answers["status"] != "answered").sum()),
            "status": dg.MetadataValue.json(
                rationales.groupby(["given", "status"]).size().rename("n").reset_index().to_dict("records")
            ),
        },
    )
    yield checks.prompts_filled(asked, checks.RATIONALE_PROMPTS_SPEC, "rationale_id")


@dg.asset(
    key=["quench", "judgements"],
    **model_call_options(),
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=models_partitions,
    code_version=JUDGE_VERSION,
    check_specs=[checks.JUDGES_SPEC],
    ins={
        "prompts": dg.AssetIn(key=["quench", "prompts"]),
        "answers": dg.AssetIn(key=["quench", "answers"]),
        "rationales": dg.AssetIn(key=["quench", "rationales"]),
    },
)
def quench_judgements(
    context: dg.AssetExecutionContext,
    geomon: GeomonResource,
    prompts: pd.DataFrame,
    answers: pd.DataFrame,
    rationales: pd.DataFrame,
):
    """The jury with the paper's prompts: each answered entity correct / incorrect, each rationale 1-5
    against the gold rationale; an item's score is the judges' mean (every reply through the store)."""
    settings = geomon.settings()
    judges = settings.judges(settings.quench.jury)
    ask_judge = judge_asker(settings)
    max_tokens = settings.quench.jury.max_tokens
    entity_ids, entity_prompts = quench.entity_judge_prompts(prompts, answers)
    rationale_ids, rationale_prompts = quench.rationale_judge_prompts(prompts, rationales)
    entity_verdicts = jury.ask_jury(judges, entity_prompts, quench.read_entity_verdict, ask_judge, max_tokens)
    rationale_verdicts = jury.ask_jury(judges, rationale_prompts, quench.read_rationale_verdict, ask_judge, max_tokens)
    entity_scores = jury.mean_scores(entity_verdicts, len(entity_ids)).assign(prompt_id=entity_ids)
    rationale_scores = jury.mean_scores(rationale_verdicts, len(rationale_ids)).assign(rationale_id=rationale_ids)
    verdicts = pd.concat(
        [
            entity_verdicts.assign(task="entity", id=[entity_ids[i] for i in entity_verdicts["item"]]),
            rationale_verdicts.assign(task="rationale", id=[rationale_ids[i] for i in rationale_verdicts["item"]]),
        ],
        ignore_index=True,
    )
    agreed = jury.agreement(entity_verdicts)
    yield dg.Output(
        {"entities": entity_scores, "rationales": rationale_scores, "verdicts": verdicts, "agreement": agreed},
        metadata={
            "judges": ", ".join(j.name for j in judges),
            "entities_judged": len(entity_ids),
            "rationales_judged": len(rationale_ids),
            "entities_without_a_readable_verdict": int((entity_scores["votes"] == 0).sum()),
            "rationales_without_a_readable_score": int((rationale_scores["votes"] == 0).sum()),
            **agreement_metadata(agreed, "entity_judge_fleiss_kappa"),
        },
    )
    yield checks.judge_replies_readable(verdicts)


@dg.asset(
    key=["quench", "similarities"],
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=models_partitions,
    code_version=SCORE_VERSION,
    ins={
        "prompts": dg.AssetIn(key=["quench", "prompts"]),
        "answers": dg.AssetIn(key=["quench", "answers"]),
        "rationales": dg.AssetIn(key=["quench", "rationales"]),
    },
)
def quench_similarities(geomon: GeomonResource, prompts: pd.DataFrame, answers: pd.DataFrame, rationales: pd.DataFrame):
    """Cosine similarity of sentence embeddings (bundled all-MiniLM-L6-v2, offline): each answer to the gold
    answer, each rationale to the gold rationale."""
    model = geomon.settings().embedding_model
    gold = prompts.set_index("prompt_id")
    answer_sim = embeddings.similarity(
        answers["answer"].tolist(), gold.loc[answers["prompt_id"], "gold_answer"].tolist(), model
    )
    rationale_sim = embeddings.similarity(
        rationales["rationale"].tolist(), gold.loc[rationales["prompt_id"], "gold_rationale"].tolist(), model
    )
    frame = pd.DataFrame(
        {
            "id": [*answers["prompt_id"], *rationales["rationale_id"]],
            "kind": ["answer"] * len(answers) + [f"rationale|{g}" for g in rationales["given"]],
            "similarity": [*answer_sim, *rationale_sim],
        }
    )
    means = frame.groupby("kind")["similarity"].mean().to_dict()
    return dg.Output(
        frame,
        metadata={
            "embedding_model": str(model or embeddings.BUNDLED),
            "compared": int(frame["similarity"].notna().sum()),
            "nothing_to_compare": int(frame["similarity"].isna().sum()),
            "mean_similarity": dg.MetadataValue.json({k: round(float(v), 4) for k, v in means.items() if pd.notna(v)}),
        },
    )


@dg.asset(
    key=["quench", "scores"],
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=models_partitions,
    code_version=SCORE_VERSION,
    ins={
        "prompts": dg.AssetIn(key=["quench", "prompts"]),
        "answers": dg.AssetIn(key=["quench", "answers"]),
        "rationales": dg.AssetIn(key=["quench", "rationales"]),
        "judgements": dg.AssetIn(key=["quench", "judgements"]),
        "similarities": dg.AssetIn(key=["quench", "similarities"]),
    },
)
def quench_scores(
    context: dg.AssetExecutionContext,
    prompts: pd.DataFrame,
    answers: pd.DataFrame,
    rationales: pd.DataFrame,
    judgements: dict,
    similarities: pd.DataFrame,
):
    """Every score of every (entity, mode): jury correctness, rationale scores, similarities, exact match."""
    scores = quench.score(prompts, answers, rationales, judgements, similarities, context.partition_key)
    return dg.Output(
        scores,
        metadata={
            "rows": len(scores),
            "status": dg.MetadataValue.json(scores["status"].value_counts().to_dict()),
            "scored_by_the_jury": int(scores["correct_answer_score"].notna().sum()),
        },
    )


@dg.asset(
    key=["quench", "disparity"],
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=models_partitions,
    code_version=SCORE_VERSION,
    check_specs=[monitoring.regression_spec(["quench", "disparity"])],
    ins={"scores": dg.AssetIn(key=["quench", "scores"]), "judgements": dg.AssetIn(key=["quench", "judgements"])},
)
def quench_disparity(context: dg.AssetExecutionContext, geomon: GeomonResource, scores: pd.DataFrame, judgements: dict):
    """The paper's aggregated scores per subset and mode; Indic − non-Indic per score with intervals over
    questions and the smallest gap this sample can detect; the CoT effect; themes; history and regression."""
    result = quench.diagnose(scores)
    summary = result["summary"]
    kappa = judgements["agreement"]["fleiss_kappa"]
    summary["entity_judge_fleiss_kappa"] = float(kappa)
    numbers = {k: float(v) for k, v in summary.items() if isinstance(v, int | float) and pd.notna(v)}
    gaps = result["gaps"]
    yield dg.Output(
        result,
        metadata={
            **numbers,
            "paper_layout": dg.MetadataValue.md(charts.markdown_table(result["paper_layout"])),
            "indic_gaps": dg.MetadataValue.md(
                charts.markdown_table(
                    gaps[["mode", "score", "indic", "non_indic", "gap", "ci_low", "ci_high", "detectable"]]
                )
            ),
            "cot_effect": dg.MetadataValue.md(charts.markdown_table(result["cot"])) if len(result["cot"]) else "none",
        },
    )
    metrics = metrics_from_mapping(numbers, n=len(scores))
    settings = geomon.settings()
    judges = ",".join(j.name for j in settings.judges(settings.quench.jury))
    # Runs compare only on the same questions and the same jury (other judges score differently).
    scope = f"questions={scores['question_id'].nunique()}|judges={judges}"
    yield monitoring.track_evaluation(
        context,
        settings,
        ["quench", "disparity"],
        "quench",
        context.partition_key,
        metrics,
        quench.items(scores),
        quench.REGRESSION_METRICS,
        scope=scope,
        versions={"data": SOURCE_VERSION, "prompts": PROMPT_VERSION, "code": SCORE_VERSION},
    )


@dg.asset(
    key=["quench", "leaderboard"],
    group_name=GROUP,
    automation_condition=EAGER,
    code_version=SCORE_VERSION,
    ins={"disparity": dg.AssetIn(key=["quench", "disparity"], partition_mapping=dg.AllPartitionMapping())},
)
def quench_leaderboard(context: dg.AssetExecutionContext, geomon: GeomonResource, disparity: dict):
    """Every model's QUENCH figures side by side, next to the paper's aggregated table, written to the
    results directory with an HTML report."""
    settings = geomon.settings()
    out, paper = settings.results_dir / "quench", settings.quench.paper_results
    columns = (
        "entities",
        "answered",
        "correct_answer_score",
        "correct_answer_score_cot",
        "indic_gap_correct_answer_score",
        "indic_gap_correct_answer_score_ci_low",
        "indic_gap_correct_answer_score_ci_high",
        "pred_rationale_score",
        "gold_rationale_score",
        "answer_similarity",
        "exact_match",
    )
    return leaderboard(
        context, "disparity", disparity, lambda board, results: write_report(out, board, results, paper), columns
    )
