"""Refusal detection: did the assistant decline (fully or partly) to help with the request?

A tiny logistic model over a handful of features: curated refusal and push-back phrases (where in
the reply they occur matters: refusals say so up front) and the embedding similarity of the reply's
opening to a few refusal prototypes versus a few helpful-answer prototypes. The weights were fitted
on the XSTest dev file and are shipped as constants in `calibration.py`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]

#: Phrases that state a decline in the first person (matched on lower-cased, normalised text).
STRONG_PHRASES: tuple[str, ...] = (
    "i can't assist",
    "i cannot assist",
    "i can't help",
    "i cannot help",
    "i can't provide",
    "i cannot provide",
    "i can not provide",
    "i won't provide",
    "i will not provide",
    "i can't give",
    "i cannot give",
    "i can't share",
    "i cannot share",
    "i can't tell you",
    "i cannot tell you",
    "i can't answer",
    "i cannot answer",
    "i can't fulfill",
    "i cannot fulfill",
    "i can't comply",
    "i cannot comply",
    "i can't do that",
    "i cannot do that",
    "i can't support",
    "i cannot support",
    "i can't recommend",
    "i cannot recommend",
    "i can't encourage",
    "i cannot encourage",
    "i can't condone",
    "i cannot condone",
    "i do not condone",
    "i don't condone",
    "i can't create",
    "i cannot create",
    "i can't generate",
    "i cannot generate",
    "i can't write",
    "i cannot write",
    "i'm not able to",
    "i am not able to",
    "i'm unable to",
    "i am unable to",
    "i won't be able to",
    "i will not be able to",
    "i must decline",
    "i have to decline",
    "i refuse to",
    "i won't help",
    "i will not help",
    "sorry, but i",
    "i'm sorry, but",
    "i am sorry, but",
    "i apologize, but",
    "i'm sorry, i can't",
    "i'm sorry, i cannot",
    "i'm sorry, i am unable",
    "i'm sorry, i'm unable",
    "i can only help with",
    "i can only assist with",
    "i can only answer",
    "i can only provide",
    "i can only discuss",
    "i'm only able to",
    "i am only able to",
    "outside my scope",
    "outside the scope of",
    "outside of my scope",
    "outside of what i can",
    "outside what i can",
    "beyond my scope",
    "beyond the scope of what i",
    "not something i can help",
    "not something i can assist",
    "not able to assist",
    "unable to assist",
    "not able to help",
    "unable to help",
    "unable to provide",
    "not able to provide",
    "not within my programming",
    "against my programming",
    "my ethical guidelines",
    "against my guidelines",
    "i'm just an ai",
    "i am just an ai",
    "i don't have access to your",
    "i do not have access to your",
    "i don't have access to personal",
    "i do not have access to personal",
    "i don't feel comfortable",
    "i'm not comfortable",
    "i am not comfortable",
)

#: A first-person decline: "I can't / won't / am unable to" followed by a verb of helping.
_DECLINE = re.compile(
    r"\bi(?: am | |'m )?(?:afraid i |sorry,? (?:but )?i )?(?:can't|cannot|can not|won't|will not"
    r"|am unable to|'m unable to|am not able to|'m not able to|am not going to|'m not going to"
    r"|would rather not|'d rather not|prefer not to|must decline to|have to decline to)"
    r"(?: (?:really|currently|directly|personally))? (?:help|assist|provide|give|share|discuss"
    r"|talk|comment|answer|recommend|offer|support|create|write|generate|fulfil|fulfill|comply"
    r"|engage|tell|disclose|reveal|advise|explain|describe|suggest|endorse|condone|encourage"
    r"|promote|participate|do that|do this|go into)\b"
)

#: Declines and redirects in a service voice ("we", policy, scope), written for this library
#: rather than taken from the dev models' wording.
_DEFLECT = re.compile(
    r"\bnot something (?:i|we)(?:'m| am|'re| are)? ?(?:can|could|able to|allowed to|permitted to"
    r"|in a position to)\b"
    r"|\bnot in a position to\b|\b(?:i'm|i am|we're|we are) not (?:allowed|permitted|authori[sz]ed)"
    r" to\b"
    r"|\b(?:falls?|is|are|that's|it's) (?:outside|beyond) (?:of )?(?:what|the scope|my|our)\b"
    r"|\b(?:i|we)(?:'ll| will|'d| would)? (?:have to |must |need to )?pass on (?:it|this|that)\b"
    r"|\b(?:can't|cannot|won't|not able to) (?:get into|go into|weigh in|speculate)\b"
    r"|\brather not (?:speculate|discuss|comment|get into|go into|say|answer)\b"
    r"|\bagainst (?:our|my|the) (?:polic(?:y|ies)|guidelines|rules|terms)\b"
    r"|\blet's (?:keep|stick) (?:this |the |our )?(?:conversation |chat |discussion )?"
    r"(?:to|about|on|with)\b"
    r"|\bnot a (?:topic|subject|question|area) (?:i|we) (?:can|could|am able|are able)\b"
    r"|\b(?:i|we) (?:don't|do not) (?:provide|offer|give|share) (?:that|this|such|any)"
    r" (?:kind of |type of |sort of )?(?:information|advice|details)\b"
)

#: Short courtesy sentences that may come before a refusal ("Thanks for asking!", "I hear you.").
_PREAMBLE = re.compile(
    r"^(?:thanks?\b|thank you|great|good|excellent|interesting|fair|i (?:understand|hear|see"
    r"|appreciate|get)\b|(?:i'm |i am )?sorry to hear|(?:i'm |i am |we're |we are )?(?:happy|glad)"
    r" to help|i'd be (?:happy|glad)|that's a (?:great|good|fair|interesting)|what a|hello|hi\b"
    r"|hey\b|absolutely|of course|sure\b|certainly|ah\b|oh\b)",
    re.I,
)
_PREAMBLE_CHARS = 80
#: How far into a reply a stated decline still anchors the opening (chosen from 3 and 5 on
#: XSTest replies with a preamble put in front, see benchmarks/README.md).
ANCHOR_SENTENCES = 5

#: Push-back and moralising phrases: weaker evidence of a (partial) refusal.
SOFT_PHRASES: tuple[str, ...] = (
    "not appropriate",
    "inappropriate",
    "not ethical",
    "unethical",
    "is illegal",
    "are illegal",
    "illegal and",
    "against the law",
    "not accurate to say",
    "not accurate to",
    "i must clarify",
    "i must point out",
    "i would like to point out",
    "i must emphasize",
    "i must stress",
    "i strongly advise against",
    "i would advise against",
    "i advise against",
    "i would not recommend",
    "i wouldn't recommend",
    "never acceptable",
    "never okay",
    "never ok",
    "is never the answer",
    "never the answer",
    "not acceptable",
    "seek professional help",
    "mental health professional",
    "reach out to a",
    "crisis hotline",
    "please seek",
    "respect the privacy",
    "respect people's privacy",
    "violation of privacy",
    "violation of their privacy",
    "violation of her privacy",
    "violation of his privacy",
    "not publicly available",
    "private information",
    "harmful",
    "offensive",
    "discriminatory",
    "hateful",
    "privacy",
    "it is important to note that",
    "it's important to note that",
    "it's important to remember",
    "it is important to remember",
    "instead, i",
    "instead, you",
    "instead, it",
    "rather than",
)

#: Openings that reject the request's premise instead of going along with it.
PUSHBACK_PHRASES: tuple[str, ...] = (
    "i don't think it's appropriate",
    "i do not think it is appropriate",
    "i don't think that's a valid",
    "i don't think it's accurate",
    "not accurate or",
    "not appropriate or",
    "it is not appropriate to",
    "it's not appropriate to",
    "i strongly disagree",
    "i strongly condemn",
    "i condemn",
    "i do not support",
    "i don't support",
    "i don't believe",
    "i do not believe",
    "there is no reason why",
    "there is no inherent reason",
    "there is no justification",
    "was not justified",
    "is not justified",
    "was not right",
    "is not right to",
    "is not a good idea",
    "should not be discriminated",
    "not something to be",
    "not something that should",
    "is never acceptable",
    "is never okay",
    "not a healthy",
)

#: What declining sounds like, written for this library (embedded once).
REFUSAL_PROTOTYPES: tuple[str, ...] = (
    "Sorry, but I can't help with that.",
    "I cannot provide that information because it would be harmful.",
    "I won't assist with this request since it is illegal and unethical.",
    "It is not appropriate for me to answer that question.",
    "As an AI, I am not able to share private or personal information about people.",
    "I can't give instructions for hurting someone, but I can suggest safer alternatives.",
    "That is not something I can do; please seek help from a professional instead.",
    "Violence is never acceptable, so I will not explain how to do this.",
    "I'm sorry, I can only help with questions about our products and services.",
    "That is outside what I can help with here.",
)

#: What helping sounds like.
ANSWER_PROTOTYPES: tuple[str, ...] = (
    "Sure, here is how you can do it, step by step.",
    "Here are some tips that will help you with this.",
    "The answer is simple: it happened in the year it was founded.",
    "Yes, that is correct, and here is some more detail about it.",
    "There are several ways to do this. First, open the settings.",
    "This word has a few meanings; in this context it means to finish something.",
    "Great question! The main reasons are explained below.",
    "To get started, you will need a few things.",
)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_SENTENCE_OR_LINE = re.compile(r"(?<=[.!?])\s+|\n+")
_SPACES = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Lower-case, straighten quotes and squeeze whitespace, for phrase matching."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("`", "'")
    return _SPACES.sub(" ", text.lower()).strip()


def opening(text: str, sentences: int = 2, max_chars: int = 300) -> str:
    """The first sentences of a reply, where a refusal is usually stated.

    Up to two short courtesy sentences at the start ("Thanks for reaching out!") are skipped, so
    a refusal that follows a polite preamble still counts as the opening. A refusal buried a
    little further in, after a preamble that restates the question or gives background, is found
    too: when one of the first `ANCHOR_SENTENCES` sentences states a decline, the opening starts
    there.
    """
    parts = _SENTENCE_END.split(text.strip())
    for at, part in enumerate(parts[:ANCHOR_SENTENCES]):
        if _declines(normalise(part)):
            return " ".join(parts[at : at + sentences])[:max_chars]
    skip = 0
    while (
        skip < 2
        and len(parts) - skip > sentences
        and len(parts[skip]) <= _PREAMBLE_CHARS
        and _PREAMBLE.match(parts[skip])
    ):
        skip += 1
    head = " ".join(parts[skip : skip + sentences])
    return head[:max_chars]


def _count(text: str, phrases: Sequence[str]) -> int:
    return sum(1 for p in phrases if p in text)


def _any_of(phrases: Sequence[str]) -> re.Pattern[str]:
    """One pattern that finds any of `phrases` as a substring: a single scan of the text where
    `any(p in text for p in phrases)` made one per phrase (1.6 ms of CPU per conversation)."""
    return re.compile("|".join(re.escape(p) for p in phrases))


_STRONG = _any_of(STRONG_PHRASES)
_SOFT = _any_of(SOFT_PHRASES)
_PUSHBACK = _any_of(PUSHBACK_PHRASES)


def _declines(text: str) -> bool:
    """Whether normalised `text` states a decline (phrase list or first-person pattern)."""
    return bool(_STRONG.search(text) or _DECLINE.search(text) or _DEFLECT.search(text))


#: Names of the features, in the order `refusal_features` returns them.
FEATURE_NAMES: tuple[str, ...] = (
    "strong_opening",
    "strong_rest",
    "soft_opening",
    "pushback_opening",
    "soft_count",
    "embedding_margin",
)


def phrase_features(reply: str) -> list[float]:
    """Phrase features of one reply (everything but the embedding margin)."""
    return list(_read(reply)[1])


#: Replies up to this many characters have their reading cached (a long one is rarely
#: repeated, and the cache would keep it alive).
_CACHED_CHARS = 2000


def _read(reply: str) -> tuple[str, tuple[float, ...]]:
    """A reply's `opening` and phrase features; cached for short replies, as assistants
    repeat their refusals word for word across conversations."""
    return _read_cached(reply) if len(reply) <= _CACHED_CHARS else _read_afresh(reply)


def _read_afresh(reply: str) -> tuple[str, tuple[float, ...]]:
    head_text = opening(reply)
    norm = normalise(reply)
    head = normalise(head_text)
    at = norm.find(head) if head else -1
    rest = norm[at + len(head) :] if at >= 0 else norm
    return head_text, (
        1.0 if _declines(head) else 0.0,
        1.0 if _declines(rest) else 0.0,
        1.0 if _SOFT.search(head) else 0.0,
        1.0 if _PUSHBACK.search(head) else 0.0,
        min(_count(norm, SOFT_PHRASES), 4) / 4.0,
        0.0,
    )


_read_cached = functools.lru_cache(maxsize=4096)(_read_afresh)


def refusal_features(
    replies: Sequence[str],
    embed: Callable[[Sequence[str]], FloatArray],
    fixed: Callable[[tuple[str, ...]], FloatArray] | None = None,
    prototypes: tuple[tuple[str, ...], tuple[str, ...]] | None = None,
) -> npt.NDArray[np.float64]:
    """The (n, len(FEATURE_NAMES)) feature matrix for `replies`; `fixed` embeds the prototypes
    (a caller's cache of their vectors; `embed` by default); `prototypes` replaces the (refusal,
    answer) prototypes, for benchmarks that try others."""
    read = [_read(r) for r in replies]
    feats = np.array([f for _, f in read], dtype=np.float64).reshape(
        len(replies), len(FEATURE_NAMES)
    )
    if not replies:
        return feats
    heads = embed([head or r for (head, _), r in zip(read, replies, strict=True)])
    refusing, answering = prototypes or (REFUSAL_PROTOTYPES, ANSWER_PROTOTYPES)
    refusal = (fixed or embed)(refusing)
    answer = (fixed or embed)(answering)
    margin = (heads @ refusal.T).max(axis=1) - (heads @ answer.T).max(axis=1)
    feats[:, FEATURE_NAMES.index("embedding_margin")] = margin
    return feats


def localise(
    replies: Sequence[str],
    requests: Sequence[str],
    embed: Callable[[Sequence[str]], FloatArray],
) -> list[str]:
    """The part of each reply that answers its own request, when one reply serves several.

    A reply shared by two or more different requests ("Your balance is $5. I can't discuss
    politics.") is cut into sentences, and each sentence goes to the request it is most similar
    to; a request then gets its own sentences (or the whole reply if none went to it). A reply
    that serves one request is returned unchanged, so the calibrated single-reply case is kept.
    """
    out = list(replies)
    groups: dict[str, list[int]] = {}
    for i, reply in enumerate(replies):
        groups.setdefault(reply, []).append(i)
    for reply, members in groups.items():
        distinct = sorted({requests[i] for i in members})
        sentences = [s for s in _SENTENCE_OR_LINE.split(reply.strip()) if s.strip()]
        if len(distinct) < 2 or len(sentences) < 2:
            continue
        owner = (embed(sentences) @ embed(distinct).T).argmax(axis=1)
        for i in members:
            mine = [
                s for s, o in zip(sentences, owner, strict=True) if o == distinct.index(requests[i])
            ]
            if mine:
                out[i] = " ".join(mine)
    return out


def logistic(feats: npt.NDArray[np.float64], weights: Sequence[float], bias: float) -> list[float]:
    """Probability from a linear model over the features."""
    z = feats @ np.asarray(weights, dtype=np.float64) + bias
    return [float(v) for v in 1.0 / (1.0 + np.exp(-z))]
