"""OfflineKit: the calibrated primitives that the metrics' offline implementations call."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from convoeval.judges.offline import calibration as cal
from convoeval.judges.offline.embedder import MODEL_NAME, Embedder, FloatArray, get_embedder
from convoeval.judges.offline.refusal import localise, logistic, refusal_features
from convoeval.judges.offline.relevance import Window
from convoeval.judges.offline.relevance_features import relevance_probabilities
from convoeval.judges.offline.scope import scope_probabilities, topic_vectors
from convoeval.judges.offline.segment import Request, segment_requests
from convoeval.judges.offline.topic_bank import load_bank

#: Every kit score is re-centred so that the shipped verdict is `score >= DECISION`.
DECISION = 0.5


def _recentre(probs: Sequence[float], threshold: float) -> list[float]:
    """Shift the odds so that `threshold` maps to 0.5 (monotone; 0 and 1 stay put)."""
    ratio = threshold / (1.0 - threshold)
    return [p / (p + (1.0 - p) * ratio) if 0.0 < p < 1.0 else float(p) for p in probs]


class OfflineKit:
    """Refusal, scope, relevance and request segmentation on top of one shared embedder.

    Every score is in [0, 1] and re-centred so that 0.5 is the shipped threshold; each
    `is_*`/`in_scope` method applies it. All
    methods take and return sequences, so a metric can score a whole conversation in one call.
    """

    def __init__(self, embedder: Embedder | None = None) -> None:
        self._embedder = embedder or get_embedder()
        # Vectors of fixed texts (refusal prototypes, topic lists), computed once per kit
        # instead of once per conversation; read-only, as they are shared.
        self._fixed = functools.lru_cache(maxsize=16)(self._frozen(lambda t: self.embed(t)))
        self._topics = functools.lru_cache(maxsize=256)(
            self._frozen(lambda topics: topic_vectors(topics, self.embed, self._bank()))
        )

    @staticmethod
    def _frozen(
        compute: Callable[[tuple[str, ...]], FloatArray],
    ) -> Callable[[tuple[str, ...]], FloatArray]:
        def frozen(texts: tuple[str, ...]) -> FloatArray:
            vectors = compute(texts)
            vectors.setflags(write=False)
            return vectors

        return frozen

    def _bank(self) -> dict[str, FloatArray]:
        """The shipped vectors of the fixed topic names, when they fit this kit's embedder."""
        fingerprint = getattr(self._embedder, "fingerprint", None)
        return load_bank(fingerprint) if isinstance(fingerprint, str) else {}

    @property
    def embedder(self) -> Embedder:
        """The embedder behind this kit."""
        return self._embedder

    def embed(self, texts: Sequence[str]) -> FloatArray:
        """(n, 384) L2-normalised embeddings of `texts`."""
        return self._embedder.embed(list(texts))

    def refusal_scores(
        self, replies: Sequence[str], requests: Sequence[str] | None = None
    ) -> list[float]:
        """P(the assistant declined, fully or partly) per reply.

        `requests` (the user requests, same length) matter only when one reply serves several
        different requests: each request is then judged on the sentences of the reply that are
        about it (see `refusal.localise`). Otherwise the calibrated model reads the reply alone:
        whether a request deserved an answer is a different question from whether it got one.
        """
        texts = list(replies)
        if requests is not None:
            if len(requests) != len(replies):
                raise ValueError("requests and replies must have the same length")
            texts = localise(texts, list(requests), self.embed)
        feats = refusal_features(texts, self.embed, self._fixed)
        probs = logistic(feats, cal.REFUSAL_WEIGHTS, cal.REFUSAL_BIAS)
        return _recentre(probs, cal.REFUSAL_THRESHOLD)

    def is_refusal(
        self, replies: Sequence[str], requests: Sequence[str] | None = None
    ) -> list[bool]:
        """Refusal verdicts at the shipped threshold."""
        scores = self.refusal_scores(replies, requests)
        return [s >= DECISION for s in scores]

    def scope_scores(self, texts: Sequence[str], topics: Sequence[str]) -> list[float]:
        """P(within the allowed topics) per user request; `topics` are plain-words topic names."""
        cleaned = [t.strip() for t in topics if t.strip()]
        probs = scope_probabilities(
            list(texts),
            cleaned,
            self.embed,
            temperature=cal.SCOPE_TEMPERATURE,
            overlap=cal.SCOPE_OVERLAP,
            vectors=self._topics,
        )
        return _recentre(probs, cal.SCOPE_THRESHOLD)

    def in_scope(self, texts: Sequence[str], topics: Sequence[str]) -> list[bool]:
        """In-scope verdicts at the shipped threshold."""
        return [s >= DECISION for s in self.scope_scores(texts, topics)]

    def relevance_scores(self, windows: Sequence[Window]) -> list[float]:
        """P(the window's final reply is relevant to its input, the user's last turn) per window;
        earlier turns of the window do not move it (calibration 2026-12-03.1)."""
        return relevance_probabilities(list(windows), self.embed)

    def is_relevant(self, windows: Sequence[Window]) -> list[bool]:
        """Relevance verdicts at the shipped threshold."""
        return [s >= DECISION for s in self.relevance_scores(windows)]

    def segment_requests(self, user_messages: Sequence[str]) -> list[Request]:
        """The user's requests (greetings and small talk dropped), labelled with a short topic."""
        return segment_requests(list(user_messages))

    def similarity(self, a: Sequence[str], b: Sequence[str]) -> FloatArray:
        """Cosine similarity matrix (len(a), len(b)) between two lists of texts."""
        if not a or not b:
            return np.zeros((len(a), len(b)), dtype=np.float32)
        return self.embed(a) @ self.embed(b).T

    def describe(self) -> dict[str, Any]:
        """Model and calibration identifiers (for results and cache keys)."""
        return {"model": MODEL_NAME, "calibration": cal.CALIBRATION_VERSION}


_kit: OfflineKit | None = None
_kit_lock = threading.Lock()


def get_kit() -> OfflineKit:
    """The process-wide kit (cheap to create; the model loads on first use)."""
    global _kit
    if _kit is None:
        with _kit_lock:
            if _kit is None:
                _kit = OfflineKit()
    return _kit
