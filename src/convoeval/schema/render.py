"""Two renderings of a conversation: Ragas's `pretty_repr` (byte-for-byte) and a judge transcript.

The judge transcript keeps what `pretty_repr` loses (message indexes, tool-call ids, arguments as
JSON, system messages) and fences the conversation so a judge reads it as data, not instructions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from convoeval.schema.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage


def pretty_repr(messages: Sequence[Any]) -> str:
    """Render as Ragas does: `Human:`, `AI:` (only when it has text), `Tools:`, `ToolOutput:`."""
    lines: list[str] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            lines.append(f"Human: {message.content}")
        elif isinstance(message, AIMessage):
            if message.content:
                lines.append(f"AI: {message.content}")
            if message.tool_calls is not None:
                lines.append("Tools:")
                lines.extend(f"  {call.name}: {call.args}" for call in message.tool_calls)
        elif isinstance(message, ToolMessage):
            lines.append(f"ToolOutput: {message.content}")
        elif isinstance(message, SystemMessage):
            lines.append(f"System: {message.content}")
    return "\n".join(lines)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


_FENCE = re.compile(r"([<>])\1\1+")


def defang(text: str) -> str:
    """Break fence markers (`<<<`, `>>>`) inside conversation text, so a message cannot close
    the region a judge reads as data and speak as the prompt."""
    return _FENCE.sub(lambda run: " ".join(run.group()), text)


def render_message(index: int, message: Any) -> str:
    """One message of a judge transcript, prefixed with its index in the conversation."""
    content = defang(message.content)
    if isinstance(message, HumanMessage):
        return f"[{index}] User: {content}"
    if isinstance(message, SystemMessage):
        return f"[{index}] System: {content}"
    if isinstance(message, ToolMessage):
        ref = f" for call {defang(message.tool_call_id)}" if message.tool_call_id else ""
        return f"[{index}] Tool result{ref}: {content}"
    lines = [f"[{index}] Assistant: {content}" if content else f"[{index}] Assistant:"]
    for call in message.tool_calls or []:
        ref = f" (id {defang(call.id)})" if call.id else ""
        lines.append(f"    calls tool {defang(call.name)}{ref} with {defang(_json(call.args))}")
    return "\n".join(lines)


def render_transcript(messages: Sequence[Any], start: int = 0) -> str:
    """The conversation for a judge: one indexed block per message, inside a fenced region."""
    body = "\n".join(render_message(start + i, m) for i, m in enumerate(messages))
    return f"<<<TRANSCRIPT\n{body}\nTRANSCRIPT>>>"
