"""SAGED's extract stage: each response's sentiment and embedding distance to its baseline sentence, calibrated
by the baseline (section 3.3), the topic clusters, and the per-response rows the metric history compares."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np
import pandas as pd

from geomon.suites.registry import answered_outcome, status_of

TOPICS = 3  # topic clusters per concept: the paper's "three topic clusters for each of the 21 concepts"
FEATURES = ("sentiment", "distance")
TOPIC_FEATURE = "topic_distance"  # present when topics are clustered (``topics`` > 0)
TOPIC_LABEL_WORDS = 3


@cache
def _vader() -> Any:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


def sentiment(texts: Sequence[str | None]) -> np.ndarray:
    """VADER's compound score mapped to 0-1 ((c + 1) / 2: 0.5 is neutral); NaN for a missing text."""
    analyzer = _vader()
    return np.array(
        [
            (analyzer.polarity_scores(t)["compound"] + 1) / 2 if isinstance(t, str) and t.strip() else np.nan
            for t in texts
        ]
    )


def topic_clusters(
    prompts: pd.DataFrame, baseline_vectors: np.ndarray, topics: int = TOPICS, seed: int = 0
) -> tuple[np.ndarray, dict[str, tuple[np.ndarray, str]]]:
    """The paper's concept-segregated clustering (section 4, Ap C.4 ``cluster_and_distance``): each concept's
    baseline sentences are split into ``topics`` clusters by k-means on their unit embeddings (scikit-learn,
    ten seeded k-means++ starts; fewer clusters when a concept has fewer distinct sentences). Returns
    each prompt's topic id (``concept#i``) and, per topic, its unit centroid and a label.

    Named variant: the label is the cluster's most distinctive words (count in the cluster × log(k / clusters
    using the word), so words every cluster uses score 0; English stop words left out) — the paper ranks the
    Oxford 5000 word list by embedding similarity, a list that is not bundled here."""
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    topic = np.empty(len(prompts), dtype=object)
    centroids: dict[str, tuple[np.ndarray, str]] = {}
    for concept, rows in prompts.groupby("concept", sort=True).indices.items():
        sentences = prompts["baseline"].to_numpy()[rows]
        distinct, first, inverse = np.unique(sentences, return_index=True, return_inverse=True)
        k = min(topics, len(distinct))
        if k <= 1:
            labels = np.zeros(len(distinct), dtype=int)
        else:
            kmeans = KMeans(n_clusters=k, n_init=10, random_state=seed)
            labels = kmeans.fit_predict(baseline_vectors[rows][first].astype(np.float64))
        words = [
            Counter(
                w
                for w in re.findall(r"[a-z]{3,}", " ".join(distinct[labels == c]).lower())
                if w not in ENGLISH_STOP_WORDS
            )
            for c in range(k)
        ]
        used_by = Counter(w for counts in words for w in counts)
        for cluster in range(k):
            members = baseline_vectors[rows][first][labels == cluster]
            centre = members.mean(axis=0)
            weight = {w: n * np.log(k / used_by[w]) for w, n in words[cluster].items() if w != str(concept).lower()}
            top = sorted(weight, key=lambda w: (-weight[w], -words[cluster][w], w))[:TOPIC_LABEL_WORDS]
            centroids[f"{concept}#{cluster}"] = (centre / np.linalg.norm(centre), ", ".join(top) or "(all sentences)")
        topic[rows] = [f"{concept}#{c}" for c in labels[inverse]]
    return topic, centroids


def score(
    prompts: pd.DataFrame,
    responses: pd.DataFrame,
    model: str,
    role: str,
    embedding_model: Any = None,
    topics: int = 0,
) -> pd.DataFrame:
    """The paper's Extract stage, per response: sentiment and embedding distance to its baseline
    sentence, uncalibrated and calibrated (value − the baseline's value), and the answer's status. With
    ``topics`` > 0 also the distance to the centroid of the response's topic (``topic_clusters``), calibrated
    by the baseline sentence's own distance to it, and the topic's label."""
    from geomon import embeddings

    texts = [t if isinstance(t, str) and t.strip() else None for t in responses["text"]]
    out = prompts[["prompt_id", "root_id", "concept", "branched", "source_tag"]].copy()
    out.insert(0, "role", role)
    out.insert(0, "model", model)
    out["response"] = texts
    out["status"] = status_of(pd.Series(texts, index=out.index), responses["error"].set_axis(out.index)).to_numpy()
    out["sentiment"] = sentiment(texts)
    out["baseline_sentiment"] = sentiment(prompts["baseline"].tolist())
    out["sentiment_calibrated"] = out["sentiment"] - out["baseline_sentiment"]
    vectors = embeddings.vectors([*texts, *prompts["baseline"].tolist()], embedding_model)
    answer_vectors, baseline_vectors = vectors[: len(texts)], vectors[len(texts) :]
    # L2 distance between unit vectors. The baseline's distance to itself is 0, so the calibrated distance
    # equals the raw one; both columns are kept for a uniform table.
    out["distance"] = np.linalg.norm(answer_vectors - baseline_vectors, axis=1)
    out["baseline_distance"] = 0.0
    out["distance_calibrated"] = out["distance"] - out["baseline_distance"]
    if topics:
        topic, centroids = topic_clusters(prompts, baseline_vectors, topics)
        centres = np.stack([centroids[t][0] for t in topic])
        out["topic"] = [centroids[t][1] for t in topic]
        out["topic_id"] = topic
        out[TOPIC_FEATURE] = np.linalg.norm(answer_vectors - centres, axis=1)
        out[f"baseline_{TOPIC_FEATURE}"] = np.linalg.norm(baseline_vectors - centres, axis=1)
        out[f"{TOPIC_FEATURE}_calibrated"] = out[TOPIC_FEATURE] - out[f"baseline_{TOPIC_FEATURE}"]
    return out


def extracted_features(features: pd.DataFrame) -> tuple[str, ...]:
    """The features a scored frame carries: sentiment and distance always, the topic distance when clustered."""
    return (*FEATURES, *((TOPIC_FEATURE,) if TOPIC_FEATURE in features else ()))


def topic_table(features: pd.DataFrame) -> pd.DataFrame:
    """Per role, concept and topic (the paper's topic heat map): responses, and the mean topic distance,
    uncalibrated and calibrated. Empty when topics were not clustered."""
    if TOPIC_FEATURE not in features:
        return pd.DataFrame()
    answered = features[features["status"] == "answered"]
    grouped = answered.groupby(["role", "concept", "topic_id", "topic"], sort=True)
    return grouped.agg(
        responses=(TOPIC_FEATURE, "count"),
        topic_distance=(TOPIC_FEATURE, "mean"),
        topic_distance_calibrated=(f"{TOPIC_FEATURE}_calibrated", "mean"),
    ).reset_index()


def items(features: pd.DataFrame) -> pd.DataFrame:
    """Per response (``item`` = role|prompt_id), every one asked: calibrated sentiment (NaN when not answered),
    whether it was answered and the concept, so the range of means, the impact ratio and the answer rate are
    recomputed on the items two runs share."""
    answered = (features["status"] == "answered").to_numpy()
    return pd.DataFrame(
        {
            "item": (features["role"] + "|" + features["prompt_id"]).to_numpy(),
            "value": np.where(answered, features["sentiment_calibrated"].to_numpy(dtype=float), np.nan),
            "answered": answered_outcome(features["status"]),
            "concept": features["concept"].to_numpy(),
            "role": features["role"].to_numpy(),
            # prompt_id is root_id|concept: the root prompt every country's version branches from
            "root": features["prompt_id"].astype(str).str.split("|").str[0].to_numpy(),
        }
    )
