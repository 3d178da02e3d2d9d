"""Deterministic benchmark conversations: support chats with in- and out-of-scope requests.

Shared by traffic.py, speed.py and overhead.py so every benchmark scores the same kind of data.
Each conversation is a Ragas-layout dict with `reference_topics` and, when asked for, tool calls
and `reference_tool_calls` (so the tool-call metrics have something to compare).
"""

from __future__ import annotations

import random
from typing import Any

SEED = 20261130
REFERENCE_TOPICS = ["banking", "credit cards", "travel"]

_IN_SCOPE = [
    (
        "How do I raise the limit on my credit card ending {n}?",
        "You can ask for a higher limit "
        "in the app under Cards > Limits; a decision usually takes {k} days.",
    ),
    (
        "What is the fee for a transfer of {n} euros to another bank?",
        "A transfer of {n} euros to another bank costs {k} euros and arrives the next working day.",
    ),
    (
        "Can I use my card abroad when I travel to Spain in {n} days?",
        "Yes, the card works abroad; turn on travel mode {k} days before you leave.",
    ),
    (
        "Why was payment {n} declined at the hotel?",
        "Payment {n} was declined because the daily limit of {k}00 euros was reached.",
    ),
    (
        "How do I open a savings account with {n} euros?",
        "Open it in the app with at least {k} euros; the {n} euros can be moved in at once.",
    ),
    (
        "Is travel insurance included with card plan {n}?",
        "Plan {n} includes travel insurance for trips of up to {k} weeks.",
    ),
]
_OUT_OF_SCOPE = [
    (
        "What will the weather be like in Oslo on day {n}?",
        "I can only help with banking, cards "
        "and travel with your card, not with weather forecasts.",
    ),
    (
        "Can you write me a poem about {n} cats?",
        "Sorry, I can't help with that; I can answer questions about your account and cards.",
    ),
    (
        "Who won the football match number {n} yesterday?",
        "I'm not able to answer sports questions; is there anything about your account I can do?",
    ),
    (
        "Give me a recipe for {n} pancakes.",
        "Here is a simple recipe: mix {k}00 g flour, {k} eggs and milk, then fry {n} pancakes.",
    ),
]
_TOOLS = ["get_balance", "block_card", "get_transfer_fee", "open_account"]


def _exchange(rng: random.Random, i: int, tools: bool) -> tuple[list[dict[str, Any]], Any]:
    pool = _IN_SCOPE if rng.random() < 0.7 else _OUT_OF_SCOPE
    question, reply = rng.choice(pool)
    n, k = rng.randint(2, 9999), rng.randint(2, 9)
    messages: list[dict[str, Any]] = [{"type": "human", "content": question.format(n=n, k=k)}]
    reference = None
    if tools and pool is _IN_SCOPE:
        name = rng.choice(_TOOLS)
        args = {"account": f"acc-{i}-{n}", "amount": k * 100}
        called = dict(args) if rng.random() < 0.8 else {**args, "amount": k * 10}
        messages.append(
            {
                "type": "ai",
                "content": "Let me look that up.",
                "tool_calls": [{"name": name, "args": called}],
            }
        )
        messages.append({"type": "tool", "content": f'{{"ok": true, "value": {k}}}'})
        reference = {"name": name, "args": args}
    messages.append({"type": "ai", "content": reply.format(n=n, k=k)})
    return messages, reference


def conversations(
    count: int, exchanges: int = 6, *, tools: bool = False, seed: int = SEED
) -> list[dict[str, Any]]:
    """`count` conversations of `exchanges` exchanges each, the same for the same arguments."""
    rng = random.Random(seed)
    out = []
    for c in range(count):
        messages: list[dict[str, Any]] = []
        references: list[Any] = []
        for e in range(exchanges):
            part, reference = _exchange(rng, c * exchanges + e, tools)
            messages.extend(part)
            if reference is not None:
                references.append(reference)
        record: dict[str, Any] = {
            "id": f"bench-{seed}-{c}",
            "user_input": messages,
            "reference_topics": list(REFERENCE_TOPICS),
        }
        if tools:
            record["reference_tool_calls"] = references
        out.append(record)
    return out
