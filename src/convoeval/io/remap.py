"""Records in other layouts (a tau-bench run, a log export) read without a conversion script.

`messages_field` is the dotted path of the conversation (`"traj"`, `"data.messages"`); its messages
may be OpenAI chat (`role`), Ragas (`type`), LangChain dicts or DeepEval exchanges. `fields` maps a
sample field, or `metadata.KEY`, to a dotted path (`{"reference_tool_calls": "info.task.actions"}`);
an integer part indexes a list. A path missing from a record leaves that field absent. Tool calls
mapped to `reference_tool_calls` may be `{"name", "args"}`, `{"name", "kwargs"}`,
`{"name", "arguments"}` (an object or a JSON string) or OpenAI's `{"function": {...}}`.

With `messages_field`, the record's other top-level keys are taken as follows: a sample field name
(`id`, `reference_topics`, ...) is that field; any other key holding a plain value (text, number,
true/false, null), such as tau-bench's `reward` and `task_id`, is kept in the sample's metadata;
other lists and objects are left out (map them with `fields` to keep them). Without it, only the
top-level keys that `fields` reads from are taken out of the record; the rest is read as usual.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from convoeval.io._convert import arguments
from convoeval.io.errors import OptionError
from convoeval.schema.sample import MultiTurnSample

_CONVERSATION_KEYS = ("user_input", "messages", "turns")
_KEY = {"ragas": "user_input", "openai": "messages", "langchain": "messages", "deepeval": "turns"}
_META = "metadata."


@dataclass(frozen=True, slots=True)
class Remap:
    """Where a record in another layout keeps its conversation and its fields (checked paths)."""

    messages_field: str | None
    fields: tuple[tuple[str, str], ...]


def make_remap(messages_field: str | None, fields: Mapping[str, str] | None) -> Remap | None:
    """The checked options, or None when neither is given; `OptionError` names a bad one."""
    if not messages_field and not fields:
        return None
    targets = [name for name in MultiTurnSample.model_fields if name != "user_input"]
    if messages_field is not None:
        _check_path("messages_field", messages_field)
    for name, path in (fields or {}).items():
        key = name.removeprefix(_META)
        if (name == key and name not in targets) or not key:
            close = difflib.get_close_matches(name, targets, n=1)
            if name in _CONVERSATION_KEYS:  # mapped by messages_field, not by a lookalike field
                close = []
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise OptionError(
                f"fields: cannot map {name!r}{hint}: use a sample field "
                f"({', '.join(targets)}) or metadata.KEY"
            )
        _check_path(f"fields[{name!r}]", path)
    return Remap(messages_field or None, tuple((fields or {}).items()))


def remap(data: Mapping[str, Any], options: Remap, format: str) -> tuple[dict[str, Any], list[str]]:
    """The record rebuilt in a known layout, and the problems found while mapping it."""
    problems: list[str] = []
    consumed = {path.split(".")[0] for _, path in options.fields}
    record: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    if options.messages_field is None:
        keep = {*MultiTurnSample.model_fields, *_CONVERSATION_KEYS}
        record = {k: v for k, v in data.items() if k not in consumed or k in keep}
    else:
        found, messages = lookup(data, options.messages_field)
        if not found:
            keys = ", ".join(repr(str(k)) for k in data) or "none"
            problems.append(
                f"{options.messages_field}: the conversation (messages_field) is not in this "
                f"record; it has: {keys}"
            )
        record[_conversation_key(messages, format)] = messages
        consumed.add(options.messages_field.split(".")[0])
        for key, value in data.items():
            if key in consumed:
                continue
            if key in MultiTurnSample.model_fields:
                record[key] = _plain_id(value) if key == "id" else value
            elif value is None or isinstance(value, str | int | float | bool):
                metadata[key] = value
    for name, path in options.fields:
        found, value = lookup(data, path)
        if not found:
            continue
        if name.startswith(_META):
            metadata[name.removeprefix(_META)] = value
        elif name == "reference_tool_calls":
            record[name] = _tool_calls(path, value, problems)
        else:
            record[name] = _plain_id(value) if name == "id" else value
    if metadata:
        own = record.get("metadata")
        record["metadata"] = {**own, **metadata} if isinstance(own, Mapping) else own or metadata
    return record, problems


def lookup(data: Any, path: str) -> tuple[bool, Any]:
    """(found, value) at a dotted path: keys of objects, integer positions of lists."""
    value = data
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return False, None
    return True, value


def messages_hint(data: Mapping[str, Any]) -> str:
    """For a record of unknown layout: the option that reads the conversation it seems to hold."""
    for key, value in data.items():
        first = value[0] if isinstance(value, list) and value else None
        if isinstance(first, Mapping) and {"role", "type", "content"} & first.keys():
            return (
                f"; if {key!r} holds the conversation, give --messages-field {key} "
                f'(Python: messages_field="{key}")'
            )
    return "; to read another layout, give --messages-field PATH and --field NAME=PATH"


def _plain_id(value: Any) -> Any:
    """An integer id (a task number) as text, as the sample's `id` is."""
    return str(value) if type(value) is int else value


def _check_path(what: str, path: Any) -> None:
    if not isinstance(path, str) or not all(path.split(".")):
        raise OptionError(f"{what}: {path!r} is not a dotted path such as 'info.task.actions'")


def _conversation_key(messages: Any, format: str) -> str:
    """The key of the layout the messages are in (forced by `format`, else from the first)."""
    if format != "auto":
        return _KEY[format]
    first = messages[0] if isinstance(messages, list) and messages else None
    if isinstance(first, Mapping) and "input" in first and "role" not in first:
        return "turns"
    if isinstance(first, Mapping) and "type" in first and "role" not in first:
        return "messages" if "data" in first or "lc" in first else "user_input"
    return "messages"


def _tool_calls(path: str, value: Any, problems: list[str]) -> Any:
    """Tool calls in any accepted shape, as `{"name", "args"[, "id"]}` (others left to the
    sample's validation, which names what is wrong)."""
    if not isinstance(value, list):
        return value
    calls: list[Any] = []
    for index, item in enumerate(value):
        call = dict(item) if isinstance(item, Mapping) else item
        if isinstance(call, dict) and isinstance(call.get("function"), Mapping):
            function = call.pop("function")
            call.pop("type", None)
            call = {**call, **function}
        if isinstance(call, dict) and "args" not in call:
            for alias in ("kwargs", "arguments"):
                if alias in call:
                    raw = call.pop(alias)
                    call["args"] = arguments(f"{path}[{index}].{alias}", raw, problems)
                    break
        calls.append(call)
    return calls
