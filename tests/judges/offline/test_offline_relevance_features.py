"""relevance_features: the shipped relevance score is the reply-input cosine through the calibrated
curve; it separates an on-topic reply from an off-topic one."""

from __future__ import annotations

import math

import numpy as np
import pytest

from convoeval.judges.offline import Embedder, OfflineKit
from convoeval.judges.offline import calibration as cal
from convoeval.judges.offline.relevance_features import (
    relevance_probabilities,
    reply_input_cosines,
)
from convoeval.judges.protocol.step import Window

QUESTION = "How long is the warranty on the Volt Pro laptop?"


def test_an_off_topic_reply_is_judged_irrelevant_and_an_answer_relevant(
    embedder: Embedder,
) -> None:
    # The reply of the bundled example (examples/support.jsonl). Its first sentence alone,
    # "Standard shipping takes 3 to 5 business days.", scores about 0.57: a cosine reads a
    # shipping answer as near a warranty question (benchmarks/README.md says so).
    shipping = (
        "Standard shipping takes 3 to 5 business days, and express shipping arrives the next day."
    )
    windows = [
        Window.of([], QUESTION, shipping),
        Window.of([], QUESTION, "The Volt Pro comes with a two-year warranty on hardware faults."),
        Window.of([], QUESTION, "Bananas are rich in potassium."),
    ]
    off, on, far = relevance_probabilities(windows, embedder.embed)
    assert far < off < 0.5 < on


def test_cosines_are_the_reply_input_cosines_from_one_embed_call(embedder: Embedder) -> None:
    windows = [
        Window.of([("Hi", "Hello! How can I help?")], QUESTION, "Which model do you have?"),
        Window.of([], "Tell me a joke", "Why did the chicken cross the road?"),
    ]
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:  # type: ignore[type-arg]
        calls.append(list(texts))
        return embedder.embed(texts)

    cosines = reply_input_cosines(windows, embed)
    assert len(calls) == 1 and "Hello! How can I help?" not in calls[0]  # earlier turns unused
    for window, cosine in zip(windows, cosines, strict=True):
        reply, user = embedder.embed([window.reply, window.user])
        assert cosine == pytest.approx(float(reply @ user), abs=1e-6)
    assert reply_input_cosines([], embed).shape == (0,)
    assert relevance_probabilities([], embed) == []


def test_the_kit_scores_relevance_with_the_calibrated_cosine(kit: OfflineKit) -> None:
    """The kit's score is the logistic curve over the cosine, 0.5 at the shipped threshold;
    worked out here by hand, not through the function the kit calls."""
    windows = [
        Window.of([("Hi", "Hello! How can I help?")], QUESTION, "It has a two-year warranty."),
        Window.of([], QUESTION, "Standard shipping takes 3 to 5 business days."),
    ]
    expected = []
    for window in windows:
        reply, user = kit.embed([window.reply, window.user])
        z = cal.RELEVANCE_COSINE_SLOPE * (float(reply @ user) - cal.RELEVANCE_COSINE_THRESHOLD)
        expected.append(1.0 / (1.0 + math.exp(-z)))
    scores = kit.relevance_scores(windows)
    assert scores == pytest.approx(expected, abs=1e-6)
    assert scores[0] > scores[1]  # the answer above the reply about shipping
    assert kit.is_relevant(windows) == [s >= 0.5 for s in scores]


def test_the_threshold_cosine_reads_one_half(embedder: Embedder) -> None:
    window = Window.of([], "Do you like cats?", "Yes, I love cats.")
    (cosine,) = reply_input_cosines([window], embedder.embed)
    (at,) = relevance_probabilities([window], embedder.embed, threshold=float(cosine))
    assert at == pytest.approx(0.5, abs=1e-9)


def test_a_short_reply_on_a_near_subject_reads_as_relevant(kit: OfflineKit) -> None:
    """The known cost of the plain cosine (benchmarks/README.md): a short shipping answer to a
    warranty question passes, the examples' longer one does not."""
    windows = [
        Window.of([], QUESTION, "Standard shipping takes 3 to 5 business days."),
        Window.of(
            [],
            QUESTION,
            "Standard shipping takes 3 to 5 business days, and express shipping arrives "
            "the next day.",
        ),
    ]
    short, longer = kit.relevance_scores(windows)
    assert round(short, 3) == 0.579 and round(longer, 3) == 0.386


def test_offline_verdicts_are_the_same_at_any_window_size() -> None:
    """docs/metrics/turn-relevancy.md: the offline judge reads the request alone, so the window
    size does not change its verdicts."""
    from convoeval import ConversationalTestCase, ConversationRelevancyMetric, ModelTestCase

    case = ConversationalTestCase(
        turns=[
            ModelTestCase(
                input="Can you recommend a laptop for programming?",
                actual_output="A 14-inch model with 16 GB RAM.",
            ),
            ModelTestCase(input="How much is it?", actual_output="About 1,200 dollars."),
            ModelTestCase(
                input="Does it come in blue?", actual_output="Bananas are rich in potassium."
            ),
            ModelTestCase(input=QUESTION, actual_output="Two years on hardware faults."),
        ]
    )
    results = []
    for size in (1, 3, 10):
        metric = ConversationRelevancyMetric(window_size=size)
        results.append((metric.measure(case), metric.reason))
    assert results[0] == results[1] == results[2]
    assert results[0][0] == 0.75  # the banana reply alone is judged irrelevant
