"""Convert OpenAI Swarm response messages to and from `MultiTurnSample`, losslessly.

Swarm messages are OpenAI chat dicts plus a `sender` (the agent that spoke) on assistant messages
and a `tool_name` on tool results; `tool_calls` may be absent or null. They are converted by
`convoeval.integrations.openai_chat` (so every rule and error there applies), with the Swarm-only
keys kept in the message's metadata under `"swarm_message"` and written back by
`to_swarm_messages`. A Swarm `Response` object is accepted too: its `messages`, plus its
`context_variables` and final `agent` name in the sample's metadata (`"swarm_response"`).
Swarm itself is not needed (it is not on PyPI): the messages are plain dicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from convoeval.io._convert import as_list
from convoeval.io.errors import ConversionError
from convoeval.io.openai_layout import (
    OpenAIMessagesError,
    from_openai_messages,
    to_openai_messages,
)
from convoeval.schema.messages import Message
from convoeval.schema.sample import MultiTurnSample

__all__ = ["SWARM_KEY", "from_swarm_messages", "to_swarm_messages"]

#: Message-metadata key that holds the Swarm-only keys of a message.
SWARM_KEY = "swarm_message"
_SWARM_FIELDS = ("sender", "tool_name")


def from_swarm_messages(messages: Any, **sample_fields: Any) -> MultiTurnSample:
    """Build a `MultiTurnSample` from Swarm messages (`response.messages`) or a Swarm `Response`.

    `sample_fields` are the other sample fields (`reference_topics`, `id`, ...). Problems are
    raised at once as `ConversionError`, with paths such as `messages[2].tool_calls[0]`.
    """
    fields = dict(sample_fields)
    if hasattr(messages, "messages") and not isinstance(messages, Mapping):
        fields["metadata"] = _response_metadata(messages, fields.get("metadata"))
        messages = messages.messages
    converted: list[Any] = []
    problems: list[str] = []
    for index, raw in enumerate(as_list("messages", messages)):
        if not isinstance(raw, Mapping):
            converted.append(raw)  # openai_chat names the problem
            continue
        swarm = {key: raw[key] for key in _SWARM_FIELDS if key in raw}
        if not swarm:
            converted.append(raw)
            continue
        message = {k: v for k, v in raw.items() if k not in _SWARM_FIELDS}
        metadata = message.get("metadata")
        if metadata is not None and not isinstance(metadata, Mapping):
            problems.append(f"messages[{index}].metadata: must be an object")
            continue
        message["metadata"] = {**(metadata or {}), SWARM_KEY: swarm}
        converted.append(message)
    if problems:
        raise ConversionError(problems)
    try:
        return from_openai_messages(converted, **fields)
    except OpenAIMessagesError as exc:
        raise ConversionError(exc.problems) from None


def to_swarm_messages(sample: MultiTurnSample | Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation as Swarm message dicts (the inverse of `from_swarm_messages`)."""
    out = []
    for message in to_openai_messages(sample):
        metadata = message.get("metadata")
        if isinstance(metadata, dict) and SWARM_KEY in metadata:
            swarm = metadata.pop(SWARM_KEY)
            if not metadata:
                del message["metadata"]
            message.update(swarm)
        out.append(message)
    return out


def _response_metadata(response: Any, metadata: Any) -> dict[str, Any] | None:
    """The sample metadata with the Response's context variables and final agent name added."""
    kept: dict[str, Any] = {}
    context = getattr(response, "context_variables", None)
    if context:
        kept["context_variables"] = dict(context)
    agent = getattr(response, "agent", None)
    if agent is not None:
        kept["agent"] = getattr(agent, "name", str(agent))
    if not kept:
        return dict(metadata) if isinstance(metadata, Mapping) else metadata
    return {**(metadata or {}), "swarm_response": kept}
