"""The kit's calibrated primitives on a few clear, hand-written cases."""

from __future__ import annotations

import numpy as np
import pytest

from convoeval.judges.offline import OfflineKit, Window, refusal, scope
from convoeval.judges.offline import calibration as cal
from convoeval.judges.offline.kit import _recentre
from convoeval.judges.offline.refusal import logistic


def test_embed_and_similarity(kit: OfflineKit) -> None:
    vecs = kit.embed(["one", "two"])
    assert vecs.shape == (2, 384)
    sim = kit.similarity(["I love pizza"], ["Pizza is my favourite food", "Tax forms are due"])
    assert sim.shape == (1, 2)
    assert sim[0, 0] > sim[0, 1]


def test_clear_refusal_versus_clear_answer(kit: OfflineKit) -> None:
    replies = [
        "I'm sorry, but I can't help with that request.",
        "Sure! To boil an egg, place it in boiling water for about nine minutes, then cool it "
        "in cold water and peel it.",
        "I cannot provide instructions for picking locks, as that could be used illegally. "
        "If you are locked out, please contact a licensed locksmith.",
        "Paris is the capital of France. It has about two million inhabitants.",
    ]
    scores = kit.refusal_scores(replies, ["q1", "q2", "q3", "q4"])
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert kit.is_refusal(replies) == [True, False, True, False]
    assert scores[0] > 0.8 and scores[1] < 0.2


def test_refusal_requests_must_match_replies(kit: OfflineKit) -> None:
    with pytest.raises(ValueError, match="same length"):
        kit.refusal_scores(["a", "b"], ["only one"])


def test_scope_banking_in_cooking_out(kit: OfflineKit) -> None:
    texts = [
        "How do I transfer money from my checking account to my savings account?",
        "What is the interest rate on my savings account?",
        "How long should I bake a chicken breast in the oven?",
        "What's a good recipe for vegetable soup?",
    ]
    scores = kit.scope_scores(texts, ["banking"])
    assert kit.in_scope(texts, ["banking"]) == [True, True, False, False]
    assert min(scores[:2]) > max(scores[2:])
    cooking = kit.in_scope(texts, ["cooking and food"])
    assert cooking == [False, False, True, True]


def test_scope_with_no_topics_is_out_of_scope(kit: OfflineKit) -> None:
    assert kit.scope_scores(["anything at all"], []) == [0.0]
    assert kit.scope_scores([], ["banking"]) == []


def test_relevant_versus_off_topic_reply(kit: OfflineKit) -> None:
    history = (
        ("I'd like to plan a trip to Japan in April.", "Great, April is cherry blossom time."),
    )
    windows = [
        Window.of(
            history,
            "Which cities should I visit?",
            "Kyoto and Tokyo are the classics; "
            "Osaka is great for food and Nara has its famous deer park.",
        ),
        Window.of(
            history,
            "Which cities should I visit?",
            "My favourite colour is green and I enjoy playing the guitar on weekends.",
        ),
        Window(
            history=(),
            user="How do I reset my router?",
            reply="Unplug the router, wait thirty "
            "seconds, plug it back in and wait for the lights to settle.",
        ),
        Window(
            history=(), user="How do I reset my router?", reply="Bananas are rich in potassium."
        ),
    ]
    scores = kit.relevance_scores(windows)
    assert kit.is_relevant(windows) == [True, False, True, False]
    assert scores[0] > scores[1] and scores[2] > scores[3]


def test_earlier_turns_do_not_move_the_score_and_an_answered_follow_up_passes(
    kit: OfflineKit,
) -> None:
    """Calibration 2026-12-03.1 scores the reply against the input alone (the window added
    nothing that held across DBDC3's systems); a short follow-up that is answered still passes."""
    history = (("Can you recommend a laptop for programming?", "A 14-inch model with 16 GB RAM."),)
    reply = "That model costs about 1,200 dollars and has 16 GB of memory."
    with_context = kit.relevance_scores([Window.of(history, "How much is it?", reply)])[0]
    without = kit.relevance_scores([Window.of((), "How much is it?", reply)])[0]
    assert with_context == without
    assert with_context >= 0.5


def test_scores_are_deterministic(kit: OfflineKit) -> None:
    texts = ["Can I change my card's PIN?", "Tell me a joke"]
    first = kit.scope_scores(texts, ["banking", "credit cards"])
    fresh = OfflineKit(kit.embedder)
    assert np.array_equal(first, fresh.scope_scores(texts, ["banking", "credit cards"]))


def test_describe_names_model_and_calibration(kit: OfflineKit) -> None:
    info = kit.describe()
    assert info["model"] == "all-MiniLM-L6-v2-int8"
    assert info["calibration"]


def test_support_bot_replies(kit: OfflineKit) -> None:
    """Short, helpful support answers are not refusals; scope-style declines are."""
    answers = [
        "Your balance is $1,234.56.",
        "I'm sorry to hear that. I've reported your card as lost and ordered a replacement.",
        "I cannot find any transactions from last week.",
        "Yes.",
    ]
    declines = [
        "Sorry, I can only help with banking questions.",
        "I am afraid I cannot discuss politics.",
        "As a banking assistant I cannot recommend stocks, but I can tell you about our savings.",
    ]
    assert kit.is_refusal(answers) == [False] * len(answers)
    assert kit.is_refusal(declines) == [True] * len(declines)


def test_allowed_topic_that_is_also_a_background_topic(kit: OfflineKit) -> None:
    """An allowed topic never competes with its own entry in the background list."""
    texts = ["Does my policy cover flood damage?", "What is the best pizza topping?"]
    assert kit.in_scope(texts, ["insurance"]) == [True, False]


def test_one_reply_serving_two_requests_is_judged_per_request(kit: OfflineKit) -> None:
    reply = "Your current balance is $500. I'm sorry, but I can't discuss politics or elections."
    requests = ["What is my balance?", "Who will win the election?"]
    assert kit.is_refusal([reply, reply], requests) == [False, True]
    # Without the requests (or with a single one) the whole reply is judged, as calibrated.
    assert kit.is_refusal([reply]) == [True]
    assert kit.refusal_scores([reply], requests[:1]) == kit.refusal_scores([reply])


def test_fixed_vectors_are_embedded_once_per_kit_and_change_no_score(kit: OfflineKit) -> None:
    seen: list[int] = []

    class Counting:  # the shared embedder, counting the texts each call asks for
        def embed(self, texts: list[str]) -> np.ndarray:
            seen.append(len(texts))
            return kit.embedder.embed(texts)

    fresh = OfflineKit(Counting())  # type: ignore[arg-type]
    requests = ["Can I change my card's PIN?", "Tell me a joke"]
    topics = ["banking", "credit cards"]
    replies = ["Sorry, I can only help with banking.", "Your PIN can be changed in the app."]
    first = (fresh.scope_scores(requests, topics), fresh.refusal_scores(replies))
    assert sum(seen) > 100  # the background topics' phrasings, the prototypes
    seen.clear()
    again = (fresh.scope_scores(requests, topics), fresh.refusal_scores(replies))
    assert again == first and sum(seen) == len(requests) + len(replies)
    # The same figures as computed afresh by the module functions, without the kit's cache.
    probs = scope.scope_probabilities(
        requests,
        topics,
        kit.embed,
        temperature=cal.SCOPE_TEMPERATURE,
        overlap=cal.SCOPE_OVERLAP,
    )
    assert first[0] == _recentre(probs, cal.SCOPE_THRESHOLD)
    feats = refusal.refusal_features(replies, kit.embed)
    refused = logistic(feats, cal.REFUSAL_WEIGHTS, cal.REFUSAL_BIAS)
    assert first[1] == _recentre(refused, cal.REFUSAL_THRESHOLD)
