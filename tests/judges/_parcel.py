"""The two-exchange conversation the judge tests share: an in-scope question answered, an
off-topic one declined (one verdict per exchange, topic or reply to script)."""

from __future__ import annotations

from convoeval import AIMessage, HumanMessage, MultiTurnSample

PARCEL = MultiTurnSample(
    user_input=[
        HumanMessage(content="Where is my parcel?"),
        AIMessage(content="It arrives tomorrow."),
        HumanMessage(content="Which stocks should I buy?"),
        AIMessage(content="Sorry, I can only help with orders."),
    ],
    reference_topics=["orders and shipping"],
)
