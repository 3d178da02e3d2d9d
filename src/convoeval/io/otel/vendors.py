"""MLflow and Langfuse traces, in the JSON shapes their exports document.

- MLflow: a trace as `Trace.to_json()` writes it, `{"info": {...}, "data": {"spans": [...]}}`,
  spans in the dict form of MLflow 2 (`context.trace_id`, `start_time`) or MLflow 3
  (`trace_id`/`otel_trace_id`, `start_time_unix_nano`), attribute values JSON-encoded. A chat
  span's messages are `mlflow.chat.messages` (OpenAI chat messages, the reply included), its tools
  `mlflow.chat.tools`; a TOOL span's arguments and result are `mlflow.spanInputs` /
  `mlflow.spanOutputs`; the session is the trace's `mlflow.trace.session` metadata.
- Langfuse: a trace as the UI's "Download JSON" writes it (`{"id", "sessionId", "observations":
  [...]}`), a session download (`{"traces": [...]}`), or OTLP spans from the Langfuse SDK
  (`langfuse.observation.type` / `.input` / `.output`, `langfuse.session.id`). A GENERATION's input
  is OpenAI chat messages (a list, or `{"messages": [...], "tools": [...]}`), its output a message,
  a text or a chat completion; a TOOL observation's input and output are the arguments and result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from convoeval.io._convert import kind
from convoeval.io.otel.messages import Call, Msg, ToolRun, chat_message, dumps, recorded_json
from convoeval.io.otel.spans import Found, Place, Span, at_path, list_items, nanos

MLFLOW_TYPE, LANGFUSE_TYPE = "mlflow.spanType", "langfuse.observation.type"
_MLFLOW_CALLS = frozenset({"CHAT_MODEL", "LLM"})


def is_vendor_trace(data: Any) -> bool:
    """Whether a parsed record is an MLflow trace or a Langfuse trace or session download."""
    if not isinstance(data, Mapping) or {"user_input", "messages", "turns"} & data.keys():
        return False
    spans = data.get("data", {}).get("spans") if isinstance(data.get("data"), Mapping) else None
    return ("info" in data and isinstance(spans, list)) or any(
        isinstance(data.get(key), list) for key in ("observations", "traces")
    )


def read_vendor_trace(data: Mapping[str, Any], place: Place, found: Found) -> None:
    """The spans of an MLflow trace or of a Langfuse trace (or session) download."""
    if "info" in data:
        _mlflow(data, place, found)
    elif isinstance(data.get("traces"), list):
        for path, trace in list_items(data["traces"], "traces", place, found):
            if isinstance(trace, Mapping) and isinstance(trace.get("observations"), list):
                _langfuse(trace, at_path(place, path), found, data.get("id"))
            else:
                found.problems.append(
                    (at_path(place, path), "a trace of the session download has no 'observations'")
                )
    else:
        _langfuse(data, place, found, None)


def _mlflow(data: Mapping[str, Any], place: Place, found: Found) -> None:
    info = data["info"] if isinstance(data["info"], Mapping) else {}
    metadata = info.get("trace_metadata") or info.get("request_metadata") or {}
    session = metadata.get("mlflow.trace.session") if isinstance(metadata, Mapping) else None
    for path, raw in list_items(data["data"]["spans"], "data.spans", place, found):
        at = at_path(place, path)
        if not isinstance(raw, Mapping):
            found.problems.append((at, f"a span must be an object, got {kind(raw)}"))
            continue
        problems: list[str] = []
        context = raw.get("context")
        context = context if isinstance(context, Mapping) else {}
        trace_id = _plain_id(raw.get("otel_trace_id") or context.get("trace_id"))
        trace_id = trace_id or _plain_id(raw.get("trace_id") or info.get("trace_id"))
        span_id = _plain_id(raw.get("span_id") or context.get("span_id"))
        if not trace_id or not span_id:
            found.problems.append((at, "span: trace_id and span_id are required"))
            continue
        attributes: dict[str, Any] = {}
        raw_attributes = raw.get("attributes")
        for key, value in raw_attributes.items() if isinstance(raw_attributes, Mapping) else ():
            attributes[key] = _decoded(value)
        if session is not None:
            attributes.setdefault("mlflow.trace.session", session)
        start = raw.get("start_time_unix_nano", raw.get("start_time"))
        end = raw.get("end_time_unix_nano", raw.get("end_time"))
        parent = raw.get("parent_span_id", raw.get("parent_id"))
        span = Span(
            trace_id,
            span_id,
            _plain_id(parent),
            str(raw.get("name", "")),
            nanos(start, "start_time_unix_nano", problems),
            nanos(end, "end_time_unix_nano", problems),
            attributes,
            [],
            {},
            {},
            at,
            problems,
        )
        found.spans.append(span)


def _langfuse(trace: Mapping[str, Any], place: Place, found: Found, session: Any) -> None:
    trace_id = _plain_id(trace.get("id"))
    session = trace.get("sessionId") or session
    for path, raw in list_items(trace.get("observations"), "observations", place, found):
        at = at_path(place, path)
        if not isinstance(raw, Mapping):
            found.problems.append((at, f"an observation must be an object, got {kind(raw)}"))
            continue
        span_id = _plain_id(raw.get("id"))
        observation_trace = _plain_id(raw.get("traceId")) or trace_id
        if not span_id or not observation_trace:
            found.problems.append((at, "observation: id and traceId are required"))
            continue
        problems: list[str] = []
        attributes = {
            LANGFUSE_TYPE: raw.get("type"),
            # as JSON text, as the Langfuse SDK's spans hold them: one way to read both
            "langfuse.observation.input": _text(raw.get("input")),
            "langfuse.observation.output": _text(raw.get("output")),
            "langfuse.observation.model.name": raw.get("model"),
        }
        usage = raw.get("usageDetails") or raw.get("usage") or {}
        if isinstance(usage, Mapping):
            attributes["langfuse.usage"] = dict(usage)
        if session:
            attributes["langfuse.session.id"] = str(session)
        span = Span(
            observation_trace,
            span_id,
            _plain_id(raw.get("parentObservationId")),
            str(raw.get("name") or ""),
            nanos(raw.get("startTime"), "startTime", problems),
            nanos(raw.get("endTime"), "endTime", problems),
            {k: v for k, v in attributes.items() if v is not None},
            [],
            {},
            {},
            at,
            problems,
        )
        found.spans.append(span)


def _text(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def _decoded(value: Any) -> Any:
    """An MLflow attribute value: MLflow stores each as JSON text; a value another library set
    as plain text stays as it is (the message attributes are checked when read)."""
    if not isinstance(value, str):
        return value
    problems: list[str] = []
    parsed = recorded_json(value, "", problems)
    return value if problems else parsed


def _plain_id(raw: Any) -> str | None:
    """An id as these exports write it (`0x` hex, `tr-` prefixed hex, a UUID), as text."""
    if not isinstance(raw, str) or not raw:
        return None
    return raw.removeprefix("0x").removeprefix("tr-")


def is_vendor(span: Span) -> bool:
    """Whether the span is an MLflow span or a Langfuse observation."""
    return MLFLOW_TYPE in span.attributes or LANGFUSE_TYPE in span.attributes


def read_vendor(span: Span, problems: list[str]) -> Call | ToolRun | None:
    """An MLflow chat span or a Langfuse GENERATION as a call; their TOOL spans as tool runs."""
    attributes = span.attributes
    if MLFLOW_TYPE in attributes:
        span_type = str(_decoded(attributes[MLFLOW_TYPE])).upper()
        sent = _decoded(attributes.get("mlflow.spanInputs"))
        returned = _decoded(attributes.get("mlflow.spanOutputs"))
        if span_type == "TOOL":
            return _tool_run(span, sent, returned, "mlflow TOOL")
        if span_type not in _MLFLOW_CALLS or "mlflow.chat.messages" not in attributes:
            return None
        messages = _chat(span, attributes["mlflow.chat.messages"], "mlflow.chat.messages", problems)
        offered = recorded_json(attributes.get("mlflow.chat.tools"), "mlflow.chat.tools", problems)
        return Call(
            span, messages, [], offered if isinstance(offered, list) else [], source="mlflow"
        )
    span_type = str(attributes.get(LANGFUSE_TYPE, "")).upper()
    sent = recorded_json(attributes.get("langfuse.observation.input"), "input", problems)
    returned = recorded_json(attributes.get("langfuse.observation.output"), "output", problems)
    if span_type == "TOOL":
        return _tool_run(span, sent, returned, "langfuse TOOL")
    if span_type != "GENERATION":
        return None
    tools: Any = []
    if isinstance(sent, Mapping):
        tools, sent = sent.get("tools") or [], sent.get("messages")
    call = Call(span, _chat(span, sent, "input", problems), [], source="langfuse")
    call.output = _reply(span, returned, problems)
    call.tools = tools if isinstance(tools, list) else []
    model = attributes.get("langfuse.observation.model.name")
    call.model = model if isinstance(model, str) else None
    usage = attributes.get("langfuse.usage")
    if isinstance(usage, Mapping):
        for name, keys in (
            ("input_tokens", ("input", "promptTokens")),
            ("output_tokens", ("output", "completionTokens")),
        ):
            count = next((usage[k] for k in keys if isinstance(usage.get(k), int)), None)
            if count is not None:
                call.usage[name] = count
    return call


def _chat(span: Span, value: Any, where: str, problems: list[str]) -> list[Msg]:
    """A list of OpenAI chat messages."""
    data = recorded_json(value, where, problems)
    if data is None:
        return []
    if not isinstance(data, list):
        problems.append(f"{where}: must be a list of chat messages, got {kind(data)}")
        return []
    found = [chat_message(f"{where}[{i}]", item, span, problems) for i, item in enumerate(data)]
    return [message for message in found if message is not None]


def _reply(span: Span, value: Any, problems: list[str]) -> list[Msg]:
    """A generation's output: a message, a text, messages, or a chat completion's first choice."""
    if value is None:
        return []
    if not isinstance(value, list | Mapping):
        return [Msg("ai", dumps(value), span=span)]
    if isinstance(value, Mapping) and isinstance(value.get("choices"), list) and value["choices"]:
        value = (
            value["choices"][0].get("message") if isinstance(value["choices"][0], Mapping) else None
        )
    if isinstance(value, Mapping):
        value = [{"role": "assistant", **value}]
    return _chat(span, value, "output", problems)


def _tool_run(span: Span, arguments: Any, result: Any, source: str) -> ToolRun:
    return ToolRun(
        span, span.name or None, None, arguments, None if result is None else dumps(result), source
    )
