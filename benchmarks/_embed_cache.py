"""An Embedder whose vectors persist in a file under /tmp between benchmark runs.

Refits and repeated runs of `agreement.py` then embed only texts they have not seen; the cache is
keyed by the model's pinned SHA-256 and the arithmetic it runs in, so another model never reads
stale vectors.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from convoeval.judges.offline.embedder import DIM, MODEL_SHA256, Embedder, FloatArray
from convoeval.judges.offline.quantize import ARITHMETIC

CACHE_FILE = (
    Path(tempfile.gettempdir()) / f"convoeval-embeddings-{MODEL_SHA256[:12]}-{ARITHMETIC}.pkl"
)


class DiskCachedEmbedder(Embedder):
    """Embedder with a persistent text -> vector map; call `save()` when done."""

    def __init__(self, path: Path = CACHE_FILE) -> None:
        super().__init__(cache_size=0)
        self._path = path
        self._store: dict[str, FloatArray] = {}
        if path.is_file():
            with path.open("rb") as fh:
                self._store = pickle.load(fh)
        self._dirty = False

    def embed(self, texts: Sequence[str]) -> FloatArray:
        """(n, 384) unit vectors; only texts never seen before go through the model."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._store))
        if missing:
            for text, vec in zip(missing, super().embed(missing), strict=True):
                self._store[text] = vec
            self._dirty = True
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return np.stack([self._store[t] for t in texts]).astype(np.float32)

    def save(self) -> None:
        """Write the map back (atomically) if anything was added."""
        if not self._dirty:
            return
        tmp = self._path.with_suffix(f".{os.getpid()}.tmp")
        with tmp.open("wb") as fh:
            pickle.dump(self._store, fh)
        tmp.replace(self._path)
        self._dirty = False
