"""Convert OpenAI chat messages to and from `MultiTurnSample`, losslessly.

Roles map as: system/developer -> SystemMessage, user -> HumanMessage, assistant -> AIMessage,
tool/function -> ToolMessage. Tool-call arguments (JSON strings in OpenAI's format) become dicts;
writing back serialises them again, so arguments compare equal once parsed (not byte for byte).
OpenAI-only details (a `developer` role, a message `name`, `null` or part-list content, `refusal`,
`audio`, `annotations`, the legacy `function_call`, explicit nulls) are kept in the message's
metadata under `"openai_message"`, so `to_openai_messages(from_openai_messages(m)) == m`.
Content parts: text parts are joined with newlines into `content`; other parts (images, audio,
files) are kept only in that metadata, so judges do not see them. A message may also carry a
`metadata` object (a convoeval extension: it holds the message metadata of other layouts).
Two normalisations on the way back: a tool call without `type` gets `"type": "function"`, and
arguments given as a dict come back as a JSON string.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from convoeval.io._convert import (
    arguments,
    check_tool_call_id,
    compact_json,
    typed_message,
)
from convoeval.io._convert import kind as json_kind
from convoeval.io.errors import ConversionError
from convoeval.schema.errors import ROLE_HINTS, describe_errors, did_you_mean
from convoeval.schema.messages import (
    AIMessage,
    Message,
    ToolCall,
    ToolMessage,
)
from convoeval.schema.sample import MultiTurnSample

__all__ = ["OPENAI_KEY", "OpenAIMessagesError", "from_openai_messages", "to_openai_messages"]

#: Message-metadata key that holds the OpenAI-only details of a message.
OPENAI_KEY = "openai_message"

_KIND = {
    "system": "system",
    "developer": "system",
    "user": "human",
    "assistant": "ai",
    "tool": "tool",
    "function": "tool",
}
_ROLE = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}
_VERBATIM = ("name", "refusal", "audio", "annotations")  # kept as given, written back as given
_CALL_KEYS = ("tool_calls", "function_call", "tool_call_id")
_KNOWN = {"role", "content", "metadata", *_VERBATIM, *_CALL_KEYS}
_PART_TYPES = ("text", "image_url", "input_audio", "file", "refusal")


class OpenAIMessagesError(ConversionError):
    """OpenAI messages that cannot be converted; `problems` holds one `path: what` line each."""


def from_openai_messages(
    messages: Sequence[Any], *, tools: Sequence[Any] | None = None, **sample_fields: Any
) -> MultiTurnSample:
    """Build a `MultiTurnSample` from OpenAI chat messages (dicts, or SDK message objects).

    `tools` is the request's tool list (function-tool specs), kept as `available_tools`.
    `sample_fields` are the other sample fields (`reference_topics`, `id`, ...). Every problem is
    collected and raised at once as `OpenAIMessagesError`, with paths such as
    `messages[3].tool_calls[0].function.arguments` or `tools[0].function.parameters`.
    """
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise OpenAIMessagesError(
            [f"messages: must be a list of messages, got {json_kind(messages)}"]
        )
    problems: list[str] = []
    converted: list[Message] = []
    for index, raw in enumerate(messages):
        message = _from_openai(f"messages[{index}]", raw, problems)
        if message is not None:
            converted.append(message)
    if "user_input" in sample_fields:
        problems.append("user_input: the conversation is `messages`; do not also give user_input")
    if tools is not None:
        if "available_tools" in sample_fields:
            problems.append("available_tools: the tools are given as `tools`; give only one")
        listed = [_dict_of(t) for t in tools] if isinstance(tools, list | tuple) else tools
        sample_fields = {**sample_fields, "available_tools": listed}
    if problems:
        raise OpenAIMessagesError(problems)
    try:
        return MultiTurnSample.model_validate({**sample_fields, "user_input": converted})
    except ValidationError as exc:
        lines = describe_errors(exc)
        raise OpenAIMessagesError([_renamed(line, tools is not None) for line in lines]) from None


def to_openai_messages(sample: MultiTurnSample | Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation as OpenAI chat message dicts (the inverse of `from_openai_messages`)."""
    messages = sample.user_input if isinstance(sample, MultiTurnSample) else sample
    return [_to_openai(message) for message in messages]


def _renamed(line: str, tools: bool) -> str:
    """Validation lines name `user_input[i]` (and `available_tools[i]`); in this layout they are
    `messages[i]` (and `tools[i]`, when the tools came as `tools`)."""
    line = re.sub(r"^user_input\b", "messages", line)
    return re.sub(r"^available_tools\b", "tools", line) if tools else line


def _dict_of(tool: Any) -> Any:
    """An SDK tool object (pydantic) as its dict; a dict or anything else as given."""
    dump = getattr(tool, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) and not isinstance(tool, Mapping) else tool


def _from_openai(where: str, raw: Any, problems: list[str]) -> Message | None:
    """Convert one message, appending its problems; None when it cannot be converted."""
    if not isinstance(raw, Mapping) and hasattr(raw, "model_dump"):
        raw = raw.model_dump(exclude_unset=True)  # an OpenAI SDK message object
    if not isinstance(raw, Mapping):
        problems.append(
            f"{where}: must be an object with 'role' and 'content', got {json_kind(raw)}"
        )
        return None
    before = len(problems)
    problems.extend(
        f"{where}.{key}: unknown field (not an OpenAI chat message field)"
        for key in raw
        if key not in _KNOWN
    )
    role = raw.get("role")
    if role not in _KIND:
        expected = ", ".join(_KIND)
        problems.append(
            f"{where}.role: required field is missing (expected one of {expected})"
            if "role" not in raw
            else f"{where}.role: unknown role {role!r} (expected one of {expected})"
            + did_you_mean(role, ROLE_HINTS)
        )
        return None
    kind = _KIND[role]
    extra: dict[str, Any] = {} if role == _ROLE[kind] else {"role": role}
    for key in _VERBATIM:
        if key in raw:
            extra[key] = raw[key]
    if "name" in raw and not isinstance(raw["name"], str):
        problems.append(f"{where}.name: must be a string, got {json_kind(raw['name'])}")
    calls = _calls_of(where, raw, kind, extra, problems)
    content = _content_of(where, raw, kind, calls, extra, problems)
    metadata = _metadata_of(where, raw, problems)
    tool_call_id = raw.get("tool_call_id")
    if "tool_call_id" in raw and tool_call_id is None:
        extra["tool_call_id"] = None
    else:
        check_tool_call_id(where, kind, tool_call_id, problems)
    if len(problems) > before:
        return None
    return typed_message(kind, content, metadata, (OPENAI_KEY, extra), calls, tool_call_id)


def _metadata_of(where: str, raw: Mapping[str, Any], problems: list[str]) -> dict[str, Any] | None:
    """The convoeval `metadata` extension of a message, checked."""
    metadata = raw.get("metadata")
    if metadata is None:
        return None
    if not isinstance(metadata, Mapping):
        problems.append(f"{where}.metadata: must be an object, got {json_kind(metadata)}")
        return None
    if OPENAI_KEY in metadata:
        problems.append(f"{where}.metadata.{OPENAI_KEY}: reserved key (convoeval's own)")
    return dict(metadata)


def _calls_of(
    where: str, raw: Mapping[str, Any], kind: str, extra: dict[str, Any], problems: list[str]
) -> list[ToolCall] | None:
    """The tool calls of a message (`tool_calls`, or the legacy `function_call`)."""
    calls: list[ToolCall] | None = None
    for key in ("tool_calls", "function_call"):
        if key not in raw:
            continue
        value = raw[key]
        if value is None:
            extra[key] = None
        elif kind != "ai":
            problems.append(f"{where}.{key}: only an assistant message calls tools")
        elif calls is not None:
            problems.append(f"{where}.function_call: give tool_calls or function_call, not both")
        elif key == "tool_calls":
            calls = _tool_calls(f"{where}.tool_calls", value, problems)
        else:
            extra["function_call"] = True  # legacy: written back as function_call
            call = _function(f"{where}.function_call", value, None, problems)
            calls = [call] if call is not None else []
    return calls


def _tool_calls(where: str, value: Any, problems: list[str]) -> list[ToolCall]:
    """Parse `tool_calls`: `[{"id", "type": "function", "function": {"name", "arguments"}}]`."""
    if not isinstance(value, list):
        problems.append(f"{where}: must be a list, got {json_kind(value)}")
        return []
    calls: list[ToolCall] = []
    for position, item in enumerate(value):
        at = f"{where}[{position}]"
        if not isinstance(item, Mapping):
            problems.append(f"{at}: must be an object, got {json_kind(item)}")
            continue
        problems.extend(
            f"{at}.{key}: unknown field (not an OpenAI tool call field)"
            for key in item
            if key not in ("id", "type", "function")
        )
        if "type" in item and item["type"] != "function":
            problems.append(
                f"{at}.type: only 'function' tool calls are supported, got {item['type']!r}"
            )
        call_id = item.get("id")
        if call_id is not None and not isinstance(call_id, str):
            problems.append(f"{at}.id: must be a string, got {json_kind(call_id)}")
            call_id = None
        if "function" not in item:
            problems.append(f"{at}.function: required field is missing")
            continue
        call = _function(f"{at}.function", item["function"], call_id, problems)
        if call is not None:
            calls.append(call)
    return calls


def _function(where: str, value: Any, call_id: str | None, problems: list[str]) -> ToolCall | None:
    """Parse `{"name", "arguments": "<JSON object>"}` into a ToolCall."""
    if not isinstance(value, Mapping):
        problems.append(
            f"{where}: must be an object with 'name' and 'arguments', got {json_kind(value)}"
        )
        return None
    problems.extend(
        f"{where}.{key}: unknown field (not an OpenAI function field)"
        for key in value
        if key not in ("name", "arguments")
    )
    name = value.get("name")
    if not isinstance(name, str):
        problems.append(
            f"{where}.name: "
            + (
                "required field is missing"
                if "name" not in value
                else f"must be a string, got {json_kind(name)}"
            )
        )
    args = _arguments(f"{where}.arguments", value, problems)
    if not isinstance(name, str) or args is None:
        return None
    return ToolCall(name=name, args=args, id=call_id)


def _arguments(where: str, value: Mapping[str, Any], problems: list[str]) -> dict[str, Any] | None:
    """The arguments as a dict: a JSON string holding an object (a dict is accepted too)."""
    if "arguments" not in value:
        problems.append(f"{where}: required field is missing")
        return None
    return arguments(where, value["arguments"], problems)


def _content_of(
    where: str,
    raw: Mapping[str, Any],
    kind: str,
    calls: list[ToolCall] | None,
    extra: dict[str, Any],
    problems: list[str],
) -> str:
    """The message text; the original form is kept in `extra` when it is not the default one."""
    if "content" not in raw:
        if kind == "ai":
            extra["absent"] = ["content"]
            return ""
        problems.append(f"{where}.content: required field is missing")
        return ""
    value = raw["content"]
    if value is None:
        if kind != "ai":
            problems.append(
                f"{where}.content: must be a string or a list of parts, got null "
                "(only an assistant message may have null content)"
            )
        text = ""
    elif isinstance(value, str):
        text = value
    elif isinstance(value, list):
        text = _parts(f"{where}.content", value, problems)
    else:
        problems.append(
            f"{where}.content: must be a string or a list of parts, got {json_kind(value)}"
        )
        return ""
    if value != _default_content(kind, text, calls):
        extra["content"] = value
    return text


def _parts(where: str, parts: list[Any], problems: list[str]) -> str:
    """Join the text parts of a content list; other known parts are kept (by the caller)."""
    texts: list[str] = []
    for position, part in enumerate(parts):
        at = f"{where}[{position}]"
        if not isinstance(part, Mapping):
            problems.append(f"{at}: must be an object with a 'type', got {json_kind(part)}")
            continue
        part_type = part.get("type")
        if part_type not in _PART_TYPES:
            problems.append(
                f"{at}.type: unknown content part type {part_type!r} (expected one "
                f"of {', '.join(_PART_TYPES)})"
            )
        elif part_type == "text":
            if isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                problems.append(f"{at}.text: must be a string, got {json_kind(part.get('text'))}")
    return "\n".join(texts)


def _text_of(parts: list[Any]) -> str:
    """The text that `_parts` derives from a valid part list."""
    return "\n".join(p["text"] for p in parts if p.get("type") == "text")


def _default_content(kind: str, text: str, calls: list[ToolCall] | None) -> str | None:
    """How content is written when nothing else is known: null for a bare tool-calling turn."""
    return None if kind == "ai" and not text and calls else text


def _to_openai(message: Message) -> dict[str, Any]:
    """One typed message as an OpenAI chat message dict."""
    metadata = dict(message.metadata) if message.metadata is not None else None
    extra: dict[str, Any] = (metadata.pop(OPENAI_KEY, None) or {}) if metadata else {}
    out: dict[str, Any] = {"role": extra.get("role", _ROLE[message.type])}
    calls = message.tool_calls if isinstance(message, AIMessage) else None
    content = _content_out(message, calls, extra)
    if not (message.content == "" and "content" in extra.get("absent", ())):
        out["content"] = content
    if calls is not None and extra.get("function_call") is True and len(calls) == 1:
        out["function_call"] = {"name": calls[0].name, "arguments": compact_json(calls[0].args)}
    elif calls is not None:
        out["tool_calls"] = [_call_out(call) for call in calls]
    if isinstance(message, ToolMessage) and message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    for key in _CALL_KEYS:
        if key in extra and extra[key] is None and key not in out:
            out[key] = None
    for key in _VERBATIM:
        if key in extra:
            out[key] = extra[key]
    if metadata or (metadata is not None and not message.metadata):
        out["metadata"] = metadata
    return out


def _content_out(message: Message, calls: list[ToolCall] | None, extra: dict[str, Any]) -> Any:
    """The original content form when it still matches the text, else the default form."""
    default = _default_content(message.type, message.content, calls)
    if "content" not in extra:
        return default
    original = extra["content"]
    if original is None:
        return None if message.content == "" else default
    if isinstance(original, list):
        return original if _text_of(original) == message.content else default
    return message.content


def _call_out(call: ToolCall) -> dict[str, Any]:
    """One ToolCall in OpenAI's `tool_calls` shape."""
    out: dict[str, Any] = {} if call.id is None else {"id": call.id}
    out["type"] = "function"
    out["function"] = {"name": call.name, "arguments": compact_json(call.args)}
    return out
