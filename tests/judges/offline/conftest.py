"""Shared fixtures for the offline judge tests: one model load per test session."""

from __future__ import annotations

import pytest

from convoeval.judges.offline import Embedder, OfflineKit


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """A loaded embedder, shared by every test of the session."""
    emb = Embedder()
    emb.load()
    return emb


@pytest.fixture(scope="session")
def kit(embedder: Embedder) -> OfflineKit:
    """The offline kit on the shared embedder."""
    return OfflineKit(embedder)
