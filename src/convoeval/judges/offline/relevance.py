"""Reply relevance: is the assistant's last reply relevant to the user's input, given the window?

The similarity of the reply to the current user input is averaged with its similarity to the whole
window (earlier exchanges plus the current input), so a short input such as "yes please" is read in
its context; a logistic curve with a fitted centre and scale maps it to [0, 1].

The window's vector is the normalised mean of the vectors of its texts (each earlier input and
reply, then the input), not the vector of the texts joined into one: those texts are embedded
anyway (as the replies and inputs of neighbouring windows), so the window costs no model time,
where the joined text was about two thirds of the tokens the judge embedded. On DBDC3 this moves
agreement by less than half a point (benchmarks/README.md, "Offline judge throughput").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from convoeval.judges.step import Window

__all__ = ["Window", "context_parts", "relevance_similarity", "squash"]

FloatArray = npt.NDArray[np.float32]


def relevance_similarity(
    windows: Sequence[Window],
    embed: Callable[[Sequence[str]], FloatArray],
    *,
    context_weight: float,
) -> npt.NDArray[np.float64]:
    """Weighted mean of cos(reply, input) and cos(reply, window context), per window.

    Every text goes to `embed` in one call (repeated texts are embedded once), so the judge's
    grouped model calls see all of a step's texts together.
    """
    if not windows:
        return np.zeros(0, dtype=np.float64)
    parts = [context_parts(w) for w in windows]
    texts = [w.reply for w in windows] + [w.user for w in windows]
    vectors = embed(texts + [t for p in parts for t in p])
    n = len(windows)
    replies, users = vectors[:n], vectors[n : 2 * n]
    ends = np.cumsum([len(p) for p in parts]) + 2 * n
    contexts = np.stack(
        [vectors[end - len(p) : end].mean(axis=0) for p, end in zip(parts, ends, strict=True)]
    )
    contexts /= np.clip(np.linalg.norm(contexts, axis=1, keepdims=True), 1e-12, None)
    to_user = (replies * users).sum(axis=1).astype(np.float64)
    to_context = (replies * contexts).sum(axis=1).astype(np.float64)
    mixed: npt.NDArray[np.float64] = (1.0 - context_weight) * to_user + context_weight * to_context
    return mixed


def context_parts(window: Window) -> list[str]:
    """The texts of the window context: the non-blank earlier inputs and replies, then the input
    (the parts that `Window.context()` joins)."""
    return [text for pair in window.history for text in pair if text.strip()] + [window.user]


def squash(values: npt.NDArray[np.float64], center: float, scale: float) -> list[float]:
    """Logistic map of similarities to [0, 1], 0.5 at `center`."""
    return [float(v) for v in 1.0 / (1.0 + np.exp(-(values - center) / scale))]
