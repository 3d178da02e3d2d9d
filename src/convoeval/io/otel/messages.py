"""The messages read from spans, before they become a conversation: `Msg`, `Call`, `ToolRun`,
and the two message shapes every convention uses, GenAI parts and OpenAI-style chat messages.

A convention reader (`genai.py`, `openinference.py`) turns a span into a `Call` (one model call:
the messages sent, the messages returned, the tools offered) or a `ToolRun` (one tool executed);
`assemble.py` merges them into one conversation. Problems are `path: what` strings that the
caller prefixes with the span.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from convoeval.io import strict_json
from convoeval.io._convert import arguments, kind
from convoeval.io.otel.spans import Span
from convoeval.schema.messages import ToolCall

#: Roles of every convention -> message kind.
ROLES = {
    "system": "system",
    "developer": "system",
    "user": "human",
    "human": "human",
    "assistant": "ai",
    "model": "ai",
    "ai": "ai",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
}


@dataclass(slots=True)
class Msg:
    """One message: kind (human, ai, tool, system), text, tool calls, the call a tool message
    answers, extra fields kept in its metadata, and the span that recorded it. `content` is
    None for a tool result that was not recorded (filled in if a later call re-sends it)."""

    kind: str
    content: str | None
    calls: list[ToolCall] | None = None
    call_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    span: Span | None = None

    def key(self) -> tuple[Any, ...]:
        """What makes two recordings the same message (a re-sent history is matched by it)."""
        if self.kind == "tool":
            return ("tool", self.call_id) if self.call_id else ("tool", self.content)
        calls = tuple((c.name, json.dumps(c.args, sort_keys=True), c.id) for c in self.calls or ())
        return (self.kind, self.content or "", calls)


@dataclass(slots=True)
class Call:
    """One model call: what was sent (`input`), what came back (`output`, first choice first),
    the tools offered, and whether any message content was recorded at all."""

    span: Span
    input: list[Msg]
    output: list[Msg]
    tools: list[Any] = field(default_factory=list)
    recorded: bool = True
    source: str = ""
    model: str | None = None
    provider: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    finish_reasons: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ToolRun:
    """One tool execution: its name, the call id it answers, its arguments and result (None
    when not recorded)."""

    span: Span
    name: str | None
    call_id: str | None
    arguments: Any = None
    result: str | None = None
    source: str = ""


def recorded_json(value: Any, where: str, problems: list[str]) -> Any:
    """A value recorded as JSON text (span attributes) or already structured (log records),
    parsed by the strict JSON rules; None (with a problem) when the text is not JSON."""
    if not isinstance(value, str):
        return value
    try:
        return strict_json.loads(value, where)
    except json.JSONDecodeError as exc:
        problems.append(
            f"{where}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        )
    except strict_json.StrictJSONError as exc:
        problems.append(str(exc))
    return None


def text_of(value: Any) -> str | None:
    """Message content as text: a string, or the text of content parts (OpenAI's `{"type":
    "text", "text"}`, GenAI's `{"type": "text", "content"}`); None when there is none."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [
            part.get("text", part.get("content"))
            for part in value
            if isinstance(part, Mapping) and part.get("type") in ("text", "input_text", None)
        ]
        return "".join(t for t in texts if isinstance(t, str))
    return dumps(value)


def dumps(value: Any) -> str:
    """A recorded value as message text: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def tool_call(where: str, data: Any, problems: list[str]) -> ToolCall | None:
    """A tool call in any of the shapes seen: `{"id", "name", "arguments"}` (GenAI parts,
    OpenLLMetry) or `{"id", "function": {"name", "arguments"}}` (OpenAI, OpenInference)."""
    if not isinstance(data, Mapping):
        problems.append(f"{where}: a tool call must be an object, got {kind(data)}")
        return None
    function = data.get("function")
    source = function if isinstance(function, Mapping) else data
    name = source.get("name")
    if not isinstance(name, str) or not name:
        problems.append(f"{where}.name: a tool call needs the name of its tool")
        return None
    raw = source.get("arguments")
    args = {} if raw is None else arguments(f"{where}.arguments", raw, problems)
    call_id = data.get("id")
    if call_id is not None and not isinstance(call_id, str):
        problems.append(f"{where}.id: must be a string, got {kind(call_id)}")
        return None
    return ToolCall(name=name, args=args or {}, id=call_id or None)


def chat_message(where: str, data: Any, span: Span, problems: list[str]) -> Msg | None:
    """An OpenAI-style chat message (`role`, `content`, `tool_calls`, `tool_call_id`)."""
    if not isinstance(data, Mapping):
        problems.append(f"{where}: a message must be an object, got {kind(data)}")
        return None
    role = data.get("role")
    message_kind = ROLES.get(role) if isinstance(role, str) else None
    if message_kind is None:
        problems.append(f"{where}.role: unknown role {role!r} (expected {', '.join(ROLES)})")
        return None
    calls = None
    if data.get("tool_calls"):
        raw_calls = data["tool_calls"]
        if not isinstance(raw_calls, list):
            problems.append(f"{where}.tool_calls: must be a list, got {kind(raw_calls)}")
            return None
        found = [
            tool_call(f"{where}.tool_calls[{i}]", c, problems) for i, c in enumerate(raw_calls)
        ]
        calls = [c for c in found if c is not None]
    call_id = data.get("tool_call_id", data.get("id") if message_kind == "tool" else None)
    extra = {k: data[k] for k in ("name", "finish_reason") if data.get(k) is not None}
    return Msg(
        message_kind,
        text_of(data.get("content")) or "",
        calls if message_kind == "ai" else None,
        call_id if message_kind == "tool" and isinstance(call_id, str) else None,
        extra,
        span,
    )


def part_messages(where: str, data: Any, span: Span, problems: list[str]) -> list[Msg]:
    """A GenAI semantic-conventions message (`role`, `parts`, `finish_reason`) as messages: its
    `tool_call_response` parts become tool messages of their own (one per call answered)."""
    if not isinstance(data, Mapping):
        problems.append(f"{where}: a message must be an object, got {kind(data)}")
        return []
    role = data.get("role")
    message_kind = ROLES.get(role) if isinstance(role, str) else None
    if message_kind is None:
        problems.append(f"{where}.role: unknown role {role!r} (expected {', '.join(ROLES)})")
        return []
    parts = data.get("parts")
    if not isinstance(parts, list):
        problems.append(f"{where}.parts: must be a list, got {kind(parts)}")
        return []
    texts: list[str] = []
    calls: list[ToolCall] = []
    answers: list[Msg] = []
    others: list[Any] = []
    for index, part in enumerate(parts):
        at = f"{where}.parts[{index}]"
        part_type = part.get("type") if isinstance(part, Mapping) else None
        if part_type == "text" and isinstance(part.get("content"), str):
            texts.append(part["content"])
        elif part_type == "tool_call":
            call = tool_call(at, part, problems)
            if call is not None:
                calls.append(call)
        elif part_type == "tool_call_response":
            call_id = part.get("id")
            answers.append(Msg("tool", dumps(part.get("response")), None, _str(call_id), {}, span))
        elif isinstance(part_type, str):
            others.append(part)  # reasoning, blob, file, uri, ...: kept in the metadata
        else:
            problems.append(f"{at}: a part needs a 'type' (text, tool_call, ...)")
    extra: dict[str, Any] = {k: data[k] for k in ("name", "finish_reason") if data.get(k)}
    if others:
        extra["parts"] = others
    if answers and not texts and not calls:
        return answers
    content = "".join(texts)
    if message_kind == "tool":
        call_id = _str(data.get("id") or data.get("tool_call_id"))
        return [Msg("tool", content, None, call_id, extra, span)]
    ai_calls = (calls or None) if message_kind == "ai" else None
    return [Msg(message_kind, content, ai_calls, None, extra, span), *answers]


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def unflatten(attributes: Mapping[str, Any], prefix: str, problems: list[str]) -> list[Any]:
    """The list that flattened attributes hold (`prefix.0.message.role` ... as OpenInference and
    OpenLLMetry write them) as a list of nested dicts; a missing index is a problem."""
    start = prefix + "."
    tree: dict[str, Any] = {}
    for key, value in attributes.items():
        if not key.startswith(start):
            continue
        node = tree
        *parents, leaf = key[len(start) :].split(".")
        for name in parents:
            child = node.setdefault(name, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            node[leaf] = value
    listed = _listed(tree, prefix, problems)
    return listed if isinstance(listed, list) else []


def _listed(node: Any, path: str, problems: list[str]) -> Any:
    """Dicts keyed 0..n-1 become lists, depth first."""
    if not isinstance(node, dict):
        return node
    items = {key: _listed(value, f"{path}.{key}", problems) for key, value in node.items()}
    if not items or not all(key.isdigit() for key in items):
        return items
    indexes = sorted(int(key) for key in items)
    if indexes != list(range(len(indexes))):
        missing = next(i for i in range(len(indexes) + 1) if i not in indexes)
        problems.append(f"{path}.{missing}: missing (the indexes must run 0, 1, 2, ...)")
    return [items[str(index)] for index in indexes]
