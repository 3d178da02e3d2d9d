"""relevance_features: the feature model separates an on-topic reply from an off-topic one."""

from __future__ import annotations

import math

import pytest

from convoeval.judges.offline import Embedder, OfflineKit
from convoeval.judges.offline import calibration as cal
from convoeval.judges.offline.relevance_features import (
    FEATURE_NAMES,
    relevance_features,
    relevance_probabilities,
    word_overlap,
)
from convoeval.judges.protocol.step import Window

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


def test_the_kit_scores_relevance_with_the_feature_model(kit: OfflineKit) -> None:
    """The kit's score is the shipped logistic model over the features, its odds re-centred so
    that the shipped threshold reads 0.5; worked out here by hand, not through the function the
    kit calls."""
    windows = [
        Window.of([("Hi", "Hello! How can I help?")], QUESTION, "It has a two-year warranty."),
        Window.of([], QUESTION, "Standard shipping takes 3 to 5 business days."),
    ]
    features = relevance_features(windows, kit.embed)
    expected = []
    for row in features:
        z = sum(w * x for w, x in zip(cal.RELEVANCE_FEATURE_WEIGHTS, row, strict=True))
        p = 1.0 / (1.0 + math.exp(-(z + cal.RELEVANCE_FEATURE_BIAS)))
        t = cal.RELEVANCE_FEATURE_THRESHOLD
        expected.append(p * (1 - t) / (p * (1 - t) + (1 - p) * t))  # odds divided by t's odds
    scores = kit.relevance_scores(windows)
    assert scores == pytest.approx(expected, abs=1e-9)
    assert scores[0] > scores[1]  # the answer above the reply about shipping
    assert kit.is_relevant(windows) == [s >= 0.5 for s in scores]


def test_question_answer_and_repeat_features(embedder: Embedder) -> None:
    history = [("Do you like cats?", "Yes, I love cats.")]
    windows = [
        Window.of(history, "Do you have one?", "Yes, a tabby called Max."),
        Window.of(history, "Do you have one?", "What is your favourite food?"),
        Window.of(history, "Tell me more.", "Yes, I love cats."),
    ]
    feats = relevance_features(windows, embedder.embed)
    column = {name: feats[:, k].tolist() for k, name in enumerate(FEATURE_NAMES)}
    assert column["yes_no_answer"] == [1.0, 0.0, 0.0]
    assert column["question_for_question"] == [0.0, 1.0, 0.0]
    assert column["exact_repeat"] == [0.0, 0.0, 1.0]


def test_a_window_without_earlier_turns_reads_its_input_in_their_place(
    embedder: Embedder,
) -> None:
    # Where a reply stands in the conversation is not a feature: with no history, the
    # history cosine is the input cosine.
    feats = relevance_features([Window.of([], QUESTION, "Two years.")], embedder.embed)[0]
    history = feats[FEATURE_NAMES.index("cos_history")]
    assert history == pytest.approx(feats[FEATURE_NAMES.index("cos_input")], abs=1e-6)
