"""Scope probabilities are relative to each list's competition: the prior odds are divided out;
broad topics compete through their IAB tier-2 categories."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from convoeval.judges.offline import OfflineKit
from convoeval.judges.offline import calibration as cal
from convoeval.judges.offline.embedder import FloatArray
from convoeval.judges.offline.scope import (
    IAB_TIER1,
    IAB_TIER2,
    scope_probabilities,
    topic_facets,
    topic_vectors,
)


def _same_vector(texts: Sequence[str]) -> FloatArray:
    """Every text on one unit vector: each request is equally close to every topic."""
    out = np.zeros((len(texts), 384), dtype=np.float32)
    out[:, 0] = 1.0
    return out


@pytest.mark.parametrize("topics", [["travel"], ["orders", "returns", "electronics"]])
def test_a_request_equally_close_to_every_topic_is_at_even_odds(topics: list[str]) -> None:
    # Raw softmax shares would be 1/66 and 3/68: the list's size, not the request, would decide.
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


def test_the_taxonomy_background_keeps_neighbouring_subjects_out(kit: OfflineKit) -> None:
    # Travel and personal finance are background topics since calibration 2026-12-01.4 (the IAB
    # tier-1 names); with the 43 earlier topics alone the money transfer was "cars" in scope.
    assert kit.in_scope(
        [
            "Is it safe to travel to France right now?",
            "Can you move my money to my savings account?",
            "My car makes a grinding noise when I brake.",
        ],
        ["cars", "commuting"],
    ) == [False, False, True]


def test_every_tier1_name_has_its_tier2_categories() -> None:
    assert tuple(IAB_TIER2) == IAB_TIER1
    assert sum(len(names) for names in IAB_TIER2.values()) == 355  # OpenRTB 2.5, section 5.1
    assert "air travel" in IAB_TIER2["travel"] and "auto repair" in IAB_TIER2["automotive"]


def test_only_a_broad_topic_is_expanded(kit: OfflineKit) -> None:
    topics = ("travel", "cars", "billing and invoices")
    own = topic_vectors(topics, kit.embed)
    facets = topic_facets(topics, own, lambda t: topic_vectors(t, kit.embed), cal.SCOPE_OVERLAP)
    assert facets == [IAB_TIER2["travel"], IAB_TIER2["automotive"], ()]


def test_a_broad_topic_covers_its_subjects(kit: OfflineKit) -> None:
    # Calibration 2026-12-03.1 (issue 36): "travel" competes through "Japan", "air travel", ...
    # so a time-zone question counts as travel, as CLINC150's travel domain has it.
    text = ["What time is it in Tokyo?"]
    assert kit.in_scope(text, ["travel"]) == [True]
    flat = scope_probabilities(
        text,
        ["travel"],
        kit.embed,
        temperature=cal.SCOPE_TEMPERATURE,
        overlap=cal.SCOPE_OVERLAP,
        expand=False,
    )
    assert flat[0] < cal.SCOPE_THRESHOLD


def test_a_lists_columns_are_built_once_per_kit(kit: OfflineKit) -> None:
    """Issue 35: the matrix a request is compared with (allowed topics, background, their
    expansions) depends only on the list, so the kit builds it once, not per conversation."""
    from convoeval.judges.offline import scope

    topics = ["pottery classes", "kiln rental"]
    first = kit.scope_scores(["How hot does the kiln get?"], topics)
    before = scope._cached_columns.cache_info()
    again = kit.scope_scores(
        ["Can I book a wheel for Sunday?", "How hot does the kiln get?"], topics
    )
    after = scope._cached_columns.cache_info()
    assert (after.hits - before.hits, after.misses - before.misses) == (1, 0)
    assert again[1] == pytest.approx(first[0], abs=1e-6)  # products differ in the last bits
