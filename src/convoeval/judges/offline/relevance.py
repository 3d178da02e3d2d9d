"""Reply relevance: is the assistant's last reply relevant to the user's input, given the window?

The similarity of the reply to the current user input is averaged with its similarity to the whole
window (earlier exchanges plus the current input), so a short input such as "yes please" is read in
its context; a logistic curve with a fitted centre and scale maps it to [0, 1].
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from convoeval.judges.step import Window

__all__ = ["Window", "relevance_similarity", "squash"]

FloatArray = npt.NDArray[np.float32]


def relevance_similarity(
    windows: Sequence[Window],
    embed: Callable[[Sequence[str]], FloatArray],
    *,
    context_weight: float,
) -> npt.NDArray[np.float64]:
    """Weighted mean of cos(reply, input) and cos(reply, window context), per window."""
    if not windows:
        return np.zeros(0, dtype=np.float64)
    replies = embed([w.reply for w in windows])
    users = embed([w.user for w in windows])
    contexts = embed([w.context() for w in windows])
    to_user = (replies * users).sum(axis=1).astype(np.float64)
    to_context = (replies * contexts).sum(axis=1).astype(np.float64)
    mixed: npt.NDArray[np.float64] = (1.0 - context_weight) * to_user + context_weight * to_context
    return mixed


def squash(values: npt.NDArray[np.float64], center: float, scale: float) -> list[float]:
    """Logistic map of similarities to [0, 1], 0.5 at `center`."""
    return [float(v) for v in 1.0 / (1.0 + np.exp(-(values - center) / scale))]
