"""Reply relevance from a few features of the reply as an answer, not from one cosine alone.

Features per window: cos(reply, input), cos(reply, window context), how close the reply is to a
generic all-purpose reply ("I see.", "What do you mean?"), the content-word overlap of the reply
with the window, and whether the reply is itself a question. A logistic model over them (weights
fitted on the DBDC3 dev dialogues, shipped in `calibration.py`) gives P(relevant). On DBDC3,
grouped by dialogue and out of fold, it beats plain cosine (see benchmarks/README.md). The fitted
signs are DBDC3's: its annotators accept generic back-channel replies and call parroting the
user a breakdown, so a generic reply gains and word overlap loses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from convoeval.judges.offline import calibration as cal
from convoeval.judges.step import Window

FloatArray = npt.NDArray[np.float32]

#: Replies that fit any input, so fit none in particular (written for this library).
GENERIC_REPLIES: tuple[str, ...] = (
    "I see.",
    "Okay.",
    "That's interesting.",
    "I don't know.",
    "What do you mean?",
    "Really?",
    "Yes.",
    "No.",
    "Let's talk about something else.",
    "Hello!",
)

#: Names of the features, in the order `relevance_features` returns them.
FEATURE_NAMES: tuple[str, ...] = (
    "cos_input",
    "cos_context",
    "generic",
    "word_overlap",
    "reply_is_question",
)

_WORD = re.compile(r"[a-z0-9']+")
_STOP_TEXT = """the a an and or to of in on is are was were i you it that this what do does did
    be for with my your me we they he she have has not no yes"""
_STOP = frozenset(_STOP_TEXT.split())


def _content(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of the content words of two texts."""
    wa, wb = _content(a), _content(b)
    return len(wa & wb) / max(1, len(wa | wb))


def relevance_features(
    windows: Sequence[Window], embed: Callable[[Sequence[str]], FloatArray]
) -> npt.NDArray[np.float64]:
    """The (n, len(FEATURE_NAMES)) feature matrix for `windows`."""
    if not windows:
        return np.zeros((0, len(FEATURE_NAMES)), dtype=np.float64)
    contexts = [w.context() for w in windows]
    replies = embed([w.reply for w in windows])
    users = embed([w.user for w in windows])
    context_vecs = embed(contexts)
    generic = embed(GENERIC_REPLIES)
    return np.column_stack(
        [
            (replies * users).sum(axis=1),
            (replies * context_vecs).sum(axis=1),
            (replies @ generic.T).max(axis=1),
            [word_overlap(w.reply, c) for w, c in zip(windows, contexts, strict=True)],
            [1.0 if w.reply.strip().endswith("?") else 0.0 for w in windows],
        ]
    ).astype(np.float64)


def relevance_probabilities(
    windows: Sequence[Window],
    embed: Callable[[Sequence[str]], FloatArray],
    *,
    weights: Sequence[float] = cal.RELEVANCE_FEATURE_WEIGHTS,
    bias: float = cal.RELEVANCE_FEATURE_BIAS,
) -> list[float]:
    """P(the window's final reply is relevant to its input) per window; 0.5 is the verdict."""
    z = relevance_features(windows, embed) @ np.asarray(weights, dtype=np.float64) + bias
    return [float(v) for v in 1.0 / (1.0 + np.exp(-z))]
