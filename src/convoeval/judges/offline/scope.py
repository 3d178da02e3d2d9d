"""Topic scope: is a user request within the allowed topics (plain words such as "banking")?

Plain cosine similarity to a topic name is a weak signal on its own: short requests are close to
many topics. The score here is contrastive: the request is compared with the allowed topics and
with a fixed background of everyday topics (43 written for this library and the 23 tier-1 names of a
public content taxonomy), each topic phrased through
a few templates, and a softmax with a temperature turns the similarities into the probability that
an allowed topic is the best explanation of the request. That probability is then divided by the
list's prior odds (allowed topics against the background topics they compete with), so that one
threshold fits a list of one topic and a list of five alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]

#: How a topic name is phrased before it is embedded (the vectors are averaged).
TOPIC_TEMPLATES: tuple[str, ...] = (
    "a question about {topic}",
    "Can you help me with {topic}?",
    "I have a {topic} question.",
)

#: Everyday subjects a request may be about instead; written for this library, broad on purpose.
OWN_TOPICS: tuple[str, ...] = (
    "sports",
    "music and songs",
    "movies and television",
    "books and literature",
    "health and medicine",
    "fitness and exercise",
    "politics and government",
    "science",
    "history",
    "mathematics",
    "computers and software",
    "phones and gadgets",
    "the internet and social media",
    "video games",
    "shopping",
    "fashion and clothing",
    "jobs and careers",
    "the office and coworkers",
    "school and education",
    "pets and animals",
    "gardening and plants",
    "home repair and cleaning",
    "family and relationships",
    "parenting and children",
    "religion and philosophy",
    "law and legal matters",
    "the weather",
    "dates and times",
    "art and painting",
    "news and current events",
    "jokes and chit-chat",
    "feelings and emotions",
    "personal information",
    "the assistant itself",
    "settings and preferences",
    "insurance",
    "taxes",
    "investing and the stock market",
    "real estate and housing",
    "energy and utilities",
    "nature and the environment",
    "space and astronomy",
    "language and grammar",
)

#: The 23 tier-1 content categories IAB1-IAB23 of the IAB Tech Lab content taxonomy as OpenRTB 2.5
#: lists them (section 5.1, CC BY 3.0; "Uncategorized", "Non-Standard Content" and "Illegal
#: Content" left out), in plain words: a taxonomy made by others for all web content, so the
#: background covers what people commonly ask about without being chosen by looking at the
#: validation data (benchmarks/README.md).
IAB_TIER1: tuple[str, ...] = (
    "arts and entertainment",
    "automotive",
    "business",
    "careers",
    "education",
    "family and parenting",
    "health and fitness",
    "food and drink",
    "hobbies and interests",
    "home and garden",
    "law, government and politics",
    "news",
    "personal finance",
    "society",
    "science",
    "pets",
    "sports",
    "style and fashion",
    "technology and computing",
    "travel",
    "real estate",
    "shopping",
    "religion and spirituality",
)

#: The background a request's allowed topics compete with (65 topics: "shopping" is in both).
BACKGROUND_TOPICS: tuple[str, ...] = tuple(dict.fromkeys(OWN_TOPICS + IAB_TIER1))


def topic_vectors(
    topics: Sequence[str], embed: Callable[[Sequence[str]], FloatArray]
) -> FloatArray:
    """One unit vector per topic: the mean of its templated phrasings."""
    if not topics:
        return np.zeros((0, 384), dtype=np.float32)
    phrased = [t.format(topic=topic) for topic in topics for t in TOPIC_TEMPLATES]
    vecs = embed(phrased).reshape(len(topics), len(TOPIC_TEMPLATES), -1).mean(axis=1)
    norms = np.clip(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12, None)
    unit: FloatArray = (vecs / norms).astype(np.float32)
    return unit


def scope_probabilities(
    texts: Sequence[str],
    topics: Sequence[str],
    embed: Callable[[Sequence[str]], FloatArray],
    *,
    temperature: float,
    overlap: float,
    background_topics: Sequence[str] = BACKGROUND_TOPICS,
    vectors: Callable[[tuple[str, ...]], FloatArray] | None = None,
) -> list[float]:
    """P(allowed) per text, relative to the list's own competition.

    A softmax over allowed and background topic similarities gives the raw probability; its odds
    are divided by the prior odds len(allowed) / len(background kept), the odds a request would
    get if it were equally close to every topic. Without that, a list of three topics clears any
    fixed cut-off more easily than a list of one. Background topics whose vector is closer than
    `overlap` to an allowed topic are dropped, so an allowed topic never competes with its own
    synonym. `vectors` gives a tuple of topics' `topic_vectors` (a caller's cache of them, as
    they depend on nothing else); by default they are computed here.
    """
    if not texts:
        return []
    if not topics:
        return [0.0] * len(texts)
    vectors = vectors or (lambda names: topic_vectors(names, embed))
    allowed = vectors(tuple(topics))
    background = vectors(tuple(background_topics))
    keep = (background @ allowed.T).max(axis=1) < overlap
    background = background[keep]
    vecs = embed(texts)
    sims = np.concatenate([vecs @ allowed.T, vecs @ background.T], axis=1).astype(np.float64)
    logits = sims / temperature
    top = logits.max(axis=1, keepdims=True)
    allowed_mass = np.exp(logits[:, : len(topics)] - top).sum(axis=1)
    background_mass = np.exp(logits[:, len(topics) :] - top).sum(axis=1)
    prior_odds = len(topics) / max(len(background), 1)
    odds = allowed_mass / np.clip(background_mass * prior_odds, 1e-300, None)
    return [float(v) for v in odds / (1.0 + odds)]
