"""Per-item rows the statistics tests share: one value per item, its country and its cluster."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd


def item_frame(
    values: Sequence[float], countries: Sequence[str], clusters: Sequence[str] | None = None
) -> pd.DataFrame:
    """Items q0…qN with ``values`` in ``countries``, each its own cluster unless ``clusters`` says otherwise."""
    return pd.DataFrame(
        {
            "item": [f"q{i}" for i in range(len(values))],
            "value": values,
            "country": countries,
            "cluster": clusters if clusters is not None else [f"q{i}" for i in range(len(values))],
        }
    )
