"""The two-exchange conversation the judge tests share: an in-scope question answered, an
off-topic one declined (one verdict per exchange, topic or reply to script); `parcels(n)` gives
n records of it that ask about n different parcels."""

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


def parcels(count: int) -> list[MultiTurnSample]:
    """`count` records of PARCEL, ids r0, r1, ..., record i asking "Where is parcel i?" (so no
    two records send the same request)."""
    rest = PARCEL.user_input[1:]
    return [
        MultiTurnSample(
            user_input=[HumanMessage(content=f"Where is parcel {i}?"), *rest],
            reference_topics=PARCEL.reference_topics,
            id=f"r{i}",
        )
        for i in range(count)
    ]
