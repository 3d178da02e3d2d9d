"""Reply relevance: the cosine of the reply with the user's last turn, through a calibrated curve.

Until calibration 2026-12-02.1 a logistic model over eleven features (question types, reply
length, similarity to generic replies, the window...) gave the score. Validated leaving one DBDC3
system out, no feature beyond this cosine beat it in every left-out system with a paired interval
(benchmarks/README.md, "Relevance leaving one system out"), and the model fell below it on other
corpora, so the cosine ships alone: it means the same thing in any corpus. The slope and the
threshold are fitted on the DBDC3 majority turns, the threshold counting each system alike.

The vectors come from one embed call over the windows' replies and inputs (the judge groups it
with other steps'). The earlier turns of a window do not move the score.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from convoeval.judges.offline import calibration as cal
from convoeval.judges.protocol.step import Window

FloatArray = npt.NDArray[np.float32]


def reply_input_cosines(
    windows: Sequence[Window], embed: Callable[[Sequence[str]], FloatArray]
) -> npt.NDArray[np.float64]:
    """cos(reply, the user's last turn) per window, from one embed call."""
    if not windows:
        return np.zeros(0, dtype=np.float64)
    texts = list(dict.fromkeys(t for w in windows for t in (w.reply, w.user)))
    row = {text: k for k, text in enumerate(texts)}
    vectors = embed(texts).astype(np.float64)
    replies = vectors[[row[w.reply] for w in windows]]
    inputs = vectors[[row[w.user] for w in windows]]
    cosines: npt.NDArray[np.float64] = (replies * inputs).sum(axis=1)
    return cosines


def relevance_probabilities(
    windows: Sequence[Window],
    embed: Callable[[Sequence[str]], FloatArray],
    *,
    slope: float = cal.RELEVANCE_COSINE_SLOPE,
    threshold: float = cal.RELEVANCE_COSINE_THRESHOLD,
) -> list[float]:
    """P(the window's final reply is relevant to its input): a logistic curve over the cosine,
    centred on the cosine `threshold`, so the shipped verdict is `>= 0.5`."""
    z = slope * (reply_input_cosines(windows, embed) - threshold)
    return [float(v) for v in 1.0 / (1.0 + np.exp(-z))]
