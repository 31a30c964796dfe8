"""The suite kit: the parts a benchmark of the common shape repeats, written once.

The common shape is a question set with group columns (country, region, language), a prompt template, a
scorer, and a metric per group with intervals and the gaps between groups. ``QuestionSet`` declares such a
benchmark and ``declare`` turns it into the three declarations the registry reads (``SUITE``, ``PIPELINE``,
``TRACKED``): a YAML suite (``geomon.suites.yaml_suite``) is a ``QuestionSet`` read from a file, and a simple
Python suite is one written in Python with its own ``score`` (``examples/suites/capital_aliases.py``).

A complex suite builds its own ``Pipeline`` and takes the pieces: ``read_table`` (a release file read with
errors naming the file, line and column), ``release_stage`` (the snapshot-or-fetch source stage),
``requests_for`` (chat or completion requests by the model's kind), ``render_prompts`` (a seeded sample, the
templates filled, the ``prompts_filled`` check), ``group_metrics`` (a metric per group and its gaps, declared
once) and ``tracked_result`` (their estimates as the tracked stage's summary, groups and metric values).
"""

from __future__ import annotations

import hashlib
import inspect
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import pandas as pd

from geomon import jury
from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.jury import JurySettings
from geomon.sources.release_files import ReleaseFiles
from geomon.stats.declared import Mean, Range, TrackedMetric, estimates
from geomon.stats.values import MetricValue, series_scope
from geomon.suites.info import Headline, RunOption, SuiteError, SuiteInfo, status_of
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
    responses_stage,
)


@dataclass(frozen=True)
class ReleaseSettings:
    """A kit suite's ``geomon.yaml`` section: ``release_url`` set, the release's files are fetched from it
    (into ``<results_dir>/../<suite>-release``, kept); otherwise they are read from ``snapshot`` (default:
    the folder the suite declares, its data beside it)."""

    snapshot: Path | None = None
    release_url: str = ""
    jury: JurySettings = field(default_factory=lambda: JurySettings(max_tokens=16))  # a judged suite's judges


def read_table(path: Path, id_column: str, columns: Iterable[str] = ()) -> pd.DataFrame:
    """A release's table (CSV, or TSV by its suffix) as text, checked: the id column and ``columns`` present,
    every id filled and unique. Each problem is a ``SuiteError`` naming the file (and the line or column)."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, sep="\t" if path.suffix == ".tsv" else ",")
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise SuiteError(f"{path}: not a readable table ({exc})") from None
    missing = sorted({id_column, *columns} - set(frame.columns))
    if missing:
        raise SuiteError(f"{path}: no column(s) {missing}; it has {list(frame.columns)}")
    empty = frame.index[frame[id_column].str.strip() == ""].tolist()
    if empty:
        raise SuiteError(f"{path}, line {empty[0] + 2}: column {id_column} is empty")
    twice = sorted(frame.loc[frame[id_column].duplicated(), id_column].unique())
    if twice:
        raise SuiteError(f"{path}: {id_column} {twice[:5]} appear more than once")
    return frame


def files_version(paths: Iterable[Path]) -> str:
    """The data version of a release's files: a hash of their bytes (a changed file re-runs what reads it)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def release_stage(
    suite: str, files: tuple[str, ...], read: Callable[[Path], Any], data_dir: Path | None, versioned_by: tuple = ()
) -> Stage:
    """The snapshot-or-fetch source stage: the release's ``files`` (relative paths) fetched from the suite's
    ``release_url`` or found in its ``snapshot`` folder (default ``data_dir``), then ``read(folder)``. A file
    missing from the folder, or one the server does not have, is an error naming it."""

    def run(context: Any) -> StageResult:
        """The release's files, read (from the snapshot folder, or fetched from the release URL)."""
        settings: ReleaseSettings = context.settings.suite(suite)
        if settings.release_url:
            folder = context.settings.results_dir.parent / f"{suite}-release"
            fetched = ReleaseFiles(settings.release_url, folder, f"suite {suite}'s release", SuiteError)
            paths = [fetched.get(f) for f in files]
            origin = settings.release_url
        else:
            folder = settings.snapshot or data_dir
            if folder is None:
                raise SuiteError(f"suite {suite}: set {suite}.snapshot or {suite}.release_url in geomon.yaml")
            paths = [folder / f for f in files]
            absent = [str(p) for p in paths if not p.is_file()]
            if absent:
                raise SuiteError(f"suite {suite}: release file(s) missing: {', '.join(absent)}")
            origin = str(folder)
        data = read(folder)
        rows = {"rows": len(data)} if isinstance(data, pd.DataFrame) else {}
        return StageResult(data, metadata={**rows, "source": origin}, data_version=files_version(paths))

    return Stage("questions", run, source=True, versioned_by=versioned_by)


def requests_for(
    prompts: pd.DataFrame,
    spec: ModelSpec,
    max_tokens: int,
    chat: str = "chat",
    completion: str = "completion",
    system: str | None = None,
) -> list[GenerationRequest]:
    """One request per prompt: the ``chat`` column as a user message (after ``system``) for a chat model; the
    ``completion`` column, stopped at the line's end, for a base model (it continues text)."""
    params = {**spec.params, "max_tokens": max_tokens}
    if spec.kind == "base":
        return [
            GenerationRequest("completion", prompt=p, params={**params, "stop": ["\n"]}) for p in prompts[completion]
        ]
    before = ({"role": "system", "content": system},) if system else ()
    return [
        GenerationRequest("chat", messages=(*before, {"role": "user", "content": p}), params=params)
        for p in prompts[chat]
    ]


def render_prompts(
    questions: pd.DataFrame, id_column: str, chat: str, completion: str, sample: int, seed: int
) -> tuple[pd.DataFrame, CheckOutcome]:
    """A seeded sample of ``sample`` questions (0: all), sorted by id, with the ``chat`` and ``completion``
    templates filled from each row (``{column}``); a row that leaves a placeholder is kept with the template as
    written and named by the ``prompts_filled`` check."""
    chosen = questions.sample(n=sample, random_state=seed) if 0 < sample < len(questions) else questions
    chosen = chosen.sort_values(id_column).reset_index(drop=True)
    unfilled, chats, completions = [], [], []
    for row in chosen.to_dict("records"):
        try:
            chats.append(chat.format(**row))
            completions.append(completion.format(**row))
        except (KeyError, IndexError, ValueError):
            unfilled.append(str(row[id_column]))
            chats.append(chat)
            completions.append(completion)
    prompts = chosen.assign(chat=chats, completion=completions)
    return prompts, filled_outcome("prompts_filled", len(prompts), unfilled)


def group_metrics(
    metric: str,
    groups: tuple[str, ...],
    min_effect: float,
    gap_min_effect: float,
    title: str,
    higher_is_worse: bool = False,
    bounds: tuple[float, float] | None = (0.0, 100.0),
) -> tuple[tuple[Headline, ...], tuple[TrackedMetric, ...]]:
    """``metric`` (the mean of the items' ``value``, clustered by item) overall and per group, and per group
    column ``<group>_gap``, the range of its group means (a wider gap is worse): the headlines and the tracked
    declarations, one definition for both."""
    mean = Mean("value")
    tracked = (
        TrackedMetric(metric, mean, "item", higher_is_worse, min_effect, by=groups, bounds=bounds),
        *(TrackedMetric(f"{g}_gap", Range(mean, g), "item", True, gap_min_effect, bounds=bounds) for g in groups),
    )
    headlines = (
        Headline(metric, f"{title}: {metric}", bounds=bounds),
        *(Headline(f"{g}_gap", f"{title}: {metric} gap between {g}s", bounds=bounds) for g in groups),
    )
    return headlines, tracked


def tracked_result(
    tracked: tuple[TrackedMetric, ...],
    items: pd.DataFrame,
    scope: str,
    counts: Mapping[str, int],
    replies: pd.DataFrame | None = None,
) -> StageResult:
    """The tracked stage's result from per-item rows (``item``, ``value`` and the group columns): every tracked
    metric estimated once with its interval; the summary holds the overall figures (``<metric>``,
    ``<metric>_ci_low``, ``<metric>_ci_high``) and ``counts``; ``groups`` the per-group ones. ``replies``: every
    item as scored (its prompt, reply, parsed answer and score), kept with the evaluation for ``geomon items``."""
    found = [e for m in tracked for e in estimates(m, items)]
    summary: dict[str, Any] = dict(counts)
    for e in found:
        if not e.breakdown:
            summary.update({e.metric: e.value, f"{e.metric}_ci_low": e.ci_low, f"{e.metric}_ci_high": e.ci_high})
    groups = pd.DataFrame(
        [
            {"group": e.breakdown, "value": e.value, "ci_low": e.ci_low, "ci_high": e.ci_high, "items": e.items}
            for e in found
            if e.breakdown
        ],
        columns=["group", "value", "ci_low", "ci_high", "items"],
    )
    metrics = [MetricValue(e.metric, e.value, e.breakdown, e.ci_low, e.ci_high, e.clusters) for e in found]
    shown = {k: v for k, v in summary.items() if isinstance(v, int | float) and v == v}
    return StageResult(
        {"summary": summary, "groups": groups},
        metadata={**shown, "groups": groups},
        tracked=Tracked(metrics, items, scope=scope, replies=replies),
    )


class Scored(NamedTuple):
    """A score with what the scorer read from the reply (the option, the number, the name it found): shown
    beside the reply by ``geomon items`` and the suite's report."""

    value: float
    parsed: str


# What a scores row adds to its question's columns: the rest is the data the scope hashes, so a column added here
# per model (a reply, a log-probability) must be named here, or the models' scopes would differ.
SCORED = ("prompt", "reply", "parsed", "value", "error")
# (reply, question row) → 1, 0, or NaN (nothing read); or a ``Scored`` that also says what it read
Score = Callable[[str | None, dict[str, Any]], float | Scored]


@dataclass(frozen=True)
class QuestionSet:
    """A benchmark of the common shape. ``score`` reads a reply against its question's row: 1 right, 0 wrong,
    NaN when nothing can be read (unanswered: excluded and counted, never a miss)."""

    name: str  # lower-case; the CLI name, the asset-key prefix, the history's suite
    title: str
    spec: str  # the paper or file that defines the figures
    files: tuple[str, ...]  # the release's files, relative to its folder or URL
    read: Callable[[Path], pd.DataFrame]  # the release's folder → the questions (``read_table`` checks them)
    data_dir: Path | None  # the release's folder when no snapshot or URL is configured
    id: str  # the column naming each question
    answer: str  # the gold column (kept beside each reply)
    prompt: str  # the chat template (``{column}``)
    score: Score | None  # None: judged by the jury with ``judge_prompt``
    groups: tuple[str, ...] = ()
    # The jury's prompt ({column}s of the question and {reply}): each judge answers correct or incorrect; the
    # majority (with the ``jury`` settings' quorum) is the grade, and an indecisive item is unanswered.
    judge_prompt: str = ""
    completion_prompt: str = ""  # a base model's template (default ``Question: <prompt>\nAnswer:``)
    system: str | None = None
    max_tokens: int = 32
    metric: str = "accuracy"
    min_effect: float = 5.0  # the smallest change of the metric worth an alert (points)
    gap_min_effect: float = 10.0  # the same for each gap
    profiles: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # profile → {sample, seed}
    order: int = 50
    # The scorer's declaration, part of the scope (``scope_of``): a YAML suite's scorer fields; by default the
    # score function's source, or the judge prompt.
    scorer: str = ""

    @property
    def completion(self) -> str:
        """A base model's template."""
        return self.completion_prompt or f"Question: {self.prompt}\nAnswer:"


def scope_of(q: QuestionSet, module: ModuleType, questions: pd.DataFrame, sample: Any) -> str:
    """The scope of ``q``'s evaluations (``values.series_scope``), keyed by the sample size: one series while the
    content of the ``questions`` asked, the prompt templates, the scorer's declaration and the suite file
    (``module``'s: its code) stay the same; a change in any of them starts a new series instead of being compared
    as if the model had changed."""
    data = questions.sort_values(q.id)[sorted(questions.columns)].to_csv(index=False)
    prompt = "\n".join((q.prompt, q.completion, q.system or "", str(q.max_tokens)))
    scorer = q.scorer or (_source(q.score) if q.score is not None else q.judge_prompt)
    code = Path(str(module.__file__)).read_text(encoding="utf-8")
    return series_scope(f"{q.name}|{sample}", {"data": data, "prompt": prompt, "scorer": scorer, "code": code})


def _source(function: Callable[..., Any]) -> str:
    """A function's source; its qualified name where Python has no source for it (defined at a prompt)."""
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return getattr(function, "__qualname__", repr(function))


def declare(q: QuestionSet, module: ModuleType) -> tuple[SuiteInfo, Pipeline, tuple[TrackedMetric, ...]]:
    """``SUITE, PIPELINE, TRACKED = declare(QuestionSet(...), sys.modules[__name__])``: questions → prompts →
    responses → scores → disparity, each stage versioned by this kit's source and the suite ``module``'s."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", q.name):
        raise SuiteError(f"suite {q.name!r}: a name is lower-case letters, digits and '_'")
    completion = q.completion
    versions = (sys.modules[__name__], module)
    headlines, tracked = group_metrics(q.metric, q.groups, q.min_effect, q.gap_min_effect, q.title)

    def prompts_stage(context: Any, questions: pd.DataFrame) -> StageResult:
        """The prompts: a seeded sample of the questions, each in chat and completion form."""
        options = context.options
        prompts, check = render_prompts(questions, q.id, q.prompt, completion, options["sample"], options["seed"])
        preview = prompts[[q.id, "chat"]].head(5)
        return StageResult(prompts, metadata={"prompts": len(prompts), "preview": preview}, checks=[check])

    def judgements_stage(context: Any, prompts: pd.DataFrame, responses: pd.DataFrame) -> StageResult:
        """The jury's grade of each answered question: every judge says correct or incorrect (through the
        response store); the majority decides."""
        settings = context.settings
        held: JurySettings = settings.suite(q.name).jury
        judges = settings.judges(held)
        rows = prompts.to_dict("records")
        answered = [i for i, text in enumerate(responses["text"]) if isinstance(text, str) and text.strip()]
        try:
            asked = [q.judge_prompt.format(**{**rows[i], "reply": responses["text"][i]}) for i in answered]
        except (KeyError, IndexError) as exc:
            raise SuiteError(f"suite {q.name}: judge_prompt names {exc}, not a column of the questions") from None
        labels = ("correct", "incorrect")
        ids = [rows[i][q.id] for i in answered]
        task = jury.JuryTask("correct", ids, asked, lambda text: jury.parse_label(text, labels), "majority", labels)
        ask = lambda spec, requests: context.ask(spec, requests)[0]  # noqa: E731
        result = jury.convene(judges, [task], ask, held.max_tokens, held.quorum, held.constrain)
        grades = result.decisions["correct"].rename(columns={"id": q.id})
        readable, numbers = jury.readable_replies(result.verdicts)
        return StageResult(
            grades,
            metadata={
                "judges": ", ".join(j.name for j in judges),
                "judged": len(asked),
                "grades": grades["grade"].value_counts().to_dict(),
                **jury.agreement_metadata(result.agreement),
            },
            checks=[CheckOutcome("judge_replies_readable", passed=readable, severity="warn", metadata=numbers)],
        )

    def scores_stage(
        context: Any, prompts: pd.DataFrame, responses: pd.DataFrame, judgements: pd.DataFrame | None = None
    ) -> StageResult:
        """Each answer scored (0 / 100; by the jury's grade where judged); unread and failed answers (and
        answers the jury could not decide) excluded and counted."""
        rows = prompts.to_dict("records")
        if judgements is None:
            read = [q.score(reply, row) for reply, row in zip(responses["text"], rows, strict=True)]
            read = [r if isinstance(r, Scored) else Scored(r, "") for r in read]
            value, parsed = [r.value * 100 for r in read], [r.parsed for r in read]
        else:
            grade = dict(zip(judgements[q.id], judgements["grade"], strict=True))
            points = {"correct": 100.0, "incorrect": 0.0}
            parsed = [grade.get(row[q.id], "") for row in rows]
            value = [points.get(p, float("nan")) for p in parsed]
        asked = prompts["completion"] if context.spec().kind == "base" else prompts["chat"]
        # Every question column (the scope hashes the data asked), the prompt asked, the reply and its reading.
        scores = prompts.drop(columns=["chat", "completion"]).assign(
            prompt=asked.to_numpy(),
            reply=responses["text"].to_numpy(),
            parsed=parsed,
            value=value,
            error=responses["error"].to_numpy(),
        )
        scores["status"] = status_of(scores["value"], scores["error"])
        return StageResult(scores, metadata={"status": scores["status"].value_counts().to_dict()})

    def disparity_stage(context: Any, scores: pd.DataFrame) -> StageResult:
        """The metric overall and per group with intervals, and each group column's gap (max − min)."""
        answered = scores[scores["status"] == "answered"]
        items = (
            answered[list(q.groups)]
            .astype(str)
            .assign(item=answered[q.id].astype(str), value=answered["value"].astype(float))
        )
        counts = {s: int((scores["status"] == s).sum()) for s in ("answered", "unanswered", "failed")}
        asked = scores.drop(columns=[*SCORED, "status"])
        scope = scope_of(q, module, asked, context.options.get("sample", ""))
        replies = pd.DataFrame(
            {
                "item": scores[q.id].astype(str),
                **{g: scores[g].astype(str) for g in q.groups},
                **{c: scores[c] for c in ("prompt", "reply", "parsed")},
                "gold": scores[q.answer].astype(str),
                "score": scores["value"],
                "status": scores["status"],
            }
        ).reset_index(drop=True)
        return tracked_result(tracked, items.reset_index(drop=True), scope, counts, replies)

    def write_report(out: Path, board: pd.DataFrame, results: dict[str, dict[str, Any]], settings: Any) -> Path:
        from geomon.report.suite import Breakdown, write_suite_report

        per_group = Breakdown("groups", f"{q.title}: {q.metric} per group (95 % interval)", "group", "value")
        return write_suite_report(out, q.title, q.spec, board, results, [per_group], [h.metric for h in headlines])

    if (q.score is None) == (not q.judge_prompt):
        raise SuiteError(f"suite {q.name}: give a score function or a judge_prompt (judged by the jury), not both")
    judged = (
        (
            Stage(
                "judgements",
                judgements_stage,
                inputs=("prompts", "responses"),
                per_model=True,
                versioned_by=versions,
                checks=(StageCheck("judge_replies_readable", "Most of the judges' replies give a verdict."),),
            ),
        )
        if q.judge_prompt
        else ()
    )
    pipeline = Pipeline(
        stages=(
            release_stage(q.name, q.files, q.read, q.data_dir, versions),
            Stage(
                "prompts", prompts_stage, inputs=("questions",), versioned_by=versions,
                options=(Option("sample", int, 0, "0 = every question; N = a seeded sample"), SEED),
                checks=(StageCheck("prompts_filled", "Every prompt has its fields filled in.", blocking=True),),
            ),
            responses_stage(lambda prompts, spec: requests_for(prompts, spec, q.max_tokens, system=q.system), q.id),
            *judged,
            Stage("scores", scores_stage, inputs=("prompts", "responses", *(s.name for s in judged)),
                  per_model=True, versioned_by=versions),
            Stage(
                "disparity", disparity_stage, inputs=("scores",), per_model=True, tracked=True, versioned_by=versions
            ),
        ),
        write_report=write_report,
        leaderboard_columns=(*(h.metric for h in headlines), "answered"),
        per_model_description=f"{q.title}: {q.metric} per model, overall and per group.",
    )  # fmt: skip
    info = SuiteInfo(
        name=q.name,
        title=q.title,
        spec=q.spec,
        headlines=headlines,
        options=(RunOption(f"--{q.name.replace('_', '-')}-sample", f"{q.title}: N questions", int, None, "sample"),),
        order=q.order,
        settings=ReleaseSettings,
        sample="answered",
        profiles=q.profiles,
        unit=(q.id,),
    )
    return info, pipeline, tracked
