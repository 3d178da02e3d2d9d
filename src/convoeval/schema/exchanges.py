"""Split a conversation into exchanges: a user input and everything the assistant did to answer it.

An exchange holds the user's message(s), the intermediate assistant steps (tool calls and tool
results) and the assistant's final reply, if any. Relevancy is judged per exchange.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from convoeval.schema.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage


@dataclass
class Exchange:
    """One user turn and the assistant's answer to it, with positions in the conversation."""

    index: int
    inputs: list[HumanMessage] = field(default_factory=list)
    steps: list[AIMessage | ToolMessage | SystemMessage] = field(default_factory=list)
    reply: AIMessage | None = None
    first: int = 0  # index of the first message of the exchange in the conversation
    last: int = 0  # index of the last message of the exchange

    @property
    def input(self) -> str:
        """The user's words (several consecutive user messages joined by newlines)."""
        return "\n".join(m.content for m in self.inputs)

    @property
    def answered(self) -> bool:
        """Whether the assistant gave a final reply with text."""
        return self.reply is not None and bool(self.reply.content.strip())


def split_exchanges(messages: Sequence[Any]) -> tuple[list[Any], list[Exchange]]:
    """Return (leading messages before the first user message, exchanges).

    Consecutive user messages form one input. The last assistant message with text (and no tool
    call after it) before the next user message is the reply; everything else is a step.
    """
    leading: list[Any] = []
    exchanges: list[Exchange] = []
    current: Exchange | None = None
    for position, message in enumerate(messages):
        if isinstance(message, HumanMessage):
            if current is None or current.steps or current.reply is not None:
                current = Exchange(index=len(exchanges), first=position)
                exchanges.append(current)
            current.inputs.append(message)
        elif current is None:
            leading.append(message)
            continue
        else:
            if current.reply is not None:
                current.steps.append(current.reply)
                current.reply = None
            if isinstance(message, AIMessage) and not message.tool_calls and message.content:
                current.reply = message
            else:
                current.steps.append(message)
        current.last = position
    return leading, exchanges
