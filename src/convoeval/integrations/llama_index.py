"""Convert LlamaIndex chat messages and agent events to and from `MultiTurnSample`.

Messages (`llama_index.core.llms.ChatMessage`): roles system/developer -> SystemMessage,
user -> HumanMessage, assistant/chatbot/model -> AIMessage, tool/function -> ToolMessage. Text
blocks are joined with newlines (as `ChatMessage.content` does); other blocks (images, audio,
thinking, ...) are kept in metadata only. Tool calls come from `ToolCallBlock`s when there are
any, else from OpenAI-style `additional_kwargs["tool_calls"]`; a tool message answers
`additional_kwargs["tool_call_id"]`. Everything else (the original role, blocks, other
`additional_kwargs`) is kept under `"llama_index_message"`, so the round trip gives equal messages.

Agent events (`llama_index.core.agent.workflow`): the first `AgentInput` gives the chat history
and user message (later ones repeat it and are skipped); `AgentOutput` -> an AIMessage with its
response text and `tool_calls` (agent name and structured response in metadata; the provider's
`raw` response is not kept); a `ToolCall` whose `tool_id` no earlier event announced adds that
call to an AIMessage; `ToolCallResult` -> a ToolMessage (`tool_output.content`, answering
`tool_id`; the tool name and error flag in metadata); `ChatMessage`s may be mixed in. Other
events (`AgentStream`, `AgentSetup`, `StopEvent`, ...) repeat what these carry and are skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from convoeval.integrations._common import require
from convoeval.integrations._tools import with_tools
from convoeval.io._convert import (
    arguments,
    as_list,
    build_sample,
    compact_json,
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

if TYPE_CHECKING:
    from llama_index.core.llms import ChatMessage

__all__ = [
    "LLAMA_INDEX_KEY",
    "from_llama_index_events",
    "from_llama_index_messages",
    "to_llama_index_messages",
]

#: Message-metadata key that holds the LlamaIndex-only details of a message.
LLAMA_INDEX_KEY = "llama_index_message"
_KIND = {
    "system": "system",
    "developer": "system",
    "user": "human",
    "assistant": "ai",
    "chatbot": "ai",
    "model": "ai",
    "tool": "tool",
    "function": "tool",
}
_ROLE = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


def from_llama_index_messages(
    messages: Any, *, tools: Any = None, **sample_fields: Any
) -> MultiTurnSample:
    """Build a `MultiTurnSample` from LlamaIndex `ChatMessage`s (or their `model_dump()` dicts).

    `tools` (LlamaIndex tools, e.g. an agent's `tools`) become `available_tools` through their
    `metadata.to_openai_tool()`. `sample_fields` are the other sample fields. Problems are raised
    at once as `ConversionError`, with paths such as `messages[2].additional_kwargs.tool_calls[0]`.
    """
    sample_fields = with_tools(sample_fields, tools)
    problems: list[str] = []
    converted: list[Message] = []
    origins: list[str] = []
    for index, raw in enumerate(as_list("messages", messages)):
        message = _convert(f"messages[{index}]", raw, problems)
        if message is not None:
            converted.append(message)
            origins.append(f"messages[{index}]")
    if problems:
        raise ConversionError(problems)
    return build_sample(converted, origins, sample_fields)


def from_llama_index_events(
    events: Any, *, tools: Any = None, **sample_fields: Any
) -> MultiTurnSample:
    """Build a `MultiTurnSample` from an agent's streamed events (see the module rules); `tools`
    as for `from_llama_index_messages`."""
    sample_fields = with_tools(sample_fields, tools)
    workflow = require("llama_index.core.agent.workflow", "llama-index-core", "llamaindex")
    llms = require("llama_index.core.llms", "llama-index-core", "llamaindex")
    problems: list[str] = []
    converted: list[Message] = []
    origins: list[str] = []
    announced: set[str] = set()
    open_calls: AIMessage | None = None  # AIMessage made of ToolCall events, still growing

    def push(where: str, message: Message | None) -> None:
        if message is not None:
            converted.append(message)
            origins.append(where)

    for index, event in enumerate(as_list("events", events)):
        where = f"events[{index}]"
        if isinstance(event, workflow.ToolCallResult):
            open_calls = None
            push(where, _result(event))
        elif isinstance(event, workflow.ToolCall):
            if event.tool_id in announced:
                continue
            announced.add(event.tool_id)
            call = ToolCall(name=event.tool_name, args=dict(event.tool_kwargs), id=event.tool_id)
            if open_calls is None:
                open_calls = AIMessage(content="", tool_calls=[])
                push(where, open_calls)
            open_calls.tool_calls = [*(open_calls.tool_calls or []), call]
        elif isinstance(event, workflow.AgentOutput):
            open_calls = None
            message = _convert(f"{where}.response", event.response, problems)
            if isinstance(message, AIMessage) and event.tool_calls:
                message.tool_calls = [
                    ToolCall(name=s.tool_name, args=dict(s.tool_kwargs), id=s.tool_id)
                    for s in event.tool_calls
                ]
            if message is not None:
                extra = {"current_agent_name": event.current_agent_name}
                if event.structured_response is not None:
                    extra["structured_response"] = event.structured_response
                message.metadata = {**(message.metadata or {}), "llama_index_agent": extra}
            announced.update(c.id for c in _calls_of(message) if c.id is not None)
            push(where, message)
        elif isinstance(event, workflow.AgentInput):
            if not converted:
                for position, item in enumerate(event.input):
                    at = f"{where}.input[{position}]"
                    push(at, _convert(at, item, problems))
        elif isinstance(event, llms.ChatMessage):
            open_calls = None
            message = _convert(where, event, problems)
            announced.update(c.id for c in _calls_of(message) if c.id is not None)
            push(where, message)
    if problems:
        raise ConversionError(problems)
    return build_sample(converted, origins, sample_fields)


def to_llama_index_messages(sample: MultiTurnSample | Sequence[Message]) -> list[ChatMessage]:
    """The conversation as LlamaIndex `ChatMessage`s (the inverse of the message converter)."""
    llms = require("llama_index.core.llms", "llama-index-core", "llamaindex")
    messages = sample.user_input if isinstance(sample, MultiTurnSample) else sample
    return [llms.ChatMessage.model_validate(_to_dict(message)) for message in messages]


def _calls_of(message: Message | None) -> list[ToolCall]:
    return list(message.tool_calls or []) if isinstance(message, AIMessage) else []


def _result(event: Any) -> ToolMessage:
    """A ToolCallResult event as a ToolMessage."""
    extra: dict[str, Any] = {"tool_name": event.tool_name}
    output = event.tool_output
    if getattr(output, "is_error", False):
        extra["is_error"] = True
    if event.return_direct:
        extra["return_direct"] = True
    return ToolMessage(
        content=str(output.content),
        tool_call_id=event.tool_id,
        metadata={"llama_index_tool_result": extra},
    )


def _convert(where: str, raw: Any, problems: list[str]) -> Message | None:
    """Convert one ChatMessage (or its dict), appending its problems."""
    raw = dumped(raw)
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: must be a LlamaIndex ChatMessage, got {kind(raw)}")
        return None
    before = len(problems)
    role = raw.get("role")
    role = getattr(role, "value", role)
    if role not in _KIND:
        problems.append(f"{where}.role: unknown role {role!r} (expected one of {', '.join(_KIND)})")
        return None
    our = _KIND[role]
    extra: dict[str, Any] = {} if _ROLE[our] == role else {"role": role}
    kwargs = dict(raw.get("additional_kwargs") or {})
    metadata = kwargs.pop("convoeval_metadata", None)
    if metadata is not None and not isinstance(metadata, Mapping):
        problems.append(f"{where}.additional_kwargs.convoeval_metadata: must be an object")
    blocks = [_block(b) for b in raw.get("blocks") or []]
    if "blocks" not in raw and isinstance(raw.get("content"), str):
        blocks = [{"block_type": "text", "text": raw["content"]}]
    text, calls = _blocks(where, blocks, problems)
    if calls:
        extra["calls_in"] = "blocks"
    elif "tool_calls" in kwargs and our == "ai":
        calls = _kwarg_calls(f"{where}.additional_kwargs.tool_calls", kwargs, problems)
        if kwargs["tool_calls"] == _kwargs_out(calls):
            del kwargs["tool_calls"]  # the default form: written back the same way
    call_id = kwargs.pop("tool_call_id", None) if our == "tool" else None
    if call_id is not None and not isinstance(call_id, str):
        problems.append(f"{where}.additional_kwargs.tool_call_id: must be a string")
    if blocks != [{"block_type": "text", "text": text}]:
        extra["blocks"] = blocks
    if kwargs:
        extra["additional_kwargs"] = kwargs
    if calls and our != "ai":
        problems.append(f"{where}: only an assistant message calls tools")
    if len(problems) > before:
        return None
    return typed_message(our, text, metadata, (LLAMA_INDEX_KEY, extra), calls or None, call_id)


def _block(block: Any) -> Any:
    """A content block as a JSON-ready dict (urls and bytes as strings; validation reverses it)."""
    if not isinstance(block, Mapping) and hasattr(block, "model_dump"):
        return block.model_dump(mode="json")
    return block


def _blocks(where: str, blocks: list[Any], problems: list[str]) -> tuple[str, list[ToolCall]]:
    """(joined text, tool calls) of a block list."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for position, block in enumerate(blocks):
        at = f"{where}.blocks[{position}]"
        if not isinstance(block, Mapping):
            problems.append(f"{at}: must be a content block, got {kind(block)}")
        elif block.get("block_type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("block_type") == "tool_call":
            name = block.get("tool_name")
            args = arguments(f"{at}.tool_kwargs", block.get("tool_kwargs"), problems)
            if not isinstance(name, str):
                problems.append(f"{at}.tool_name: must be a string, got {kind(name)}")
            elif args is not None:
                calls.append(ToolCall(name=name, args=args, id=block.get("tool_call_id")))
    return "\n".join(texts), calls


def _kwarg_calls(where: str, kwargs: Mapping[str, Any], problems: list[str]) -> list[ToolCall]:
    """OpenAI-style `additional_kwargs["tool_calls"]` (dicts or OpenAI SDK objects)."""
    raw = kwargs["tool_calls"]
    if not isinstance(raw, list):
        problems.append(f"{where}: must be a list, got {kind(raw)}")
        return []
    calls: list[ToolCall] = []
    for position, item in enumerate(raw):
        item = dumped(item)
        function = item.get("function") if isinstance(item, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(name, str):
            problems.append(f"{where}[{position}]: must have a 'function' with a string 'name'")
            continue
        args = arguments(f"{where}[{position}].arguments", function.get("arguments"), problems)
        if args is not None:
            calls.append(ToolCall(name=name, args=args, id=item.get("id")))
    return calls


def _to_dict(message: Message) -> dict[str, Any]:
    """One typed message as `ChatMessage` fields."""
    metadata = dict(message.metadata or {})
    extra = dict(metadata.pop(LLAMA_INDEX_KEY, None) or {})
    kwargs = dict(extra.get("additional_kwargs") or {})
    calls = message.tool_calls or [] if isinstance(message, AIMessage) else []
    text_block = {"block_type": "text", "text": message.content}
    blocks = extra.get("blocks")
    in_blocks = calls if extra.get("calls_in") == "blocks" else []
    if not isinstance(blocks, list) or _blocks("", blocks, []) != (message.content, in_blocks):
        kept = [b for b in blocks or [] if b.get("block_type") not in ("text", "tool_call")]
        blocks = [text_block, *kept] if message.content or not kept else kept
        if calls and extra.get("calls_in") == "blocks":
            blocks += [
                {
                    "block_type": "tool_call",
                    "tool_call_id": c.id,
                    "tool_name": c.name,
                    "tool_kwargs": c.args,
                }
                for c in calls
            ]
    if calls and extra.get("calls_in") != "blocks":
        kept_calls = kwargs.get("tool_calls")
        if _kwarg_calls("", {"tool_calls": kept_calls}, []) != calls:
            kwargs["tool_calls"] = _kwargs_out(calls)
    if isinstance(message, ToolMessage) and message.tool_call_id is not None:
        kwargs["tool_call_id"] = message.tool_call_id
    if metadata:
        kwargs["convoeval_metadata"] = metadata
    return {
        "role": extra.get("role", _ROLE[message.type]),
        "blocks": blocks,
        "additional_kwargs": kwargs,
    }


def _kwargs_out(calls: list[ToolCall]) -> list[dict[str, Any]]:
    """Calls in OpenAI's `tool_calls` shape, as LlamaIndex's OpenAI integration stores them."""
    return [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": compact_json(c.args)},
        }
        for c in calls
    ]
