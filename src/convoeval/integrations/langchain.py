"""Convert LangChain / LangGraph messages to and from `MultiTurnSample`, losslessly.

Accepted: `BaseMessage` objects (`HumanMessage`, `AIMessage`, `AIMessageChunk`, `ToolMessage`,
`SystemMessage`, `ChatMessage`, `FunctionMessage`), their `messages_to_dict` form
(`{"type": ..., "data": {...}}`), their `lc` serialisation (`message.to_json()`), and a LangGraph
state dict `{"messages": [...], ...}` (its other keys go to the sample's metadata under
`"langgraph_state"`). Consecutive `AIMessageChunk` objects are merged with `+` (as a stream is)
unless both carry different ids; a chunk given as a dict is taken as a whole message.

Tool calls come from `AIMessage.tool_calls` (provider-independent); when that is empty they come
from OpenAI's `additional_kwargs["tool_calls"]` (or the legacy `function_call`). List content:
text parts (strings and `{"type": "text"}` blocks) are joined without separator, as LangChain's
`.text` does; the list itself is kept. Every LangChain-only field with a non-default value (message
`id`, `name`, `additional_kwargs`, `response_metadata`, `usage_metadata`, `invalid_tool_calls`,
`status`, `artifact`, list content, chunk type) is kept in the message's metadata under
`"langchain_message"`, so `to_langchain_messages(from_langchain_messages(m))` equals `m`.
Needs `langchain-core` only for objects; the dict forms are the io layout
(`convoeval.io.langchain_layout`), which this module builds on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from convoeval.integrations._common import require
from convoeval.integrations._tools import with_tools
from convoeval.io._convert import as_list
from convoeval.io.langchain_layout import (
    LANGCHAIN_KEY,
    from_langchain_items,
    is_langchain_dicts,
    to_langchain_dicts,
    unwrap_state,
)
from convoeval.schema.messages import Message
from convoeval.schema.sample import MultiTurnSample

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = [
    "LANGCHAIN_KEY",
    "from_langchain_messages",
    "is_langchain_dicts",
    "to_langchain_dicts",
    "to_langchain_messages",
]


def from_langchain_messages(
    messages: Any, *, tools: Any = None, **sample_fields: Any
) -> MultiTurnSample:
    """Build a `MultiTurnSample` from LangChain messages, their dicts, or a LangGraph state.

    `tools` (LangChain tools, functions, pydantic classes or spec dicts, or a model with bound
    tools from `bind_tools`) become `available_tools` through `convert_to_openai_tool`.
    `sample_fields` are the other sample fields (`reference_topics`, `id`, ...). Every problem is
    collected and raised at once as `ConversionError`, with paths such as `messages[3].tool_calls`.
    """
    messages, fields = unwrap_state(messages, with_tools(sample_fields, tools))
    return from_langchain_items(_merged_chunks(as_list("messages", messages)), fields)


def to_langchain_messages(sample: MultiTurnSample | Sequence[Message]) -> list[BaseMessage]:
    """The conversation as LangChain message objects (needs `langchain-core`)."""
    module = require("langchain_core.messages", "langchain-core", "langchain")
    result: list[BaseMessage] = module.messages_from_dict(to_langchain_dicts(sample))
    return result


def _merged_chunks(items: list[Any]) -> list[tuple[str, Any]]:
    """Pair items with their paths, merging runs of `AIMessageChunk` objects into one message."""
    runs: list[tuple[int, int, Any]] = []
    for index, item in enumerate(items):
        if runs and _is_chunk(item) and _is_chunk(runs[-1][2]) and _same_stream(runs[-1][2], item):
            runs[-1] = (runs[-1][0], index, runs[-1][2] + item)
        else:
            runs.append((index, index, item))
    return [
        (f"messages[{first}]" if first == last else f"messages[{first}:{last + 1}]", item)
        for first, last, item in runs
    ]


def _is_chunk(item: Any) -> bool:
    return not isinstance(item, Mapping) and getattr(item, "type", None) == "AIMessageChunk"


def _same_stream(left: Any, right: Any) -> bool:
    return left.id is None or right.id is None or left.id == right.id
