"""Two renderings of a conversation: Ragas's `pretty_repr` (byte-for-byte) and a judge transcript.

The judge transcript keeps what `pretty_repr` loses (message indexes, tool-call ids, arguments as
JSON, system messages), fences the conversation so a judge reads it as data, not instructions, and
makes message boundaries unforgeable: a line starting `[n] ` at the margin is always a real message,
because every further line of a message's text is indented as a `    | ` continuation. The helpers
`quote`, `bullets`, `block` and `fenced` do the same for every other value from data in a prompt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from convoeval.schema.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

#: Key, in a message's metadata, of the DeepEval `Turn` fields a message has no place for.
TURN_KEY = "deepeval_turn"


def turn_retrieval_context(message: Any) -> list[str] | None:
    """The DeepEval `retrieval_context` a message's turn carried, if any."""
    extra = (message.metadata or {}).get(TURN_KEY)
    context = extra.get("retrieval_context") if isinstance(extra, dict) else None
    return [str(c) for c in context] if context else None


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
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text.translate(_RAW_BREAKS)


_FENCE = re.compile(r"([<>])\1\1+")
#: Line breaks that JSON does not escape, as JSON escapes.
_RAW_BREAKS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}
#: What a continuation line of a message starts with; a real message line starts with `[n] `.
CONTINUATION = "    | "


def defang(text: str) -> str:
    """Break fence markers (`<<<`, `>>>`) inside conversation text, so a message cannot close
    the region a judge reads as data and speak as the prompt."""
    return _FENCE.sub(lambda run: " ".join(run.group()), text)


def quote(value: str) -> str:
    """One value from data as a JSON string literal: one line, quotes and every kind of line
    break escaped (JSON leaves NEL, U+2028 and U+2029 raw), so a label or topic can never start a
    line (or a section) of the prompt."""
    return defang(json.dumps(value, ensure_ascii=False).translate(_RAW_BREAKS))


def bullets(values: Sequence[str]) -> str:
    """Values from data as `- "value"` lines, one per value (see `quote`)."""
    return "\n".join(f"- {quote(value)}" for value in values)


def block(text: str) -> str:
    """Free text from data (a message, a reference answer) as lines that cannot pass for prompt
    lines: the first line as is, every further line (after any kind of line break, including
    `\\r`, U+2028 and friends) prefixed with `CONTINUATION`; fence markers broken."""
    lines = defang(text).splitlines() or [""]
    return ("\n" + CONTINUATION).join(lines)


def fenced(label: str, text: str) -> str:
    """Free text from data in its own fenced region (`<<<LABEL` ... `LABEL>>>`), as a `block`."""
    return f"<<<{label}\n{CONTINUATION}{block(text)}\n{label}>>>"


def render_message(index: int, message: Any, *, retrieval: bool = False) -> str:
    """One message of a judge transcript, prefixed with its index in the conversation.

    Only the first line of a message starts at the margin (`[index] Role: ...`); the rest of
    its text is on `CONTINUATION` lines and its tool calls on `    calls tool` lines, with names
    and ids as one-line values: text inside a message cannot forge another message's line.
    With `retrieval`, a DeepEval turn's `retrieval_context` follows on a `    retrieved context`
    line (a JSON list), as the context that turn was given.
    """
    line = _render_one(index, message)
    context = turn_retrieval_context(message) if retrieval else None
    if context:
        line += f"\n    retrieved context: {defang(_json(context))}"
    return line


def _render_one(index: int, message: Any) -> str:
    content = block(message.content)
    if isinstance(message, HumanMessage):
        return f"[{index}] User: {content}"
    if isinstance(message, SystemMessage):
        return f"[{index}] System: {content}"
    if isinstance(message, ToolMessage):
        ref = f" for call {_one_line(message.tool_call_id)}" if message.tool_call_id else ""
        return f"[{index}] Tool result{ref}: {content}"
    lines = [f"[{index}] Assistant: {content}" if message.content else f"[{index}] Assistant:"]
    for call in message.tool_calls or []:
        ref = f" (id {_one_line(call.id)})" if call.id else ""
        lines.append(f"    calls tool {_one_line(call.name)}{ref} with {defang(_json(call.args))}")
    return "\n".join(lines)


def _one_line(text: str) -> str:
    """A name or id as is when it is one plain line, else as a JSON string literal."""
    return defang(text) if text.isprintable() else quote(text)


def render_transcript(messages: Sequence[Any], start: int = 0, *, retrieval: bool = False) -> str:
    """The conversation for a judge: one indexed block per message, inside a fenced region.

    `start` is the index of the first message given (for a part of a longer conversation);
    `retrieval` shows each turn's DeepEval `retrieval_context` (see `render_message`).
    """
    body = "\n".join(
        render_message(start + i, m, retrieval=retrieval) for i, m in enumerate(messages)
    )
    return f"<<<TRANSCRIPT\n{body}\nTRANSCRIPT>>>"
