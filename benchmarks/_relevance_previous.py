"""The relevance model of calibration 2026-12-02.1, kept to measure it beside the shipped cosine.

Eleven features of a window (cosines with the input, the window and its earlier turns; closeness
to a generic reply; content-word overlap; question/answer types; the reply's length; a word-for-word
repeat) under a logistic model whose weights were fitted on all DBDC3 dev dialogues. Moved here
from `relevance_features.py` when leaving one system out showed it learned DBDC3's style
(benchmarks/README.md, "Relevance leaving one system out").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from convoeval.judges.offline.relevance import context_parts
from convoeval.judges.protocol.step import Window

FloatArray = npt.NDArray[np.float32]

#: The constants of calibration 2026-12-02.1 (weights over FEATURE_NAMES, bias, threshold).
PREVIOUS_VERSION = "2026-12-02.1"
PREVIOUS_WEIGHTS: tuple[float, ...] = (
    14.1355, -5.6329, 1.3718, -0.271, 1.5894, -1.6435, 2.3913, -11.8106, 0.1772, -3.9814,
    10.5986,
)  # fmt: skip
PREVIOUS_BIAS = -4.3641
PREVIOUS_THRESHOLD = 0.4899

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
    "question_for_question",
    "yes_no_answer",
    "cos_input_x_context",
    "reply_words",
    "exact_repeat",
    "cos_history",
)

_WORD = re.compile(r"[a-z0-9']+")
_STOP_TEXT = """the a an and or to of in on is are was were i you it that this what do does did
    be for with my your me we they he she have has not no yes"""
_STOP = frozenset(_STOP_TEXT.split())
#: Openings of a yes/no question, and of a yes/no answer (written for this library).
_YES_NO_QUESTION = re.compile(
    r"^(?:is|are|am|was|were|do|does|did|can|could|will|would|should|shall|have|has|had|may"
    r"|might|must|isn't|aren't|don't|doesn't|didn't|can't|won't)\b",
    re.I,
)
_WH_QUESTION = re.compile(r"^(?:what|what's|who|whom|whose|where|when|why|how|which)\b", re.I)
_YES_NO_ANSWER = re.compile(
    r"^(?:yes|yeah|yep|yup|no|nope|nah|not really|sure|of course|certainly|definitely"
    r"|absolutely|maybe|probably|i do|i don't|i am|i'm not|i have|i haven't|it is|it's not"
    r"|it isn't|they are|they aren't|there is|there are)\b",
    re.I,
)


def _content(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of the content words of two texts."""
    wa, wb = _content(a), _content(b)
    return len(wa & wb) / max(1, len(wa | wb))


def is_question(text: str) -> bool:
    """Whether `text` asks something: it ends with "?" or opens like a question."""
    s = text.strip()
    return s.endswith("?") or bool(_YES_NO_QUESTION.match(s) or _WH_QUESTION.match(s))


def _text_features(window: Window) -> list[float]:
    """The features read from the words: question types, length, an exact repeat."""
    user, reply = window.user.strip(), window.reply.strip()
    earlier = [r.strip().lower() for _, r in window.history if r.strip()]
    return [
        1.0 if reply.endswith("?") else 0.0,
        1.0 if is_question(user) else 0.0,
        1.0 if _YES_NO_QUESTION.match(user) and _YES_NO_ANSWER.match(reply) else 0.0,
        float(np.log1p(len(reply.split()))),
        1.0 if reply.lower() in earlier else 0.0,
    ]


def relevance_features(
    windows: Sequence[Window], embed: Callable[[Sequence[str]], FloatArray]
) -> npt.NDArray[np.float64]:
    """The (n, len(FEATURE_NAMES)) feature matrix for `windows`."""
    if not windows:
        return np.zeros((0, len(FEATURE_NAMES)), dtype=np.float64)
    texts = list(
        dict.fromkeys(
            [t for w in windows for t in (w.reply, *context_parts(w))] + list(GENERIC_REPLIES)
        )
    )
    row = {text: k for k, text in enumerate(texts)}
    vectors = embed(texts).astype(np.float64)  # one call: the judge groups it with other steps'

    def vec(text: str) -> npt.NDArray[np.float64]:
        found: npt.NDArray[np.float64] = vectors[row[text]]
        return found

    generic = vectors[[row[t] for t in GENERIC_REPLIES]]
    sims = np.zeros((len(windows), 4))
    for k, window in enumerate(windows):
        reply = vec(window.reply)
        parts = context_parts(window)
        sims[k, 0] = reply @ vec(window.user)
        sims[k, 1] = _cos_mean(reply, vectors[[row[t] for t in parts]])
        sims[k, 2] = (generic @ reply).max()
        # The earlier turns alone; with none, the input stands in, so that where a reply
        # stands in the conversation is never a feature.
        sims[k, 3] = _cos_mean(reply, vectors[[row[t] for t in parts[:-1] or parts]])
    to_input, to_context, gen, history = sims.T
    text = np.array([_text_features(w) for w in windows], dtype=np.float64)
    reply_q, input_q, yes_no, words, exact = text.T
    return np.column_stack(
        [
            to_input,
            to_context,
            gen,
            [word_overlap(w.reply, w.context()) for w in windows],
            reply_q,
            reply_q * input_q,
            yes_no,
            to_input * to_context,
            words,
            exact,
            history,
        ]
    )


def _cos_mean(vector: npt.NDArray[np.float64], block: npt.NDArray[np.float64]) -> float:
    """Cosine of `vector` with the normalised mean of the rows of `block`."""
    mean = block.mean(axis=0)
    return float(vector @ mean / max(float(np.linalg.norm(mean)), 1e-12))


def previous_probabilities(features: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The 2026-12-02.1 score from `relevance_features` rows (its threshold re-centred to 0.5)."""
    z = features @ np.asarray(PREVIOUS_WEIGHTS) + PREVIOUS_BIAS
    shift = np.log(PREVIOUS_THRESHOLD / (1.0 - PREVIOUS_THRESHOLD))
    out: npt.NDArray[np.float64] = 1.0 / (1.0 + np.exp(-(z - shift)))
    return out
