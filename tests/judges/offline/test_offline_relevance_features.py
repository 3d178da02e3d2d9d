"""relevance_features: the feature model separates an on-topic reply from an off-topic one."""

from __future__ import annotations

from convoeval.judges.offline import Embedder
from convoeval.judges.offline.relevance_features import (
    FEATURE_NAMES,
    relevance_features,
    relevance_probabilities,
    word_overlap,
)
from convoeval.judges.step import Window

QUESTION = "How long is the warranty on the Volt Pro laptop?"


def test_an_off_topic_reply_is_judged_irrelevant_and_an_answer_relevant(
    embedder: Embedder,
) -> None:
    windows = [
        Window.of([], QUESTION, "Standard shipping takes 3 to 5 business days."),
        Window.of([], QUESTION, "The Volt Pro comes with a two-year warranty on hardware faults."),
    ]
    off, on = relevance_probabilities(windows, embedder.embed)
    assert off < 0.5 < on


def test_feature_matrix_shape_and_empty_input(embedder: Embedder) -> None:
    window = Window.of([("Hi", "Hello! How can I help?")], QUESTION, "Which model do you have?")
    feats = relevance_features([window], embedder.embed)
    assert feats.shape == (1, len(FEATURE_NAMES))
    assert feats[0, FEATURE_NAMES.index("reply_is_question")] == 1.0
    assert relevance_features([], embedder.embed).shape == (0, len(FEATURE_NAMES))
    assert relevance_probabilities([], embedder.embed) == []


def test_word_overlap_ignores_function_words() -> None:
    assert word_overlap("the warranty of the laptop", "a laptop warranty") == 1.0
    assert word_overlap("the and of", "is it") == 0.0
