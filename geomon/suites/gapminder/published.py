"""Gapminder's published results, read: the per-question rates of every model configuration Gapminder published
(correct, wrong and very wrong of the decisive answers, indecisive of all), the question as the cluster, and its
per-answer files (graded correct / wrong / very wrong / fail (no judge majority: indecisive) / empty (no answer:
indecisive, counted)), which add each prompt family's correct rate where they are complete. The suite's
importer (``IMPORTERS``, its ``Suite.importers``): ``geomon import gapminder-results`` and the Dagster layer's
``history/gapminder_*`` assets record them as evaluations (``monitor.imports.published_runs``)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geomon.suites.gapminder import FAMILY_COLUMNS, items
from geomon.suites.gapminder.source import read_results, read_snapshot
from geomon.suites.info import Importer, Published, RunOption, model_name


class PublishedError(ValueError):
    """Gapminder's published folder cannot be read: the message names the file, the line and the field."""


def read_entities(path: Path) -> pd.DataFrame:
    """The model configurations (``ddf--entities--model_configuration.csv``): model id, vendor, publish date and
    first experiment date, by configuration id."""
    if not path.is_file():
        raise PublishedError(
            f"{path}: missing; the model configurations (model id, vendor, publish date) are read there"
        )
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    needed = ["model_configuration", "model_id", "vendor", "model_publish_date", "first_experiment_date"]
    missing = [c for c in needed if c not in frame]
    if missing:
        raise PublishedError(f"{path}: no column(s) {missing}")
    return frame.set_index("model_configuration")


RATES = ("correct", "wrong", "very_wrong", "indecisive")  # published per question and configuration
RATES_ONLY = "rates only: no per-answer file"


def rates_file(folder: Path, rate: str) -> Path:
    """The published file of one rate per question and configuration."""
    return folder / f"ddf--datapoints--{rate}_rate--by--question--model_configuration.csv"


def files(folder: str | Path) -> list[Path]:
    """What ``configurations`` reads in Gapminder's published folder: the per-question rates, and the per-answer
    files in its ``results/`` (the files whose change re-imports)."""
    folder = Path(folder)
    return [rates_file(folder, rate) for rate in RATES] + sorted((folder / "results").glob("master_output_*.csv"))


def rates(folder: str | Path) -> pd.DataFrame:
    """Gapminder's published rates per (question, model configuration): ``correct_rate``, ``wrong_rate``,
    ``very_wrong_rate`` (of the decisive answers) and ``indecisive_rate`` (of all answers), in percent. A missing
    file, a rate that is not a number in [0, 100], a pair listed twice or in one file but not another is an
    error naming the file, the line and the field."""
    folder = Path(folder)
    merged: pd.DataFrame | None = None
    for rate in RATES:
        path, column = rates_file(folder, rate), f"{rate}_rate"
        if not path.is_file():
            raise PublishedError(
                f"{path}: missing; Gapminder's per-question rates are read there (give the published folder, whose "
                "results/ holds the per-answer files)"
            )
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        missing = [c for c in ("question", "model_configuration", column) if c not in frame]
        if missing:
            raise PublishedError(f"{path}: no column(s) {missing}")
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = np.flatnonzero(~values.between(0, 100).to_numpy())
        if bad.size:
            row = int(bad[0])
            raise PublishedError(
                f"{path}, line {row + 2}: field {column}: {frame[column].iloc[row]!r} is not a rate in [0, 100]"
            )
        keys = frame[["question", "model_configuration"]].assign(**{column: values.to_numpy()})
        twice = np.flatnonzero(keys.duplicated(["question", "model_configuration"]).to_numpy())
        if twice.size:
            row = int(twice[0])
            raise PublishedError(
                f"{path}, line {row + 2}: question {keys['question'].iloc[row]} of "
                f"{keys['model_configuration'].iloc[row]} is listed twice"
            )
        if merged is None:
            merged = keys
            continue
        merged = merged.merge(keys, on=["question", "model_configuration"], how="outer", indicator=True)
        lone = merged[merged["_merge"] != "both"]
        if len(lone):
            first = lone.iloc[0]
            where = path.name if first["_merge"] == "left_only" else rates_file(folder, RATES[0]).name
            raise PublishedError(
                f"{folder}: question {first['question']} of {first['model_configuration']} has no rate in {where}"
            )
        merged = merged.drop(columns="_merge")
    assert merged is not None
    return merged.sort_values(["model_configuration", "question"], ignore_index=True)


def rate_items(rates: pd.DataFrame, topics: Mapping[str, str]) -> pd.DataFrame:
    """One configuration's published rates as the suite's per-question items (``items``' columns):
    each question's answers as shares of one (``n`` = 1), so each question's rate is exactly the published one
    whatever its number of answers, and a question whose answers were all indecisive has no correct rate."""
    indecisive = rates["indecisive_rate"].to_numpy(float) / 100
    decisive = 1 - indecisive
    # Rounded to the 10 decimals the history keeps of an item (its JSON), so a stored evaluation pairs with the
    # same one read afresh as exactly equal.
    return pd.DataFrame(
        {
            "item": rates["question"].astype(str).to_numpy(),
            "correct": np.round(rates["correct_rate"].to_numpy(float) / 100 * decisive, 10),
            "very_wrong": np.round(rates["very_wrong_rate"].to_numpy(float) / 100 * decisive, 10),
            "decisive": np.round(decisive, 10),
            "indecisive": np.round(indecisive, 10),
            "n": 1.0,
            "topic": [str(topics.get(q, "unknown")) for q in rates["question"]],
            "question": rates["question"].astype(str).to_numpy(),
            "correct_p": np.nan,  # published answers were generated: no option's probability
            # no prompt family from rates alone: complete per-answer files add them (``configurations``)
            **dict.fromkeys(FAMILY_COLUMNS, np.nan),
        }
    )


def _answer_rates(items: pd.DataFrame) -> pd.DataFrame:
    """Per question, the three rates (percent) of ``items``' counts or ``rate_items``' shares."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return pd.DataFrame(
            {
                "correct": items["correct"] / items["decisive"] * 100,
                "very_wrong": items["very_wrong"] / items["decisive"] * 100,
                "indecisive": items["indecisive"] / items["n"] * 100,
            }
        ).set_axis(items["item"].astype(str))


def _answers_complete(answers: pd.DataFrame, published: pd.DataFrame) -> str:
    """ "" when the answers give every published question its published rates; else why not."""
    mine, theirs = _answer_rates(answers), _answer_rates(published)
    missing = theirs.index.difference(mine.index)
    if len(missing):
        return f"its per-answer files hold {len(theirs) - len(missing)} of its {len(theirs)} questions"
    differ = (mine.reindex(theirs.index) - theirs).abs().gt(1e-6).any(axis=1)
    if differ.any():
        return f"its per-answer files give {int(differ.sum())} question(s) other rates than the published ones"
    return ""


@dataclass
class Configuration:
    """One published model configuration, read: its entity's fields as published and its per-question items (the
    published rates, and each prompt family's counts where its per-answer files are complete)."""

    config_id: str
    model_id: str
    vendor: str
    first_experiment_date: str
    model_publish_date: str
    items: pd.DataFrame
    answers: int  # the answers read (of complete per-answer files; 0 where only rates are published)
    excluded: int  # answers without an answer (empty): counted, never scored
    note: str  # what could not be used, and why (an incomplete per-answer file); "" when complete


def configurations(folder: str | Path, entities: str | Path, question_bank: Any = None) -> list[Configuration]:
    """Every model configuration Gapminder published in ``folder``, in order of its id: its per-question rates
    (``rates``: the question is the cluster of every interval and paired test) as items, to which the per-answer
    files in ``folder/results`` (read as the suite reads them: ``source.read_results``) add each prompt
    family's counts where they are complete: where they give every published question its published rates; else
    the configuration says why not (``note``). ``question_bank`` (the suite's ``GapminderData``) gives each
    question's topic and each variation's family."""
    folder, entities = Path(folder), Path(entities)
    published_rates = rates(folder)
    configs = read_entities(entities)
    unknown = sorted(set(published_rates["model_configuration"]) - set(configs.index))
    if unknown:
        raise PublishedError(f"{folder}: model configuration(s) {unknown} are not in {entities}")
    answer_files = files(folder)[len(RATES) :]
    answers = read_results(folder / "results") if answer_files else pd.DataFrame(columns=["model"])
    unpublished = sorted(set(answers["model"]) - set(published_rates["model_configuration"]))
    if unpublished:
        raise PublishedError(
            f"{folder / 'results'}: answers of model configuration(s) {unpublished} whose per-question rates are not "
            f"published in {folder}; the rates are what is imported"
        )
    families = topics = {}
    if question_bank is not None:
        families = dict(zip(question_bank.variations["variation_id"], question_bank.variations["family"], strict=True))
        topics = dict(zip(question_bank.questions["question_id"], question_bank.questions["topic"], strict=True))
    by_config = dict(iter(answers.groupby("model"))) if len(answers) else {}
    out = []
    for config_id, published in published_rates.groupby("model_configuration"):
        entity = configs.loc[config_id]
        rows = rate_items(published, topics)
        note, answered, excluded = RATES_ONLY, 0, 0
        graded = by_config.get(config_id)
        if graded is not None:
            graded = graded.assign(
                family=[families.get(v, "unknown") for v in graded["prompt_variation_id"]],
                topic=[topics.get(q, "unknown") for q in graded["question_id"]],
            )
            answer_items = items(graded)
            families_of = answer_items["family"].notna()
            note = _answers_complete(answer_items[~families_of], rows)
            if not note:
                answered, excluded = len(graded), int(graded["empty"].sum())
                # Each prompt family's per-question counts: its correct rate tracked and compared family by family.
                rows = pd.concat([rows, answer_items[families_of]], ignore_index=True)
            else:
                note += ": rates only"
        out.append(
            Configuration(
                config_id=str(config_id),
                model_id=str(entity["model_id"]),
                vendor=str(entity["vendor"]),
                first_experiment_date=str(entity["first_experiment_date"]),
                model_publish_date=str(entity["model_publish_date"]),
                items=rows,
                answers=answered,
                excluded=excluded,
                note=note,
            )
        )
    return out


# --- the suite's importer: ``geomon import gapminder-results`` ------------------------------------------------

ENTITIES = Path("ddf") / "ddf--entities--model_configuration.csv"  # the model configurations, in the snapshot
SCOPE = "published answers"  # every imported configuration compares with the others, on shared items


def evaluations(folder: str | Path, entities: str | Path, question_bank: Any = None) -> list[Published]:
    """Every model configuration Gapminder published (``configurations``), as the evaluations the import records:
    each dated by its first experiment, released on its model's publish date."""
    return [
        Published(
            key=config.config_id,
            model=model_name(config.model_id),
            evaluated_at=config.first_experiment_date,
            items=config.items,
            vendor=config.vendor,
            released=config.model_publish_date,
            answers=config.answers,
            excluded=config.excluded,
            note=config.note,
        )
        for config in configurations(folder, entities, question_bank)
    ]


def _read(folder: Path, settings: Any, options: Mapping[str, Any]) -> list[Published]:
    """The published folder, read with the snapshot's question bank (each question's topic, each variation's
    family) and its model configurations, unless ``--entities`` names another file."""
    snapshot = settings.suite("gapminder").snapshot
    entities = Path(options["entities"]) if options.get("entities") else snapshot / ENTITIES if snapshot else None
    if entities is None:
        raise PublishedError(
            "gapminder-results: the model configurations are read from gapminder.snapshot; without one, --entities FILE"
        )
    return evaluations(folder, entities, read_snapshot(snapshot) if snapshot is not None else None)


@functools.cache
def model_names(entities: Path) -> tuple[str, ...]:
    """The model names of the published configurations (``mc049`` → ``o3-mini-2025-01-31``), in order; read once."""
    configurations = read_entities(entities)
    return tuple(dict.fromkeys(model_name(m) for m in configurations["model_id"]))


def _models(settings: Any) -> tuple[str, ...]:
    """The models an import adds: the snapshot's configurations; none where the snapshot is not there."""
    snapshot = settings.suite("gapminder").snapshot
    return model_names(snapshot / ENTITIES) if snapshot is not None and (snapshot / ENTITIES).is_file() else ()


def _summary(notes: Sequence[str]) -> str:
    """How many published configurations had per-answer files (the prompt families' rates) and how many only
    rates, from the imported evaluations' notes."""
    rates_only = sum(note == RATES_ONLY for note in notes)
    return (
        f"{len(notes)} published model configurations from their per-question rates; each prompt family's correct "
        f"rate from the per-answer files of {sum(not note for note in notes)} ({rates_only} have no per-answer file)"
    )


IMPORTERS = (
    Importer(
        kind="gapminder-results",
        path="Gapminder's published folder (the ddf--datapoints--*--by--question--model_configuration.csv rates; "
        "master_output_*.csv answers in its results/)",
        read=_read,
        scope=SCOPE,
        files=files,
        models=_models,
        options=(RunOption("--entities", "the model configurations CSV (default: the snapshot's)"),),
        setting="gapminder_results",
        summary=_summary,
        counted=RATES_ONLY,
    ),
)
