"""Evaluations made elsewhere, into the metric history: the same metrics, intervals, paired tests and
alerts as geomon's own runs, each marked with its origin and dated when it was made.

- A suite's published results (``published_runs``): what its benchmark's authors published, read by the suite's
  own importer (``Suite.importers``; Gapminder's every model configuration, ``suites/gapminder/published.py``).
- A per-item outcome file of any benchmark (``item_runs``): CSV, JSONL or Parquet, one row per (model,
  item) — what a user with their own harness writes.
- inspect_ai eval logs (``inspect_runs``), read with inspect_ai's own log reader.
- lm-evaluation-harness's ``--log_samples`` output (``lm_eval_runs``): one evaluation per model and task, the
  documents' fields as groups.

``record_runs`` records them and compares each, in release order (``monitor.release``), with its model's
previous run or, for a model's first run, with its predecessor (an item file's ``predecessor`` column;
published results: the same vendor's previous release by publish date; the settings' ``predecessors`` win): the
same runs in any order, in one import or several, give the same history. Recording the same run twice
records nothing new.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geomon.monitor import release
from geomon.monitor.history import MetricHistory
from geomon.stats.declarations import TrackedMetric
from geomon.stats.statistics import Mean
from geomon.stats.values import IMPORTED, EvaluationRun, MetricValue, series_key, series_scope
from geomon.stats.verdicts import ReleasePlan, VerdictSettings
from geomon.suites.info import Published, model_name
from geomon.suites.kit import group_metrics

log = logging.getLogger(__name__)


class ImportError_(ValueError):
    """A file to import that cannot be read: the message names the file, the line and the field."""


@dataclass
class ImportedRun:
    suite: str
    model: str
    evaluated_at: datetime
    metrics: list[MetricValue]  # the declared figures of ``tracked`` over ``items`` (``release.declared_figures``)
    items: pd.DataFrame
    scope: str
    origin: str
    vendor: str = ""
    released: date | None = None
    predecessor: str | None = None  # as the source says (an item file's column); else found by vendor
    tracked: tuple[TrackedMetric, ...] = ()  # what its paired tests compare (the suite's, or the import's)
    answers: int = 0  # the answers read (published results: 0 where only rates are published)
    excluded: int = 0  # rows without an outcome: counted, never scored
    note: str = ""  # what the import could not use, and why (published results: an incomplete per-answer file)


def _date(value: Any, where: str) -> datetime:
    text = str(value).strip()
    # The longest first: a timestamp's date alone would also parse, and lose its time of day.
    for fmt in ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d", "%Y%m%d"):
        try:
            return datetime.strptime(text[: len(datetime(2000, 1, 1).strftime(fmt))], fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    try:
        parsed = pd.Timestamp(text)
    except (ValueError, TypeError):
        raise ImportError_(f"{where}: {text!r} is not a date") from None
    return (parsed.tz_convert(UTC) if parsed.tzinfo else parsed.tz_localize(UTC)).to_pydatetime()


def published_runs(kind: str, published: Sequence[Published]) -> list[ImportedRun]:
    """What a suite's importer of kind ``kind`` read (``Importer.read``), as evaluations of that suite: their figures
    declared by the suite's tracked metrics over their items, dated when they were evaluated, compared on the
    importer's scope and each with its vendor's previous release by publish date (``vendor_predecessors`` over
    every one read, so a partial import chooses the same)."""
    from geomon.suites import registry

    suite, importer = registry.importers()[kind]
    tracked = registry.suite(suite).tracked
    runs = []
    for one in published:
        where = f"{kind}: {one.key}"
        runs.append(
            ImportedRun(
                suite=suite,
                model=one.model,
                evaluated_at=_date(one.evaluated_at, where),
                metrics=release.declared_figures(suite, tracked, one.items),
                items=one.items,
                scope=importer.scope,
                origin=f"import:{kind}:{one.key}",
                vendor=one.vendor,
                tracked=tracked,
                released=_date(one.released, where).date() if one.released else None,
                answers=one.answers,
                excluded=one.excluded,
                note=one.note,
            )
        )
    lineage = vendor_predecessors(runs)
    runs = [replace(r, predecessor=lineage.get(r.model)) for r in runs]
    return sorted(runs, key=lambda r: (r.evaluated_at, r.model))


def read_published(
    kind: str, path: str | Path, settings: Any, options: Mapping[str, Any] | None = None
) -> list[ImportedRun]:
    """``path`` read by the importer of kind ``kind`` (with ``settings`` and its own options' values), as
    evaluations (``published_runs``): ``geomon import <kind>`` and the Dagster layer's import."""
    from geomon.suites import registry

    _, importer = registry.importers()[kind]
    return published_runs(kind, importer.read(Path(path), settings, options or {}))


# --- any benchmark's per-item outcomes -------------------------------------------------------------

ITEM_COLUMNS = ("model", "item", "evaluated_at")  # required; plus score or correct, optional group columns


def _read_items(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise ImportError_(f"{path}: missing")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    elif suffix in (".jsonl", ".ndjson"):
        records = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise ImportError_(f"{path}, line {number}: not JSON ({exc})") from None
            if not isinstance(record, dict):
                raise ImportError_(f"{path}, line {number}: a JSON object per line, found {type(record).__name__}")
            records.append(record)
        frame = pd.DataFrame(records)
    elif suffix == ".parquet":
        frame = pd.read_parquet(path)
    else:
        raise ImportError_(f"{path}: a .csv, .jsonl or .parquet file of per-item outcomes, not {suffix or 'no suffix'}")
    missing = [c for c in ITEM_COLUMNS if c not in frame]
    if "score" not in frame and "correct" not in frame:
        missing.append("score or correct")
    if missing:
        raise ImportError_(f"{path}: no column(s) {missing}; see geomon import items --help")
    return frame


_TRUE = {"1", "true", "yes", "correct", "1.0"}
_FALSE = {"0", "false", "no", "incorrect", "wrong", "0.0"}


def _values(frame: pd.DataFrame, path: Path, line_offset: int) -> np.ndarray:
    """Each row's outcome as a number; a row without one is NaN (excluded and counted); text that is neither
    a number nor a yes/no is an error naming the line and the field."""
    column = "score" if "score" in frame else "correct"
    out = np.full(len(frame), np.nan)
    for i, raw in enumerate(frame[column].tolist()):
        text = "" if raw is None or (isinstance(raw, float) and np.isnan(raw)) else str(raw).strip().lower()
        if text == "":
            continue
        if column == "correct" and text in _TRUE | _FALSE:
            out[i] = 1.0 if text in _TRUE else 0.0
            continue
        try:
            out[i] = float(text)
        except ValueError:
            raise ImportError_(f"{path}, line {i + line_offset}: field {column}: {raw!r} is not a number") from None
        if not np.isfinite(out[i]):
            raise ImportError_(f"{path}, line {i + line_offset}: field {column}: {raw!r} is not finite")
    return out


def item_runs(
    path: str | Path,
    suite: str,
    groups: Sequence[str] = (),
    settings: VerdictSettings | None = None,
    cluster: str = "",
) -> list[ImportedRun]:
    """Per-item outcomes → one evaluation per (model, evaluated_at): the mean score (× 100 for a correct /
    incorrect column, named ``accuracy``; else ``score``) with its interval over items, each group's mean,
    and the gap between groups (``<group>_gap``), for every column named in ``groups`` (e.g. country): all
    declared once (``imported_metrics``), so the values, their tests and their verdicts share the names.
    ``cluster``: the column whose rows are one independent unit (a question whose prompt variations or epochs
    are separate rows), resampled and flipped together; each item is its own unit otherwise."""
    path = Path(path)
    frame = _read_items(path)
    line_offset = 2 if path.suffix.lower() == ".csv" else 1
    scale = 100.0 if "correct" in frame and "score" not in frame else 1.0
    frame = frame.assign(_value=_values(frame, path, line_offset) * scale)
    for i, raw in enumerate(frame["evaluated_at"].tolist()):
        _date(raw, f"{path}, line {i + line_offset}: field evaluated_at")
    missing = [g for g in groups if g not in frame]
    if missing:
        raise ImportError_(f"{path}: no group column(s) {missing}")
    if cluster and cluster not in frame:
        columns = sorted(c for c in frame.columns if not c.startswith("_"))
        raise ImportError_(f"{path}: no cluster column {cluster!r} (it has {columns})")
    for column, what in [*((g, "group") for g in groups), *([(cluster, "cluster")] if cluster else [])]:
        blank = frame[column].isna() | frame[column].astype(str).str.strip().eq("")
        if blank.any():
            line = int(np.flatnonzero(blank.to_numpy())[0]) + line_offset
            raise ImportError_(f"{path}, line {line}: field {column}: empty (every row needs its {what})")
    if cluster:
        frame = frame.assign(_cluster=frame[cluster].astype(str))
    metric = "accuracy" if scale == 100.0 else "score"
    origin = f"import:items:{path.name}"
    return outcome_runs(frame, suite, groups, metric, origin, settings)


def scope_of(metric: str, items: Sequence[str]) -> str:
    """An imported series' scope: the suite (its own key), the metric and the items (a hash of their sorted ids),
    never the file it came in, so the next release's file is compared with this one; another item set is
    another benchmark, a new series (``same_benchmark``: a few items missing or added are not)."""
    return series_scope(f"{IMPORTED}{metric}", {"items": "\n".join(sorted(map(str, items)))})


def same_benchmark(
    history: MetricHistory, run: ImportedRun, predecessor: str | None, min_overlap: float = 0.9
) -> ImportedRun:
    """``run`` in the series of the model's (else its predecessor's, else a successor's) latest imported evaluation
    on another item set of the same suite and metric when the two share at least ``min_overlap``
    (``verdicts.min_overlap``) of the larger set's items: a row missing from a file is not a new benchmark,
    whichever file arrives first. Its note says how many items it lacks and adds; a new series starts only below
    the overlap. An item of the baseline's the compared evaluation lacks is compared as unanswered
    (``declarations.absent_items``), never left out."""
    held = history.evaluations(suite=run.suite)
    if not run.scope.startswith(IMPORTED) or run.scope in set(held["scope"]):
        return run
    mine = set(map(str, run.items["item"]))
    key = series_key(run.scope)
    successors = held[held["predecessor"] == run.model]["model"].tolist() if len(held) else []
    for model in dict.fromkeys([run.model, predecessor, *successors]):
        held = history.evaluations(suite=run.suite, model=model) if model else pd.DataFrame()
        scopes = [s for s in reversed(held["scope"].tolist()) if series_key(s) == key] if len(held) else []
        for scope in dict.fromkeys(scopes):
            theirs = history.latest(run.suite, str(model), scope)
            if theirs is None or theirs.items is None:
                continue
            other = set(map(str, theirs.items["item"]))
            shared = len(mine & other)
            if shared >= min_overlap * max(len(mine), len(other)):
                missing, added = len(other - mine), len(mine - other)
                said = (
                    f"compared with {theirs.model}'s evaluation of {theirs.when:%Y-%m-%d} ({shared} items shared): "
                    f"{missing} of its items missing here, counted unanswered, {added} not there"
                )
                log.warning("%s %s: %s", run.suite, run.model, said)
                return replace(run, scope=scope, note="; ".join(n for n in (run.note, said) if n))
    return run


def imported_metrics(
    metric: str, groups: Sequence[str], settings: VerdictSettings | None = None, cluster: str = "item"
) -> tuple[TrackedMetric, ...]:
    """An imported evaluation's tracked metrics: the mean (and each group's), the answer rate (and each group's:
    a row without an outcome is an unanswered item), and each group column's gap (max − min of the groups'
    means), with the settings' minimum effects for imported metrics, clustered on ``cluster``."""
    effects = (settings or VerdictSettings()).imported_min_effects
    percent = metric == "accuracy"
    gap_effect = effects.get("gap" if percent else "score_gap", 0.0)
    # The kit's declaration (a row without an outcome is an unanswered item, never dropped)
    _, tracked = group_metrics(
        metric, tuple(groups), effects.get(metric, 0.0), gap_effect, metric, bounds=(0.0, 100.0) if percent else None,
        cluster=cluster, answered_min_effect=effects.get("answered_rate", 5.0),
    )  # fmt: skip
    if not percent:
        return tracked
    # Intention to treat beside the answered-only accuracy: a model that stops answering the items it used to get
    # wrong looks better on answered items alone, not on every item with unanswered ones wrong.
    itt = TrackedMetric(
        f"{metric}{INTENTION_TO_TREAT}", Mean(ITT_COLUMN), cluster, False, effects.get(metric, 0.0),
        bounds=(0.0, 100.0), absent=0.0,  # an item the file lacks: unanswered, so wrong
    )  # fmt: skip
    return (*tracked, itt)


INTENTION_TO_TREAT = "_itt"  # accuracy_itt: every item, an unanswered one wrong
ITT_COLUMN = "value_itt"


def outcome_runs(
    frame: pd.DataFrame,
    suite: str,
    groups: Sequence[str],
    metric: str,
    origin: str,
    settings: VerdictSettings | None = None,
) -> list[ImportedRun]:
    """Rows of (model, item, evaluated_at, ``_value``, group columns, optional ``_cluster`` and predecessor) →
    one evaluation per (model, evaluated_at), the same figures for every source of per-item outcomes. An item
    listed twice for one model and date is an error naming it (two outcomes cannot be paired with one)."""
    clustered = "_cluster" in frame
    tracked = imported_metrics(metric, groups, settings, "cluster" if clustered else "item")
    runs = []
    for (model, when), part in frame.groupby(["model", "evaluated_at"], sort=True):
        keys = part["item"].astype(str)
        twice = sorted(keys[keys.duplicated()].unique())
        if twice:
            raise ImportError_(
                f"{origin}: {model} at {when}: item(s) {', '.join(twice[:5])} appear more than once; each item "
                "needs one outcome per model and date"
            )
        items = pd.DataFrame(
            {
                "item": part["item"].astype(str).to_numpy(),
                "value": part["_value"].to_numpy(),
                "answered": part["_value"].notna().astype(float).to_numpy(),
                **({ITT_COLUMN: part["_value"].fillna(0.0).to_numpy()} if metric == "accuracy" else {}),
                **{g: part[g].astype(str).to_numpy() for g in groups},
                **({"cluster": part["_cluster"].to_numpy()} if clustered else {}),
            }
        )
        predecessor = None
        if "predecessor" in part and part["predecessor"].astype(str).str.strip().ne("").any():
            predecessor = str(part["predecessor"].astype(str).str.strip().replace("", np.nan).dropna().iloc[0])
        runs.append(
            ImportedRun(
                suite=suite,
                model=str(model),
                evaluated_at=_date(when, f"{origin}: {model}"),
                metrics=release.declared_figures(suite, tracked, items),
                items=items,
                scope=scope_of(metric, items["item"]),
                origin=origin,
                predecessor=predecessor,
                tracked=tracked,
                answers=len(part),
                excluded=int(part["_value"].isna().sum()),
            )
        )
    return sorted(runs, key=lambda r: (r.evaluated_at, r.model))


def inspect_runs(
    paths: Sequence[str | Path], suite: str, groups: Sequence[str] = (), settings: VerdictSettings | None = None
) -> list[ImportedRun]:
    """inspect_ai eval logs (``.eval`` or ``.json``, read with inspect_ai's own reader) → one evaluation per
    log: each sample's first score (``C``/``I`` and other values through inspect_ai's ``value_to_float``) as
    its outcome, the sample metadata keys named in ``groups`` as its groups, the log's model and creation
    date. A log that did not finish, or a sample without the group key, is an error naming the file."""
    try:
        from inspect_ai.log import read_eval_log
        from inspect_ai.scorer import value_to_float
    except ImportError:
        raise ImportError_("import inspect needs inspect_ai: pip install 'geomon[inspect]'") from None

    to_float = value_to_float()
    rows = []
    names = []
    for path in map(Path, paths):
        if not path.is_file():
            raise ImportError_(f"{path}: missing")
        try:
            log = read_eval_log(str(path))
        except Exception as exc:  # inspect_ai's reader raises its own and pydantic's errors
            raise ImportError_(f"{path}: not an inspect_ai eval log ({type(exc).__name__}: {exc})") from None
        if log.status != "success":
            raise ImportError_(f"{path}: the eval did not finish (status {log.status}); nothing to import")
        names.append(path.name)
        model = model_name(log.eval.model)
        for sample in log.samples or []:
            score = next(iter((sample.scores or {}).values()), None)
            value = float(to_float(score.value)) if score is not None else np.nan
            # Epochs of one sample are one unit: they are clustered on the sample id.
            row = {
                "model": model,
                "item": f"{sample.id}#{sample.epoch}",
                "_cluster": str(sample.id),
                "evaluated_at": log.eval.created,
            }
            for group in groups:
                if group not in (sample.metadata or {}):
                    raise ImportError_(f"{path}: sample {sample.id} has no metadata {group!r}")
                row[group] = sample.metadata[group]
            rows.append({**row, "_value": value * 100.0})
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise ImportError_(f"{', '.join(map(str, paths))}: no samples")
    origin = f"import:inspect:{','.join(sorted(names))}"
    return outcome_runs(frame, suite, groups, "accuracy", origin, settings)


# --- lm-evaluation-harness --log_samples output ------------------------------------------------------

# lm-eval's per-sample metrics that are 1 (right) or 0 (wrong): imported as accuracy in percent; any other
# mean-aggregated metric is imported as a score.
LM_EVAL_ZERO_ONE = frozenset({"acc", "acc_norm", "acc_mutual_info", "exact_match"})


def _lm_eval_results_files(paths: Sequence[str | Path]) -> list[Path]:
    """``results_<date>.json`` files as named, or found under a folder (lm-eval's ``--output_path``)."""
    found = []
    for path in map(Path, paths):
        if path.is_dir():
            inside = sorted(path.rglob("results_*.json"))
            if not inside:
                raise ImportError_(f"{path}: no results_*.json under it (lm-eval writes them with --output_path)")
            found += inside
        elif path.is_file():
            found.append(path)
        else:
            raise ImportError_(f"{path}: missing")
    return found


def _json_object(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ImportError_(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("configs"), dict) or not data["configs"]:
        raise ImportError_(f"{path}: not lm-evaluation-harness results (no task configs)")
    return data


def _doc_field(doc: Any, field: str, where: str) -> str:
    """A document field (``region`` or ``doc.region``; dots reach into nested objects) as text; a document
    without it, or with an empty or non-scalar value there, is an error naming ``where``."""
    value = doc
    for part in field.removeprefix("doc.").split("."):
        if not isinstance(value, dict) or part not in value:
            fields = sorted(value) if isinstance(value, dict) else type(value).__name__
            raise ImportError_(f"{where}: doc has no field {field!r} (it has {fields})")
        value = value[part]
    if isinstance(value, dict | list) or value is None or str(value).strip() == "":
        raise ImportError_(f"{where}: doc field {field!r} is {value!r}: every sample needs one text or number there")
    return str(value)


def _sample_value(sample: dict[str, Any], metric: str, where: str) -> float:
    """A sample's outcome on ``metric``: NaN when it has none (unanswered: excluded and counted); a value that is
    not a number (a corpus-level metric's raw pair) is an error."""
    raw = sample.get(metric)
    if raw is None:
        return np.nan
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise ImportError_(
            f"{where}: metric {metric!r} is {str(raw)[:60]!r}, not a number per sample (a metric aggregated over "
            "the whole corpus cannot be compared item by item)"
        )
    value = float(raw)
    if np.isinf(value):
        raise ImportError_(f"{where}: metric {metric!r} is {raw!r}, not finite")
    if metric in LM_EVAL_ZERO_ONE and value not in (0.0, 1.0) and not np.isnan(value):
        raise ImportError_(f"{where}: metric {metric!r} is {raw!r}; it is 0 or 1 per sample")
    return value


def _lm_eval_samples(path: Path, groups: Sequence[str], cluster: str) -> tuple[str, str, list[dict[str, Any]]]:
    """One task's samples file → its metric (the task's first), its filter (the first: lm-eval writes each
    document once per filter), and a row per document of that filter: ``item`` (the doc_id), ``_value``, groups
    and ``_cluster``."""
    if not path.is_file():
        raise ImportError_(f"{path}: missing (lm-eval writes it beside the results with --log_samples)")
    samples = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
        except ValueError as exc:
            raise ImportError_(f"{path}, line {number}: not JSON ({exc})") from None
        missing = [f for f in ("doc_id", "doc", "filter", "metrics") if not isinstance(sample, dict) or f not in sample]
        if missing:
            raise ImportError_(f"{path}, line {number}: not an lm-eval sample (no {missing})")
        samples.append((number, sample))
    if not samples:
        raise ImportError_(f"{path}: no samples")
    metrics = samples[0][1]["metrics"]
    if not isinstance(metrics, list) or not metrics:
        raise ImportError_(f"{path}, line {samples[0][0]}: no metric names in 'metrics'")
    metric, chosen = str(metrics[0]), samples[0][1]["filter"]
    rows = []
    for number, sample in samples:
        if sample["filter"] != chosen:
            continue
        where = f"{path}, line {number}"
        row = {"item": str(sample["doc_id"]), "_value": _sample_value(sample, metric, where)}
        for group in groups:
            row[group.removeprefix("doc.")] = _doc_field(sample["doc"], group, where)
        if cluster:
            row["_cluster"] = _doc_field(sample["doc"], cluster, where)
        rows.append(row)
    return metric, str(chosen), rows


def lm_eval_runs(
    paths: Sequence[str | Path], groups: Sequence[str] = (), settings: VerdictSettings | None = None, cluster: str = ""
) -> list[ImportedRun]:
    """lm-evaluation-harness's ``--log_samples`` output → one evaluation per model and task. Each
    ``results_<date>.json`` (named, or found under a folder) gives the model (``model_name``), the date of the
    run (``date``) and its tasks (``configs``); each task's ``samples_<task>_<date>.jsonl`` beside it gives a
    document's outcome on the task's first metric under its first filter (a 0/1 metric such as ``acc`` or
    ``exact_match`` as accuracy in percent, any other mean as a score). The task is the suite; ``groups`` and
    ``cluster`` are document fields (``region`` or ``doc.region``), as for item files. A metric that is not a
    higher-is-better mean of per-sample values is an error naming the file."""
    runs = []
    for results_path in _lm_eval_results_files(paths):
        results = _json_object(results_path)
        model = results.get("model_name")
        if not isinstance(model, str) or not model.strip():
            raise ImportError_(f"{results_path}: no model_name (lm-evaluation-harness 0.4.3 and later write it)")
        try:
            when = datetime.fromtimestamp(float(results["date"]), UTC)
        except (KeyError, TypeError, ValueError):
            raise ImportError_(f"{results_path}: field date: {results.get('date')!r} is not a Unix time") from None
        date_id = results_path.stem[results_path.stem.rfind("_") + 1 :]  # as lm-eval names its files
        # In the results file's order (the harness's, as its --tasks named them), never alphabetical: the tasks take
        # the release's import slots in the order they are recorded.
        for task, config in results["configs"].items():
            samples_path = results_path.with_name(f"samples_{task}_{date_id}.jsonl")
            metric, chosen, rows = _lm_eval_samples(samples_path, groups, cluster)
            declared = next(
                (
                    m
                    for m in (config or {}).get("metric_list") or []
                    if isinstance(m, dict) and m.get("metric") == metric
                ),
                {},
            )
            if declared.get("aggregation", "mean") != "mean":
                raise ImportError_(
                    f"{results_path}: task {task}: metric {metric!r} is aggregated by {declared['aggregation']!r}; "
                    "geomon compares means of per-sample scores"
                )
            if declared.get("higher_is_better") is False:
                raise ImportError_(
                    f"{results_path}: task {task}: metric {metric!r} is lower-is-better; geomon "
                    "compares scores where higher is better"
                )
            zero_one = metric in LM_EVAL_ZERO_ONE
            frame = pd.DataFrame(rows).assign(model=model_name(model), evaluated_at=when.isoformat())
            frame["_value"] *= 100.0 if zero_one else 1.0
            name = "accuracy" if zero_one else "score"
            origin = f"import:lm-eval:{results_path.name}:{task}:{metric},{chosen}"
            runs += outcome_runs(frame, task, [g.removeprefix("doc.") for g in groups], name, origin, settings)
    return sorted(runs, key=lambda r: r.evaluated_at)  # stable: each file's tasks in its order


# --- recording -------------------------------------------------------------------------------------


def vendor_predecessors(runs: Sequence[ImportedRun]) -> dict[str, str]:
    """Each model's predecessor: the same vendor's previous release by publish date."""
    released: dict[str, tuple[str, date]] = {}
    for run in runs:
        if run.vendor and run.released is not None:
            released[run.model] = (run.vendor, run.released)
    out = {}
    for model, (vendor, day) in released.items():
        earlier = [(d, m) for m, (v, d) in released.items() if v == vendor and (d, m) < (day, model)]
        if earlier:
            out[model] = max(earlier)[1]
    return out


@dataclass
class Recorded:
    run: ImportedRun
    tracked: release.Tracked
    predecessor: str | None


def record_runs(
    history: MetricHistory,
    runs: Sequence[ImportedRun],
    settings: VerdictSettings | None = None,
    predecessors: Mapping[str, str] | None = None,
    on_recorded: Callable[[Recorded], None] | None = None,
    plan: ReleasePlan | None = None,
    announcer: release.Announcer | None = None,
    hosted: Collection[str] = (),
    published_history: bool = False,
) -> list[Recorded]:
    """Record ``runs`` (in the order given: the history does not depend on it); ``predecessors`` (from the
    settings) win over the source's own (an item file's column; published results: the vendor's previous release). An
    identical run already recorded is reused (nothing new). Each suite is decided at its look's α (the release
    ``plan``'s, ``geomon.stats.verdicts``; by default the plan of a model geomon runs — in ``hosted`` — or else of a
    model that only arrives by import: ``release.release_plan``) and ``announcer`` tells people, as ``geomon run`` does.
    ``published_history``: the runs are a published history's (``EvaluationRun.published_history``: its release
    order is final). Returns each run with its verdicts as finally stored (a later run may have become an earlier one's
    baseline)."""
    settings = settings or VerdictSettings()
    plans = {here: plan or release.release_plan(settings, hosted=here) for here in (True, False)}
    chosen = {**{r.model: r.predecessor for r in runs if r.predecessor}, **(predecessors or {})}
    out = []
    for run in runs:
        run = same_benchmark(history, run, chosen.get(run.model), settings.min_overlap)
        identity = EvaluationRun(
            run.suite,
            run.model,
            scope=run.scope,
            versions={"data": run.origin.split(":", 2)[1], "prompts": "", "code": "imported"},
            predecessor=chosen.get(run.model) or "",
            evaluated_at=run.evaluated_at,
            origin=run.origin,
            published_history=published_history,
        )
        result = release.track(
            history,
            identity,
            run.metrics,
            run.items,
            run.tracked,
            settings,
            plan=plans[run.model in hosted],
            announcer=announcer,
        )
        recorded = Recorded(run, result, chosen.get(run.model))
        out.append(recorded)
    final = []
    for r in out:
        now = release.stored(history, r.tracked.evaluation)
        now.redecided, now.told = r.tracked.redecided, r.tracked.told
        final.append(Recorded(r.run, now, r.predecessor))
    for recorded in final:
        if on_recorded is not None:
            on_recorded(recorded)
    return final
