"""Spans out of trace exports: OTLP JSON export requests, flat span lines, linked log records.

One parsed JSON value (a JSONL line or an element of a .json file) becomes spans, log records
and problems. OTLP JSON (`resourceSpans` / `scopeSpans` / `spans`, attributes as `{"key",
"value": AnyValue}`, 64-bit integers as strings, hex ids) is read as the OTLP/JSON encoding
defines it, and also as protobuf's `MessageToJson` writes it (base64 ids, snake_case names with
`preserving_proto_field_name`). A flat span is either one OTLP span object per line or the
OpenTelemetry SDK's `span.to_json()` (`context.trace_id`, `0x` hex ids, ISO times, plain
attribute values). Nothing here knows what the attributes mean: see `genai.py` and
`openinference.py`.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from convoeval.io._convert import kind as json_kind


@dataclass(slots=True)
class Place:
    """Where a span or log record sits: its JSONL line (or .json element) and its JSON path."""

    line: int
    path: str
    order: int  # position among everything read from the file
    element: bool = False  # True in a .json file: `line` is then the element's 1-based index

    def label(self) -> str:
        """`line 3` (JSONL) or the JSON path (`[0].resourceSpans[0].scopeSpans[0].spans[2]`)."""
        if self.element:
            return self.path or "the top-level object"
        return f"line {self.line}"


@dataclass(slots=True)
class Event:
    """A span event or a log record linked to a span: its name, time, attributes and body."""

    name: str
    time: int | None
    attributes: dict[str, Any]
    body: Any = None
    log: bool = False


@dataclass(slots=True)
class Span:
    """One span, its attributes and events decoded to plain Python values."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int | None
    end: int | None
    attributes: dict[str, Any]
    events: list[Event]
    resource: dict[str, Any]
    status: dict[str, Any]
    place: Place
    problems: list[str] = field(default_factory=list)

    def label(self) -> str:
        """`trace T, span S (line N)`: what a problem of this span names."""
        return f"trace {self.trace_id}, span {self.span_id} ({self.place.label()})"


@dataclass(slots=True)
class Log:
    """A log record (an event of the older GenAI conventions) with the span it belongs to."""

    trace_id: str | None
    span_id: str | None
    event: Event
    place: Place


@dataclass(slots=True)
class Found:
    """What one parsed JSON value held: spans, log records, and problems no span owns."""

    spans: list[Span] = field(default_factory=list)
    logs: list[Log] = field(default_factory=list)
    problems: list[tuple[Place, str]] = field(default_factory=list)


def _get(data: Mapping[str, Any], camel: str, default: Any = None) -> Any:
    """A field by its OTLP/JSON name or its proto (snake_case) name."""
    if camel in data:
        return data[camel]
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
    return data.get(snake, default)


def is_trace(data: Any) -> bool:
    """Whether a parsed record is a trace export (an OTLP request or a flat span), not a
    conversation record: used to detect `--format otel` when it was not given."""
    if not isinstance(data, Mapping) or {"user_input", "messages", "turns"} & data.keys():
        return False
    if any(_get(data, key) is not None for key in ("resourceSpans", "resourceLogs")):
        return True
    if _get(data, "traceId") is not None and _get(data, "spanId") is not None:
        return True
    context = data.get("context")
    return isinstance(context, Mapping) and "trace_id" in context and "span_id" in context


def read_value(data: Any, place: Place, found: Found) -> None:
    """Collect the spans and log records of one parsed JSON value into `found`."""
    if not isinstance(data, Mapping):
        found.problems.append((place, f"expected a trace export object, got {json_kind(data)}"))
        return
    if _get(data, "resourceSpans") is not None or _get(data, "resourceLogs") is not None:
        _read_request(data, place, found)
    elif is_trace(data):
        span = _flat_span(data, {}, place, found)
        if span is not None:
            found.spans.append(span)
    else:
        keys = ", ".join(repr(str(k)) for k in data) or "none"
        found.problems.append(
            (
                place,
                "not a trace export: expected an OTLP export request ('resourceSpans' or "
                f"'resourceLogs') or a span ('traceId' and 'spanId'); it has: {keys}",
            )
        )


def list_items(value: Any, path: str, place: Place, found: Found) -> Iterator[tuple[str, Any]]:
    """(path, item) of a JSON list; a problem when it is not a list."""
    if value is None:
        return
    if not isinstance(value, list):
        found.problems.append((at_path(place, path), f"must be a list, got {json_kind(value)}"))
        return
    for index, item in enumerate(value):
        yield f"{path}[{index}]", item


def at_path(place: Place, path: str) -> Place:
    prefix = place.path if place.element else ""
    full = f"{prefix}.{path}" if prefix and not path.startswith("[") else prefix + path
    return Place(place.line, full, place.order, place.element)


def _read_request(data: Mapping[str, Any], place: Place, found: Found) -> None:
    """An ExportTraceServiceRequest and/or ExportLogsServiceRequest."""
    for path, group in list_items(_get(data, "resourceSpans"), "resourceSpans", place, found):
        resource = _resource(group, path, place, found)
        scopes = _get(group, "scopeSpans") if isinstance(group, Mapping) else None
        if scopes is None and isinstance(group, Mapping):
            scopes = _get(group, "instrumentationLibrarySpans")  # before OTLP 0.15
        for scope_path, scope in list_items(scopes, f"{path}.scopeSpans", place, found):
            spans = _get(scope, "spans") if isinstance(scope, Mapping) else None
            for span_path, raw in list_items(spans, f"{scope_path}.spans", place, found):
                span = _flat_span(raw, resource, at_path(place, span_path), found)
                if span is not None:
                    found.spans.append(span)
    for path, group in list_items(_get(data, "resourceLogs"), "resourceLogs", place, found):
        scopes = _get(group, "scopeLogs") if isinstance(group, Mapping) else None
        for scope_path, scope in list_items(scopes, f"{path}.scopeLogs", place, found):
            records = _get(scope, "logRecords") if isinstance(scope, Mapping) else None
            for log_path, raw in list_items(records, f"{scope_path}.logRecords", place, found):
                _log(raw, at_path(place, log_path), found)


def _resource(group: Any, path: str, place: Place, found: Found) -> dict[str, Any]:
    if not isinstance(group, Mapping):
        found.problems.append((at_path(place, path), f"must be an object, got {json_kind(group)}"))
        return {}
    resource = _get(group, "resource") or {}
    problems: list[str] = []
    attributes = attributes_of(_get(resource, "attributes"), "resource.attributes", problems)
    for problem in problems:
        found.problems.append((at_path(place, path), problem))
    return attributes


def _log(raw: Any, place: Place, found: Found) -> None:
    """A log record; only those that are events (a name) are kept."""
    if not isinstance(raw, Mapping):
        found.problems.append((place, f"a log record must be an object, got {json_kind(raw)}"))
        return
    problems: list[str] = []
    attributes = attributes_of(_get(raw, "attributes"), "attributes", problems)
    name = _get(raw, "eventName") or attributes.pop("event.name", None)
    if not isinstance(name, str) or not name:
        return  # an ordinary log line, no GenAI event
    body = any_value(_get(raw, "body"), "body", problems) if _get(raw, "body") else None
    trace_id = _id(_get(raw, "traceId"), 16, "traceId", problems, required=False)
    span_id = _id(_get(raw, "spanId"), 8, "spanId", problems, required=False)
    time = nanos(_get(raw, "timeUnixNano") or _get(raw, "observedTimeUnixNano"), "time", problems)
    for problem in problems:
        found.problems.append((place, f"log record {name}: {problem}"))
    event = Event(name, time, attributes, body, log=True)
    found.logs.append(Log(trace_id, span_id, event, place))


def _flat_span(raw: Any, resource: dict[str, Any], place: Place, found: Found) -> Span | None:
    """An OTLP span object, or the SDK's `to_json()` form; None (with a problem) when it has
    no usable trace or span id, since it then belongs to no conversation."""
    if not isinstance(raw, Mapping):
        found.problems.append((place, f"a span must be an object, got {json_kind(raw)}"))
        return None
    problems: list[str] = []
    context = raw.get("context")
    sdk = isinstance(context, Mapping)
    if isinstance(context, Mapping):
        raw_trace, raw_span = context.get("trace_id"), context.get("span_id")
    else:
        raw_trace, raw_span = _get(raw, "traceId"), _get(raw, "spanId")
    trace_id = _id(raw_trace, 16, "traceId", problems)
    span_id = _id(raw_span, 8, "spanId", problems)
    if trace_id is None or span_id is None:
        found.problems.extend((place, f"span: {problem}") for problem in problems)
        return None
    parent = raw.get("parent_id") if sdk else _get(raw, "parentSpanId")
    parent_id = _id(parent, 8, "parentSpanId", problems, required=False)
    if sdk:
        start = nanos(raw.get("start_time"), "start_time", problems)
        end = nanos(raw.get("end_time"), "end_time", problems)
    else:
        start = nanos(_get(raw, "startTimeUnixNano"), "startTimeUnixNano", problems)
        end = nanos(_get(raw, "endTimeUnixNano"), "endTimeUnixNano", problems)
    if sdk and isinstance(raw.get("resource"), Mapping):
        resource = attributes_of(raw["resource"].get("attributes"), "resource", problems)
    attributes = attributes_of(raw.get("attributes"), "attributes", problems)
    events = [
        _event(item, path, problems)
        for path, item in list_items(raw.get("events"), "events", place, found)
    ]
    status = raw.get("status")
    name = raw.get("name")
    return Span(
        trace_id,
        span_id,
        parent_id,
        name if isinstance(name, str) else "",
        start,
        end,
        attributes,
        [event for event in events if event is not None],
        resource,
        dict(status) if isinstance(status, Mapping) else {},
        place,
        problems,
    )


def _event(raw: Any, path: str, problems: list[str]) -> Event | None:
    if not isinstance(raw, Mapping):
        problems.append(f"{path}: an event must be an object, got {json_kind(raw)}")
        return None
    name = raw.get("name")
    time_field = "timestamp" if "timestamp" in raw else "timeUnixNano"
    time = nanos(_get(raw, time_field), f"{path}.{time_field}", problems)
    attributes = attributes_of(raw.get("attributes"), f"{path}.attributes", problems)
    return Event(name if isinstance(name, str) else "", time, attributes)


def attributes_of(raw: Any, path: str, problems: list[str]) -> dict[str, Any]:
    """OTLP attributes (a list of `{"key", "value": AnyValue}`) or a plain object, as a dict."""
    if raw is None:
        return {}
    if isinstance(raw, Mapping):  # the SDK's to_json() form: plain JSON values
        return dict(raw)
    if not isinstance(raw, list):
        problems.append(f"{path}: must be a list of key/value pairs, got {json_kind(raw)}")
        return {}
    out: dict[str, Any] = {}
    for index, pair in enumerate(raw):
        key = pair.get("key") if isinstance(pair, Mapping) else None
        if not isinstance(key, str):
            problems.append(f"{path}[{index}]: expected {{'key': ..., 'value': ...}}")
            continue
        if key in out:
            problems.append(f"{path}: the key {key!r} appears twice")
            continue
        out[key] = any_value(pair.get("value"), f"{path}[{key!r}]", problems)
    return out


def any_value(raw: Any, path: str, problems: list[str]) -> Any:
    """An OTLP AnyValue as a plain value (`intValue` given as a string becomes an int)."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        problems.append(f"{path}: an AnyValue must be an object, got {json_kind(raw)}")
        return None
    if not raw:
        return None  # an empty AnyValue: no value
    (name, value), *rest = raw.items()
    if rest:
        problems.append(f"{path}: an AnyValue holds one value, got {', '.join(map(str, raw))}")
        return None
    if name in ("stringValue", "string_value", "bytesValue", "bytes_value"):
        return _typed(value, str, path, problems)
    if name in ("boolValue", "bool_value"):
        return _typed(value, bool, path, problems)
    if name in ("intValue", "int_value"):
        try:
            return int(value) if not isinstance(value, bool | float) else _bad(path, problems)
        except (TypeError, ValueError):
            return _bad(path, problems)
    if name in ("doubleValue", "double_value"):
        try:
            number = float(value) if not isinstance(value, bool) else math.nan
        except (TypeError, ValueError):
            return _bad(path, problems)
        return number if math.isfinite(number) else _bad(path, problems)
    if name in ("arrayValue", "array_value"):
        items = value.get("values", []) if isinstance(value, Mapping) else None
        if not isinstance(items, list):
            return _bad(path, problems)
        return [any_value(item, f"{path}[{i}]", problems) for i, item in enumerate(items)]
    if name in ("kvlistValue", "kvlist_value"):
        pairs = value.get("values", []) if isinstance(value, Mapping) else None
        return attributes_of(pairs, path, problems)
    problems.append(f"{path}: unknown AnyValue kind {name!r}")
    return None


def _typed(value: Any, kind: type, path: str, problems: list[str]) -> Any:
    return value if isinstance(value, kind) else _bad(path, problems)


def _bad(path: str, problems: list[str]) -> None:
    problems.append(f"{path}: not a valid OTLP value")
    return None


def _id(raw: Any, size: int, name: str, problems: list[str], required: bool = True) -> str | None:
    """A trace (16 bytes) or span (8 bytes) id as lowercase hex: from hex (OTLP/JSON), `0x`
    hex (the SDK's to_json) or base64 (protobuf's MessageToJson)."""
    if raw is None or raw == "":
        if required:
            problems.append(f"{name}: missing")
        return None
    if isinstance(raw, str):
        text = raw[2:] if raw.startswith("0x") else raw
        if len(text) == 2 * size:
            try:
                data = bytes.fromhex(text)
            except ValueError:
                data = b""
        else:
            try:
                data = base64.b64decode(raw, validate=True)
            except (binascii.Error, ValueError):
                data = b""
        if len(data) == size:
            if data == bytes(size):
                problems.append(f"{name}: all zero, which is not a valid id")
                return None
            return data.hex()
    problems.append(f"{name}: {raw!r} is not a valid id ({size} bytes, as hex or base64)")
    return None


def nanos(raw: Any, name: str, problems: list[str]) -> int | None:
    """Nanoseconds since the epoch: an integer (or its string, as OTLP/JSON writes 64-bit
    integers) or an ISO 8601 time (the SDK's to_json)."""
    if raw is None or raw == "" or raw == 0 or raw == "0":
        return None
    if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0:
        return raw
    if isinstance(raw, str):
        if raw.isdigit():
            return int(raw)
        try:
            moment = datetime.fromisoformat(raw)
        except ValueError:
            pass
        else:
            if moment.tzinfo is not None:
                return int(moment.timestamp()) * 10**9 + moment.microsecond * 1000
    problems.append(f"{name}: {raw!r} is not a time (nanoseconds since the epoch, or ISO 8601)")
    return None
