"""A benchmark of the common shape, declared in one YAML file: a question set with group columns, a prompt
template, a scorer, accuracy per group with intervals and the gaps between groups.

The file (``docs/adding-a-benchmark.md`` shows one whole) gives the data (a CSV beside it), the prompt, the
scorer — ``exact``, ``normalised`` (case, accents, punctuation and articles aside, the gold as whole words of the
answer), ``regex`` (a pattern with ``{answer}``), ``choice`` (the option named, ``parsing.parse_choice``) or
``numeric`` (``parsing.parse_number`` within a relative tolerance) —, the group columns and the run profiles.
``load`` turns it into the three declarations a Python suite makes (``SUITE``, ``PIPELINE``, ``TRACKED``), so
the factory, the verdict engine, ``geomon run``, history and alerts treat it like any suite.
"""

from __future__ import annotations

import hashlib
import re
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd
import yaml

from geomon import parsing
from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.stats.declared import Mean, Range, TrackedMetric, estimates
from geomon.stats.values import MetricValue
from geomon.suites.info import Headline, RunOption, SuiteError, SuiteInfo, status_of
from geomon.suites.pipeline import (
    SEED,
    Option,
    Pipeline,
    Stage,
    StageCheck,
    StageResult,
    Tracked,
    filled_outcome,
    responses_stage,
)

SCORERS = ("exact", "normalised", "regex", "choice", "numeric")
KNOWN = {
    "name", "title", "spec", "data", "id", "answer", "groups", "prompt", "completion_prompt", "scorer", "pattern",
    "options", "tolerance", "max_tokens", "metric", "min_effect", "gap_min_effect", "profiles", "order",
}  # fmt: skip


@dataclass(frozen=True)
class Declaration:
    path: Path
    name: str
    title: str
    spec: str
    data: Path
    id: str
    answer: str
    groups: tuple[str, ...]
    prompt: str
    completion_prompt: str
    scorer: str
    pattern: str
    options: tuple[str, ...]
    tolerance: float
    max_tokens: int
    metric: str
    min_effect: float
    gap_min_effect: float
    profiles: dict[str, dict[str, Any]]
    order: int


def read(path: Path) -> Declaration:
    """The YAML file checked: every problem an error naming the file and the field."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise SuiteError(f"{path}: not a readable YAML file ({exc})") from None
    if not isinstance(doc, dict):
        raise SuiteError(f"{path}: a mapping of fields, not {type(doc).__name__}")
    unknown = sorted(set(doc) - KNOWN)
    if unknown:
        raise SuiteError(f"{path}: unknown field(s) {unknown}; known: {sorted(KNOWN)}")
    for field in ("name", "title", "data", "id", "answer", "prompt", "scorer"):
        if not doc.get(field):
            raise SuiteError(f"{path}: field {field!r} is required")
    name = str(doc["name"])
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or name != path.stem:
        raise SuiteError(f"{path}: name {name!r} must be lower-case letters, digits, '_' and match the file name")
    scorer = str(doc["scorer"])
    if scorer not in SCORERS:
        raise SuiteError(f"{path}: scorer {scorer!r}; one of {', '.join(SCORERS)}")
    if scorer == "regex" and "{answer}" not in str(doc.get("pattern", "")):
        raise SuiteError(f"{path}: scorer regex needs a pattern with {{answer}} (the gold, escaped)")
    if scorer == "choice" and not doc.get("options"):
        raise SuiteError(f"{path}: scorer choice needs options (the columns holding the choices)")
    data = (path.parent / str(doc["data"])).resolve()
    if not data.is_file():
        raise SuiteError(f"{path}: data {doc['data']!r} is not a file ({data})")
    profiles = doc.get("profiles") or {}
    if not isinstance(profiles, dict) or any(set(v or {}) - {"sample", "seed"} for v in profiles.values()):
        raise SuiteError(f"{path}: profiles: profile → {{sample: N, seed: S}}")
    return Declaration(
        path=path,
        name=name,
        title=str(doc["title"]),
        spec=str(doc.get("spec", f"declared in {path.name}")),
        data=data,
        id=str(doc["id"]),
        answer=str(doc["answer"]),
        groups=tuple(str(g) for g in doc.get("groups") or ()),
        prompt=str(doc["prompt"]),
        completion_prompt=str(doc.get("completion_prompt") or "Question: " + str(doc["prompt"]) + "\nAnswer:"),
        scorer=scorer,
        pattern=str(doc.get("pattern", "")),
        options=tuple(str(o) for o in doc.get("options") or ()),
        tolerance=float(doc.get("tolerance", 0.05)),
        max_tokens=int(doc.get("max_tokens", 32)),
        metric=str(doc.get("metric", "accuracy")),
        min_effect=float(doc.get("min_effect", 5.0)),
        gap_min_effect=float(doc.get("gap_min_effect", 10.0)),
        profiles={str(k): dict(v or {}) for k, v in profiles.items()},
        order=int(doc.get("order", 50)),
    )


def read_questions(decl: Declaration) -> pd.DataFrame:
    """The CSV, checked: the id, answer, group, option and template columns present, ids unique and filled."""
    frame = pd.read_csv(decl.data, dtype=str, keep_default_na=False)
    fields = set(re.findall(r"{(\w+)}", decl.prompt + decl.completion_prompt))
    needed = {decl.id, decl.answer, *decl.groups, *decl.options, *fields}
    missing = sorted(needed - set(frame.columns))
    if missing:
        raise SuiteError(f"{decl.data}: no column(s) {missing} (suite {decl.name} reads them)")
    empty = frame.index[frame[decl.id].str.strip() == ""].tolist()
    if empty:
        raise SuiteError(f"{decl.data}, line {empty[0] + 2}: field {decl.id} is empty")
    twice = sorted(frame.loc[frame[decl.id].duplicated(), decl.id].unique())
    if twice:
        raise SuiteError(f"{decl.data}: {decl.id} {twice[:5]} appear more than once")
    return frame


def _normal(text: str) -> str:
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    words = re.sub(r"[^\w\s]", " ", text).split()
    return " ".join(w for w in words if w not in {"the", "a", "an"})


def correct(decl: Declaration, reply: str | None, row: dict[str, Any]) -> float:
    """1 if ``reply`` gives the row's answer under the declared scorer, 0 if it does not, NaN if nothing can be
    read from it (an empty or missing reply: unanswered, never scored as wrong)."""
    if not isinstance(reply, str) or not reply.strip():
        return float("nan")
    gold = str(row[decl.answer])
    if decl.scorer == "exact":
        return float(reply.strip() == gold.strip())
    if decl.scorer == "normalised":
        return float(f" {_normal(gold)} " in f" {_normal(reply)} ")
    if decl.scorer == "regex":
        return float(re.search(decl.pattern.replace("{answer}", re.escape(gold)), reply, re.I) is not None)
    if decl.scorer == "choice":
        options = [str(row[o]) for o in decl.options]
        chosen = parsing.parse_choice(reply, options)
        return float("nan") if chosen is None else float(options[chosen] == gold)
    number, truth = parsing.parse_number(reply), parsing.parse_number(gold)
    if number is None or truth is None:
        return float("nan")
    return float(abs(number - truth) <= decl.tolerance * max(abs(truth), 1e-12))


def _version(decl: Declaration) -> str:
    return hashlib.sha256(decl.path.read_bytes() + decl.data.read_bytes()).hexdigest()[:12]


def build(decl: Declaration) -> ModuleType:
    """The declarations a Python suite module makes, from the YAML file: ``SUITE``, ``PIPELINE``, ``TRACKED``."""
    metric = decl.metric

    def questions_stage(context: Any) -> StageResult:
        """The question set, read from the CSV beside the YAML file (checked: columns, unique ids)."""
        frame = read_questions(decl)
        return StageResult(
            frame, metadata={"questions": len(frame), "file": str(decl.data)}, data_version=_version(decl)
        )

    def prompts_stage(context: Any, questions: pd.DataFrame) -> StageResult:
        """The prompts: a seeded sample of the questions, each in chat and completion form."""
        sample, seed = context.options["sample"], context.options["seed"]
        chosen = questions.sample(n=sample, random_state=seed) if sample and sample < len(questions) else questions
        chosen = chosen.sort_values(decl.id).reset_index(drop=True)
        unfilled = []
        chats, completions = [], []
        for row in chosen.to_dict("records"):
            try:
                chats.append(decl.prompt.format(**row))
                completions.append(decl.completion_prompt.format(**row))
            except (KeyError, IndexError):
                unfilled.append(str(row[decl.id]))
                chats.append(decl.prompt)
                completions.append(decl.completion_prompt)
        prompts = chosen.assign(chat=chats, completion=completions)
        check = filled_outcome("prompts_filled", len(prompts), unfilled)
        return StageResult(
            prompts, metadata={"prompts": len(prompts), "preview": prompts[[decl.id, "chat"]].head(5)}, checks=[check]
        )

    def requests_for(prompts: pd.DataFrame, spec: ModelSpec) -> list[GenerationRequest]:
        params = {**spec.params, "max_tokens": decl.max_tokens}
        if spec.kind == "base":
            return [
                GenerationRequest("completion", prompt=p, params={**params, "stop": ["\n"]})
                for p in prompts["completion"]
            ]
        return [
            GenerationRequest("chat", messages=({"role": "user", "content": p},), params=params)
            for p in prompts["chat"]
        ]

    def scores_stage(context: Any, prompts: pd.DataFrame, responses: pd.DataFrame) -> StageResult:
        """Each answer scored (0 / 100); unread and failed answers excluded and counted."""
        rows = prompts.to_dict("records")
        value = [correct(decl, t, r) * 100 for t, r in zip(responses["text"], rows, strict=True)]
        scores = prompts[[decl.id, decl.answer, *decl.groups]].assign(
            reply=responses["text"].to_numpy(), value=value, error=responses["error"].to_numpy()
        )
        scores["status"] = status_of(scores["value"], scores["error"])
        return StageResult(scores, metadata={"status": scores["status"].value_counts().to_dict()})

    def disparity_stage(context: Any, scores: pd.DataFrame) -> StageResult:
        """The metric overall and per group with intervals, and each group column's gap (max − min)."""
        answered = scores[scores["status"] == "answered"]
        items = pd.DataFrame(
            {"item": answered[decl.id].astype(str).to_numpy(), "value": answered["value"].to_numpy(float)}
        )
        for group in decl.groups:
            items[group] = answered[group].astype(str).to_numpy()
        found = [e for m in TRACKED for e in estimates(m, items)]
        metrics = [MetricValue(e.metric, e.value, e.breakdown, e.ci_low, e.ci_high, e.clusters) for e in found]
        summary: dict[str, Any] = {
            "answered": len(answered),
            "unanswered": int((scores["status"] == "unanswered").sum()),
            "failed": int((scores["status"] == "failed").sum()),
        }
        for e in found:
            if not e.breakdown:
                summary.update({e.metric: e.value, f"{e.metric}_ci_low": e.ci_low, f"{e.metric}_ci_high": e.ci_high})
        groups = pd.DataFrame(
            [
                {"group": e.breakdown, "value": e.value, "ci_low": e.ci_low, "ci_high": e.ci_high, "items": e.items}
                for e in found
                if e.breakdown
            ]
        )
        return StageResult(
            {"summary": summary, "groups": groups},
            metadata={**{k: v for k, v in summary.items() if isinstance(v, int | float) and v == v}, "groups": groups},
            tracked=Tracked(metrics, items, scope=f"{decl.name}|{_version(decl)}|{context.options.get('sample', '')}"),
        )

    def write_report(out: Path, board: pd.DataFrame, results: dict[str, dict[str, Any]], settings: Any) -> Path:
        from geomon.report.suite import Breakdown, write_suite_report

        return write_suite_report(
            out, decl.title, decl.spec, board, results,
            [Breakdown("groups", f"{decl.title}: {metric} per group (95 % interval)", "group", "value")],
            (metric, *(f"{g}_gap" for g in decl.groups)),
        )  # fmt: skip

    mean = Mean("value")
    TRACKED = (
        TrackedMetric(metric, mean, "item", False, decl.min_effect, by=decl.groups, bounds=(0.0, 100.0)),
        *(
            TrackedMetric(f"{g}_gap", Range(mean, g), "item", True, decl.gap_min_effect, bounds=(0.0, 100.0))
            for g in decl.groups
        ),
    )
    this = sys.modules[__name__]
    pipeline = Pipeline(
        stages=(
            Stage("questions", questions_stage, source=True, versioned_by=(this,)),
            Stage(
                "prompts", prompts_stage, inputs=("questions",), versioned_by=(this,),
                options=(Option("sample", int, 0, "0 = every question; N = a seeded sample"), SEED),
                checks=(StageCheck("prompts_filled", "Every prompt has its fields filled in.", blocking=True),),
            ),
            responses_stage(requests_for, decl.id),
            Stage("scores", scores_stage, inputs=("prompts", "responses"), per_model=True, versioned_by=(this,)),
            Stage("disparity", disparity_stage, inputs=("scores",), per_model=True, tracked=True, versioned_by=(this,)),
        ),
        write_report=write_report,
        leaderboard_columns=(metric, *(f"{g}_gap" for g in decl.groups), "answered"),
        per_model_description=f"{decl.title}: {metric} per model, overall and per group.",
    )  # fmt: skip
    info = SuiteInfo(
        name=decl.name,
        title=decl.title,
        spec=decl.spec,
        headlines=(
            Headline(metric, f"{decl.title}: {metric}", bounds=(0.0, 100.0)),
            *(
                Headline(f"{g}_gap", f"{decl.title}: {metric} gap between {g}s", bounds=(0.0, 100.0))
                for g in decl.groups
            ),
        ),
        options=(
            RunOption(f"--{decl.name.replace('_', '-')}-sample", f"{decl.title}: N questions", int, None, "sample"),
        ),
        order=decl.order,
        sample="answered",
        profiles=decl.profiles,
        unit=(decl.id,),
    )
    module = ModuleType(f"geomon.suites.{decl.name}", f"{decl.title}, declared in {decl.path}")
    module.SUITE, module.PIPELINE, module.TRACKED = info, pipeline, TRACKED
    module.__file__ = str(decl.path)
    return module


def load(path: Path) -> ModuleType:
    """The suite module the YAML file ``path`` declares."""
    return build(read(path))
