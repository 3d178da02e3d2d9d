"""The vectors of the judge's own fixed topic names, computed once and shipped with the package.

Scope compares every request with the same background names, the IAB tier-1 names and their
tier-2 expansions: about 420 names in three phrasings each, some 1,300 model runs (2-3 s on two
cores) before a first scope score. Those vectors depend only on the model and the phrasings, so
they are built once (`python -m convoeval.judges.offline.topic_bank`) and read from
`assets/topic_vectors.npz`; they are used only when the embedder's fingerprint and the phrasings
match what the file was built with, and otherwise the names are embedded as before.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import numpy as np

from convoeval.judges.offline.embedder import Embedder, FloatArray
from convoeval.judges.offline.scope import (
    BACKGROUND_TOPICS,
    IAB_TIER1,
    IAB_TIER2,
    TOPIC_TEMPLATES,
    topic_vectors,
)

BANK_PATH = Path(__file__).parent / "assets" / "topic_vectors.npz"


def bank_names() -> tuple[str, ...]:
    """Every fixed topic name scope may need, once each."""
    facets = (name for tier1 in IAB_TIER1 for name in IAB_TIER2.get(tier1, ()))
    return tuple(dict.fromkeys((*BACKGROUND_TOPICS, *IAB_TIER1, *facets)))


def bank_key(fingerprint: str) -> str:
    """What the shipped vectors depend on: the embedder and the phrasings."""
    return hashlib.sha256("\n".join((fingerprint, *TOPIC_TEMPLATES)).encode()).hexdigest()


@functools.lru_cache(maxsize=4)
def load_bank(fingerprint: str, path: Path = BANK_PATH) -> dict[str, FloatArray]:
    """Name -> unit vector from the shipped file, or {} when it was built for another embedder
    or other phrasings (or is missing)."""
    if not path.is_file():
        return {}
    with np.load(path, allow_pickle=False) as data:
        if str(data["key"]) != bank_key(fingerprint):
            return {}
        vectors = data["vectors"].astype(np.float32)
        vectors.setflags(write=False)
        return dict(zip((str(n) for n in data["names"]), vectors, strict=True))


def build_bank(embedder: Embedder, path: Path = BANK_PATH) -> int:
    """Embed every fixed name with `embedder` and write the file; returns the number of names."""
    names = bank_names()
    vectors = topic_vectors(names, lambda texts: embedder.embed(list(texts)))
    np.savez_compressed(
        path, key=np.array(bank_key(embedder.fingerprint)), names=np.array(names), vectors=vectors
    )
    load_bank.cache_clear()
    return len(names)


if __name__ == "__main__":
    print(f"{build_bank(Embedder())} topic vectors written to {BANK_PATH}")
