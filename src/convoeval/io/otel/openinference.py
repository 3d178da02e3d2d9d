"""OpenInference attributes (Arize Phoenix): a span as a model call or a tool execution.

An LLM span (`openinference.span.kind` = LLM) holds its messages flattened with indexes:
`llm.input_messages.N.message.role` / `.content` / `.contents.M.message_content.text` /
`.tool_calls.M.tool_call.{id,function.name,function.arguments}` / `.tool_call_id`, the same under
`llm.output_messages`, and the tools offered as `llm.tools.N.tool.json_schema`. A TOOL span
names its tool (`tool.name`), its call (`tool_call.id`, where recorded), its arguments
(`input.value`) and its result (`output.value`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from convoeval.io.otel.messages import (
    Call,
    Msg,
    ToolRun,
    chat_message,
    recorded_json,
    unflatten,
)
from convoeval.io.otel.spans import Span

KIND = "openinference.span.kind"


def is_openinference(span: Span) -> bool:
    """Whether the span speaks OpenInference (its span kind, or LLM messages)."""
    return KIND in span.attributes or any(
        key.startswith(("llm.input_messages.", "llm.output_messages.")) for key in span.attributes
    )


def read_openinference(span: Span, problems: list[str]) -> Call | ToolRun | None:
    """The span's model call (LLM) or tool execution (TOOL); None for any other kind."""
    attributes = span.attributes
    span_kind = str(attributes.get(KIND, "LLM")).upper()
    if span_kind == "TOOL":
        name, call_id = attributes.get("tool.name"), attributes.get("tool_call.id")
        result = attributes.get("output.value")
        return ToolRun(
            span,
            name if isinstance(name, str) and name else None,
            call_id if isinstance(call_id, str) and call_id else None,
            attributes.get("input.value"),
            result if result is None or isinstance(result, str) else json.dumps(result),
            source="openinference TOOL",
        )
    if span_kind != "LLM":
        return None
    sent = _messages(span, "llm.input_messages", problems)
    returned = _messages(span, "llm.output_messages", problems)
    recorded = bool(sent or returned)
    call = Call(span, sent, returned, recorded=recorded, source="openinference")
    for index, item in enumerate(unflatten(attributes, "llm.tools", problems)):
        tool = _tool(item, f"llm.tools.{index}.tool", problems)
        if tool is not None:
            call.tools.append(tool)
    model, provider = attributes.get("llm.model_name"), attributes.get("llm.provider")
    call.model = model if isinstance(model, str) else None
    call.provider = provider if isinstance(provider, str) else None
    for name, key in (("input_tokens", "prompt"), ("output_tokens", "completion")):
        value = attributes.get(f"llm.token_count.{key}")
        if isinstance(value, int):
            call.usage[name] = value
    return call


def _messages(span: Span, prefix: str, problems: list[str]) -> list[Msg]:
    out: list[Msg] = []
    for index, item in enumerate(unflatten(span.attributes, prefix, problems)):
        where = f"{prefix}.{index}.message"
        message = item.get("message") if isinstance(item, Mapping) else None
        if not isinstance(message, Mapping):
            problems.append(f"{where}: missing (expected message.role, message.content, ...)")
            continue
        data: dict[str, Any] = {k: message[k] for k in ("role", "content", "name") if k in message}
        if "content" not in message and isinstance(message.get("contents"), list):
            data["content"] = [_content_item(c) for c in message["contents"]]
        if isinstance(message.get("tool_call_id"), str):
            data["tool_call_id"] = message["tool_call_id"]
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            data["tool_calls"] = [
                c.get("tool_call") if isinstance(c, Mapping) else c for c in calls
            ]
        found = chat_message(where, data, span, problems)
        if found is not None:
            out.append(found)
    return out


def _content_item(item: Any) -> Any:
    """`message_content.{type,text}` -> an OpenAI-style content part."""
    content = item.get("message_content") if isinstance(item, Mapping) else None
    if not isinstance(content, Mapping):
        return item
    return {"type": content.get("type", "text"), "text": content.get("text")}


def _tool(item: Any, where: str, problems: list[str]) -> Any:
    """A tool offered to the model: its JSON schema (OpenAI form or flat), else name and
    description (newer OpenInference)."""
    tool = item.get("tool") if isinstance(item, Mapping) else None
    if not isinstance(tool, Mapping):
        problems.append(f"{where}: missing (expected tool.json_schema)")
        return None
    schema = tool.get("json_schema")
    if isinstance(schema, str):
        return recorded_json(schema, f"{where}.json_schema", problems)
    if isinstance(tool.get("name"), str):
        return {k: tool[k] for k in ("name", "description") if isinstance(tool.get(k), str)}
    problems.append(f"{where}: needs json_schema or name")
    return None
