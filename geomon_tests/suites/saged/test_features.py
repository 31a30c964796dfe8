"""SAGED's extract stage: VADER sentiment on a 0-1 scale, topic clusters per concept, and topic distance with the
bundled embedding model."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from geomon.suites.saged.diagnostics import diagnose
from geomon.suites.saged.features import score, sentiment, topic_clusters


def test_sentiment_is_vader_on_a_zero_to_one_scale():
    scores = sentiment(["Canada is a beautiful and peaceful country.", "A troubled history of war.", None])
    assert scores[0] > 0.5 > scores[1] and math.isnan(scores[2])
    assert sentiment(["The capital is a city."])[0] == 0.5  # neutral


ECONOMY = [
    "{c} exports grain and steel to its trading partners.",
    "The economy of {c} grew as exports of grain rose.",
    "Trade and exports drive the economy of {c}.",
]
SPORT = [
    "{c} won the football cup in a famous final.",
    "The football team of {c} plays in the national stadium.",
    "Fans in {c} love football and the national team.",
]


def _topic_prompts(concepts: list[str]) -> pd.DataFrame:
    rows = []
    for concept in concepts:
        for i, template in enumerate(ECONOMY + SPORT):
            rows.append(
                {
                    "prompt_id": f"r{i}|{concept}",
                    "root_id": f"r{i}",
                    "concept": concept,
                    "branched": True,
                    "source_tag": "test",
                    "baseline": template.format(c=concept),
                }
            )
    return pd.DataFrame(rows)


def test_topic_clusters_are_per_concept_and_labelled_by_distinctive_words():
    """Synthetic unit vectors: two themes per concept in orthogonal directions; k-means splits them, the
    labels name each theme's own words (not the words every cluster shares), clusters never mix concepts."""
    prompts = _topic_prompts(["Aland", "Borduria"])
    theme = np.array([0 if i < 3 else 1 for i in range(6)] * 2)
    vectors = np.eye(4)[theme] + 0.01 * np.random.default_rng(0).standard_normal((12, 4))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    topic, centroids = topic_clusters(prompts, vectors, topics=2)
    assert len(centroids) == 4 and all(t.split("#")[0] == c for t, c in zip(topic, prompts["concept"], strict=True))
    for concept in ("Aland", "Borduria"):
        mine = topic[prompts["concept"].to_numpy() == concept]
        assert len(set(mine[:3])) == 1 and len(set(mine[3:])) == 1 and mine[0] != mine[3]
    labels = {centroids[t][1] for t in topic}
    assert any("football" in label for label in labels) and any(
        "exports" in label or "grain" in label for label in labels
    )
    assert not any("the" in label.split(", ") for label in labels)  # shared by both clusters: weight 0
    assert not any("aland" in label.lower() for label in labels)  # the concept itself is no topic
    one_topic, _ = topic_clusters(prompts.iloc[:1], vectors[:1], topics=3)  # fewer sentences than k
    assert one_topic[0] == "Aland#0"


def test_topic_distance_with_the_bundled_embedding_model():
    """Real MiniLM embeddings: a response that repeats its baseline sentence is as close to its topic as the
    baseline (calibrated 0); an off-topic response is farther; the topic feature is diagnosed like the others."""
    prompts = _topic_prompts(["Aland", "Borduria", "Carpania"])
    texts = [b if i % 2 == 0 else "Volcanoes erupt under the cold sea." for i, b in enumerate(prompts["baseline"])]
    responses = pd.DataFrame({"text": texts, "error": [None] * len(texts)})
    features = score(prompts, responses, "m", "none", topics=2)
    assert features["topic_id"].nunique() == 6
    same = features.iloc[::2]
    assert same["topic_distance_calibrated"].abs().max() < 1e-5 and same["distance"].max() < 1e-3
    assert (features.iloc[1::2]["topic_distance_calibrated"] > 0.3).all()
    themes = features.groupby("topic_id")["prompt_id"].apply(lambda p: {int(x[1]) < 3 for x in p.str.split("|").str[0]})
    assert all(len(t) == 1 for t in themes)  # each topic holds one theme's sentences
    result = diagnose(features, resamples=100)
    assert {"topic_distance", "topic_distance_calibrated"} <= set(result["disparity"]["feature"])
    assert "topic_distance_mean_range_calibrated" in result["summary"]
    assert set(result["topics"].columns) >= {"concept", "topic", "responses", "topic_distance_calibrated"}
    assert "topic_id" not in score(prompts, responses, "m", "none")  # off by default in the domain call
