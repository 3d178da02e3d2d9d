"""Shared pieces of the conversation-judgment tests (issue 13): conversations and scripts."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from convoeval import AIMessage, HumanMessage, MultiTurnSample


def chat(exchanges: int, role: str | None = "A polite bank assistant.") -> MultiTurnSample:
    """`exchanges` user/assistant pairs: user messages at 2i, replies at 2i + 1."""
    messages: list[Any] = []
    for i in range(exchanges):
        messages += [HumanMessage(content=f"user {i}"), AIMessage(content=f"reply {i}")]
    return MultiTurnSample(user_input=messages, chatbot_role=role, id="c")


def keyed(key: str, ok: str, bad: Iterable[int] = ()) -> Callable[[Any], dict[str, Any]]:
    """A judge script: one verdict per expected key, `ok` false (with a reason) for `bad`."""
    wrong = set(bad)

    def answer(inputs: Any) -> dict[str, Any]:
        return {
            "verdicts": [
                {key: k, ok: k not in wrong, "reason": "lost" if k in wrong else ""}
                for k in inputs.expected_keys()
            ]
        }

    return answer
