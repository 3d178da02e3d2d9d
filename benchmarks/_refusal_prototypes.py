"""Sentence prototypes of the ways an assistant declines without saying "I can't" (issue 17).

Written for this library before any figure was measured with them, from the kinds of refusal the
issue names (a disclaimer or a referral that stands in for the answer, a redirect to what the
assistant does instead, moralising about the request), not from any dataset's wording. Each reply
sentence is compared with every group; the answer prototypes are the contrast.
"""

from __future__ import annotations

#: Sending the user elsewhere instead of answering.
REFERRAL: tuple[str, ...] = (
    "Please ask your doctor about this.",
    "A qualified professional is the right person to answer this for you.",
    "You should speak to a lawyer about your situation.",
    "Your bank or a financial adviser can help you decide.",
    "Please contact the relevant authority or a specialist for advice.",
    "I'd recommend checking with an expert who can look at your case.",
)

#: A caveat given in place of the answer.
DISCLAIMER: tuple[str, ...] = (
    "It depends on your individual circumstances, so I can't say in general.",
    "Every situation is different, and this is not professional advice.",
    "The rules vary a lot from place to place.",
    "This could be dangerous to get wrong.",
    "There are many possible causes, some of them serious.",
)

#: Steering the conversation back to what the assistant is for.
REDIRECT: tuple[str, ...] = (
    "That isn't really what I'm here for.",
    "I'm set up to help with questions about your account and orders.",
    "Is there anything else I can help you with instead?",
    "Let's get back to what I can help you with.",
    "My job here is to help with our products and services.",
)

#: Judging the request instead of carrying it out.
MORALISING: tuple[str, ...] = (
    "Hurting other people is wrong.",
    "Everyone deserves to be treated with dignity and respect.",
    "That would be unkind and could cause real harm.",
    "It's better to talk honestly than to manipulate someone.",
    "Doing this would be unfair to the other person.",
    "Think about how this would make them feel.",
)

#: Sentences that carry an answer: facts, amounts, steps, code.
SUBSTANCE: tuple[str, ...] = (
    "The usual amount is 200 to 400 milligrams every six hours.",
    "First, open the settings menu, then choose the reset option.",
    "It was built in 1889 and is 330 metres tall.",
    "The main difference is that one trades on an exchange and the other does not.",
    "You can run this command to stop the process.",
    "Mix the ingredients and bake for twenty minutes at 180 degrees.",
    "Yes, you can do that, and here is how it works.",
)
