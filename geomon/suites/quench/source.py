"""The QUENCH quiz release: questions with masked entities (X, Y, Z…), their answers and rationales,
themes, and each question's Indic / non-Indic annotation.

Offline the snapshot directory is the release's layout — ``Data_Store/<question>.yml`` and
``isIndicAnnotations/<question>.yml`` — and live the same two folders come out of the repository's
archive at a pinned commit (``fetch_release``). Every file problem is an error naming the file; oddities
that are not errors (a variable the question text never names, a question without themes, an annotation
without a question) are counted in the report, never dropped silently.
"""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from geomon.sources.release_files import read_mapping

# aflah02/QUENCH at the commit the snapshot was copied from (PROVENANCE.md); GitHub serves any ref's archive.
DEFAULT_ARCHIVE_URL = "https://codeload.github.com/aflah02/QUENCH/tar.gz/dd392cbc6c55"
FOLDERS = ("Data_Store", "isIndicAnnotations")
COLUMNS = ["question_id", "variable", "question", "answer", "rationale", "indic", "themes"]
_REQUIRED = ("question", "variables", "variable_to_answer", "variable_specific_rationale")
_INDIC = {"yes": True, "no": False}


class QuenchError(ValueError):
    """A QUENCH file that cannot be read as the release writes it."""


@dataclass
class QuenchRelease:
    items: pd.DataFrame  # one row per masked entity (COLUMNS + source, title); indic None where unannotated
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def unannotated(self) -> list[str]:
        return list(self.report.get("questions_without_annotation", []))


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _question_rows(path: Path) -> list[dict[str, Any]]:
    doc = read_mapping(path, QuenchError)
    missing = [key for key in _REQUIRED if key not in doc]
    if missing:
        raise QuenchError(f"QUENCH file {path}: no {', '.join(missing)}")
    variables = doc["variables"]
    answers, rationales = doc["variable_to_answer"], doc["variable_specific_rationale"]
    if not isinstance(variables, list) or not variables:
        raise QuenchError(f"QUENCH file {path}: 'variables' must be a non-empty list, found {variables!r}")
    if not isinstance(answers, dict) or not isinstance(rationales, dict):
        raise QuenchError(f"QUENCH file {path}: variable_to_answer and variable_specific_rationale must be mappings")
    question = _text(doc["question"])
    if not question:
        raise QuenchError(f"QUENCH file {path}: empty question")
    themes = doc.get("themes") or []
    if not isinstance(themes, list):
        raise QuenchError(f"QUENCH file {path}: 'themes' must be a list, found {themes!r}")
    rows = []
    for variable in variables:
        answer = _text(answers.get(variable))
        if not answer:
            raise QuenchError(f"QUENCH file {path}: variable {variable!r} has no answer in variable_to_answer")
        rows.append(
            {
                "question_id": path.stem,
                "variable": str(variable),
                "question": question,
                "answer": answer,
                "rationale": _text(rationales.get(variable)),
                "themes": [str(t) for t in themes],
                "title": _text(doc.get("question_title")),
                "source": _text(doc.get("question_source")),
            }
        )
    return rows


def _indic_flag(path: Path) -> bool:
    doc = read_mapping(path, QuenchError)
    value = _text(doc.get("indic")).lower()
    if value not in _INDIC:
        raise QuenchError(f"QUENCH annotation {path}: indic must be 'Yes' or 'No', found {doc.get('indic')!r}")
    if doc.get("id") not in (None, path.name):
        raise QuenchError(f"QUENCH annotation {path}: id {doc.get('id')!r} names another question")
    return _INDIC[value]


def read_release(path: str | Path) -> QuenchRelease:
    """Read the release folder; a question without an Indic annotation keeps ``indic`` None and is listed in
    ``report["questions_without_annotation"]`` (the blocking check fails on it; ``load_items`` refuses it)."""
    root = Path(path)
    store, annotations = root / "Data_Store", root / "isIndicAnnotations"
    for folder in (store, annotations):
        if not folder.is_dir():
            raise QuenchError(f"QUENCH release {root}: no {folder.name}/ folder")
    files = sorted(store.glob("*.yml"))
    if not files:
        raise QuenchError(f"QUENCH release {root}: Data_Store/ holds no .yml question files")
    rows = [row for file in files for row in _question_rows(file)]
    flags = {file.stem: _indic_flag(file) for file in sorted(annotations.glob("*.yml"))}
    items = pd.DataFrame(rows)
    items["indic"] = items["question_id"].map(flags).astype(object)
    items.loc[~items["question_id"].isin(flags.keys()), "indic"] = None
    items = items[[*COLUMNS, "title", "source"]]
    questions = items.drop_duplicates("question_id")
    report = {
        "questions": len(questions),
        "entities": len(items),
        "indic_questions": int((questions["indic"] == True).sum()),  # noqa: E712 (object column: True, False, None)
        "indic_entities": int((items["indic"] == True).sum()),  # noqa: E712
        "questions_without_annotation": sorted(set(questions["question_id"]) - set(flags)),
        "annotations_without_question": sorted(set(flags) - set(questions["question_id"])),
        "questions_without_themes": sorted(questions.loc[questions["themes"].map(len) == 0, "question_id"]),
        "variables_not_named_in_question": [
            f"{row.question_id}|{row.variable}" for row in items.itertuples() if row.variable not in row.question
        ],
        "entities_without_rationale": int((items["rationale"] == "").sum()),
    }
    return QuenchRelease(items.reset_index(drop=True), report)


def load_items(path: str | Path) -> pd.DataFrame:
    """One row per masked entity: question_id, variable, question, answer, rationale, indic (bool), themes.

    Reads the release layout (``Data_Store/*.yml`` + ``isIndicAnnotations/*.yml``); a file that cannot be
    read, or a question without its Indic annotation, is an error naming it.
    """
    release = read_release(path)
    if release.unannotated:
        shown = ", ".join(release.unannotated[:5])
        raise QuenchError(
            f"QUENCH release {path}: {len(release.unannotated)} question(s) have no isIndicAnnotations/ file: {shown}"
        )
    items = release.items[COLUMNS].copy()
    items["indic"] = items["indic"].astype(bool)
    items.attrs["report"] = release.report
    return items


def fetch_release(archive_url: str, dest: str | Path, timeout_s: float = 60.0) -> Path:
    """Download the repository archive (a .tar.gz, as GitHub's codeload serves it) and unpack its
    ``Data_Store/`` and ``isIndicAnnotations/`` into ``dest``; a folder already there is kept."""
    import requests

    target = Path(dest)
    if all((target / folder).is_dir() for folder in FOLDERS):
        return target
    response = requests.get(archive_url, timeout=timeout_s)
    if not response.ok:
        raise QuenchError(f"QUENCH archive {archive_url}: HTTP {response.status_code}")
    wanted = []
    try:
        archive = tarfile.open(fileobj=io.BytesIO(response.content), mode="r:gz")  # noqa: SIM115 (closed below)
    except tarfile.TarError as exc:
        raise QuenchError(f"QUENCH archive {archive_url}: not a .tar.gz ({exc})") from exc
    with archive:
        for member in archive.getmembers():
            parts = Path(member.name).parts  # <repo>-<ref>/Data_Store/<file>.yml
            if member.isfile() and len(parts) == 3 and parts[1] in FOLDERS and parts[2].endswith(".yml"):
                wanted.append((member, target / parts[1] / parts[2]))
        if not {path.parent.name for _, path in wanted} >= set(FOLDERS):
            raise QuenchError(f"QUENCH archive {archive_url}: no Data_Store/ and isIndicAnnotations/ .yml files")
        for member, path in wanted:
            path.parent.mkdir(parents=True, exist_ok=True)
            source = archive.extractfile(member)
            if source is None:
                raise QuenchError(f"QUENCH archive {archive_url}: {member.name} cannot be read")
            path.write_bytes(source.read())
    return target


def release_expectations(entities: int | None, questions: int | None) -> list[Any]:
    """QUENCH's release is whole: its entity and question counts (when known), every question annotated
    Indic or not, every entity with an answer and a rationale to judge against."""
    import great_expectations.expectations as gxe

    expectations: list[Any] = [
        gxe.ExpectColumnValuesToBeInSet(column="annotated", value_set=[True]),
        gxe.ExpectColumnValueLengthsToBeBetween(column="answer", min_value=1),
        gxe.ExpectColumnValueLengthsToBeBetween(column="rationale", min_value=1),
    ]
    if entities is not None:
        expectations.append(gxe.ExpectTableRowCountToEqual(value=entities))
    if questions is not None:
        expectations.append(
            gxe.ExpectColumnUniqueValueCountToBeBetween(column="question_id", min_value=questions, max_value=questions)
        )
    return expectations
