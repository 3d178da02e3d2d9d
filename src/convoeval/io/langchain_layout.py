"""The LangChain messages layout: `{"type", "data"}` dicts (`messages_to_dict`), `lc` dicts
(`message.to_json()`) and pydantic message objects, one message at a time, to and from samples.

Every LangChain-only field with a non-default value is kept in the message's metadata under
`"langchain_message"`, so the round trip is lossless. Message objects, streamed chunks and
LangGraph states are handled by `convoeval.integrations.langchain`, which builds on this module.
Tool calls come from `tool_calls`, else from OpenAI's `additional_kwargs["tool_calls"]` (or the
legacy `function_call`); list content keeps its list and joins its text parts without separator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from convoeval.io._convert import (
    arguments,
    as_list,
    build_sample,
    check_tool_call_id,
    dumped,
    kind,
    typed_message,
)
from convoeval.io.errors import ConversionError
from convoeval.schema.messages import (
    AIMessage,
    Message,
    ToolCall,
    ToolMessage,
)
from convoeval.schema.sample import MultiTurnSample

__all__ = [
    "LANGCHAIN_KEY",
    "from_langchain_dicts",
    "from_langchain_items",
    "is_langchain_dicts",
    "to_langchain_dicts",
    "unwrap_state",
]

#: Message-metadata key that holds the LangChain-only fields of a message.
LANGCHAIN_KEY = "langchain_message"
#: Key (in LangChain's `additional_kwargs`) that carries convoeval's own message metadata.
_OUR_METADATA = "convoeval_metadata"
_KINDS = {
    "human": "human",
    "HumanMessageChunk": "human",
    "ai": "ai",
    "AIMessageChunk": "ai",
    "tool": "tool",
    "ToolMessageChunk": "tool",
    "system": "system",
    "SystemMessageChunk": "system",
    "function": "tool",
    "FunctionMessageChunk": "tool",
}
_CHAT_ROLES = {"user": "human", "human": "human", "assistant": "ai", "ai": "ai", "system": "system"}
_CLASS_TYPES = {
    "HumanMessage": "human",
    "AIMessage": "ai",
    "ToolMessage": "tool",
    "SystemMessage": "system",
    "ChatMessage": "chat",
    "FunctionMessage": "function",
}
_TYPE = {"human": "human", "ai": "ai", "tool": "tool", "system": "system"}
#: LangChain fields and the values they have when nothing was set (not worth keeping).
_DEFAULTS: dict[str, Any] = {
    "additional_kwargs": {},
    "response_metadata": {},
    "name": None,
    "id": None,
    "invalid_tool_calls": [],
    "usage_metadata": None,
    "tool_call_chunks": [],
    "chunk_position": None,
    "artifact": None,
    "status": "success",
}
_HANDLED = {"content", "type", "tool_calls", "tool_call_id"}


def from_langchain_dicts(messages: Any, **sample_fields: Any) -> MultiTurnSample:
    """Build a sample from LangChain message dicts (or a LangGraph state dict holding them)."""
    messages, fields = unwrap_state(messages, sample_fields)
    items = [(f"messages[{i}]", raw) for i, raw in enumerate(as_list("messages", messages))]
    return from_langchain_items(items, fields)


def unwrap_state(messages: Any, fields: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """A LangGraph state `{"messages": [...], ...}`: its messages, and its other keys kept in the
    sample's metadata under `"langgraph_state"`; anything else is returned unchanged."""
    out = dict(fields)
    if isinstance(messages, Mapping) and "messages" in messages:
        state = {k: v for k, v in messages.items() if k != "messages"}
        if state:
            out["metadata"] = {**(out.get("metadata") or {}), "langgraph_state": state}
        messages = messages["messages"]
    return messages, out


def from_langchain_items(
    items: Sequence[tuple[str, Any]], fields: Mapping[str, Any]
) -> MultiTurnSample:
    """Convert (path, message) pairs; every problem is collected and raised as `ConversionError`."""
    problems: list[str] = []
    converted: list[Message] = []
    origins: list[str] = []
    for where, raw in items:
        message = _convert(where, raw, problems)
        if message is not None:
            converted.append(message)
            origins.append(where)
    if problems:
        raise ConversionError(problems)
    return build_sample(converted, origins, fields)


def to_langchain_dicts(sample: MultiTurnSample | Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation in LangChain's `messages_to_dict` form (no `langchain-core` needed)."""
    messages = sample.user_input if isinstance(sample, MultiTurnSample) else sample
    return [_to_dict(index, message) for index, message in enumerate(messages)]


def is_langchain_dicts(messages: Any) -> bool:
    """Whether a parsed `messages` list holds serialised LangChain messages (not OpenAI chat)."""
    if not isinstance(messages, list) or not messages or not isinstance(messages[0], Mapping):
        return False
    first = messages[0]
    return "role" not in first and (("type" in first and "data" in first) or "lc" in first)


def _data_of(where: str, raw: Any, problems: list[str]) -> tuple[str, dict[str, Any]] | None:
    """(LangChain type, fields) of any accepted form of one message."""
    raw = dumped(raw)
    if not isinstance(raw, Mapping):
        problems.append(
            f"{where}: must be a LangChain message, a {{'type', 'data'}} dict or an lc dict, "
            f"got {kind(raw)}"
        )
        return None
    if "lc" in raw:
        ident = raw.get("id")
        name = ident[-1] if isinstance(ident, list) and ident else None
        kwargs = raw.get("kwargs")
        if raw.get("type") != "constructor" or not isinstance(kwargs, Mapping):
            problems.append(f"{where}: an lc dict must be a 'constructor' with 'kwargs'")
            return None
        if name not in _CLASS_TYPES and name not in _KINDS:
            problems.append(f"{where}.id: {name!r} is not a LangChain message class")
            return None
        return _CLASS_TYPES.get(str(name), str(name)), dict(kwargs)
    if "type" not in raw:
        problems.append(
            f"{where}.type: required field is missing (a LangChain message dict has "
            "'type' and 'data')"
        )
        return None
    if "data" in raw and isinstance(raw.get("data"), Mapping):
        return str(raw.get("type")), dict(raw["data"])
    return str(raw.get("type")), dict(raw)


def _convert(where: str, raw: Any, problems: list[str]) -> Message | None:
    """Convert one message, appending its problems; None when it cannot be converted."""
    found = _data_of(where, raw, problems)
    if found is None:
        return None
    lc_type, data = found
    before = len(problems)
    our = _kind_of(where, lc_type, data, problems)
    if our is None:
        return None
    extra = {
        key: value
        for key, value in data.items()
        if key not in _HANDLED and key in _DEFAULTS and value != _DEFAULTS[key]
    }
    extra.update({k: v for k, v in data.items() if k not in _HANDLED and k not in _DEFAULTS})
    if lc_type not in _TYPE:
        extra["type"] = lc_type
    metadata = _our_metadata(where, extra, problems)
    content = _content(where, data.get("content", ""), extra, problems)
    calls = _calls(where, data, problems) if our == "ai" else None
    if (
        calls
        and not data.get("tool_calls")
        and "tool_calls" not in (data.get("additional_kwargs") or {})
    ):
        extra["calls_in"] = "function_call"  # LangChain does not read it into `.tool_calls`
    if our != "ai" and data.get("tool_calls"):
        problems.append(f"{where}.tool_calls: only an AI message calls tools")
    call_id = data.get("tool_call_id")
    check_tool_call_id(where, our, call_id, problems)
    if len(problems) > before:
        return None
    details = (LANGCHAIN_KEY, extra)
    return typed_message(our, content, metadata, details, calls or None, call_id)


def _kind_of(where: str, lc_type: str, data: Mapping[str, Any], problems: list[str]) -> str | None:
    if lc_type in ("chat", "ChatMessageChunk"):
        role = data.get("role")
        if role not in _CHAT_ROLES:
            problems.append(
                f"{where}.role: a ChatMessage role must be one of {', '.join(_CHAT_ROLES)}, "
                f"got {role!r}"
            )
            return None
        return _CHAT_ROLES[role]
    if lc_type not in _KINDS:
        problems.append(
            f"{where}.type: unknown LangChain message type {lc_type!r} "
            f"(expected one of {', '.join(_KINDS)}, chat)"
        )
        return None
    return _KINDS[lc_type]


def _our_metadata(where: str, extra: dict[str, Any], problems: list[str]) -> dict[str, Any] | None:
    """convoeval metadata written into `additional_kwargs` by `to_langchain_dicts`, taken back."""
    kwargs = extra.get("additional_kwargs")
    if not isinstance(kwargs, Mapping) or _OUR_METADATA not in kwargs:
        return None
    rest = {k: v for k, v in kwargs.items() if k != _OUR_METADATA}
    if rest:
        extra["additional_kwargs"] = rest
    else:
        del extra["additional_kwargs"]
    metadata = kwargs[_OUR_METADATA]
    if not isinstance(metadata, Mapping):
        problems.append(
            f"{where}.additional_kwargs.{_OUR_METADATA}: must be an object, got {kind(metadata)}"
        )
        return None
    return dict(metadata)


def _content(where: str, value: Any, extra: dict[str, Any], problems: list[str]) -> str:
    """The text of `content`; list content is kept in `extra` and its text parts joined."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        problems.append(f"{where}.content: must be a string or a list, got {kind(value)}")
        return ""
    texts: list[str] = []
    for position, part in enumerate(value):
        if isinstance(part, str):
            texts.append(part)
        elif not isinstance(part, Mapping):
            problems.append(f"{where}.content[{position}]: must be a string or an object")
        elif part.get("type") == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
    extra["content"] = value
    return "".join(texts)


def _calls(where: str, data: Mapping[str, Any], problems: list[str]) -> list[ToolCall]:
    """Tool calls from `tool_calls`, else from OpenAI-style `additional_kwargs`."""
    raw = data.get("tool_calls") or []
    if not isinstance(raw, list):
        problems.append(f"{where}.tool_calls: must be a list, got {kind(raw)}")
        return []
    calls: list[ToolCall] = []
    for position, item in enumerate(raw):
        at = f"{where}.tool_calls[{position}]"
        item = dumped(item)
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            problems.append(f"{at}: must be an object with a string 'name', got {kind(item)}")
            continue
        args = arguments(f"{at}.args", item.get("args", {}), problems)
        call_id = item.get("id")
        if call_id is not None and not isinstance(call_id, str):
            problems.append(f"{at}.id: must be a string, got {kind(call_id)}")
        elif args is not None:
            calls.append(ToolCall(name=item["name"], args=args, id=call_id))
    if raw:
        return calls
    return _openai_calls(where, data.get("additional_kwargs") or {}, problems)


def _openai_calls(where: str, kwargs: Mapping[str, Any], problems: list[str]) -> list[ToolCall]:
    """Calls in OpenAI's shape inside `additional_kwargs` (older LangChain messages)."""
    at = f"{where}.additional_kwargs"
    raw = kwargs.get("tool_calls")
    if raw is None and isinstance(kwargs.get("function_call"), Mapping):
        raw = [{"function": kwargs["function_call"]}]
        at += ".function_call"
    else:
        at += ".tool_calls"
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.append(f"{at}: must be a list, got {kind(raw)}")
        return []
    calls: list[ToolCall] = []
    for position, item in enumerate(raw):
        function = item.get("function") if isinstance(item, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(name, str):
            problems.append(f"{at}[{position}]: must have a 'function' with a string 'name'")
            continue
        args = arguments(f"{at}[{position}].arguments", function.get("arguments", {}), problems)
        if args is not None:
            calls.append(ToolCall(name=name, args=args, id=item.get("id")))
    return calls


def _to_dict(index: int, message: Message) -> dict[str, Any]:
    """One typed message as a `{"type", "data"}` dict."""
    metadata = dict(message.metadata or {})
    extra = dict(metadata.pop(LANGCHAIN_KEY, None) or {})
    lc_type = extra.pop("type", _TYPE[message.type])
    legacy = extra.pop("calls_in", None) == "function_call"
    data: dict[str, Any] = {"content": _content_out(message.content, extra.pop("content", None))}
    data.update(extra)
    if metadata or message.metadata == {}:
        kwargs = dict(data.get("additional_kwargs") or {})
        kwargs[_OUR_METADATA] = metadata
        data["additional_kwargs"] = kwargs
    if legacy and isinstance(message, AIMessage):
        kept = _openai_calls("", data.get("additional_kwargs") or {}, [])
        legacy = kept == (message.tool_calls or [])
    if isinstance(message, AIMessage) and message.tool_calls and not legacy:
        data["tool_calls"] = [
            {"name": c.name, "args": c.args, "id": c.id, "type": "tool_call"}
            for c in message.tool_calls
        ]
    if isinstance(message, ToolMessage):
        if message.tool_call_id is None and lc_type not in ("function", "FunctionMessageChunk"):
            raise ConversionError(
                [
                    f"user_input[{index}]: a LangChain ToolMessage needs a tool_call_id; this "
                    "tool message has none (give the tool calls and tool messages ids)"
                ]
            )
        if message.tool_call_id is not None:
            data["tool_call_id"] = message.tool_call_id
    data["type"] = lc_type
    return {"type": lc_type, "data": data}


def _content_out(text: str, original: Any) -> Any:
    """The original list content when its text still matches, else the plain text."""
    if isinstance(original, list):
        joined = "".join(
            p if isinstance(p, str) else p.get("text", "")
            for p in original
            if isinstance(p, str) or (isinstance(p, Mapping) and p.get("type") == "text")
        )
        if joined == text:
            return original
    return text
