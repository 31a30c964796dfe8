"""The suite kit: the parts a benchmark of the common shape repeats, written once.

The common shape is a question set with group columns (country, region, language), a prompt template, a
scorer, and a metric per group with intervals and the gaps between groups. ``QuestionSet`` declares such a
benchmark and ``declare`` turns it into the three declarations of a suite (a Python suite module binds them to
``SUITE``, ``PIPELINE`` and ``TRACKED``; the registry keeps them as one ``Suite``): a YAML suite
(``geomon.suites.yaml_suite``) is a ``QuestionSet`` read from a file, and a simple Python suite is one written in
Python with its own ``score`` (``examples/suites/capital_aliases.py``).

A complex suite builds its own ``Pipeline`` and takes the pieces: ``read_table`` (a release file read with
errors naming the file, line and column), ``release_stage`` (the snapshot-or-fetch source stage),
``requests_for`` (chat or completion requests by the model's kind), ``render_prompts`` (a seeded sample, the
templates filled, the ``prompts_filled`` check), ``group_metrics`` (a metric per group and its gaps, declared
once) and ``tracked_result`` (their estimates as the tracked stage's summary and groups, and its items).
"""

from __future__ import annotations

import csv
import hashlib
import inspect
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd

from geomon import jury, parsing
from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.jury import JurySettings
from geomon.sources.release_files import ReleaseFiles
from geomon.stats.bootstrap import estimates
from geomon.stats.declarations import ANSWERED_RATE, TrackedMetric, answered_rate
from geomon.stats.statistics import Mean, Range
from geomon.stats.values import series_scope
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
    """A release's table (CSV, or TSV by its suffix: tabs only, quotes are text) as text, checked: the id
    column and ``columns`` present, every id filled and unique. Blank lines (a published file's separators
    between blocks) are skipped and counted in ``attrs["blank_lines"]``. Each problem is a ``SuiteError``
    naming the file (and the line or column)."""
    tsv = path.suffix == ".tsv"
    try:
        frame = pd.read_csv(
            path, dtype=str, keep_default_na=False, skip_blank_lines=False, sep="\t" if tsv else ",",
            quoting=csv.QUOTE_NONE if tsv else csv.QUOTE_MINIMAL,
        )  # fmt: skip
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise SuiteError(f"{path}: not a readable table ({exc})") from None
    missing = sorted({id_column, *columns} - set(frame.columns))
    if missing:
        raise SuiteError(f"{path}: no column(s) {missing}; it has {list(frame.columns)}")
    blank = frame.apply(lambda column: column.str.strip() == "").all(axis=1)
    frame = frame[~blank]  # the index stays each row's place in the file, so errors name the right line
    frame.attrs["blank_lines"] = int(blank.sum())
    empty = frame.index[frame[id_column].str.strip() == ""].tolist()
    if empty:
        raise SuiteError(f"{path}, line {empty[0] + 2}: column {id_column} is empty")
    twice = sorted(frame.loc[frame[id_column].duplicated(), id_column].unique())
    if twice:
        raise SuiteError(f"{path}: {id_column} {twice[:5]} appear more than once")
    return frame.reset_index(drop=True)


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
        rows = {"rows": len(data), **data.attrs} if isinstance(data, pd.DataFrame) else {}
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


def ranks_candidates(spec: ModelSpec) -> bool:
    """Base models that report log-probabilities are scored by rank classification: the candidate the model
    finds likeliest as the answer's continuation (BorderLines' method and the kit's ``logprob`` scorer)."""
    return spec.kind == "base" and spec.supports_logprobs


def continuation_logprob(logprobs: list[dict[str, Any]] | None) -> float | None:
    """The log-probability of a scored continuation: the sum over its (forced) tokens."""
    if not logprobs:
        return None
    return float(sum(item["logprob"] for item in logprobs))


def likeliest(scores: Sequence[float | None]) -> int | None:
    """The index of the candidate with the highest log-probability; None when any candidate has none (a failed
    request): a ranking with a hole picks nothing."""
    if not scores or any(s is None for s in scores):
        return None
    return int(np.argmax(scores))


def probabilities(scores: Sequence[float | None]) -> list[float] | None:
    """The candidates' log-probabilities as a distribution over them (a softmax: the rank classification's own
    confidence in each); None when any candidate has none, as ``likeliest`` picks nothing then."""
    if not scores or any(s is None for s in scores):
        return None
    values = np.asarray(scores, dtype=float)
    weights = np.exp(values - values.max())
    return list(weights / weights.sum())


def ranked_requests(
    prompts: pd.DataFrame, spec: ModelSpec, candidates: Sequence[Sequence[str]], completion: str = "completion"
) -> tuple[list[GenerationRequest], list[tuple[int, int]]]:
    """Rank classification's requests: per prompt, each of its ``candidates`` scored as the continuation of its
    ``completion`` text (after a space, as an answer follows "Answer:"); and per request (prompt row, candidate
    index). The engine forces the candidate's own tokens and reads their log-probabilities."""
    params = {**spec.params, "temperature": 0.0}
    requests, owners = [], []
    for i, (prompt, names) in enumerate(zip(prompts[completion], candidates, strict=True)):
        for j, name in enumerate(names):
            requests.append(GenerationRequest("completion", prompt=prompt, params=params, continuation=f" {name}"))
            owners.append((i, j))
    return requests, owners


def render_prompts(
    questions: pd.DataFrame, id_column: str, chat: str, completion: str, sample: int, seed: int, per: str = ""
) -> tuple[pd.DataFrame, CheckOutcome]:
    """A seeded sample of ``sample`` questions (0: all), sorted by id, with the ``chat`` and ``completion``
    templates filled from each row (``{column}``); a row that leaves a placeholder is kept with the template as
    written and named by the ``prompts_filled`` check. With ``per`` (a group column) the sample is balanced:
    ``sample // groups`` questions from each group (all of a smaller group's)."""
    if per and 0 < sample < len(questions):
        groups = questions.groupby(per, sort=True)
        if sample < groups.ngroups:
            raise SuiteError(f"a sample of {sample} balanced per {per} needs at least one per group ({groups.ngroups})")
        each = sample // groups.ngroups
        chosen = groups.sample(frac=1.0, random_state=seed).groupby(per, sort=True).head(each)
    else:
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
    cluster: str = "item",
    answered_min_effect: float | None = None,
) -> tuple[tuple[Headline, ...], tuple[TrackedMetric, ...]]:
    """``metric`` (the mean of the items' ``value``, clustered on ``cluster``) overall and per group, and per
    group column ``<group>_gap``, the range of its group means (a wider gap is worse): the headlines and the
    tracked declarations, one definition for both. With ``answered_min_effect``, ``answered_rate`` too: the
    share of items (the items' ``answered``, 0 or 1) the model committed to an answer on, overall and per group
    (higher is better; a hedge or a list of candidates is no answer)."""
    mean = Mean("value")
    answered = answered_min_effect is not None
    rate = (answered_rate(cluster, by=groups, min_effect=answered_min_effect),) if answered else ()
    tracked = (
        TrackedMetric(metric, mean, cluster, higher_is_worse, min_effect, by=groups, bounds=bounds),
        *rate,
        *(TrackedMetric(f"{g}_gap", Range(mean, g), cluster, True, gap_min_effect, bounds=bounds) for g in groups),
    )
    headlines = (
        Headline(metric, f"{title}: {metric}", bounds=bounds),
        *((Headline(ANSWERED_RATE, f"{title}: share of questions answered", bounds=(0.0, 100.0)),) if rate else ()),
        *(Headline(f"{g}_gap", f"{title}: {metric} gap between {g}s", bounds=bounds) for g in groups),
    )
    return headlines, tracked


def tracked_result(
    tracked: tuple[TrackedMetric, ...],
    items: pd.DataFrame,
    scope: str,
    counts: Mapping[str, int],
    replies: pd.DataFrame | None = None,
    table: Sequence[str] = (),
) -> StageResult:
    """The tracked stage's result from per-item rows (``item``, ``value`` and the group columns), shown by its
    leaderboard and report: every tracked metric's declared estimates (``bootstrap.estimates``, drawn once in a
    process: the figures the factory records from the same rows); the summary holds the overall figures
    (``<metric>``, ``<metric>_ci_low``, ``<metric>_ci_high``) and ``counts``; ``groups`` the per-group ones (with
    their ``metric``). ``replies``: every item as scored (its prompt, reply, parsed answer and score), kept with the
    evaluation for ``geomon items``. With ``table`` (two group columns), ``table`` holds the first tracked metric
    per pair of their groups (country × language), each with its interval: shown, not tracked."""
    found = [e for m in tracked for e in estimates(m, items)]
    summary: dict[str, Any] = dict(counts)
    for e in found:
        if not e.breakdown:
            summary.update({e.metric: e.value, f"{e.metric}_ci_low": e.ci_low, f"{e.metric}_ci_high": e.ci_high})
    columns = ["metric", "group", "value", "ci_low", "ci_high", "items"]
    groups = pd.DataFrame(
        [
            {"metric": e.metric, "group": e.breakdown, "value": e.value, "ci_low": e.ci_low, "ci_high": e.ci_high,
             "items": e.items}
            for e in found
            if e.breakdown
        ],
        columns=columns,
    )  # fmt: skip
    shown = {k: v for k, v in summary.items() if isinstance(v, int | float) and v == v}
    value: dict[str, Any] = {"summary": summary, "groups": groups}
    if table:
        value["table"] = two_way_table(tracked[0], items, table)
    return StageResult(value, metadata={**shown, "groups": groups}, tracked=Tracked(items, scope, replies=replies))


def two_way_table(metric: TrackedMetric, items: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """``metric`` (its statistic, cluster and bounds) per pair of groups of two columns (country × language):
    one row per pair the items hold, with the two groups, the value, its 95 % interval and the items."""
    first, second = columns
    cell = items[first].astype(str) + " × " + items[second].astype(str)
    pairs = dict(zip(cell, zip(items[first].astype(str), items[second].astype(str), strict=True), strict=True))
    by_cell = TrackedMetric(metric.name, metric.statistic, metric.cluster, by=("cell",), bounds=metric.bounds)
    rows = []
    for e in estimates(by_cell, items.assign(cell=cell)):
        if e.breakdown:
            label = e.breakdown.split("=", 1)[1]
            a, b = pairs[label]
            rows.append({first: a, second: b, "cell": label, "value": e.value, "ci_low": e.ci_low,
                         "ci_high": e.ci_high, "items": e.items})  # fmt: skip
    return pd.DataFrame(rows, columns=[first, second, "cell", "value", "ci_low", "ci_high", "items"])


@dataclass(frozen=True)
class Reading:
    """What a scorer read in a reply: ``value`` 1 right, 0 wrong, between for partial credit, NaN when nothing
    can be read (unanswered: excluded from the metric and counted); ``refused`` says why a readable reply is no
    answer (a hedge, several candidates): it is scored wrong (0), counted as ``refused`` and lowers the answer
    rate, never dropped; ``answer`` what was read (the candidate, the accepted answer named)."""

    value: float
    answer: str = ""
    refused: str = ""


# What a scores row adds to its question's columns: the rest is the data the scope hashes, so a column added here
# per model (a reply, a log-probability) must be named here, or the models' scopes would differ.
SCORED = ("prompt", "reply", "parsed", "value", "error")
# (reply, question row) → 1, 0, partial credit, or NaN (nothing read); a ``Reading`` says what was read (shown
# beside the reply by ``geomon items`` and the suite's report), and why a reply was refused
Score = Callable[[str | None, dict[str, Any]], "float | Reading"]


def reading(scored: float | Reading) -> Reading:
    """A score function's result as a ``Reading`` (a bare number is read as it is)."""
    return scored if isinstance(scored, Reading) else Reading(float(scored))


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
    min_effect: float = 5.0  # the smallest worsening of the metric (overall or a group's) that pages (points)
    gap_min_effect: float = 10.0  # each gap's: what its test is planned at (a gap is shown, never paged)
    profiles: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # profile → {sample, seed}
    order: int = 50
    # The scorer's declaration, part of the scope (``scope_of``): a YAML suite's scorer fields; by default the
    # score function's source, or the judge prompt.
    scorer: str = ""
    sample_per: str = ""  # a group column: a sample takes as many questions from each of its groups
    cluster: str = ""  # the column of the statistical unit (a concept asked in every country); default: the id
    table: tuple[str, ...] = ()  # two group columns: the metric per pair of their groups (country × language)
    answered_min_effect: float = 5.0  # the smallest drop of the answer rate that pages (points)
    # Rank classification for base models with log-probabilities: row → the candidates, each scored as the
    # completion prompt's continuation; the likeliest is the reply ``score`` reads. None: every model generates.
    candidates: Callable[[dict[str, Any]], list[str]] | None = None

    @property
    def completion(self) -> str:
        """A base model's template."""
        return self.completion_prompt or f"Question: {self.prompt}\nAnswer:"


def scope_of(q: QuestionSet, source: ModuleType | Path, questions: pd.DataFrame, sample: Any) -> str:
    """The scope of ``q``'s evaluations (``values.series_scope``), keyed by the sample size: one series while the
    content of the ``questions`` asked, the prompt templates, the scorer's declaration and the suite file
    (``source``: the suite's module, or the YAML file that declares it) stay the same; a change in any of them
    starts a new series instead of being compared as if the model had changed."""
    data = questions.sort_values(q.id)[sorted(questions.columns)].to_csv(index=False)
    prompt = "\n".join((q.prompt, q.completion, q.system or "", str(q.max_tokens)))
    scorer = q.scorer or (_source(q.score) if q.score is not None else q.judge_prompt)
    code = (source if isinstance(source, Path) else Path(str(source.__file__))).read_text(encoding="utf-8")
    return series_scope(f"{q.name}|{sample}", {"data": data, "prompt": prompt, "scorer": scorer, "code": code})


def _source(function: Callable[..., Any]) -> str:
    """A function's source; its qualified name where Python has no source for it (defined at a prompt)."""
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return getattr(function, "__qualname__", repr(function))


def ranked_responses_stage(
    plain: Stage, id_column: str, candidates: Callable[[pd.DataFrame], list[Sequence[str]]]
) -> Stage:
    """The ``responses`` stage of a suite whose questions have candidate answers (``candidates``: per prompt row):
    a base model with log-probabilities ranks each prompt's candidates as the continuation of its ``completion``
    column and the likeliest is its reply (``logprobs``: each candidate's log-probability, None where its request
    failed); any other model answers as ``plain`` asks it."""

    def run(context: Any, prompts: pd.DataFrame) -> StageResult:
        spec = context.spec()
        if not ranks_candidates(spec):
            return plain.run(context, prompts)
        names = candidates(prompts)
        requests, owners = ranked_requests(prompts, spec, names)
        answers, metadata = context.ask(spec, requests)
        scores: list[list[float | None]] = [[None] * len(n) for n in names]
        errors: list[str | None] = [None] * len(prompts)
        for (i, j), logprobs, error in zip(owners, answers["logprobs"], answers["error"], strict=True):
            failed = isinstance(error, str) and bool(error)  # no error is None, or NaN beside other rows' errors
            scores[i][j] = None if failed else continuation_logprob(logprobs)
            errors[i] = errors[i] or (error if failed else None)
        picked = [likeliest(s) for s in scores]
        texts = [n[p] if p is not None else None for n, p in zip(names, picked, strict=True)]
        responses = pd.DataFrame(
            {id_column: prompts[id_column].to_numpy(), "text": texts, "error": errors, "logprobs": scores}
        )
        return StageResult(responses, metadata={**metadata, "method": "rank classification"})

    def requests(prompts: pd.DataFrame, spec: ModelSpec, settings: Any) -> list[GenerationRequest]:
        if ranks_candidates(spec):
            return ranked_requests(prompts, spec, candidates(prompts))[0]
        return plain.requests(prompts, spec, settings)

    return Stage("responses", run, inputs=("prompts",), per_model=True, asks_models=True, requests=requests)


def declare(
    q: QuestionSet, source: ModuleType | Path, scoring: tuple[ModuleType, ...] = ()
) -> tuple[SuiteInfo, Pipeline, tuple[TrackedMetric, ...]]:
    """``SUITE, PIPELINE, TRACKED = declare(QuestionSet(...), sys.modules[__name__])``: questions → prompts →
    responses → scores → disparity, each stage versioned by this kit's source, the modules its scorers read
    answers with (``geomon.parsing``, the jury, and ``scoring``: a YAML suite's scorers) and the suite's ``source``
    (its module; a YAML suite's file), so an edit to any of them marks what they built stale."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", q.name):
        raise SuiteError(f"suite {q.name!r}: a name is lower-case letters, digits and '_'")
    completion = q.completion
    versions = (sys.modules[__name__], parsing, jury, *scoring, source)
    cluster = q.cluster or "item"
    headlines, tracked = group_metrics(
        q.metric, q.groups, q.min_effect, q.gap_min_effect, q.title, cluster=cluster,
        answered_min_effect=q.answered_min_effect,
    )  # fmt: skip
    if len(q.table) not in (0, 2) or not set(q.table) <= set(q.groups):
        raise SuiteError(f"suite {q.name}: table names two of the group columns {list(q.groups)}, not {list(q.table)}")
    if q.sample_per and q.sample_per not in q.groups:
        raise SuiteError(f"suite {q.name}: sample_per {q.sample_per!r} is not a group column {list(q.groups)}")

    def prompts_stage(context: Any, questions: pd.DataFrame) -> StageResult:
        """The prompts: a seeded sample of the questions, each in chat and completion form."""
        options = context.options
        prompts, check = render_prompts(
            questions, q.id, q.prompt, completion, options["sample"], options["seed"], q.sample_per
        )
        preview = prompts[[q.id, "chat"]].head(5)
        per_group = {"per_group": prompts[q.sample_per].value_counts().to_dict()} if q.sample_per else {}
        return StageResult(prompts, metadata={"prompts": len(prompts), "preview": preview, **per_group}, checks=[check])

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
            read = [reading(q.score(reply, row)) for reply, row in zip(responses["text"], rows, strict=True)]
        else:
            grade = dict(zip(judgements[q.id], judgements["grade"], strict=True))
            points = {"correct": 1.0, "incorrect": 0.0}
            grades = [grade.get(row[q.id], "") for row in rows]
            read = [Reading(points.get(g, float("nan")), answer=g) for g in grades]
        asked = prompts["completion"] if context.spec().kind == "base" else prompts["chat"]
        # Every question column (the scope hashes the data asked), the prompt asked, the reply and its reading.
        scores = prompts.drop(columns=["chat", "completion"]).assign(
            prompt=asked.to_numpy(),
            reply=responses["text"].to_numpy(),
            parsed=[r.refused or r.answer for r in read],
            value=[r.value * 100 for r in read],
            error=responses["error"].to_numpy(),
        )
        status = status_of(scores["value"], scores["error"])
        scores["status"] = status.where([not r.refused for r in read], "refused")
        return StageResult(scores, metadata={"status": scores["status"].value_counts().to_dict()})

    def disparity_stage(context: Any, scores: pd.DataFrame) -> StageResult:
        """The metric overall and per group with intervals, and each group column's gap (max − min)."""
        # Failed requests are left out; unanswered and refused items count against the answer rate.
        asked = scores[scores["status"] != "failed"]
        items = (
            asked[list(dict.fromkeys((*q.groups, *([q.cluster] if q.cluster else ()))))]
            .astype(str)
            .assign(
                item=asked[q.id].astype(str),
                value=asked["value"].astype(float),
                answered=(asked["status"] == "answered").astype(float),
            )
        )
        counts = {s: int((scores["status"] == s).sum()) for s in ("answered", "refused", "unanswered", "failed")}
        data = scores.drop(columns=[*SCORED, "status"])
        scope = scope_of(q, source, data, context.options.get("sample", ""))
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
        result = tracked_result(tracked, items.reset_index(drop=True), scope, counts, replies, q.table)
        groups = result.value["groups"]
        result.value["answered_groups"] = groups[groups["metric"] == ANSWERED_RATE].reset_index(drop=True)
        return result

    def write_report(out: Path, board: pd.DataFrame, results: dict[str, dict[str, Any]], settings: Any) -> Path:
        from geomon.report.suite import Breakdown, write_suite_report

        per_group = Breakdown(
            "groups", f"{q.title}: {q.metric} per group (95 % interval)", "group", "value", {"metric": q.metric}
        )
        answered = Breakdown(
            "answered_groups", f"{q.title}: share answered per group (95 % interval)", "group", "value"
        )
        crossed = (
            [Breakdown("table", f"{q.title}: {q.metric} by {' × '.join(q.table)} (95 % interval)", "cell", "value")]
            if q.table
            else []
        )
        breakdowns = [per_group, answered, *crossed]
        return write_suite_report(out, q.title, q.spec, board, results, breakdowns, [h.metric for h in headlines])

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
    plain_responses = responses_stage(
        lambda prompts, spec: requests_for(prompts, spec, q.max_tokens, system=q.system), q.id
    )
    responses = plain_responses
    if q.candidates is not None:
        candidates = q.candidates
        responses = ranked_responses_stage(
            plain_responses, q.id, lambda prompts: [candidates(row) for row in prompts.to_dict("records")]
        )
    pipeline = Pipeline(
        stages=(
            release_stage(q.name, q.files, q.read, q.data_dir, versions),
            Stage(
                "prompts", prompts_stage, inputs=("questions",), versioned_by=versions,
                options=(Option("sample", int, 0, "0 = every question; N = a seeded sample"), SEED),
                checks=(StageCheck("prompts_filled", "Every prompt has its fields filled in.", blocking=True),),
            ),
            responses,
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
        unit=(q.cluster or q.id,),
    )
    return info, pipeline, tracked
