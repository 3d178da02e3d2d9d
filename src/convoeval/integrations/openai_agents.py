"""Convert OpenAI Agents SDK run items (`RunResult.to_input_list()`) to and from `MultiTurnSample`.

Items map as: a message item (`{"role", "content"}`, string or part-list content) -> a message of
its role (user -> human, system/developer -> system, assistant -> ai); a run of consecutive
`function_call` items -> one AIMessage whose tool calls keep `call_id` as their id; a
`function_call_output` -> a ToolMessage answering `call_id`. Part lists: `input_text`,
`output_text` and `refusal` texts are joined without separator (as the SDK's `ItemHelpers` does);
the list itself is kept. Reasoning items are kept, not shown to judges: each one rides in the
metadata of the next assistant message (or of the last message when none follows) and is written
back in place. Other item types (hosted tool calls such as `web_search_call`, `computer_call`,
`item_reference`) raise `ConversionError`: they have no MultiTurnSample form.
Item fields without a sample home (`id`, `status`, `type`, `phase`, a `developer` role, part
lists, argument strings that are not compact JSON) are kept in the message's metadata under
`"agents_item"`, so `to_agents_items(from_agents_items(items))` gives the items back.
Needs only the `openai` package (a core dependency): the items are its Responses TypedDicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from openai.types.responses import (
    EasyInputMessageParam,
    ResponseFunctionToolCallParam,
    ResponseInputItemParam,
)
from openai.types.responses.response_input_item_param import FunctionCallOutput

from convoeval.integrations._tools import function_tools, with_tools
from convoeval.io._convert import arguments, as_list, build_sample, compact_json, kind
from convoeval.io.errors import ConversionError
from convoeval.schema.messages import (
    AIMessage,
    HumanMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from convoeval.schema.sample import MultiTurnSample

__all__ = ["AGENTS_KEY", "from_agents_items", "to_agents_items"]

#: Message-metadata key that holds the Agents-SDK-only fields of the items behind a message.
AGENTS_KEY = "agents_item"
_KIND = {"user": "human", "system": "system", "developer": "system", "assistant": "ai"}
_ROLE = {"human": "user", "system": "system", "ai": "assistant"}
_TEXT_PARTS = {"input_text": "text", "output_text": "text", "refusal": "refusal"}
_SUPPORTED = "message, function_call, function_call_output, reasoning"


def from_agents_items(items: Any, *, tools: Any = None, **sample_fields: Any) -> MultiTurnSample:
    """Build a `MultiTurnSample` from Agents SDK items, a `RunResult`, or a plain input string.

    `tools` (an agent's `tools`, `FunctionTool`s or spec dicts) become `available_tools`; for a
    `RunResult` without `tools=`, the function tools of the agents that ran are taken (hosted
    tools such as web search have no function spec and are left out). `sample_fields` are the
    other sample fields (`reference_topics`, `id`, ...). Every problem is collected and raised at
    once as `ConversionError`, with paths such as `items[3].arguments`.
    """
    sample_fields = with_tools(sample_fields, tools)
    if hasattr(items, "to_input_list"):
        if tools is None and "available_tools" not in sample_fields:
            ran = _tools_of_run(items)
            sample_fields = {**sample_fields, "available_tools": ran} if ran else sample_fields
        items = items.to_input_list()
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    builder = _Builder()
    for index, raw in enumerate(as_list("items", items)):
        builder.add(f"items[{index}]", _plain(raw))
    builder.finish()
    if builder.problems:
        raise ConversionError(builder.problems)
    return build_sample(builder.messages, builder.origins, sample_fields)


def to_agents_items(sample: MultiTurnSample | Sequence[Message]) -> list[ResponseInputItemParam]:
    """The conversation as Agents SDK input items (usable as `Runner.run(agent, input=...)`)."""
    messages = sample.user_input if isinstance(sample, MultiTurnSample) else sample
    items: list[ResponseInputItemParam] = []
    for index, message in enumerate(messages):
        items.extend(_items_of(index, message))
    return items


def _tools_of_run(result: Any) -> list[Any]:
    """The function tools of every agent that produced an item of the run, then the last agent's,
    each name once."""
    agents = [getattr(item, "agent", None) for item in getattr(result, "new_items", [])]
    agents.append(getattr(result, "last_agent", None))
    specs: dict[str, Any] = {}
    for agent in agents:
        for spec in function_tools(getattr(agent, "tools", None)):
            specs.setdefault(spec["function"]["name"], spec)
    return list(specs.values())


def _plain(raw: Any) -> Any:
    """An SDK/openai pydantic item as the dict it stands for (fields that were set)."""
    if not isinstance(raw, Mapping) and hasattr(raw, "model_dump"):
        return raw.model_dump(exclude_unset=True)
    return raw


class _Builder:
    """Accumulates messages from items; function calls in a row share one AIMessage."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.origins: list[str] = []
        self.problems: list[str] = []
        self._reasoning: list[dict[str, Any]] = []
        self._calls: AIMessage | None = None  # the open run of function calls

    def add(self, where: str, item: Any) -> None:
        """Convert one item."""
        if not isinstance(item, Mapping):
            self.problems.append(f"{where}: must be an object (an input item), got {kind(item)}")
            return
        item_type = item.get("type", "message" if "role" in item else None)
        if item_type == "reasoning":
            self._reasoning.append(dict(item))
            return
        if item_type == "function_call":
            self._function_call(where, item)
            return
        self._calls = None
        if item_type == "message":
            self._message(where, item)
        elif item_type == "function_call_output":
            self._output(where, item)
        else:
            self.problems.append(
                f"{where}.type: {item_type!r} items are not supported (supported: {_SUPPORTED})"
                if item_type is not None
                else f"{where}: an item needs a 'type' or a 'role'"
            )

    def finish(self) -> None:
        """Attach reasoning items that no assistant message followed to the last message."""
        if self._reasoning and self.messages:
            last = self.messages[-1]
            extra = _extra_of(last)
            extra["trailing_reasoning"] = self._reasoning
            last.metadata = {**(last.metadata or {}), AGENTS_KEY: extra}
        elif self._reasoning:
            self.problems.append("items: only reasoning items; there is no message to convert")

    def _push(self, where: str, message: Message) -> None:
        self.messages.append(message)
        self.origins.append(where)

    def _take_reasoning(self, calls_before: int) -> list[dict[str, Any]]:
        taken = [{"at": calls_before, "item": r} for r in self._reasoning]
        self._reasoning = []
        return taken

    def _message(self, where: str, item: Mapping[str, Any]) -> None:
        role = item.get("role")
        if role not in _KIND:
            self.problems.append(
                f"{where}.role: unknown role {role!r} (expected one of {', '.join(_KIND)})"
            )
            return
        extra = {k: v for k, v in item.items() if k not in ("role", "content")}
        if role == "developer":
            extra["role"] = role
        content = _content(f"{where}.content", item.get("content"), extra, self.problems)
        if content is None:
            return
        our = _KIND[role]
        if our == "ai" and self._reasoning:
            extra["reasoning"] = self._take_reasoning(0)
        metadata = {AGENTS_KEY: extra} if extra else None
        kinds: dict[str, type[HumanMessage | SystemMessage | AIMessage]] = {
            "human": HumanMessage,
            "system": SystemMessage,
            "ai": AIMessage,
        }
        self._push(where, kinds[our](content=content, metadata=metadata))

    def _function_call(self, where: str, item: Mapping[str, Any]) -> None:
        before = len(self.problems)
        name, call_id = item.get("name"), item.get("call_id")
        for key, value in (("name", name), ("call_id", call_id)):
            if not isinstance(value, str):
                self.problems.append(f"{where}.{key}: must be a string, got {kind(value)}")
        raw_args = item.get("arguments")
        args = arguments(f"{where}.arguments", raw_args, self.problems)
        if len(self.problems) > before or args is None:
            return
        extra = {k: v for k, v in item.items() if k not in ("type", "name", "call_id", "arguments")}
        if raw_args != compact_json(args):
            extra["arguments"] = raw_args
        call = ToolCall(name=cast(str, name), args=args, id=cast(str, call_id))
        if self._calls is None:
            self._calls = AIMessage(content="", tool_calls=[])
            self._calls.metadata = {AGENTS_KEY: {"calls": []}}
            self._push(where, self._calls)
        calls = list(self._calls.tool_calls or [])
        meta = dict(self._calls.metadata or {})
        group = dict(meta[AGENTS_KEY])
        if self._reasoning:
            group["reasoning"] = [*group.get("reasoning", []), *self._take_reasoning(len(calls))]
        group["calls"] = [*group["calls"], extra]
        self._calls.tool_calls = [*calls, call]
        self._calls.metadata = {**meta, AGENTS_KEY: group}

    def _output(self, where: str, item: Mapping[str, Any]) -> None:
        call_id = item.get("call_id")
        if not isinstance(call_id, str):
            self.problems.append(f"{where}.call_id: must be a string, got {kind(call_id)}")
            return
        extra = {k: v for k, v in item.items() if k not in ("type", "call_id", "output")}
        content = _content(f"{where}.output", item.get("output"), extra, self.problems, "output")
        if content is None:
            return
        metadata = {AGENTS_KEY: extra} if extra else None
        self._push(where, ToolMessage(content=content, tool_call_id=call_id, metadata=metadata))


def _content(
    where: str, value: Any, extra: dict[str, Any], problems: list[str], key: str = "content"
) -> str | None:
    """The text of string or part-list content; a part list is kept in `extra`."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        problems.append(f"{where}: must be a string or a list of parts, got {kind(value)}")
        return None
    texts: list[str] = []
    for position, part in enumerate(value):
        part = _plain(part)
        if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
            problems.append(f"{where}[{position}]: must be an object with a 'type'")
        elif part["type"] in _TEXT_PARTS:
            text = part.get(_TEXT_PARTS[part["type"]])
            if isinstance(text, str):
                texts.append(text)
            else:
                field = _TEXT_PARTS[part["type"]]
                problems.append(f"{where}[{position}].{field}: must be a string, got {kind(text)}")
    extra[key] = [_plain(p) for p in value]
    return "".join(texts)


def _extra_of(message: Message) -> dict[str, Any]:
    return dict((message.metadata or {}).get(AGENTS_KEY) or {})


def _items_of(index: int, message: Message) -> list[ResponseInputItemParam]:
    """The items one message stands for, in their original order."""
    extra = _extra_of(message)
    trailing = extra.pop("trailing_reasoning", [])
    if isinstance(message, ToolMessage):
        items = [_output_item(index, message, extra)]
    elif isinstance(message, AIMessage) and message.tool_calls is not None and "calls" in extra:
        items = _call_items(index, message, extra)
    else:
        items = _message_items(index, message, extra)
    return [*items, *(cast(ResponseInputItemParam, r) for r in trailing)]


def _message_items(index: int, message: Message, extra: dict[str, Any]) -> list[Any]:
    reasoning = [r["item"] for r in extra.pop("reasoning", [])]
    content = _content_out(message.content, extra.pop("content", None))
    role = extra.pop("role", _ROLE.get(message.type))
    item: dict[str, Any] = {"role": role, "content": content, **extra}
    out: list[Any] = [*reasoning]
    if message.content or not isinstance(message, AIMessage) or not message.tool_calls:
        out.append(cast(EasyInputMessageParam, item))
    if isinstance(message, AIMessage) and message.tool_calls:
        out.extend(_call(index, call, {}) for call in message.tool_calls)
    return out


def _call_items(index: int, message: AIMessage, extra: dict[str, Any]) -> list[Any]:
    calls = message.tool_calls or []
    kept = extra.get("calls", [])
    reasoning = extra.get("reasoning", [])
    out: list[Any] = []
    for position, call in enumerate(calls):
        out.extend(r["item"] for r in reasoning if r["at"] == position)
        out.append(_call(index, call, kept[position] if position < len(kept) else {}))
    out.extend(r["item"] for r in reasoning if r["at"] >= len(calls))
    if message.content:
        out.append(cast(EasyInputMessageParam, {"role": "assistant", "content": message.content}))
    return out


def _call(index: int, call: ToolCall, extra: Mapping[str, Any]) -> ResponseFunctionToolCallParam:
    if call.id is None:
        raise ConversionError(
            [
                f"user_input[{index}].tool_calls: a function_call item needs a call_id; the "
                f"call of {call.name!r} has no id"
            ]
        )
    raw = extra.get("arguments")
    kept = isinstance(raw, str) and arguments("", raw, []) == call.args
    item: dict[str, Any] = {
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": raw if kept else compact_json(call.args),
    }
    item.update({k: v for k, v in extra.items() if k not in item and k != "arguments"})
    return cast(ResponseFunctionToolCallParam, item)


def _output_item(index: int, message: ToolMessage, extra: dict[str, Any]) -> Any:
    if message.tool_call_id is None:
        raise ConversionError(
            [
                f"user_input[{index}]: a function_call_output item needs a call_id; this tool "
                "message has no tool_call_id"
            ]
        )
    output = _content_out(message.content, extra.pop("output", None))
    item: dict[str, Any] = {
        "type": "function_call_output",
        "call_id": message.tool_call_id,
        "output": output,
    }
    item.update({k: v for k, v in extra.items() if k not in item})
    return cast(FunctionCallOutput, item)


def _content_out(text: str, original: Any) -> Any:
    """The original part list when its text still matches, else the plain text."""
    if isinstance(original, list):
        joined = "".join(
            str(p.get(_TEXT_PARTS[p["type"]], ""))
            for p in original
            if isinstance(p, Mapping) and p.get("type") in _TEXT_PARTS
        )
        if joined == text:
            return original
    return text
