"""The OpenTelemetry GenAI semantic conventions: a span as a model call or a tool execution.

Read, newest first (docs/traces.md says which convention version each comes from):
- message attributes (v1.37+): `gen_ai.input.messages`, `gen_ai.output.messages`,
  `gen_ai.system_instructions` (JSON parts: text, tool_call, tool_call_response), on the span or
  on its `gen_ai.client.inference.operation.details` event; tools in `gen_ai.tool.definitions`;
- message events (v1.28-v1.36): `gen_ai.system.message`, `gen_ai.user.message`,
  `gen_ai.assistant.message`, `gen_ai.tool.message`, `gen_ai.choice`, as span events (body in
  `gen_ai.event.content` or in the event's attributes) or as log records linked to the span;
- content events (v1.26-v1.27): `gen_ai.content.prompt` / `gen_ai.content.completion`;
- OpenLLMetry's indexed attributes `gen_ai.prompt.N.*` / `gen_ai.completion.N.*`.
Tool executions are `execute_tool` spans (`gen_ai.tool.name`, `gen_ai.tool.call.id`,
`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from convoeval.io._convert import kind
from convoeval.io.otel.messages import (
    Call,
    Msg,
    ToolRun,
    chat_message,
    dumps,
    part_messages,
    recorded_json,
    unflatten,
)
from convoeval.io.otel.spans import Event, Span

INPUT, OUTPUT, SYSTEM = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
)
DETAILS = "gen_ai.client.inference.operation.details"
_INPUT_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_CHOICE = "gen_ai.choice"
_CONTENT_EVENTS = {
    "gen_ai.content.prompt": "gen_ai.prompt",
    "gen_ai.content.completion": "gen_ai.completion",
}
#: Operations that are model calls even when no content was recorded.
CALL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_EVENT_META = frozenset({"gen_ai.system", "gen_ai.provider.name", "event.name"})


def is_genai(span: Span) -> bool:
    """Whether the span speaks the GenAI conventions (an attribute or event `gen_ai.*`)."""
    return any(key.startswith("gen_ai.") for key in span.attributes) or any(
        event.name.startswith("gen_ai.") for event in span.events
    )


def read_genai(span: Span, problems: list[str]) -> Call | ToolRun | None:
    """The span's model call or tool execution; None for any other span (an agent or workflow
    span without messages, a retrieval, ...)."""
    attributes = span.attributes
    operation = attributes.get("gen_ai.operation.name")
    if operation == "execute_tool":
        return _tool_run(span, problems)
    details = next((e.attributes for e in span.events if e.name == DETAILS), {})
    view = {**details, **attributes}
    if any(key in view for key in (INPUT, OUTPUT, SYSTEM)):
        call = _from_parts(span, view, problems)
    elif any(e.name in _INPUT_EVENTS or e.name == _CHOICE for e in span.events):
        call = _from_events(span, problems)
    elif any(e.name in _CONTENT_EVENTS for e in span.events):
        call = _from_content_events(span, problems)
    elif any(key.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for key in attributes):
        call = _from_indexed(span, problems)
    elif operation in CALL_OPERATIONS:
        call = Call(span, [], [], recorded=False, source="gen_ai")
    else:
        return None
    _describe(call, view, problems)
    return call


def _describe(call: Call, view: Mapping[str, Any], problems: list[str]) -> None:
    """Model, provider, token usage, finish reasons and tool definitions of a call."""
    model = view.get("gen_ai.response.model") or view.get("gen_ai.request.model")
    provider = view.get("gen_ai.provider.name") or view.get("gen_ai.system")
    call.model = model if isinstance(model, str) else None
    call.provider = provider if isinstance(provider, str) else None
    for name, keys in (
        ("input_tokens", ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")),
        ("output_tokens", ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")),
    ):
        value = next((view[k] for k in keys if isinstance(view.get(k), int)), None)
        if value is not None:
            call.usage[name] = value
    reasons = view.get("gen_ai.response.finish_reasons")
    if isinstance(reasons, list):
        call.finish_reasons = [str(reason) for reason in reasons]
    definitions = recorded_json(
        view.get("gen_ai.tool.definitions"), "gen_ai.tool.definitions", problems
    )
    if isinstance(definitions, list):
        call.tools.extend(definitions)
    elif definitions is not None:
        problems.append(f"gen_ai.tool.definitions: must be a list, got {kind(definitions)}")
    if not call.tools:
        functions = unflatten(call.span.attributes, "llm.request.functions", problems)
        call.tools.extend(_flat_tool(item, problems) for item in functions)


def _flat_tool(item: Any, problems: list[str]) -> Any:
    """OpenLLMetry's `llm.request.functions.N.{name,description,parameters}` as a flat spec."""
    if isinstance(item, dict) and isinstance(item.get("parameters"), str):
        item = {**item, "parameters": recorded_json(item["parameters"], "parameters", problems)}
    return item


def _messages(span: Span, value: Any, where: str, problems: list[str]) -> list[Msg]:
    """A list of GenAI messages (role + parts) as messages."""
    data = recorded_json(value, where, problems)
    if data is None:
        return []
    if not isinstance(data, list):
        problems.append(f"{where}: must be a list of messages, got {kind(data)}")
        return []
    out: list[Msg] = []
    for index, item in enumerate(data):
        out.extend(part_messages(f"{where}[{index}]", item, span, problems))
    return out


def _from_parts(span: Span, view: Mapping[str, Any], problems: list[str]) -> Call:
    """Messages as JSON parts in attributes (semantic conventions v1.37 and later)."""
    messages: list[Msg] = []
    system = recorded_json(view.get(SYSTEM), SYSTEM, problems)
    if isinstance(system, list):
        parts = {"role": "system", "parts": system}
        messages.extend(part_messages(SYSTEM, parts, span, problems))
    elif system is not None:
        problems.append(f"{SYSTEM}: must be a list of parts, got {kind(system)}")
    messages.extend(_messages(span, view.get(INPUT), INPUT, problems))
    output = _messages(span, view.get(OUTPUT), OUTPUT, problems)
    return Call(span, messages, output, source="gen_ai attributes")


def _body(event: Event, problems: list[str]) -> dict[str, Any]:
    """An event's body: the log record's body, `gen_ai.event.content`, or its attributes."""
    if event.log:
        body = event.body
    elif "gen_ai.event.content" in event.attributes:
        body = recorded_json(
            event.attributes["gen_ai.event.content"], "gen_ai.event.content", problems
        )
    else:
        body = {k: v for k, v in event.attributes.items() if k not in _EVENT_META}
        for key in ("tool_calls", "message"):
            if isinstance(body.get(key), str):
                body[key] = recorded_json(body[key], f"{event.name}.{key}", problems)
    if body is None:
        return {}
    if not isinstance(body, Mapping):
        problems.append(f"{event.name}: the event body must be an object, got {kind(body)}")
        return {}
    return dict(body)


def _from_events(span: Span, problems: list[str]) -> Call:
    """Messages as events (semantic conventions v1.28 to v1.36), in the order recorded."""
    events = sorted(
        (e for e in span.events if e.name in _INPUT_EVENTS or e.name == _CHOICE),
        key=lambda e: e.time or 0,
    )
    sent: list[Msg] = []
    choices: list[tuple[int, Msg]] = []
    for position, event in enumerate(events):
        where = f"events[{position}] ({event.name})"
        body = _body(event, problems)
        if event.name == _CHOICE:
            message = body.get("message")
            data = {"role": "assistant", **(message if isinstance(message, Mapping) else {})}
            if body.get("finish_reason"):
                data["finish_reason"] = body["finish_reason"]
            found = chat_message(f"{where}.message", data, span, problems)
            index = body.get("index", len(choices))
            if found is not None:
                choices.append((index if isinstance(index, int) else len(choices), found))
            continue
        data = {"role": _INPUT_EVENTS[event.name], **body}
        found = chat_message(where, data, span, problems)
        if found is not None:
            sent.append(found)
    output = [message for _, message in sorted(choices, key=lambda pair: pair[0])]
    return Call(span, sent, output, source="gen_ai events")


def _from_content_events(span: Span, problems: list[str]) -> Call:
    """`gen_ai.content.prompt` / `.completion` events holding OpenAI-style message lists."""
    lists: dict[str, list[Msg]] = {"gen_ai.prompt": [], "gen_ai.completion": []}
    for event in span.events:
        key = _CONTENT_EVENTS.get(event.name)
        if key is None:
            continue
        data = recorded_json(event.attributes.get(key), f"{event.name}.{key}", problems)
        if not isinstance(data, list):
            problems.append(f"{event.name}.{key}: must be a list of messages, got {kind(data)}")
            continue
        for index, item in enumerate(data):
            if isinstance(item, Mapping) and key == "gen_ai.completion":
                item = {"role": "assistant", **item}
            found = chat_message(f"{event.name}.{key}[{index}]", item, span, problems)
            if found is not None:
                lists[key].append(found)
    return Call(span, lists["gen_ai.prompt"], lists["gen_ai.completion"], source="gen_ai events")


def _from_indexed(span: Span, problems: list[str]) -> Call:
    """OpenLLMetry's `gen_ai.prompt.N.role/content/tool_calls.M.*` and `gen_ai.completion.N.*`."""
    lists: dict[str, list[Msg]] = {}
    for prefix in ("gen_ai.prompt", "gen_ai.completion"):
        lists[prefix] = []
        for index, item in enumerate(unflatten(span.attributes, prefix, problems)):
            if isinstance(item, dict) and prefix == "gen_ai.completion":
                item = {"role": "assistant", **item}
            found = chat_message(f"{prefix}.{index}", item, span, problems)
            if found is not None:
                lists[prefix].append(found)
    return Call(span, lists["gen_ai.prompt"], lists["gen_ai.completion"], source="openllmetry")


def _tool_run(span: Span, problems: list[str]) -> ToolRun:
    """An `execute_tool` span: which tool, which call it answers, arguments and result."""
    attributes = span.attributes
    name = attributes.get("gen_ai.tool.name")
    call_id = attributes.get("gen_ai.tool.call.id")
    args = attributes.get("gen_ai.tool.call.arguments")  # kept as recorded (metadata only)
    result = attributes.get("gen_ai.tool.call.result")
    return ToolRun(
        span,
        name if isinstance(name, str) and name else None,
        call_id if isinstance(call_id, str) and call_id else None,
        args,
        None if result is None else dumps(result),
        source="gen_ai execute_tool",
    )
