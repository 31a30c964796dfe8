"""The BLEnD release (Myung et al., NeurIPS 2024 Datasets and Benchmarks): everyday-culture questions for
16 countries/regions, each asked in the local language and in English, with native annotators' answers
(in both languages) and vote counts.

Offline the snapshot directory is the repository's ``data/`` layout — ``annotations/<Country>_data.json``,
``questions/<Country>_questions.csv`` (topics), ``prompts/<Country>_prompts.csv`` (the paper's prompt
templates in English and the local language) — and live the same files come from the repository at a
pinned commit (``fetch_release``). Every file problem is an error naming the file and what is wrong.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from geomon.sources.release_files import ReleaseFiles, read_mapping

DEFAULT_RELEASE_URL = "https://raw.githubusercontent.com/nlee0212/BLEnD/24e7d732c082/data"
# The release's countries/regions and their local language (the reference code's COUNTRY_LANG).
COUNTRY_LANGUAGE = {
    "UK": "English",
    "US": "English",
    "South_Korea": "Korean",
    "Algeria": "Arabic",
    "China": "Chinese",
    "Indonesia": "Indonesian",
    "Spain": "Spanish",
    "Iran": "Persian",
    "Mexico": "Spanish",
    "Assam": "Assamese",
    "Greece": "Greek",
    "Ethiopia": "Amharic",
    "Northern_Nigeria": "Hausa",
    "Azerbaijan": "Azerbaijani",
    "North_Korea": "Korean",
    "West_Java": "Sundanese",
}
IDK_KEYS = ("idk", "no-answer", "not-applicable")


class BlendError(ValueError):
    """A BLEnD file that cannot be read as the release writes it."""


@dataclass
class BlendRelease:
    # One row per (country, question): country, language, question_id, topic, question (local language),
    # en_question, annotations (list of {answers, en_answers, count}, most votes first), idks.
    questions: pd.DataFrame
    templates: dict[str, dict[str, tuple[str, str]]]  # country → template id → (English, local language)
    report: dict[str, Any] = field(default_factory=dict)


def _annotations(path: Path, qid: str, entry: Any) -> list[dict[str, Any]]:
    if not isinstance(entry, dict) or not isinstance(entry.get("annotations"), list):
        raise BlendError(f"BLEnD file {path}: question {qid}: no 'annotations' list")
    cleaned = []
    for i, annotation in enumerate(entry["annotations"]):
        answers, en_answers, count = (
            (annotation or {}).get("answers"),
            annotation.get("en_answers"),
            annotation.get("count"),
        )
        if not isinstance(answers, list) or not isinstance(en_answers, list):
            raise BlendError(
                f"BLEnD file {path}: question {qid}: annotation {i} needs 'answers' and 'en_answers' lists"
            )
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise BlendError(f"BLEnD file {path}: question {qid}: annotation {i} has count {count!r}, not a vote count")
        cleaned.append(
            {"answers": [str(a) for a in answers], "en_answers": [str(a) for a in en_answers], "count": count}
        )
    counts = [a["count"] for a in cleaned]
    if counts != sorted(counts, reverse=True):
        # The reference scorer takes the first annotation's votes as the top vote: order matters.
        raise BlendError(f"BLEnD file {path}: question {qid}: annotations are not ordered by votes {counts}")
    return cleaned


def _idks(path: Path, qid: str, entry: dict[str, Any]) -> dict[str, int]:
    raw = entry.get("idks")
    if not isinstance(raw, dict):
        raise BlendError(f"BLEnD file {path}: question {qid}: no 'idks' counts")
    counts = {}
    for key in IDK_KEYS:
        value = raw.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise BlendError(f"BLEnD file {path}: question {qid}: idks[{key!r}] is {value!r}, not a count")
        counts[key] = value
    return counts


def _csv_rows(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    if not path.is_file():
        raise BlendError(f"{path}: missing; the release needs it")
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                raise BlendError(f"BLEnD file {path}: no column(s) {missing}; found {reader.fieldnames}")
            return list(reader)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise BlendError(f"BLEnD file {path}: not readable CSV ({exc})") from None


def read_release(root: str | Path, countries: tuple[str, ...] = ()) -> BlendRelease:
    """Every (or the named) country's questions with annotations, topics and prompt templates."""
    root = Path(root)
    wanted = countries or tuple(COUNTRY_LANGUAGE)
    unknown = [c for c in wanted if c not in COUNTRY_LANGUAGE]
    if unknown:
        raise BlendError(f"BLEnD: unknown country {unknown}; the release has {', '.join(COUNTRY_LANGUAGE)}")
    rows: list[dict[str, Any]] = []
    templates: dict[str, dict[str, tuple[str, str]]] = {}
    report: dict[str, Any] = {
        "countries": len(wanted),
        "without_topic": 0,
        "topic_without_annotation": 0,
        "templates_without_placeholder": [],
        "empty_question_text": [],  # not asked in that language; counted by the prompts too
    }
    for country in wanted:
        path = root / "annotations" / f"{country}_data.json"
        data = read_mapping(path, BlendError)
        topics_path = root / "questions" / f"{country}_questions.csv"
        topics = {r["ID"]: r["Topic"] for r in _csv_rows(topics_path, ("ID", "Topic"))}
        report["topic_without_annotation"] += len(set(topics) - set(data))
        for qid, entry in data.items():
            annotations = _annotations(path, qid, entry)
            for text_key in ("question", "en_question"):
                if not isinstance(entry.get(text_key), str):
                    raise BlendError(f"BLEnD file {path}: question {qid}: {text_key!r} must be text")
                if not entry[text_key].strip():  # the release has one (China's New-en-04 in Chinese)
                    report["empty_question_text"].append(f"{country}:{qid}:{text_key}")
            report["without_topic"] += qid not in topics
            rows.append(
                {
                    "country": country,
                    "language": COUNTRY_LANGUAGE[country],
                    "question_id": qid,
                    "topic": topics.get(qid, "unknown"),
                    "question": str(entry["question"]).strip(),
                    "en_question": str(entry["en_question"]).strip(),
                    "annotations": annotations,
                    "idks": _idks(path, qid, entry),
                }
            )
        prompts_path = root / "prompts" / f"{country}_prompts.csv"
        templates[country] = {
            r["id"]: (r["English"], r["Translation"]) for r in _csv_rows(prompts_path, ("id", "English", "Translation"))
        }
        # The release has a few translated placeholders ("{س}" in Algeria's pers-1): counted here, an error
        # only when a run asks for that template (geomon.suites.blend.build_prompts).
        report["templates_without_placeholder"] += [
            f"{country}:{template_id}"
            for template_id, pair in templates[country].items()
            if any("{q}" not in t for t in pair)
        ]
    questions = pd.DataFrame(rows)
    report["questions"] = len(questions)
    report["per_country"] = questions["country"].value_counts().sort_index().to_dict() if rows else {}
    return BlendRelease(questions, templates, report)


def fetch_release(base_url: str, dest: str | Path, countries: tuple[str, ...] = ()) -> Path:
    """The release's files for every (or the named) country, downloaded once into ``dest`` (the snapshot's
    layout); returns ``dest``."""
    files = ReleaseFiles(base_url, dest, "BLEnD", BlendError)
    for country in countries or tuple(COUNTRY_LANGUAGE):
        for relative in (
            f"annotations/{country}_data.json",
            f"questions/{country}_questions.csv",
            f"prompts/{country}_prompts.csv",
        ):
            files.get(relative)
    return Path(dest)
