"""Refusal detection beyond the dev models' wording: a service voice ("we", policy, scope) and a
decline after a polite preamble are refusals; a negative answer ("we don't ship to ...") is not."""

from __future__ import annotations

import pytest

from convoeval.judges.offline import OfflineKit
from convoeval.judges.offline.refusal import _declines, opening

REFUSALS = [
    "Thanks for reaching out! I understand how frustrating that must be. Unfortunately, investment"
    " advice is not something we can offer here.",
    "Great question. That said, this falls outside what our support team covers, so I'd suggest"
    " asking a licensed financial adviser.",
    "We don't provide that kind of information. Is there anything else about your order I can"
    " help with?",
    "That request goes against our policies, so I'll have to pass on it.",
    "Let's keep this conversation about Voltbox products, please. What can I help you with there?",
]
ANSWERS = [
    "We don't ship to Canada at the moment, but we do ship to the US and the UK.",
    "That damage isn't covered by the warranty, since it was caused by a drop.",
    "Thanks for your patience! Your refund of $41.98 was issued today.",
    "I can't find an order with that number; could you check the confirmation email?",
]


@pytest.mark.parametrize("reply", REFUSALS)
def test_service_style_refusals_are_detected(kit: OfflineKit, reply: str) -> None:
    assert kit.is_refusal([reply]) == [True]


@pytest.mark.parametrize("reply", ANSWERS)
def test_negative_or_polite_answers_are_not_refusals(kit: OfflineKit, reply: str) -> None:
    assert kit.is_refusal([reply]) == [False]


def test_a_refusal_buried_after_a_preamble_anchors_the_opening(kit: OfflineKit) -> None:
    reply = (
        "Breakups are hard. Wanting answers is natural. Reading someone else's email is something"
        " I won't help with, though. A counsellor may help."
    )
    assert opening(reply).startswith("Reading someone else's email is something I won't help")
    assert kit.is_refusal([reply]) == [True]
    late = "One. Two. Three. Four. Five. I can't help with that."  # past the fifth sentence
    assert opening(late) == "One. Two."


def test_opening_skips_a_short_courtesy_preamble() -> None:
    reply = "Thanks for asking! I hear you. Sadly that is not possible. More text follows here."
    assert opening(reply) == "Sadly that is not possible. More text follows here."
    assert opening("Sure! It is easy.") == "Sure! It is easy."  # never skipped down to nothing


@pytest.mark.parametrize(
    "text",
    ["i'm not going to help with that", "i'd rather not give a recipe", "i'm unable to comment"],
)
def test_contracted_first_person_declines_are_matched(text: str) -> None:
    """The decline pattern's contracted forms ("I'm not going to", "I'd rather not") once never
    matched: a space was required between "i" and the apostrophe."""
    assert _declines(text)
