"""Scope probabilities are relative to each list's competition: the prior odds are divided out."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from convoeval.judges.offline import OfflineKit
from convoeval.judges.offline.embedder import FloatArray
from convoeval.judges.offline.scope import scope_probabilities


def _same_vector(texts: Sequence[str]) -> FloatArray:
    """Every text on one unit vector: each request is equally close to every topic."""
    out = np.zeros((len(texts), 384), dtype=np.float32)
    out[:, 0] = 1.0
    return out


@pytest.mark.parametrize("topics", [["travel"], ["orders", "returns", "electronics"]])
def test_a_request_equally_close_to_every_topic_is_at_even_odds(topics: list[str]) -> None:
    # Raw softmax shares would be 1/44 and 3/46: the list's size, not the request, would decide.
    probs = scope_probabilities(["anything"], topics, _same_vector, temperature=0.07, overlap=1.01)
    assert probs == [pytest.approx(0.5)]


def test_one_threshold_fits_a_list_of_one_and_a_list_of_three(kit: OfflineKit) -> None:
    one = kit.in_scope(
        ["Can I change my flight to Lisbon?", "What is a good recipe for lasagne?"], ["travel"]
    )
    three = kit.in_scope(
        ["Does the Aria X2 speaker support Bluetooth 5.3?", "Should I buy Nvidia stock now?"],
        ["orders and shipping", "returns, refunds and warranty", "electronics: laptops, speakers"],
    )
    assert one == [True, False] and three == [True, False]
