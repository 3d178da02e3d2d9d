"""Turn pydantic validation errors into lines that say where (field path) and what is wrong."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from convoeval.schema.messages import MESSAGE_TYPES

#: Names from other layouts that users give as a Ragas message `type`, and the type they mean.
TYPE_HINTS = {
    "user": "human",
    "assistant": "ai",
    "bot": "ai",
    "model": "ai",
    "function": "tool",
    "tool_result": "tool",
    "developer": "system",
}

#: Names from other layouts that users give as a chat `role`, and the role they mean.
ROLE_HINTS = {"human": "user", "ai": "assistant", "bot": "assistant", "model": "assistant"}


def did_you_mean(given: object, hints: dict[str, str]) -> str:
    """`; did you mean 'x'?` when `given` is a known slip, else nothing."""
    meant = hints.get(given.lower()) if isinstance(given, str) else None
    return f"; did you mean {meant!r}?" if meant else ""


_PLAIN = {
    "extra_forbidden": "unknown field (not part of the schema)",
    "missing": "required field is missing",
    "string_type": "must be a string",
    "dict_type": "must be an object (a JSON dict)",
    "list_type": "must be a list",
    "bool_type": "must be true or false",
}


def field_path(loc: Sequence[int | str]) -> str:
    """`('user_input', 2, 'ai', 'content')` -> `user_input[2].content` (union tags dropped)."""
    out = ""
    previous: int | str | None = None
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(previous, int) and part in MESSAGE_TYPES:
            pass  # the discriminated-union branch name, not a field
        else:
            out += f".{part}" if out else str(part)
        previous = part
    return out


def _message(error: Any) -> str:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind in ("conversation_rule", "tool_call_id", "empty_conversation"):
        return str(error["msg"])
    if kind == "union_tag_invalid":
        tag = ctx.get("tag")
        return (
            f"unknown message type {tag!r} (expected one of {', '.join(MESSAGE_TYPES)})"
            + did_you_mean(tag, TYPE_HINTS)
        )
    if kind == "union_tag_not_found":
        text = f"message has no 'type' field (expected one of {', '.join(MESSAGE_TYPES)})"
        if isinstance(error.get("input"), dict) and "role" in error["input"]:
            text += "; it has a 'role': OpenAI chat messages go under 'messages', not 'user_input'"
        return text
    plain = _PLAIN.get(kind, str(error["msg"]))
    if kind == "literal_error" and error.get("loc", ())[-1:] == ("role",):
        plain += did_you_mean(error.get("input"), ROLE_HINTS)
    if kind.endswith("_type") and "input" in error:
        plain += f", got {type(error['input']).__name__}"
    return plain


def describe_errors(exc: ValidationError, prefix: Sequence[int | str] = ()) -> list[str]:
    """One `path: what is wrong` line per error (rule errors already carry their path)."""
    lines = []
    for error in exc.errors():
        text = _message(error)
        path = field_path([*prefix, *error["loc"]])
        if error["type"] in ("conversation_rule", "tool_call_id", "empty_conversation"):
            lines.append(text if not prefix else f"{field_path(prefix)}.{text}")
        else:
            lines.append(f"{path}: {text}" if path else text)
    return lines
