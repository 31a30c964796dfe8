"""QUENCH: masked-entity quiz questions, judged and embedded; the gap between Indic and non-Indic context.

Spec: ``../shared/seeds/quench.txt`` (prompts in Appendix B-C, aggregation in section 4) and the release's
``LLM_Inference/*.py``, whose prompt texts are the ones the paper's models got:

1. Entity prediction, one request per masked entity: the quizmaster system prompt (+ " Let's think step by
   step." for CoT) and "…provide me with the answer for variable X. …" followed by the question.
2. Rationales: "The prediction for variable X is …" (the model's own answer) and "The correct answer for
   the variable X is …" (the gold answer), each followed by the question, in the same mode.
3. A jury scores each entity correct / incorrect (binary) and each rationale 1-5 against the gold
   rationale (Appendix C prompts); an entity's score is the judges' mean, and a subset's score the mean
   over its entities (the paper's Σ over questions and entities, divided by the entities).
4. Beside the jury: cosine similarity of all-MiniLM-L6-v2 embeddings (answer vs gold answer, rationale vs
   gold rationale) and an exact match after normalisation, a cheap lower bound.

Named variants (where geomon differs, and why):
- The release passes the model's whole reply as "the prediction" and to the judges; geomon passes the
  entity read from the reply. Replies with no entity in the requested format are ``unanswered``: counted,
  excluded from every score, and given no rationale-from-prediction request (the paper would have the
  judges mark most of them incorrect; here a format failure is not a knowledge failure).
- The paper's appendix repeats the entity prompt under "rationale using gold labels" (a copy error);
  the release's code sends the gold-rationale prompt used here.
- Semantic similarity is MiniLM cosine, not BERTScore (roberta-large cannot be fetched offline): its
  scale is not the paper's BS column.

The benchmark's folder: ``source.py`` (the release), ``prompts.py``, ``replies.py`` (reading them),
``judging.py`` (the jury's prompts and verdicts), ``scoring.py``, ``diagnostics.py``, ``paper.py`` (the paper's
published table) and ``report.py``; this module declares the suite (``SUITE``, ``TRACKED``, ``PIPELINE``) and its
stages.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from geomon import jury
from geomon.stats.declarations import TrackedMetric, answered_rate, undeclared
from geomon.stats.statistics import Mean, Range
from geomon.suites.pipeline import (
    SEED,
    CheckOutcome,
    Option,
    Pipeline,
    Stage,
    StageCheck,
    StageResult,
    Tracked,
    filled_outcome,
)
from geomon.suites.quench import diagnostics, judging, paper, prompts, replies, scoring, source
from geomon.suites.quench.diagnostics import diagnose
from geomon.suites.quench.judging import (
    ENTITY_LABELS,
    entity_judge_prompts,
    rationale_judge_prompts,
    read_entity_verdict,
    read_rationale_verdict,
)
from geomon.suites.quench.paper import PAPER_TABLE, paper_gaps, published_rows, read_paper_table
from geomon.suites.quench.prompts import (
    build_prompts,
    rationale_prompts,
    rationale_requests,
    requests_for,
    unfilled_placeholders,
)
from geomon.suites.quench.replies import parse_answers, parse_rationales
from geomon.suites.quench.scoring import items, score
from geomon.suites.registry import Headline, RunOption, SuiteInfo


@dataclass
class QuenchSettings:
    """The ``quench:`` section of geomon.yaml."""

    snapshot: Path | None = None  # the release directory; None = fetch the archive from archive_url
    archive_url: str = source.DEFAULT_ARCHIVE_URL
    # The paper's judges answer "correct"/"incorrect" or a 1-5 score: a few tokens are enough.
    jury: jury.JurySettings = field(default_factory=lambda: jury.JurySettings(max_tokens=16))
    expected_questions: int | None = 400  # the release's counts; the blocking check compares (None: skip)
    expected_entities: int | None = 459
    paper_results: Path | None = None  # the paper's Results/ folder: its table goes beside geomon's in the report


SUITE = SuiteInfo(
    name="quench",
    title="QUENCH (Indic vs non-Indic quiz reasoning)",
    spec="QUENCH, Measuring the gap between Indic and Non-Indic contextual general reasoning (seeds/quench.txt)",
    headlines=(
        Headline("correct_answer_score", "QUENCH: entity correctness by the jury (0-1, no CoT)", bounds=(0, 1)),
        Headline("indic_gap_correct_answer_score", "QUENCH: Indic − non-Indic entity correctness (no CoT)"),
        Headline(
            "questions_gap_correct_answer_score",
            "QUENCH: gap between Indic and non-Indic entity correctness, either ahead (no CoT)",
            bounds=(0, 1),
        ),
        Headline("answered_rate", "QUENCH: entities answered (%, no CoT)", bounds=(0, 100)),
        Headline(
            "pred_rationale_score", "QUENCH: rationale score for the predicted entity (1-5, no CoT)", bounds=(1, 5)
        ),
    ),
    options=(
        # 400 questions × 2 modes × 3 generations + the jury take hours on a laptop CPU: a seeded sample.
        RunOption(
            "--quench-questions",
            "QUENCH: N questions, half of them Indic (seeded; 0 = all; default: the profile's)",
            int,
            None,
            "sample_questions",
        ),
    ),
    order=4,
    settings=QuenchSettings,
    sample="answered",
    unit=("question_id",),
    profiles={"quick": {"sample_questions": 2}, "default": {"sample_questions": 400}},
)

_PLAIN = (("mode", "normal"),)  # the headlines are the no-CoT answers

# The tracked headlines, each declared once over the per-entity scores, clustered on questions.
TRACKED = (
    # The Indic and the non-Indic questions are each tested too: the group that gets worse pages, by name. The gap
    # between them is tracked as a size, whichever side is ahead (the paper's signed Indic − non-Indic gap, in the
    # leaderboard, would read a gap closing from the Indic side as a change for the worse); it is a disparity:
    # shown, never paged (it also widens when the better group improves).
    TrackedMetric(
        "correct_answer_score",
        Mean("correct", where=_PLAIN),
        "question_id",
        False,
        0.05,
        by=("questions",),
        bounds=(0, 1),
    ),
    TrackedMetric(
        "questions_gap_correct_answer_score",
        Range(Mean("correct", where=_PLAIN), "questions"),
        "question_id",
        True,
        0.05,
        bounds=(0, 1),
    ),
    # Whether the model still answers, overall and for the Indic and non-Indic questions: the score is over the
    # answered entities, so a model that stops answering the ones it gets wrong would otherwise look better.
    answered_rate("question_id", by=("questions",), where=_PLAIN),
)


# --- the suite's graph (built into Dagster assets by geomon.defs.factory) ------------------------------


def _question_bank_stage(context: Any) -> StageResult:
    """QUENCH's questions, one row per masked entity with its answer, rationale, themes and Indic flag."""
    settings = context.settings
    root = settings.quench.snapshot
    if root is None:
        root = source.fetch_release(settings.quench.archive_url, settings.results_dir.parent / "quench-release")
    release = source.read_release(root)
    metadata = {key: value[:50] if isinstance(value, list) else value for key, value in release.report.items()}
    return StageResult(release, metadata={**metadata, "source": str(root)})


def _release_complete(context: Any, question_bank: source.QuenchRelease) -> Any:
    """The release's counts (400 questions, 459 masked entities unless geomon.yaml says otherwise), every
    question with its Indic annotation, every entity with an answer and a rationale."""
    from geomon import quality

    settings = context.settings.quench
    items = question_bank.items
    report = quality.validate(
        items.assign(annotated=items["indic"].notna()),
        "quench_release",
        source.release_expectations(settings.expected_entities, settings.expected_questions),
    )
    return quality.outcome(
        report,
        "release_complete",
        questions=int(items["question_id"].nunique()),
        entities=len(items),
        indic_questions=question_bank.report["indic_questions"],
        indic_entities=question_bank.report["indic_entities"],
        expected=f"{settings.expected_questions} questions, {settings.expected_entities} entities",
        questions_without_annotation=question_bank.unannotated[:20],
    )


def _prompts_stage(context: Any, question_bank: source.QuenchRelease) -> StageResult:
    """One entity-prediction prompt per masked entity and mode (no CoT / CoT), as the release asks."""
    release = question_bank
    options = context.options
    prompts = build_prompts(release.items[release.items["indic"].notna()], options["sample_questions"], options["seed"])
    return StageResult(
        prompts,
        metadata={
            "prompts": len(prompts),
            "entities": int(prompts["entity_id"].nunique()) if len(prompts) else 0,
            "questions": int(prompts["question_id"].nunique()) if len(prompts) else 0,
            "indic_entities": int(prompts.drop_duplicates("entity_id")["indic"].sum()) if len(prompts) else 0,
            "preview": prompts[["prompt_id", "system", "user"]].head(2),
        },
        checks=[filled_outcome("prompts_filled", len(prompts), unfilled_placeholders(prompts))],
    )


def _answers_stage(context: Any, prompts: pd.DataFrame) -> StageResult:
    """Each model's entity predictions (through the response store) and the entity read from each reply;
    replies without one are unanswered: counted, never scored as wrong."""
    spec = context.spec()
    responses, engine = context.ask(spec, requests_for(prompts, spec))
    answers = parse_answers(prompts, responses, spec.kind)
    return StageResult(
        answers,
        metadata={
            **engine,
            "status": answers["status"].value_counts().to_dict(),
            "read_as": answers["read_as"].value_counts().head(12).to_dict(),
            "model": spec.describe(),
        },
    )


def _rationales_stage(context: Any, prompts: pd.DataFrame, answers: pd.DataFrame) -> StageResult:
    """The model's rationale for its own answer (where it gave one) and for the gold answer, same mode."""
    spec = context.spec()
    asked = rationale_prompts(prompts, answers)
    responses, engine = context.ask(spec, rationale_requests(asked, spec))
    rationales = parse_rationales(asked, responses, spec.kind)
    return StageResult(
        rationales,
        metadata={
            **engine,
            "asked": asked["given"].value_counts().to_dict(),
            "not_asked_without_an_answer": int((answers["status"] != "answered").sum()),
            "status": rationales.groupby(["given", "status"]).size().rename("n").reset_index().to_dict("records"),
        },
        checks=[
            filled_outcome("rationale_prompts_filled", len(asked), unfilled_placeholders(asked, "rationale_id"), False)
        ],
    )


def _judgements_stage(
    context: Any, prompts: pd.DataFrame, answers: pd.DataFrame, rationales: pd.DataFrame
) -> StageResult:
    """The jury with the paper's prompts: each answered entity correct / incorrect, each rationale 1-5
    against the gold rationale; an item's score is the judges' mean (every reply through the store)."""
    settings = context.settings
    judges = settings.judges(settings.quench.jury)
    entity_ids, entity_prompts = entity_judge_prompts(prompts, answers)
    rationale_ids, rationale_prompts_ = rationale_judge_prompts(prompts, rationales)
    tasks = [
        jury.JuryTask("entity", entity_ids, entity_prompts, read_entity_verdict, "mean", tuple(ENTITY_LABELS)),
        jury.JuryTask(
            "rationale", rationale_ids, rationale_prompts_, read_rationale_verdict, "mean", ("1", "2", "3", "4", "5")
        ),
    ]
    ask = lambda spec, requests: context.ask(spec, requests)[0]  # noqa: E731
    held = settings.quench.jury
    result = jury.convene(judges, tasks, ask, held.max_tokens, constrain=held.constrain)
    entity_scores = result.decisions["entity"].rename(columns={"id": "prompt_id"})
    rationale_scores = result.decisions["rationale"].rename(columns={"id": "rationale_id"})
    readable, numbers = jury.readable_replies(result.verdicts)
    return StageResult(
        {
            "entities": entity_scores,
            "rationales": rationale_scores,
            "verdicts": result.verdicts,
            "agreement": result.agreement,
        },
        metadata={
            "judges": ", ".join(j.name for j in judges),
            "entities_judged": len(entity_ids),
            "rationales_judged": len(rationale_ids),
            "entities_without_a_readable_verdict": int((entity_scores["votes"] == 0).sum()),
            "rationales_without_a_readable_score": int((rationale_scores["votes"] == 0).sum()),
            **jury.agreement_metadata(result.agreement, "entity_judge_fleiss_kappa"),
        },
        checks=[CheckOutcome("judge_replies_readable", passed=readable, severity="warn", metadata=numbers)],
    )


def _similarities_stage(
    context: Any, prompts: pd.DataFrame, answers: pd.DataFrame, rationales: pd.DataFrame
) -> StageResult:
    """Cosine similarity of sentence embeddings (bundled all-MiniLM-L6-v2, offline): each answer to the gold
    answer, each rationale to the gold rationale."""
    from geomon import embeddings

    model = context.settings.embedding_model
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
    return StageResult(
        frame,
        metadata={
            "embedding_model": str(model or embeddings.BUNDLED),
            "compared": int(frame["similarity"].notna().sum()),
            "nothing_to_compare": int(frame["similarity"].isna().sum()),
            "mean_similarity": {k: round(float(v), 4) for k, v in means.items() if pd.notna(v)},
        },
    )


def _scores_stage(
    context: Any,
    prompts: pd.DataFrame,
    answers: pd.DataFrame,
    rationales: pd.DataFrame,
    judgements: dict,
    similarities: pd.DataFrame,
) -> StageResult:
    """Every score of every (entity, mode): jury correctness, rationale scores, similarities, exact match."""
    scores = score(prompts, answers, rationales, judgements, similarities, context.model)
    return StageResult(
        scores,
        metadata={
            "rows": len(scores),
            "status": scores["status"].value_counts().to_dict(),
            "scored_by_the_jury": int(scores["correct_answer_score"].notna().sum()),
        },
    )


def _disparity_stage(context: Any, scores: pd.DataFrame, judgements: dict) -> StageResult:
    """The paper's aggregated scores per subset and mode; Indic − non-Indic per score with intervals over
    questions and the smallest gap this sample can detect; the CoT effect; themes; history and regression."""
    from geomon.stats.values import metrics_from_mapping

    result = diagnose(scores)
    summary = result["summary"]
    summary["entity_judge_fleiss_kappa"] = float(judgements["agreement"]["fleiss_kappa"])
    numbers = {k: float(v) for k, v in summary.items() if isinstance(v, int | float) and pd.notna(v)}
    gaps = result["gaps"]
    settings = context.settings
    judges = ",".join(j.name for j in settings.judges(settings.quench.jury))
    # Runs compare only on the same questions and the same jury (other judges score differently).
    scope = f"questions={scores['question_id'].nunique()}|judges={judges}"
    return StageResult(
        result,
        metadata={
            **numbers,
            "paper_layout": result["paper_layout"],
            "indic_gaps": gaps[["mode", "score", "indic", "non_indic", "gap", "ci_low", "ci_high", "detectable"]],
            "cot_effect": result["cot"] if len(result["cot"]) else "none",
        },
        tracked=Tracked(items(scores), scope, others=undeclared(metrics_from_mapping(numbers, n=len(scores)), TRACKED)),
    )


def _write_report(out: Path, board: pd.DataFrame, results: dict[str, dict[str, Any]], settings: Any) -> Path:
    from geomon.suites.quench.report import write_report

    folder = settings.quench.paper_results
    path = folder / PAPER_TABLE if folder is not None else None
    reference = read_paper_table(path) if path is not None and path.is_file() else None
    gaps = paper_gaps(reference) if reference is not None else None
    return write_report(out, board, results, PIPELINE.leaderboard_columns, reference, gaps)


def _pipeline() -> Pipeline:
    from geomon import embeddings
    from geomon.stats import agreement, uncertainty

    # a stage is versioned by the benchmark's code it runs (the folder's rooms, not its report page)
    code = (sys.modules[__name__], prompts, replies, scoring)
    judged = (*code, judging, jury)
    scored = (*judged, diagnostics, paper, embeddings, agreement, uncertainty)
    model_stage = {"per_model": True, "asks_models": True}
    return Pipeline(
        stages=(
            Stage(
                "question_bank",
                _question_bank_stage,
                versioned_by=(source,),
                source=True,
                checks=(StageCheck("release_complete", blocking=True, evaluate=_release_complete),),
            ),
            Stage(
                "prompts",
                _prompts_stage,
                inputs=("question_bank",),
                versioned_by=code,
                checks=(
                    StageCheck(
                        "prompts_filled", "Every entity-prediction prompt rendered with no unfilled placeholder.", True
                    ),
                ),
                options=(
                    Option("sample_questions", int, 0, "0 = all 400; N = a seeded sample, half Indic"),
                    SEED,
                ),
            ),
            Stage(
                "answers",
                _answers_stage,
                inputs=("prompts",),
                versioned_by=code,
                requests=lambda prompts, spec, settings: requests_for(prompts, spec),
                **model_stage,
            ),
            Stage(
                "rationales",
                _rationales_stage,
                inputs=("prompts", "answers"),
                versioned_by=code,
                checks=(
                    StageCheck(
                        "rationale_prompts_filled",
                        "Every rationale prompt rendered with no unfilled placeholder.",
                        True,
                    ),
                ),
                **model_stage,
            ),
            Stage(
                "judgements",
                _judgements_stage,
                inputs=("prompts", "answers", "rationales"),
                versioned_by=judged,
                checks=(
                    StageCheck(
                        "judge_replies_readable",
                        f"At least {jury.MIN_READ_RATE:.0%} of the judges' replies give a verdict or a score.",
                    ),
                ),
                **model_stage,
            ),
            Stage(
                "similarities",
                _similarities_stage,
                inputs=("prompts", "answers", "rationales"),
                per_model=True,
                versioned_by=scored,
            ),
            Stage(
                "scores",
                _scores_stage,
                inputs=("prompts", "answers", "rationales", "judgements", "similarities"),
                per_model=True,
                versioned_by=scored,
            ),
            Stage(
                "disparity",
                _disparity_stage,
                inputs=("scores", "judgements"),
                per_model=True,
                versioned_by=scored,
                tracked=True,
            ),
        ),
        write_report=_write_report,
        leaderboard_columns=(
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
        ),
        per_model_description="Answers, rationales, jury, similarities, scores and Indic gap of one model.",
        published=published_rows,
    )


PIPELINE = _pipeline()
