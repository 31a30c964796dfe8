"""Gapminder's AI Worldview Benchmark question bank: questions, options with correctness levels, prompt
variations, the judge prompt, and Gapminder's own graded results for reproduction.

Offline the snapshot directory is the open-numbers release's layout (``ai_eval_sheets/*.csv`` and
``ddf/ddf--entities--question.csv``); live, the same files are fetched from ``base_url`` laid out the
same way. Every file problem is an error that names the file and what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

# correctness_of_answer_option → grade (the release's 1/2/3) and the words the judge prompt shows.
CORRECTNESS = {1: "correct", 2: "wrong", 3: "very_wrong"}
CORRECTNESS_LABEL = {1: "Correct", 2: "Wrong", 3: "Very Wrong"}
GRADES = ("correct", "wrong", "very_wrong", "indecisive")


# open-numbers/ddf--gapminder--ai_worldview_benchmark, the release the snapshot was copied from.
DEFAULT_RELEASE_URL = "https://raw.githubusercontent.com/open-numbers/ddf--gapminder--ai_worldview_benchmark/master"
RELEASE_FILES = (
    "ai_eval_sheets/questions.csv",
    "ai_eval_sheets/question_options.csv",
    "ai_eval_sheets/prompt_variations.csv",
    "ai_eval_sheets/metrics.csv",
    "ai_eval_sheets/evaluators.csv",
    "ai_eval_sheets/gen_ai_model_configs.csv",
    "ddf/ddf--entities--question.csv",
)


class GapminderError(ValueError):
    """A Gapminder file that cannot be read as the release writes it."""


def fetch_release(base_url: str, dest: str | Path, timeout_s: float = 30.0) -> Path:
    """Download the files ``read_snapshot`` reads into ``dest`` (laid out as the snapshot)."""
    from geomon.sources.release_files import ReleaseFiles

    files = ReleaseFiles(base_url, dest, "Gapminder release", GapminderError, timeout_s)
    for relative in RELEASE_FILES:
        files.get(relative)
    return Path(dest)


@dataclass
class GapminderData:
    questions: pd.DataFrame  # question_id, language, text, topic
    options: pd.DataFrame  # question_id, language, letter, text, correctness (1/2/3)
    variations: pd.DataFrame  # variation_id, family, language, question_template, question_prompt_template
    judge_prompt: str  # the "correctness" metric's prompt (choices A-D)
    judge_choices: dict[str, str]  # judge letter → grade
    model_configs: pd.DataFrame
    report: dict[str, Any] = field(default_factory=dict)


def _read_csv(path: Path, required: list[str]) -> pd.DataFrame:
    if not path.is_file():
        raise GapminderError(f"{path}: missing")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise GapminderError(f"{path}: not a readable CSV ({exc})") from exc
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise GapminderError(f"{path}: no column(s) {missing}; found {list(frame.columns)}")
    return frame


def _judge_metric(path: Path) -> tuple[str, dict[str, str]]:
    metrics = _read_csv(path, ["name", "prompt", "choices", "choice_scores"])
    row = metrics[metrics["name"] == "correctness"]
    if row.empty:
        raise GapminderError(f"{path}: no 'correctness' metric (the judge prompt)")
    choices = [c.strip() for c in row.iloc[0]["choices"].split(",")]
    scores = [int(s) for s in row.iloc[0]["choice_scores"].split(",")]
    # Score 0 = indecisive, 1 = very wrong, 2 = wrong, 3 = correct (the prompt's A-D descriptions).
    by_score = {0: "indecisive", 1: "very_wrong", 2: "wrong", 3: "correct"}
    if sorted(scores) != [0, 1, 2, 3] or len(choices) != 4:
        raise GapminderError(f"{path}: correctness choices {choices} / scores {scores} are not A-D / 0-3")
    return row.iloc[0]["prompt"], {c: by_score[s] for c, s in zip(choices, scores, strict=True)}


def read_snapshot(path: str | Path) -> GapminderData:
    """Read the release directory (``ai_eval_sheets/`` and ``ddf/``)."""
    root = Path(path)
    sheets = root / "ai_eval_sheets"
    if not sheets.is_dir():
        raise GapminderError(f"Gapminder snapshot {root}: no ai_eval_sheets/ folder")
    questions = _read_csv(sheets / "questions.csv", ["question_id", "language", "published_version_of_question"])
    options = _read_csv(
        sheets / "question_options.csv",
        ["question_id", "language", "letter", "question_option", "correctness_of_answer_option"],
    )
    variations = _read_csv(
        sheets / "prompt_variations.csv",
        ["variation_id", "prompt_family", "language", "question_template", "question_prompt_template"],
    )
    configs = _read_csv(sheets / "gen_ai_model_configs.csv", ["model_config_id", "model_id"])
    judge_prompt, judge_choices = _judge_metric(sheets / "metrics.csv")
    bad = options[~options["correctness_of_answer_option"].isin(["1", "2", "3"])]
    if len(bad):
        raise GapminderError(
            f"{sheets / 'question_options.csv'}: correctness must be 1, 2 or 3; row {bad.index[0] + 2} has "
            f"{bad.iloc[0]['correctness_of_answer_option']!r}"
        )
    topics_path = root / "ddf" / "ddf--entities--question.csv"
    topics = (
        _read_csv(topics_path, ["question", "sdg_world_topics"]).set_index("question")["sdg_world_topics"]
        if topics_path.is_file()
        else pd.Series(dtype=str)
    )
    q = pd.DataFrame(
        {
            "question_id": questions["question_id"].str.strip(),
            "language": questions["language"].str.strip(),
            "text": questions["published_version_of_question"],
        }
    )
    q["topic"] = [topics.get(qid, "") or "other" for qid in q["question_id"]]
    o = pd.DataFrame(
        {
            "question_id": options["question_id"].str.strip(),
            "language": options["language"].str.strip(),
            "letter": options["letter"].str.strip(),
            "text": options["question_option"],
            "correctness": options["correctness_of_answer_option"].astype(int),
        }
    )
    v = pd.DataFrame(
        {
            "variation_id": variations["variation_id"].str.strip(),
            "family": variations["prompt_family"].str.strip(),
            "language": variations["language"].str.strip(),
            "question_template": variations["question_template"],
            "question_prompt_template": variations["question_prompt_template"],
        }
    )
    languages_with_questions = sorted(set(q["language"]))
    report = {
        "questions": int(q["question_id"].nunique()),
        "variations_by_language": v["language"].value_counts().to_dict(),
        "question_languages": languages_with_questions,
        # A language with prompt templates but no translated questions cannot be asked: counted, not faked.
        "languages_without_questions": sorted(set(v["language"]) - set(languages_with_questions)),
        "options_for_other_questions": int((~o["question_id"].isin(set(q["question_id"]))).sum()),
    }
    return GapminderData(q, o, v, judge_prompt, judge_choices, configs, report)


def read_results(path: str | Path) -> pd.DataFrame:
    """Gapminder's graded results (``master_output_*.csv``, one file or a folder of them) as the frame
    ``geomon.suites.gapminder.correct_rates`` takes: model, question_id, prompt_variation_id, language,
    grade, plus run (the file) and evaluated (``last_evaluation_datetime``, where the file has it).
    Gapminder's ``fail`` (no judge majority) and empty results are indecisive, counted by their original
    label in ``attrs["original_labels"]``."""
    root = Path(path)
    files = sorted(root.glob("master_output_*.csv")) if root.is_dir() else [root]
    if not files:
        raise GapminderError(f"{root}: no master_output_*.csv files")
    frames = []
    for file in files:
        frame = _read_csv(file, ["question_id", "language", "prompt_variation_id", "model_configuration_id", "result"])
        frames.append(frame.assign(run=file.stem))
    raw = pd.concat(frames, ignore_index=True)
    labels = raw["result"].str.strip().replace({"": "empty", "n/a": "empty"})
    unknown = sorted(set(labels) - {"correct", "wrong", "very_wrong", "fail", "empty"})
    if unknown:
        raise GapminderError(f"{root}: unknown result label(s) {unknown}")
    out = pd.DataFrame(
        {
            "model": raw["model_configuration_id"],
            "question_id": raw["question_id"],
            "prompt_variation_id": raw["prompt_variation_id"],
            "language": raw["language"],
            "grade": labels.replace({"fail": "indecisive", "empty": "indecisive"}),
            "run": raw["run"],
            "evaluated": raw.get("last_evaluation_datetime", ""),
            "empty": labels.eq("empty"),
        }
    )
    out.attrs["original_labels"] = labels.value_counts().to_dict()
    return out
