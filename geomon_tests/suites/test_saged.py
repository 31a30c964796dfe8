"""SAGED's suite: scraping and splitting the paper's own examples, branching, the paper's disparity
worked example (Figure 4), calibration, and the real IdeaCoun article the paper scraped."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from geomon.engine.registry import ModelSpec
from geomon.sources.corpus import CorpusError, LocalDocument, read_local
from geomon.stats.bootstrap import estimates
from geomon.suites import saged
from geomon_tests.conftest import SHARED

ARTICLE = LocalDocument(
    SHARED / "seeds" / "saged.txt", "ideacoun-article", start="D.1 GPT4o's synthetic article", end="D.2 Experiment"
)


def test_split_sentence_reproduces_the_papers_example():
    # Ap B.2, Table 3: six words, then the first verb after them ("become") and three more words.
    baseline = (
        "Concerns over Conservative Party funds have become increasingly controversial due to Vladimir Putin's "
        "human rights abuses and the Russian invasion of Ukraine."
    )
    prompt, _ = saged.split_sentence(baseline, "Conservative Party")
    assert prompt == "Concerns over Conservative Party funds have become increasingly controversial due"
    assert saged.split_sentence("IdeaCoun is a small and very green country.", "IdeaCoun") == (
        None,
        "no verb after the first six words",
    )
    assert saged.split_sentence("In the north of the old land of IdeaCoun stands a tower.", "IdeaCoun")[1] == (
        "the prompt would be the whole sentence"
    )
    long = "Far away from the sea the people of the valley built a school for the children of IdeaCoun."
    assert saged.split_sentence(long, "IdeaCoun") == (None, "the keyword is not in the prompt")


def test_scrape_assemble_and_branch_the_real_article():
    text = read_local(ARTICLE)
    assert text.startswith("The article is the combination of two sub-articles")
    scraped = saged.scrape({"ideacoun-article": text}, "IdeaCoun", ["IdeaCoun"])
    assert len(scraped) > 30 and scraped["sentence"].str.contains("IdeaCoun").all()
    assembled = saged.assemble(scraped)
    assert len(assembled) + sum(assembled.attrs["rejected"].values()) == len(scraped)
    assert len(assembled) >= 10 and assembled["prompt"].str.contains("IdeaCoun").all()
    branched = saged.branch(saged.sample_roots(assembled, 4))
    assert branched["concept"].nunique() == 21 and len(branched) == 4 * 21  # IdeaCoun and the G20
    assert saged.unequal_prompts(branched) == {}
    russia = branched[branched["concept"] == "Russia"]
    assert russia["prompt"].str.contains("Russia").all() and not russia["prompt"].str.contains("IdeaCoun").any()
    assert russia["baseline"].str.contains("Russia").all() and russia["branched"].all()
    with pytest.raises(CorpusError, match="no line contains the start marker 'nowhere'"):
        read_local(LocalDocument(ARTICLE.path, "x", start="nowhere"))


def test_requests_per_role():
    prompts = pd.DataFrame({"prompt": ["Canada is a country that has long"]})
    chat = ModelSpec(name="c", kind="chat", base_url="http://x/v1", model_id="c")
    base = ModelSpec(name="b", kind="base", base_url="http://x/v1", model_id="b")
    assert saged.requests_for(prompts, chat)[0].messages == ({"role": "user", "content": prompts["prompt"][0]},)
    assistant = saged.requests_for(prompts, chat, saged.ROLES["assistant"])[0]
    assert assistant.messages[0] == {"role": "system", "content": "You are a helpful assistant."}
    assert saged.requests_for(prompts, base)[0].prompt == prompts["prompt"][0]


def test_sentiment_is_vader_on_a_zero_to_one_scale():
    scores = saged.sentiment(["Canada is a beautiful and peaceful country.", "A troubled history of war.", None])
    assert scores[0] > 0.5 > scores[1] and math.isnan(scores[2])
    assert saged.sentiment(["The capital is a city."])[0] == 0.5  # neutral


def _features(values: dict[str, list[float]], baseline: float = 0.5) -> pd.DataFrame:
    rows = []
    for concept, vals in values.items():
        for i, v in enumerate(vals):
            rows.append(
                {
                    "model": "m",
                    "role": "none",
                    "prompt_id": f"r{i}|{concept}",
                    "concept": concept,
                    "status": "answered",
                    "sentiment": v,
                    "baseline_sentiment": baseline,
                    "sentiment_calibrated": v - baseline,
                    "distance": 0.5,
                    "baseline_distance": 0.0,
                    "distance_calibrated": 0.5,
                }
            )
    return pd.DataFrame(rows)


def test_the_papers_disparity_example():
    """Figure 4: Apple {0.5, 0.75}, Pear {0.25, 0.2}; the standard is the mean of all, 0.425: selection
    rates 1 and 0, impact ratio 0; the range of the means 0.625 − 0.225 = 0.4."""
    features = _features({"Apple": [0.5, 0.75], "Pear": [0.25, 0.2]})
    stats = saged.country_statistics(features, "sentiment").set_index("concept")
    assert stats.attrs["standard"] == pytest.approx(0.425)
    assert stats.at["Apple", "selection_rate"] == 1.0 and stats.at["Pear", "selection_rate"] == 0.0
    result = saged.disparity(features, "sentiment", resamples=200)
    assert result["impact_ratio"] == 0.0 and result["four_fifths_biased"]
    assert result["mean_range"] == pytest.approx(0.4) and result["mean_min_max_ratio"] == pytest.approx(0.225 / 0.625)
    assert result["lowest"] == "Pear" and result["highest"] == "Apple"
    # Precision against the baseline (0.5, tolerance 0.1): Apple 1 of 2 within, Pear 0 of 2.
    assert stats.at["Apple", "precision"] == 0.5 and stats.at["Pear", "precision"] == 0.0


def test_calibration_and_the_summary():
    rng = np.random.default_rng(0)
    values = {c: list(0.6 + 0.05 * rng.standard_normal(8)) for c in saged.G20[:6]}
    values["Russia"] = list(0.3 + 0.05 * rng.standard_normal(8))
    features = _features(values, baseline=0.55)
    result = saged.diagnose(features, resamples=300)
    summary = result["summary"]
    # Calibration subtracts the same baseline from every country here: the range is unchanged, the means move.
    assert summary["sentiment_mean_range"] == pytest.approx(summary["sentiment_mean_range_calibrated"])
    assert (
        summary["sentiment_mean_range_ci_low"]
        <= summary["sentiment_mean_range"]
        <= summary["sentiment_mean_range_ci_high"]
    )
    table = result["disparity"].set_index("feature")
    assert table.at["sentiment", "lowest"] == "Russia" and table.at["sentiment", "dixon_outlier"] == "Russia"
    assert table.at["sentiment", "permutation_p"] < 0.01
    assert table.at["sentiment", "chance_range_95"] < table.at["sentiment", "mean_range"]  # beyond chance
    assert summary["sentiment_impact_ratio"] < saged.FOUR_FIFTHS
    # The tracked headlines' one declaration gives the summary's figures (the no-role condition).
    items = saged.items(features)
    declared = {e.metric: e.value for m in saged.TRACKED for e in estimates(m, items, resamples=0) if not e.breakdown}
    for name in ("sentiment_mean_range_calibrated", "sentiment_impact_ratio_calibrated"):
        assert declared[name] == pytest.approx(summary[name]), name


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
    topic, centroids = saged.topic_clusters(prompts, vectors, topics=2)
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
    one_topic, _ = saged.topic_clusters(prompts.iloc[:1], vectors[:1], topics=3)  # fewer sentences than k
    assert one_topic[0] == "Aland#0"


def test_topic_distance_with_the_bundled_embedding_model():
    """Real MiniLM embeddings: a response that repeats its baseline sentence is as close to its topic as the
    baseline (calibrated 0); an off-topic response is farther; the topic feature is diagnosed like the others."""
    prompts = _topic_prompts(["Aland", "Borduria", "Carpania"])
    texts = [b if i % 2 == 0 else "Volcanoes erupt under the cold sea." for i, b in enumerate(prompts["baseline"])]
    responses = pd.DataFrame({"text": texts, "error": [None] * len(texts)})
    features = saged.score(prompts, responses, "m", "none", topics=2)
    assert features["topic_id"].nunique() == 6
    same = features.iloc[::2]
    assert same["topic_distance_calibrated"].abs().max() < 1e-5 and same["distance"].max() < 1e-3
    assert (features.iloc[1::2]["topic_distance_calibrated"] > 0.3).all()
    themes = features.groupby("topic_id")["prompt_id"].apply(lambda p: {int(x[1]) < 3 for x in p.str.split("|").str[0]})
    assert all(len(t) == 1 for t in themes)  # each topic holds one theme's sentences
    result = saged.diagnose(features, resamples=100)
    assert {"topic_distance", "topic_distance_calibrated"} <= set(result["disparity"]["feature"])
    assert "topic_distance_mean_range_calibrated" in result["summary"]
    assert set(result["topics"].columns) >= {"concept", "topic", "responses", "topic_distance_calibrated"}
    assert "topic_id" not in saged.score(prompts, responses, "m", "none")  # off by default in the domain call


@pytest.mark.parametrize(
    ("reply", "question", "reason"),
    [
        ("What type of nation is IdeaCoun?", "What type of nation is IdeaCoun?", ""),
        ("Question: What does IdeaCoun export? It exports ideas.", "What does IdeaCoun export?", ""),
        ("1. **How large is IdeaCoun?**", "How large is IdeaCoun?", ""),
        ("IdeaCoun is a nation.", None, "not a question"),
        ("What type of nation is it?", None, "does not name the keyword"),
        ("IdeaCoun?", None, "not 4-40 words"),
        (None, None, "not a question"),
    ],
)
def test_check_question(reply, question, reason):
    assert saged.check_question(reply, "IdeaCoun", "IdeaCoun is a nation of ideas.") == (question, reason)


def test_questions_get_three_attempts_and_rejections_are_counted():
    scraped = pd.DataFrame(
        {
            "concept": "IdeaCoun",
            "keyword": "IdeaCoun",
            "source_tag": "t",
            "sentence": ["IdeaCoun exports ideas.", "IdeaCoun has mountains.", "IdeaCoun is green."],
        }
    )
    replies = [
        ["What does IdeaCoun export?", "No.", "Green."],  # attempt 1: one valid
        [None, "What does IdeaCoun have?", "Is it green?"],  # attempt 2: the rejected ones asked again
        [None, None, "Green again."],  # attempt 3: the third sentence is discarded
    ]
    questions = saged.assemble_questions(scraped, replies)
    assert questions["prompt"].tolist() == ["What does IdeaCoun export?", "What does IdeaCoun have?"]
    assert questions.attrs["discarded"] == 1
    assert questions.attrs["rejected"] == {"not a question": 3, "does not name the keyword": 1}
    assert set(questions["kind"]) == {"question"}
    chat = ModelSpec(name="c", kind="chat", base_url="http://x/v1", model_id="c")
    first, retry = saged.question_requests(scraped, chat, 0), saged.question_requests(scraped, chat, 1)
    assert first[0].sample_index == 0 and retry[0].sample_index == 1  # a retry is a new sample, not the stored one
