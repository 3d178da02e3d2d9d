"""An Embedder whose vectors persist in a file under the run's cache folder between benchmark runs.

Refits and repeated runs of `agreement.py` then embed only texts they have not seen. The file lives
in `CONVOEVAL_CACHE_DIR` (else the library's default cache dir), never the system temp dir, and is
keyed by the model's pinned SHA-256 and the arithmetic it runs in, so another model never reads
stale vectors.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from convoeval.judges.core.cache import default_cache_dir
from convoeval.judges.offline.embedder import DIM, MODEL_SHA256, Embedder, FloatArray
from convoeval.judges.offline.quantize import ARITHMETIC


def cache_file() -> Path:
    """The vectors' file for this model and arithmetic, in the run's cache folder (read when
    called, so `CONVOEVAL_CACHE_DIR` set after import still counts)."""
    return default_cache_dir() / f"embeddings-{MODEL_SHA256[:12]}-{ARITHMETIC}.pkl"


class DiskCachedEmbedder(Embedder):
    """Embedder with a persistent text -> vector map; call `save()` when done."""

    def __init__(self, path: Path | None = None) -> None:
        super().__init__(cache_size=0)
        self.path = cache_file() if path is None else path
        self._store: dict[str, FloatArray] = {}
        if self.path.is_file():
            with self.path.open("rb") as fh:
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
        """Write the map back (atomically, creating the folder) if anything was added."""
        if not self._dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        with tmp.open("wb") as fh:
            pickle.dump(self._store, fh)
        tmp.replace(self.path)
        self._dirty = False
