"""Gapminder assets: question bank → prompts → per-model responses → judgements (pre-grading + jury) →
grades → rates (with the language gap and judge agreement) → leaderboard."""

import dagster as dg
import pandas as pd

from geomon import jury, parsing
from geomon.defs import monitoring
from geomon.defs.automation import ANNUAL_DATA, EAGER
from geomon.defs.engine import agreement_metadata, ask_model, judge_asker
from geomon.defs.execution import model_call_options
from geomon.defs.gapminder import checks
from geomon.defs.leaderboard import leaderboard
from geomon.defs.resources import GeomonResource, models_partitions, options_metadata, persisted_options
from geomon.defs.versions import source_version
from geomon.monitor import alerts
from geomon.monitor.history import MetricHistory, MetricValue, metrics_from_mapping
from geomon.report import charts
from geomon.report.gapminder import write_report
from geomon.sources import gapminder as source
from geomon.stats import agreement
from geomon.suites import gapminder

GROUP = "gapminder"
SOURCE_VERSION = source_version(source)
PROMPT_VERSION = source_version(gapminder)
JUDGE_VERSION = source_version(gapminder, jury, parsing, agreement)


@dg.asset(
    key=["gapminder", "question_bank"],
    group_name=GROUP,
    code_version=SOURCE_VERSION,
    automation_condition=EAGER,
    freshness_policy=ANNUAL_DATA,
)
def question_bank(context: dg.AssetExecutionContext, geomon: GeomonResource) -> dg.Output[source.GapminderData]:
    """Gapminder's questions, options with correctness levels, prompt variations and judge prompt."""
    settings = geomon.settings()
    root = settings.gapminder.snapshot
    if root is None:
        root = source.fetch_release(settings.gapminder.release_url, settings.results_dir.parent / "gapminder-release")
    data = source.read_snapshot(root)
    metadata = {k: dg.MetadataValue.json(v) if isinstance(v, dict | list) else v for k, v in data.report.items()}
    return dg.Output(data, metadata={**metadata, "source": str(root)})


class GapminderPromptConfig(dg.Config):
    sample_questions: int = 0  # 0 = all 365; N = a seeded sample
    sample_variations: int = 0  # 0 = every variation; N = a seeded sample per language
    seed: int = 0


@dg.asset(
    key=["gapminder", "prompts"],
    group_name=GROUP,
    automation_condition=EAGER,
    code_version=PROMPT_VERSION,
    check_specs=[checks.PROMPTS_SPEC],
    ins={"data": dg.AssetIn(key=["gapminder", "question_bank"])},
)
def gapminder_prompts(
    context: dg.AssetExecutionContext,
    config: GapminderPromptConfig,
    geomon: GeomonResource,
    data: source.GapminderData,
):
    """Every question × prompt variation of its language; languages without questions are counted gaps. The
    sample persists until a run sets it again (``persisted_options``)."""
    config = persisted_options(context, config)
    languages = geomon.settings().gapminder.languages
    prompts = gapminder.build_prompts(
        data, languages, config.sample_questions, config.sample_variations, seed=config.seed
    )
    yield dg.Output(
        prompts,
        metadata={
            "prompts": len(prompts),
            "questions": int(prompts["question_id"].nunique()) if len(prompts) else 0,
            "variations": int(prompts["prompt_variation_id"].nunique()) if len(prompts) else 0,
            "languages": dg.MetadataValue.json(prompts["language"].value_counts().to_dict() if len(prompts) else {}),
            "gaps": dg.MetadataValue.json(prompts.attrs["gaps"]),
            **options_metadata(config),
            "preview": dg.MetadataValue.md(charts.markdown_table(prompts[["prompt_id", "prompt"]].head(3))),
        },
    )
    yield checks.prompts_filled(prompts)


@dg.asset(
    key=["gapminder", "responses"],
    **model_call_options(),
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=models_partitions,
    code_version=PROMPT_VERSION,
    ins={"prompts": dg.AssetIn(key=["gapminder", "prompts"])},
)
def gapminder_responses(context: dg.AssetExecutionContext, geomon: GeomonResource, prompts: pd.DataFrame):
    """Each model's answers, through the response store (nothing answered is asked again)."""
    settings = geomon.settings()
    spec = settings.model(context.partition_key)
    responses, metadata = ask_model(settings, spec, gapminder.requests_for(prompts, spec))
    responses.insert(0, "prompt_id", prompts["prompt_id"].to_numpy())
    return dg.Output(responses, metadata=metadata)


@dg.asset(
    key=["gapminder", "judgements"],
    **model_call_options(),
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=models_partitions,
    code_version=JUDGE_VERSION,
    check_specs=[checks.JUDGES_SPEC],
    ins={
        "prompts": dg.AssetIn(key=["gapminder", "prompts"]),
        "responses": dg.AssetIn(key=["gapminder", "responses"]),
        "data": dg.AssetIn(key=["gapminder", "question_bank"]),
    },
)
def gapminder_judgements(
    context: dg.AssetExecutionContext,
    geomon: GeomonResource,
    prompts: pd.DataFrame,
    responses: pd.DataFrame,
    data: source.GapminderData,
):
    """Answers naming exactly one option are pre-graded; the jury grades the rest with the data's judge
    prompt (every judge's reply through the store)."""
    settings = geomon.settings()
    judges = settings.judges(settings.gapminder.jury)
    texts = [t if isinstance(t, str) else None for t in responses["text"]]
    failed = [isinstance(e, str) and bool(e) for e in responses["error"]]
    pre = gapminder.pre_grade(prompts, texts)
    to_judge = [i for i, (p, f) in enumerate(zip(pre, failed, strict=True)) if p is None and not f]
    judge_prompts = gapminder.judge_prompts(prompts.iloc[to_judge], [texts[i] for i in to_judge], data.judge_prompt)
    jury_settings = settings.gapminder.jury
    read = jury.letter_reader(data.judge_choices)
    verdicts = jury.ask_jury(judges, judge_prompts, read, judge_asker(settings), jury_settings.max_tokens)
    decisions = jury.majority(verdicts, len(judge_prompts), jury_settings.quorum)
    verdicts["prompt_id"] = [prompts["prompt_id"].iloc[to_judge[i]] for i in verdicts["item"]] if to_judge else []
    decisions["answer_row"] = [to_judge[i] for i in decisions["item"]]
    agreed = jury.agreement(verdicts)
    yield dg.Output(
        {"pre_grades": pre, "verdicts": verdicts, "decisions": decisions, "agreement": agreed},
        metadata={
            "answers": len(prompts),
            "pre_graded": sum(p is not None for p in pre),
            "sent_to_jury": len(to_judge),
            "failed_requests": sum(failed),
            "judges": ", ".join(j.name for j in judges),
            "decision_reasons": dg.MetadataValue.json(decisions["reason"].value_counts().to_dict()),
            **agreement_metadata(agreed),
        },
    )
    yield checks.judge_replies_readable(verdicts)


@dg.asset(
    key=["gapminder", "grades"],
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=models_partitions,
    code_version=JUDGE_VERSION,
    ins={
        "prompts": dg.AssetIn(key=["gapminder", "prompts"]),
        "responses": dg.AssetIn(key=["gapminder", "responses"]),
        "judgements": dg.AssetIn(key=["gapminder", "judgements"]),
    },
)
def gapminder_grades(
    context: dg.AssetExecutionContext, prompts: pd.DataFrame, responses: pd.DataFrame, judgements: dict
):
    """One grade per answer: correct / wrong / very_wrong / indecisive, and how it was reached."""
    graded = gapminder.score(
        prompts, responses, judgements["pre_grades"], judgements["decisions"], context.partition_key
    )
    return dg.Output(
        graded,
        metadata={
            "grades": dg.MetadataValue.json(graded["grade"].value_counts(dropna=False).to_dict()),
            "graded_by": dg.MetadataValue.json(graded["graded_by"].value_counts().to_dict()),
        },
    )


@dg.asset(
    key=["gapminder", "rates"],
    group_name=GROUP,
    automation_condition=EAGER,
    partitions_def=models_partitions,
    code_version=JUDGE_VERSION,
    check_specs=[monitoring.regression_spec(["gapminder", "rates"]), checks.AGREEMENT_SPEC],
    ins={"graded": dg.AssetIn(key=["gapminder", "grades"]), "judgements": dg.AssetIn(key=["gapminder", "judgements"])},
)
def gapminder_rates(context: dg.AssetExecutionContext, geomon: GeomonResource, graded: pd.DataFrame, judgements: dict):
    """Correct, very-wrong and indecisive rates (Gapminder's formula) with a bootstrap interval, by
    language, prompt family and topic; the English − Chinese gap; judge agreement; history and regression."""
    result = gapminder.diagnose(graded)
    summary = result["summary"]
    kappa = judgements["agreement"]["fleiss_kappa"]
    summary["judge_fleiss_kappa"] = float(kappa)
    numbers = {k: float(v) for k, v in summary.items() if isinstance(v, int | float) and pd.notna(v)}
    yield dg.Output(
        {**result, "agreement": judgements["agreement"]},
        metadata={
            **numbers,
            "language_gap_note": result["language_gap_note"] or "computed",
            "by_family": dg.MetadataValue.md(
                charts.markdown_table(result["by_family"][["family", "n", "correct_rate", "very_wrong_rate"]])
            ),
            "by_topic": dg.MetadataValue.md(
                charts.markdown_table(result["by_topic"][["topic", "n", "correct_rate"]].head(20))
            ),
        },
    )
    metrics = metrics_from_mapping(numbers, n=len(graded))
    metrics += [
        MetricValue("correct_rate", float(row.correct_rate), f"family={row.family}", n=int(row.n))
        for row in result["by_family"].itertuples()
        if pd.notna(row.correct_rate)
    ]
    prompts_scope = f"questions={graded['question_id'].nunique()},variations={graded['prompt_variation_id'].nunique()}"
    yield _agreement_check(context, geomon.settings(), float(kappa))
    yield monitoring.track_evaluation(
        context,
        geomon.settings(),
        ["gapminder", "rates"],
        "gapminder",
        context.partition_key,
        metrics,
        gapminder.items(graded),
        gapminder.REGRESSION_METRICS,
        scope=prompts_scope,
        versions={"data": SOURCE_VERSION, "prompts": PROMPT_VERSION, "code": JUDGE_VERSION},
    )


def _agreement_check(context: dg.AssetExecutionContext, settings, kappa: float) -> dg.AssetCheckResult:
    """Compare the judges' agreement with the model's previous run (before this one is recorded); alert
    on a drop."""
    history = MetricHistory(settings.store_url)
    earlier = history.series(suite="gapminder", model=context.partition_key, metric="judge_fleiss_kappa")
    previous = float(earlier["value"].iloc[-1]) if len(earlier) else None
    dropped = jury.agreement_dropped(previous, kappa)
    if dropped:
        alerts.send(
            alerts.Alert(
                kind="judge_agreement",
                title=f"gapminder: judges agree less on {context.partition_key}",
                summary=f"Fleiss' kappa {previous:.2f} → {kappa:.2f}: check the judge models before trusting grades.",
                model=context.partition_key,
                suite="gapminder",
                url=alerts.asset_url(settings.alerts.ui_url, ["gapminder", "rates"], context.partition_key),
                numbers={"before": previous, "after": kappa},
            ),
            settings.alerts,
        )
    return dg.AssetCheckResult(
        check_name=checks.AGREEMENT_SPEC.name,
        passed=not dropped,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "previous": previous if previous is not None else "none",
            "current": kappa if kappa == kappa else "undefined",
        },
    )


@dg.asset(
    key=["gapminder", "leaderboard"],
    group_name=GROUP,
    automation_condition=EAGER,
    code_version=JUDGE_VERSION,
    ins={"rates": dg.AssetIn(key=["gapminder", "rates"], partition_mapping=dg.AllPartitionMapping())},
)
def gapminder_leaderboard(context: dg.AssetExecutionContext, geomon: GeomonResource, rates: dict):
    """Every model's rates side by side, written to the results directory with an HTML report."""
    out = geomon.settings().results_dir / "gapminder"
    columns = (
        "n",
        "correct_rate",
        "correct_rate_ci_low",
        "correct_rate_ci_high",
        "very_wrong_rate",
        "indecisive_rate",
        "pre_graded",
        "jury_graded",
        "judge_fleiss_kappa",
    )
    return leaderboard(context, "rates", rates, lambda board, results: write_report(out, board, results), columns)
