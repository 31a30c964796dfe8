"""A benchmark of the common shape, declared in one YAML file: a question set with group columns, a prompt
template, a scorer, accuracy and the answer rate per group with intervals and the gaps between groups.

The file (``docs/adding-a-benchmark.md`` shows one whole) gives the data (a CSV or TSV beside it), the prompt,
the accepted answers (one, or several: a list cell or ``answer_separator``), the candidates (a column or the
``options`` columns), the scorer — ``exact``, ``normalised`` (an accepted answer named in any script:
``parsing.names``), ``regex`` (a pattern with ``{answer}``, each accepted answer an alternative), ``choice`` (the
candidate named, or its letter), ``logprob`` (a base model with log-probabilities ranks the candidates; any other
model as ``choice``), ``numeric`` (``parsing.parse_number`` within a relative tolerance) or ``judged`` (the jury
grades each reply with ``judge_prompt``) —, the group columns and the run profiles. Every scorer but ``judged``
refuses a hedge ("I don't know", 我不知道, sijui: ``parsing.HEDGES`` and the file's ``hedges``) and a reply naming
several candidates of which one is wrong: scored wrong, counted as refused, never dropped. ``load`` builds it
straight into the registry's record of a suite (``Suite``: the info, pipeline and tracked headlines a Python
suite declares as ``SUITE``, ``PIPELINE``, ``TRACKED``), so the factory, the verdict engine, ``geomon run``,
history and alerts treat it like any suite.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from geomon import parsing
from geomon.suites import kit
from geomon.suites.info import Suite, SuiteError

SCORERS = ("exact", "normalised", "regex", "choice", "logprob", "numeric", "judged")
KNOWN = {
    "name", "title", "spec", "data", "id", "answer", "groups", "prompt", "completion_prompt", "scorer", "pattern",
    "options", "tolerance", "max_tokens", "metric", "min_effect", "gap_min_effect", "profiles", "order",
    "judge_prompt", "answer_separator", "candidates", "candidate_separator", "hedges", "partial_credit",
    "sample_per", "cluster", "table", "answered_min_effect",
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
    answer_separator: str = ""
    candidates: str = ""
    candidate_separator: str = "|"
    hedges: tuple[str, ...] = parsing.HEDGES
    partial_credit: bool = False
    sample_per: str = ""
    cluster: str = ""
    table: tuple[str, ...] = ()
    answered_min_effect: float = 5.0


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
        raise SuiteError(f"{path}: scorer regex needs a pattern with {{answer}} (each accepted answer, escaped)")
    if (scorer == "judged") != bool(doc.get("judge_prompt")):
        raise SuiteError(f"{path}: scorer judged goes with a judge_prompt (and a judge_prompt with scorer judged)")
    if scorer in ("choice", "logprob") and not (doc.get("options") or doc.get("candidates")):
        raise SuiteError(f"{path}: scorer {scorer} needs candidates (a column) or options (columns)")
    for field in ("groups", "table", "hedges", "options"):
        if not isinstance(doc.get(field) or [], list):
            raise SuiteError(f"{path}: {field} is a list, not {doc[field]!r}")
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
        answer_separator=str(doc.get("answer_separator") or ""),
        candidates=str(doc.get("candidates") or ""),
        candidate_separator=str(doc.get("candidate_separator") or "|"),
        hedges=(*parsing.HEDGES, *(str(h) for h in doc.get("hedges") or ())),
        partial_credit=bool(doc.get("partial_credit", False)),
        sample_per=str(doc.get("sample_per") or ""),
        cluster=str(doc.get("cluster") or ""),
        table=tuple(str(g) for g in doc.get("table") or ()),
        answered_min_effect=float(doc.get("answered_min_effect", 5.0)),
    )


def read_questions(decl: Declaration, path: Path) -> pd.DataFrame:
    """The table, checked: the id, answer, group, option, candidate, cluster and template columns present, ids
    unique and filled."""
    fields = set(re.findall(r"{(\w+)}", decl.prompt + decl.completion_prompt + decl.judge_prompt)) - {"reply"}
    wanted = {decl.answer, *decl.groups, *decl.options, *fields, *(c for c in (decl.candidates, decl.cluster) if c)}
    return kit.read_table(path, decl.id, wanted)


def split(cell: Any, separator: str) -> list[str]:
    """A cell's answers as published: a JSON list (``["rice", "noodles"]``), or the text split at ``separator``
    (none: the whole text); blanks dropped."""
    text = str(cell).strip()
    if text.startswith("[") and text.endswith("]"):
        try:
            listed = json.loads(text)
        except ValueError:
            listed = None
        if isinstance(listed, list):
            return [str(a).strip() for a in listed if str(a).strip()]
    return [a.strip() for a in (text.split(separator) if separator else [text]) if a.strip()]


def accepted(decl: Declaration, row: dict[str, Any]) -> list[str]:
    """The row's accepted answers."""
    return split(row[decl.answer], decl.answer_separator)


def candidates(decl: Declaration, row: dict[str, Any]) -> list[str]:
    """The row's candidates: its ``candidates`` column split, or its ``options`` columns (none: [])."""
    if decl.candidates:
        return split(row[decl.candidates], decl.candidate_separator)
    return [str(row[o]) for o in decl.options]


def _same(a: str, b: str) -> bool:
    return parsing.normalise(a) == parsing.normalise(b)


def _matched(decl: Declaration, reply: str, gold: list[str], offered: list[str], named: list[str]) -> list[str] | None:
    """The accepted answers the reply gives under the declared scorer; None when nothing can be read (``choice``
    and ``logprob``: no candidate named)."""
    if decl.scorer == "exact":
        return [g for g in gold if reply.strip() == g.strip()]
    if decl.scorer == "normalised":
        return [g for g in gold if parsing.names(reply, g)]
    if decl.scorer == "regex":  # each accepted answer escaped: an alternative, never a pattern of its own
        text = unicodedata.normalize("NFKC", reply)
        pattern = lambda g: decl.pattern.replace("{answer}", re.escape(unicodedata.normalize("NFKC", g)))  # noqa: E731
        return [g for g in gold if re.search(pattern(g), text, re.IGNORECASE)]
    # choice and logprob: the candidate named (or its letter), right when it is an accepted answer
    return [g for g in gold if any(_same(n, g) for n in named)] if named else None


READ_CHARS = 80  # of a reply that names no answer, what its reading shows


def correct(decl: Declaration, reply: str | None, row: dict[str, Any]) -> kit.Reading:
    """``reply`` read against the row under the declared scorer: 1 right, 0 wrong (a share of the accepted
    answers named with ``partial_credit``), NaN when nothing can be read (an empty reply; for ``choice``, no
    candidate). A hedge, or a reply naming several candidates one of which is not accepted, is refused: 0, and
    the reason. Text is compared in its own script (``parsing.normalise``): 右 is not 左."""
    if not isinstance(reply, str) or not reply.strip():
        return kit.Reading(float("nan"))
    hedge = parsing.hedge_in(reply, decl.hedges)
    if hedge is not None:
        return kit.Reading(0.0, refused=f"hedge: {hedge}")
    gold, offered = accepted(decl, row), candidates(decl, row)
    named = [offered[i] for i in parsing.candidates_named(reply, offered)] if offered else []
    if len(named) > 1 and any(not any(_same(n, g) for g in gold) for n in named):
        return kit.Reading(0.0, refused=f"several candidates: {', '.join(named)}")
    if decl.scorer == "numeric":
        number, truth = parsing.parse_number(reply), parsing.parse_number(gold[0] if gold else "")
        if number is None or truth is None:
            return kit.Reading(float("nan"))
        return kit.Reading(float(abs(number - truth) <= decl.tolerance * max(abs(truth), 1e-12)), f"{number:g}")
    if not named and decl.scorer in ("choice", "logprob"):
        index = parsing.parse_choice(reply, offered)  # a letter ("B)") where no candidate is named
        named = [offered[index]] if index is not None else []
    right = _matched(decl, reply, gold, offered, named)
    if right is None:
        return kit.Reading(float("nan"))
    value = len(right) / len(gold) if decl.partial_credit and gold else float(bool(right))
    # What was read: the accepted answers or candidates named, else the reply as compared (shown by `geomon items`).
    return kit.Reading(value, ", ".join(right or named) or parsing.normalise(reply).strip()[:READ_CHARS])


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


def build(decl: Declaration) -> Suite:
    """The suite the YAML file declares: a ``kit.QuestionSet`` whose scorer is the declared one, its stages
    versioned by the file's text (a changed file re-runs them)."""
    data = decl.data.relative_to(decl.path.parent) if decl.data.is_relative_to(decl.path.parent) else decl.data
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
        candidates=(lambda row: candidates(decl, row)) if decl.scorer == "logprob" else None,
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
        sample_per=decl.sample_per,
        cluster=decl.cluster,
        table=decl.table,
        answered_min_effect=decl.answered_min_effect,
    )
    return Suite(*kit.declare(questions, decl.path, (sys.modules[__name__],)), source=decl.path)


def load(path: Path) -> Suite:
    """The suite the YAML file ``path`` declares."""
    return build(read(path))
