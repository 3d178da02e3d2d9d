"""Chat-completions request/response logs, the shape API gateways and SDK loggers write:
`{"request": {"messages": [...], "tools": [...], ...}, "response": {"choices": [{"message":
{...}}], ...}}`, read as the OpenAI chat layout: the request's messages with the response's
message appended, the request's tools as `available_tools`.

The record's other top-level keys are the sample's fields, as in the OpenAI chat layout. What
else the call carried (the request's parameters such as `model` and `temperature`; the
response's `id`, `model`, `usage`; the choice's `finish_reason`) is kept in the sample's
metadata under `chat_completion`. Problems name the place in the log (`request.messages[1]`,
`response.choices[0].message`), not in the conversation built from it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from convoeval.io._convert import kind as json_kind

#: The metadata key that keeps what the logged call carried besides the conversation.
CHAT_LOG_KEY = "chat_completion"
_CONVERSATION_KEYS = frozenset({"user_input", "messages", "turns"})


def is_chat_log(data: Mapping[str, Any]) -> bool:
    """Whether a record is a logged chat-completions call (its request holds `messages`)."""
    request = data.get("request")
    return (
        isinstance(request, Mapping)
        and "messages" in request
        and not _CONVERSATION_KEYS & data.keys()
    )


def from_chat_log(data: Mapping[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
    """The log as an OpenAI chat layout record (None with the problems when it cannot be)."""
    request, response = data["request"], data.get("response")
    if response is None:
        return None, [
            "response: required in a chat-completions log (the reply that ends the "
            'conversation, {"choices": [{"message": ...}]})'
        ]
    if not isinstance(response, Mapping):
        return None, [f"response: must be an object, got {json_kind(response)}"]
    choices = response.get("choices")
    if not isinstance(choices, list) or len(choices) != 1:
        got = f"{len(choices)}" if isinstance(choices, list) else json_kind(choices)
        return None, [
            "response.choices: a logged call must hold one choice (the reply that continues "
            f"the conversation), got {got}"
        ]
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, Mapping) else None
    if not isinstance(message, Mapping):
        return None, [f"response.choices[0].message: must be an object, got {json_kind(message)}"]
    messages = request["messages"]
    if not isinstance(messages, list):
        return None, [f"request.messages: must be a list of messages, got {json_kind(messages)}"]
    record = {k: v for k, v in data.items() if k not in ("request", "response")}
    record["messages"] = [*messages, message]
    if "tools" in request:
        record["tools"] = request["tools"]
    logged = {
        "request": {k: v for k, v in request.items() if k not in ("messages", "tools")},
        "response": {k: v for k, v in response.items() if k != "choices"},
        "finish_reason": choice.get("finish_reason"),
    }
    metadata = record.get("metadata")
    if metadata is None or isinstance(metadata, Mapping):  # anything else: the sample says so
        kept = {k: v for k, v in logged.items() if v not in (None, {})}
        record["metadata"] = {**(metadata or {}), CHAT_LOG_KEY: kept}
    return record, []


def log_paths(problems: list[str], requested: int) -> list[str]:
    """Problems of the conversation built from a log, with its paths in the log's terms:
    `messages[i]` as `request.messages[i]` (or `response.choices[0].message` for the reply
    appended after the `requested` messages), `tools` as `request.tools`."""

    def place(found: re.Match[str]) -> str:
        index = int(found.group(1))
        return f"request.messages[{index}]" if index < requested else "response.choices[0].message"

    out = []
    for line in problems:
        line = re.sub(r"^messages\[(\d+)\]", place, line)
        out.append(re.sub(r"^tools\b", "request.tools", line))
    return out
