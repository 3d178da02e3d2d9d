"""From spans to conversations: grouping by conversation id, reading each span by its
convention, and the sample with its metadata (trace and span ids, models, usage, timings, gaps).

A span belongs to the conversation named by its own `gen_ai.conversation.id`, `session.id`,
`langfuse.session.id`, `traceloop.association.properties.session_id` or `mlflow.trace.session`
(the first found), else to the one its trace names (the earliest span that names one), else to
its trace alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from convoeval._text import nth
from convoeval.io._convert import build_sample, typed_message
from convoeval.io.errors import ConversionError
from convoeval.io.otel.assemble import assemble
from convoeval.io.otel.genai import is_genai, read_genai
from convoeval.io.otel.messages import Call, Msg, ToolRun
from convoeval.io.otel.openinference import is_openinference, read_openinference
from convoeval.io.otel.spans import Span
from convoeval.io.otel.vendors import is_vendor, read_vendor
from convoeval.schema.errors import describe_errors
from convoeval.schema.sample import MultiTurnSample
from convoeval.schema.tools import ToolSpec

#: Span attributes naming a conversation, in the order they are looked up.
CONVERSATION_KEYS = (
    "gen_ai.conversation.id",
    "session.id",
    "langfuse.session.id",
    "traceloop.association.properties.session_id",
    "mlflow.trace.session",
)
TRACE = "trace id"


@dataclass(slots=True)
class Group:
    """The spans of one conversation and what grouped them (an attribute name, or trace id)."""

    key: str
    grouped_by: str
    spans: list[Span] = field(default_factory=list)


def _own_id(span: Span) -> tuple[str, str] | None:
    for name in CONVERSATION_KEYS:
        value = span.attributes.get(name)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
            return str(value), name
    return None


def group(spans: list[Span]) -> list[Group]:
    """Spans grouped into conversations, in the order of each conversation's first span."""
    by_trace: dict[str, tuple[str, str]] = {}
    for span in sorted(spans, key=_when):
        own = _own_id(span)
        if own is not None:
            by_trace.setdefault(span.trace_id, own)
    groups: dict[str, Group] = {}
    for span in sorted(spans, key=lambda s: s.place.order):
        key, by = _own_id(span) or by_trace.get(span.trace_id) or (span.trace_id, TRACE)
        groups.setdefault(key, Group(key, by)).spans.append(span)
    return list(groups.values())


def _when(span: Span) -> tuple[int, int]:
    return (span.start or 0, span.place.order)


_READERS = (
    (is_genai, read_genai),
    (is_openinference, read_openinference),
    (is_vendor, read_vendor),
)


def read_span(span: Span, problems: list[str]) -> Call | ToolRun | None:
    """A span as a model call or tool run by its convention (GenAI first, then OpenInference,
    then MLflow's and Langfuse's own attributes). A span may speak several: the first reading
    that recorded messages wins, else the first that is a call at all (a gap)."""
    fallback: tuple[Call | ToolRun, list[str]] | None = None
    for applies, read in _READERS:
        if not applies(span):
            continue
        found: list[str] = []
        item = read(span, found)
        if item is None:
            continue
        if isinstance(item, ToolRun) or (item.recorded and (item.input or item.output)) or found:
            problems.extend(found)
            return item
        fallback = fallback or (item, found)
    if fallback is not None:
        problems.extend(fallback[1])
        return fallback[0]
    return None


def build(group: Group) -> tuple[MultiTurnSample | None, list[str], list[str]]:
    """(sample or None, problems, gaps) of one conversation."""
    problems: list[str] = []
    items: list[Call | ToolRun] = []
    for span in group.spans:
        found: list[str] = list(span.problems)
        item = read_span(span, found)
        problems.extend(f"{span.label()}: {problem}" for problem in found)
        if item is not None:
            items.append(item)
    items = _without_wrappers(items, group.spans)
    if not items:
        return None, problems, []
    items.sort(key=lambda item: _when(item.span))
    tools = _tools(items, problems)
    assembly = assemble(items)
    if not assembly.messages and not problems:
        calls = sum(isinstance(item, Call) for item in items)
        problems.append(
            f"no messages: its {calls} model calls and {len(items) - calls} tool executions "
            "record no message content (was content capture off?)"
        )
    if problems:
        return None, problems, assembly.gaps
    metadata = _metadata(group, items, assembly.gaps)
    messages = [_message(m) for m in assembly.messages]
    origins = [
        f"{m.span.label() if m.span else group.key}: message {nth(i)}"
        for i, m in enumerate(assembly.messages)
    ]
    fields: dict[str, Any] = {"id": group.key, "metadata": {"otel": metadata}}
    if tools:
        fields["available_tools"] = tools
    try:
        return build_sample(messages, origins, fields), [], assembly.gaps
    except ConversionError as exc:
        return None, exc.problems, assembly.gaps


def _without_wrappers(items: list[Call | ToolRun], spans: list[Span]) -> list[Call | ToolRun]:
    """Drop the calls of agent spans that wrap other calls with messages (their messages are
    the inner calls' again)."""
    recorded = {(i.span.trace_id, i.span.span_id) for i in items if isinstance(i, Call) and i.input}
    parents = {(s.trace_id, s.span_id): s.parent_id for s in spans}
    wrappers: set[tuple[str, str]] = set()
    for trace_id, span_id in recorded:
        parent = parents.get((trace_id, span_id))
        seen = 0
        while parent is not None and seen < len(parents):
            wrappers.add((trace_id, parent))
            parent = parents.get((trace_id, parent))
            seen += 1
    return [
        i
        for i in items
        if not (isinstance(i, Call) and (i.span.trace_id, i.span.span_id) in wrappers)
    ]


def _tools(items: list[Call | ToolRun], problems: list[str]) -> list[ToolSpec]:
    """The tools offered in any call, once per name (the first definition seen)."""
    out: dict[str, ToolSpec] = {}
    for item in items:
        if not isinstance(item, Call):
            continue
        for index, raw in enumerate(item.tools):
            try:
                tool = ToolSpec.model_validate(raw)
            except ValidationError as exc:
                lines = describe_errors(exc, ("tools", index))
                problems.extend(f"{item.span.label()}: {line}" for line in lines)
                continue
            out.setdefault(tool.name, tool)
    return list(out.values())


def _message(message: Msg) -> Any:
    meta: dict[str, Any] = {}
    if message.span is not None:
        meta = {"trace_id": message.span.trace_id, "span_id": message.span.span_id}
    return typed_message(
        message.kind,
        message.content or "",
        {"otel": {**meta, **message.extra}},
        ("otel", {}),
        message.calls,
        message.call_id,
    )


def _metadata(group: Group, items: list[Call | ToolRun], gaps: list[str]) -> dict[str, Any]:
    """Where the conversation came from: ids, timings, models, usage, every span read, gaps."""
    spans = [_span_entry(item) for item in items]
    starts = [s.start for s in group.spans if s.start is not None]
    ends = [s.end for s in group.spans if s.end is not None]
    out: dict[str, Any] = {"grouped_by": group.grouped_by}
    if group.grouped_by != TRACE:
        out["conversation_id"] = group.key
    out["trace_ids"] = list(dict.fromkeys(s.trace_id for s in group.spans))
    service = next((s.resource.get("service.name") for s in group.spans if s.resource), None)
    if isinstance(service, str):
        out["service_name"] = service
    if starts and ends:
        out.update(start_unix_nano=min(starts), end_unix_nano=max(ends))
        out["duration_ms"] = (max(ends) - min(starts)) / 1e6
    models = [i.model for i in items if isinstance(i, Call) and i.model]
    if models:
        out["models"] = list(dict.fromkeys(models))
    usage: dict[str, int] = {}
    for item in items:
        if isinstance(item, Call):
            for name, count in item.usage.items():
                usage[name] = usage.get(name, 0) + count
    if usage:
        out["usage"] = usage
    out["spans"] = spans
    if gaps:
        out["gaps"] = list(gaps)
    return out


def _span_entry(item: Call | ToolRun) -> dict[str, Any]:
    span = item.span
    entry: dict[str, Any] = {
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "name": span.name,
        "type": "llm" if isinstance(item, Call) else "tool",
        "convention": item.source,
    }
    if span.parent_id:
        entry["parent_span_id"] = span.parent_id
    if span.start is not None:
        entry["start_unix_nano"] = span.start
    if span.start is not None and span.end is not None:
        entry["duration_ms"] = (span.end - span.start) / 1e6
    if isinstance(item, Call):
        details = {"model": item.model, "provider": item.provider}
        entry.update({k: v for k, v in details.items() if v})
        if item.usage:
            entry["usage"] = dict(item.usage)
        if item.finish_reasons:
            entry["finish_reasons"] = list(item.finish_reasons)
    else:
        details = {"tool": item.name, "tool_call_id": item.call_id, "arguments": item.arguments}
        entry.update({k: v for k, v in details.items() if v is not None})
        if item.result is not None:
            entry["result"] = item.result
    message = span.status.get("message")
    if _status_is_error(span.status):
        entry["error"] = message if isinstance(message, str) and message else "error"
    return entry


def _status_is_error(status: dict[str, Any]) -> bool:
    code = status.get("code", status.get("status_code"))
    return code in (2, "STATUS_CODE_ERROR", "ERROR")
