"""The shipped vectors of the fixed topic names equal the model's, and serve only that model."""

from __future__ import annotations

import numpy as np

from convoeval.judges.offline.embedder import Embedder
from convoeval.judges.offline.kit import OfflineKit
from convoeval.judges.offline.scope import topic_vectors
from convoeval.judges.offline.topic_bank import bank_names, load_bank


def test_the_shipped_bank_covers_every_fixed_name_for_the_shipped_model(embedder: Embedder) -> None:
    bank = load_bank(embedder.fingerprint)
    assert set(bank) == set(bank_names()), "rebuild: python -m convoeval.judges.offline.topic_bank"


def test_shipped_vectors_equal_the_model_s_own_bit_for_bit(embedder: Embedder) -> None:
    bank = load_bank(embedder.fingerprint)
    names = bank_names()[:: max(1, len(bank_names()) // 12)]
    live = topic_vectors(names, lambda texts: embedder.embed(list(texts)))
    assert np.array_equal(live, np.stack([bank[n] for n in names]))


def test_another_embedder_or_a_topic_outside_the_bank_is_embedded(embedder: Embedder) -> None:
    assert load_bank(Embedder(integer=False).fingerprint) == {}
    assert load_bank(Embedder(max_tokens=64).fingerprint) == {}
    sent: list[str] = []

    def embed(texts: object) -> np.ndarray:
        sent.extend(list(texts))  # type: ignore[call-overload]
        return embedder.embed(list(texts))  # type: ignore[call-overload]

    bank = load_bank(embedder.fingerprint)
    vectors = topic_vectors(("travel", "sourdough baking"), embed, bank)
    assert vectors.shape == (2, 384) and len(sent) == 3
    assert all("sourdough baking" in s for s in sent)
    assert np.array_equal(vectors[0], bank["travel"])


def test_a_first_scope_score_embeds_no_fixed_name() -> None:
    fresh = Embedder()  # its own vector cache: nothing embedded by earlier tests counts
    OfflineKit(fresh).in_scope(["Could you find me a cheap hotel in Lisbon?"], ["travel"])
    assert fresh.counts()["texts"] == 1  # the request alone (1,248 texts without the bank)
