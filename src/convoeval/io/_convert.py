"""Helpers shared by the layout parsers (io) and the framework converters (integrations):
JSON type names, tool-call arguments, typed messages, sample validation with renamed paths."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any, Literal, get_origin

from pydantic import ValidationError

from convoeval.io import strict_json
from convoeval.io.errors import ConversionError
from convoeval.schema.errors import describe_errors
from convoeval.schema.messages import (
    AIMessage,
    HumanMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from convoeval.schema.sample import MultiTurnSample

_JSON_NAMES: tuple[tuple[Any, str], ...] = (
    (bool, "a boolean"),
    (int | float, "a number"),
    (str, "a string"),
    (Mapping, "an object"),
    (list | tuple, "a list"),
)


def kind(value: Any) -> str:
    """A JSON-ish name of a value's type, for error messages."""
    if value is None:
        return "null"
    return next(
        (name for kinds, name in _JSON_NAMES if isinstance(value, kinds)), type(value).__name__
    )


def dumped(value: Any) -> Any:
    """A pydantic object as a plain dict (`model_dump()`), anything else unchanged."""
    if not isinstance(value, Mapping) and hasattr(value, "model_dump"):
        return value.model_dump()
    return value


def plain(value: Any) -> Any:
    """Pydantic objects of another library (Ragas's, DeepEval's), also inside lists and dicts, as
    plain data: of each object the fields set to other than their default (DeepEval adds
    `flaky=False`, ... that are no data), and its `Literal` tags (Ragas's message `type`)."""
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, Enum):
        return value.value
    fields = getattr(type(value), "model_fields", None)
    if not isinstance(fields, dict):
        return value
    out: dict[str, Any] = {}
    for name, info in fields.items():
        item = getattr(value, name, None)
        was_set = name in value.model_fields_set and item != info.default
        if was_set or get_origin(info.annotation) is Literal:
            out[name] = plain(item)
    return out


def arguments(where: str, raw: Any, problems: list[str]) -> dict[str, Any] | None:
    """Tool-call arguments as a dict: a dict, or a JSON string holding an object."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if not isinstance(raw, str):
        problems.append(f"{where}: must be an object or a JSON string, got {kind(raw)}")
        return None
    try:
        parsed = strict_json.loads(raw, where) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        problems.append(
            f"{where}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        )
        return None
    except strict_json.StrictJSONError as exc:
        problems.append(str(exc))
        return None
    if not isinstance(parsed, dict):
        problems.append(f"{where}: must be a JSON object, got {kind(parsed)}")
        return None
    return parsed


def compact_json(args: Mapping[str, Any]) -> str:
    """Arguments as a compact JSON string (the form OpenAI's APIs send)."""
    return json.dumps(args, ensure_ascii=False, separators=(",", ":"))


def as_list(where: str, value: Any) -> list[Any]:
    """The input as a list of items, or a ConversionError when it is not a sequence."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise ConversionError([f"{where}: must be a list, got {kind(value)}"])
    return list(value)


def build_sample(
    messages: list[Message], origins: Sequence[str], sample_fields: Mapping[str, Any]
) -> MultiTurnSample:
    """Validate the converted messages; rule errors name the input item (`origins[i]`)."""
    if "user_input" in sample_fields:
        raise ConversionError(
            ["user_input: the conversation comes from the converted input; do not also give it"]
        )
    try:
        return MultiTurnSample.model_validate({**sample_fields, "user_input": messages})
    except ValidationError as exc:
        lines = describe_errors(exc)
    raise ConversionError([_renamed(line, origins) for line in lines])


def _renamed(line: str, origins: Sequence[str]) -> str:
    """`user_input[k]...` -> `<origin of message k>...`, so errors point at the input."""
    match = re.match(r"user_input\[(\d+)\]", line)
    if match is None or int(match.group(1)) >= len(origins):
        return line
    return origins[int(match.group(1))] + line[match.end() :]


def check_tool_call_id(where: str, kind_: str, call_id: Any, problems: list[str]) -> None:
    """A `tool_call_id` must be a string, and only on a tool message."""
    if call_id is not None and (kind_ != "tool" or not isinstance(call_id, str)):
        problems.append(
            f"{where}.tool_call_id: must be a string, got {kind(call_id)}"
            if kind_ == "tool"
            else f"{where}.tool_call_id: only a tool message answers a tool call"
        )


def typed_message(
    kind_: str,
    content: str,
    metadata: dict[str, Any] | None,
    details: tuple[str, dict[str, Any]],
    calls: list[ToolCall] | None = None,
    call_id: str | None = None,
) -> Message:
    """The message of kind `human`, `ai`, `tool` or `system`; `details` is (framework key,
    framework-only fields), kept in the metadata under that key when there are any."""
    key, extra = details
    if extra:
        metadata = {**(metadata or {}), key: extra}
    if kind_ == "ai":
        return AIMessage(content=content, tool_calls=calls, metadata=metadata)
    if kind_ == "tool":
        return ToolMessage(content=content, tool_call_id=call_id, metadata=metadata)
    if kind_ == "human":
        return HumanMessage(content=content, metadata=metadata)
    return SystemMessage(content=content, metadata=metadata)
