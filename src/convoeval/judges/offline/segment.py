"""Request segmentation for topic extraction: split user messages into requests and label them.

Deterministic rules, no model: a message is cut into sentences; greetings, thanks and small talk
are dropped; statements are kept as context for the question or instruction that follows them; a
short topic label is made of the request's first content words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Request:
    """One user request: its text, a short topic label, and the index of its user message."""

    text: str
    topic: str
    message_index: int


_SPLIT = re.compile(
    r"(?<=[.!?])\s+|\n+|;\s+"
    r"|,?\s+(?:and|also|and also|plus)\s+(?=(?:how|what|what's|when|where|why|who|which|can|could"
    r"|would|will|do|does|is|are)\b)",
    re.I,
)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'&+-]*")

#: Whole sentences that are courtesy or small talk, not requests (after lower-casing).
_SMALL_TALK = re.compile(
    r"^(?:(?:hi|hello|hey|hiya|howdy|good (?:morning|afternoon|evening|day)|greetings|yo"
    r"|thanks?(?: you)?(?: (?:so|very) much)?(?: for [^.!?]*)?|thx|ty|cheers|great|cool"
    r"|perfect|awesome|nice|fair enough|ok(?:ay)?|sure|yes|yeah|yep|no|nope|alright|all right"
    r"|got it|i see"
    r"|understood|bye|goodbye|see you|have a (?:nice|good|great) (?:day|one|evening)"
    r"|that'?s (?:all|okay|ok|fine|great|helpful|perfect|it|all right|alright)"
    r"(?: for (?:now|today))?"
    r"|how are you(?: doing)?(?: today)?|nice to meet you|please|sorry|no worries|never ?mind"
    r"|#+\s*stop\s*#+)"
    r"(?:[ ,!.]+(?:there|again|so much|a lot|bot|assistant|everyone|friend))*(?:[ ,!.?]+|$))+$",
    re.I,
)
#: Courtesy at the start of a sentence, stripped before the rest is read.
_LEADING_GREETING = re.compile(
    r"^(?:(?:(?:hi|hello|hey|good (?:morning|afternoon|evening))(?: there)?|thanks|thank you"
    r"|ok(?:ay)?|alright|great|perfect|sure|yes|yeah|no|well)\s*[,!.:-]+|(?:so|also|and|um+|uh+)"
    r"\s+)\s*",
    re.I,
)
#: Openings of a question or an instruction.
_QUESTION_START = re.compile(
    r"^(?:what|whats|what's|how|why|when|where|who|whom|whose|which|can|could|would|will|should"
    r"|shall|do|does|did|is|are|am|was|were|have|has|may|might|tell|show|give|find|help|please"
    r"|book|cancel|set|make|send|check|explain|list|let me|let's|i need|i want|i'd like"
    r"|i would like|i'm looking|i am looking|i wanna)\b",
    re.I,
)
#: Request markers anywhere in a sentence.
_REQUEST_MARKER = re.compile(
    r"\b(?:i need|i want|i'd like|i would like|i wish to|i'm trying to|i am trying to|can you"
    r"|could you|would you|will you|please|let's|help me|i wonder|i was wondering)\b",
    re.I,
)

#: Words that carry no topic (function words, pronouns, request framing).
_STOPWORD_TEXT = """
    a about above after again all also am an and any are as at be because been before being below
    between both but by can could did do does doing done down during each few for from
    further get got had has have having he her here hers him his how i i'd i'll i'm i've if in
    into is it it's its just know let let's like me might more most much must my myself need no
    nor not now of off on once only or other our ours out over own please same she should so some
    such tell than that that's the their them then there these they this those through to too
    under until up very want wanna was we were what what's whats when where which while who whom
    why will with would you you're your yours can't don't doesn't won't isn't aren't cannot could
    help show give find looking wondering thanks thank hi hello hey okay ok may kindly really
    maybe anyone something anything way yes yeah yep sure sorry alright right fine great
    just instead now then actually quick question"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _is_small_talk(sentence: str) -> bool:
    return bool(_SMALL_TALK.match(sentence.strip()))


def _is_request(sentence: str) -> bool:
    s = sentence.strip()
    return s.endswith("?") or bool(_QUESTION_START.match(s) or _REQUEST_MARKER.search(s))


def _strip_courtesy(sentence: str) -> str:
    previous = None
    s = sentence.strip()
    while previous != s:
        previous = s
        s = _LEADING_GREETING.sub("", s).strip()
    return s


def topic_label(text: str, max_words: int = 4) -> str:
    """A short deterministic label: the first few content words of `text`, lower-cased."""
    words = [w.lower().strip("'-") for w in _WORD.findall(text)]
    content: list[str] = []
    for w in words:
        if w and w not in _STOPWORDS and w not in content:
            content.append(w)
        if len(content) == max_words:
            break
    return " ".join(content) if content else " ".join(words[:max_words])


def _content_words(text: str) -> list[str]:
    words = [w.lower().strip("'-") for w in _WORD.findall(text)]
    return [w for w in words if w and w not in _STOPWORDS]


def _split(message: str) -> tuple[list[str], bool]:
    """(requests, whether any sentence carried a question or request marker)."""
    sentences = [s.strip() for s in _SPLIT.split(message) if s and s.strip()]
    kept = [_strip_courtesy(s) for s in sentences if not _is_small_talk(s)]
    kept = [s for s in kept if s and not _is_small_talk(s) and _WORD.search(s)]
    requests: list[str] = []
    pending: list[str] = []
    marked = False
    for sentence in kept:
        pending.append(sentence)
        if not _is_request(sentence):
            continue
        marked = True
        if not _content_words(sentence) and not pending[:-1] and requests:
            requests[-1] = requests[-1] + " " + sentence  # "Can you help with that?"
        else:
            requests.append(" ".join(pending))
        pending = []
    if pending:
        if requests:
            requests[-1] = requests[-1] + " " + " ".join(pending)
        else:
            requests.append(" ".join(pending))
    return requests, marked


def split_message(message: str) -> list[str]:
    """The requests in one message, in order (empty if it is only courtesy or small talk)."""
    return _split(message)[0]


def segment_requests(user_messages: Sequence[str]) -> list[Request]:
    """Every request in the user's messages, labelled, with the index of its message.

    Labels are unique within the call, so answers keyed by topic never collide.

    A message of statements only ("My user ID is 123.") is kept when no request came before it
    (it opens the conversation: "My card was stolen."); later it is taken as an answer to the
    assistant, not as a new request.
    """
    out: list[Request] = []
    used: set[str] = set()
    for index, message in enumerate(user_messages):
        texts, marked = _split(message)
        if not marked and out:
            continue
        for text in texts:
            label = _unique_label(text, used)
            used.add(label)
            out.append(Request(text=text, topic=label, message_index=index))
    return out


def _unique_label(text: str, used: set[str]) -> str:
    """The topic label of `text`, made longer (then numbered) if an earlier request has it."""
    label = topic_label(text)
    if label in used:
        label = topic_label(text, max_words=8)
    base, n = label, 2
    while label in used:
        label = f"{base} ({n})"
        n += 1
    return label
