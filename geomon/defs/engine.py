"""Asking models from assets, for every suite: through the store-aware engine (nothing stored is asked
again), with the engine's counters as materialization metadata; the jury's judges are asked the same way."""

from collections.abc import Callable
from typing import Any

import dagster as dg
import pandas as pd

from geomon.config import Settings
from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.engine.runner import ask
from geomon.report import charts


def ask_model(
    settings: Settings, spec: ModelSpec, requests: list[GenerationRequest]
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The answers (one row per request) and metadata: the engine's counters, the request rate, the cache
    epoch and the model's description."""
    responses, stats = ask(spec, requests, settings.store(), epoch=settings.cache_epoch, options=settings.engine)
    counters = stats.as_dict()
    metadata: dict[str, Any] = {
        k: dg.MetadataValue.int(v) if isinstance(v, int) else dg.MetadataValue.float(float(v))
        for k, v in counters.items()
    }
    metadata["requests_per_second"] = float(stats.asked / stats.seconds) if stats.asked and stats.seconds else 0.0
    metadata["cache_epoch"] = settings.cache_epoch or "(default)"
    metadata["model"] = dg.MetadataValue.json(spec.describe())
    return responses, metadata


def judge_asker(settings: Settings) -> Callable[[ModelSpec, list[GenerationRequest]], pd.DataFrame]:
    """``ask`` for ``geomon.jury.ask_jury``: each judge's replies through the same store and engine."""
    store = settings.store()

    def ask_judge(judge: ModelSpec, requests: list[GenerationRequest]) -> pd.DataFrame:
        return ask(judge, requests, store, epoch=settings.cache_epoch, options=settings.engine)[0]

    return ask_judge


def agreement_metadata(agreed: dict[str, Any], kappa_name: str = "judge_fleiss_kappa") -> dict[str, Any]:
    """Fleiss' kappa (-1 when undefined: too few items every judge read) and the per-pair table."""
    kappa = agreed["fleiss_kappa"]
    pairs = agreed["pairs"]
    return {
        kappa_name: float(kappa) if pd.notna(kappa) else -1.0,
        "judge_pairs": dg.MetadataValue.md(charts.markdown_table(pairs) if len(pairs) else "none"),
    }
