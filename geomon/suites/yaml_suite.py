"""A benchmark of the common shape, declared in one YAML file: a question set with group columns, a prompt
template, a scorer, accuracy per group with intervals and the gaps between groups.

The file (``docs/adding-a-benchmark.md`` shows one whole) gives the data (a CSV beside it), the prompt, the
scorer — ``exact``, ``normalised`` (case, accents, punctuation and articles aside, the gold as whole words of the
answer), ``regex`` (a pattern with ``{answer}``), ``choice`` (the option named, ``parsing.parse_choice``) or
``numeric`` (``parsing.parse_number`` within a relative tolerance) or ``judged`` (the jury grades each reply
with ``judge_prompt``: correct or incorrect, the majority decides) —, the group columns and the run profiles.
``load`` turns it into the three declarations a Python suite makes (``SUITE``, ``PIPELINE``, ``TRACKED``), so
the factory, the verdict engine, ``geomon run``, history and alerts treat it like any suite.
"""

from __future__ import annotations

import dataclasses
import inspect
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
from geomon.suites import kit
from geomon.suites.info import SuiteError

SCORERS = ("exact", "normalised", "regex", "choice", "numeric", "judged")
KNOWN = {
    "name", "title", "spec", "data", "id", "answer", "groups", "prompt", "completion_prompt", "scorer", "pattern",
    "options", "tolerance", "max_tokens", "metric", "min_effect", "gap_min_effect", "profiles", "order",
    "judge_prompt",
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
    judge_prompt: str


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
    if (scorer == "judged") != bool(doc.get("judge_prompt")):
        raise SuiteError(f"{path}: scorer judged goes with a judge_prompt (and a judge_prompt with scorer judged)")
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
        judge_prompt=str(doc.get("judge_prompt") or ""),
    )


def read_questions(decl: Declaration, path: Path) -> pd.DataFrame:
    """The CSV, checked: the id, answer, group, option and template columns present, ids unique and filled."""
    fields = set(re.findall(r"{(\w+)}", decl.prompt + decl.completion_prompt + decl.judge_prompt)) - {"reply"}
    return kit.read_table(path, decl.id, {decl.answer, *decl.groups, *decl.options, *fields})


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


# The fields that say what is asked and reported; every other field is the scorer's (``scorer_declaration``).
NOT_SCORING = {
    "path", "name", "title", "spec", "data", "id", "groups", "prompt", "completion_prompt", "max_tokens", "metric",
    "min_effect", "gap_min_effect", "profiles", "order",
}  # fmt: skip


def scorer_declaration(decl: Declaration) -> str:
    """What the scope holds of the scorer (``kit.scope_of``): its declared fields and the code here that reads
    them, so a changed scorer (in the file or in geomon) starts a new series."""
    fields = {f.name: getattr(decl, f.name) for f in dataclasses.fields(decl) if f.name not in NOT_SCORING}
    return f"{fields!r}\n{inspect.getsource(sys.modules[__name__])}"


def build(decl: Declaration) -> ModuleType:
    """The declarations a Python suite module makes, from the YAML file: ``SUITE``, ``PIPELINE``, ``TRACKED``
    (a ``kit.QuestionSet`` whose scorer is the declared one)."""
    data = decl.data.relative_to(decl.path.parent) if decl.data.is_relative_to(decl.path.parent) else decl.data
    module = ModuleType(f"geomon.suites.{decl.name}", f"{decl.title}, declared in {decl.path}")
    module.__file__ = str(decl.path)  # the file's text versions the stages (a changed file re-runs them)
    questions = kit.QuestionSet(
        name=decl.name,
        title=decl.title,
        spec=decl.spec,
        files=(str(data),),
        read=lambda folder: read_questions(decl, folder / data),
        data_dir=decl.path.parent,
        id=decl.id,
        answer=decl.answer,
        prompt=decl.prompt,
        score=None if decl.scorer == "judged" else lambda reply, row: correct(decl, reply, row),
        judge_prompt=decl.judge_prompt,
        groups=decl.groups,
        completion_prompt=decl.completion_prompt,
        max_tokens=decl.max_tokens,
        metric=decl.metric,
        min_effect=decl.min_effect,
        gap_min_effect=decl.gap_min_effect,
        profiles=decl.profiles,
        order=decl.order,
        scorer=scorer_declaration(decl),
    )
    module.SUITE, module.PIPELINE, module.TRACKED = kit.declare(questions, module)
    return module


def load(path: Path) -> ModuleType:
    """The suite module the YAML file ``path`` declares."""
    return build(read(path))
