"""Write small OTLP JSON trace exports by hand: spans, span events, log records, export requests.

Values are encoded as the OTLP/JSON encoding says (AnyValue objects, 64-bit integers as strings,
lowercase hex ids), so each test file reads like an exporter's output, only shorter.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

T1 = "0af7651916cd43dd8448eb211c80319c"
T2 = "4bf92f3577b34da6a3ce929d0e0e4736"
T3 = "5b8aa5a2d2c872e8321cf37308d69df2"
BASE = 1_700_000_000_000_000_000  # nanoseconds


def sid(number: int) -> str:
    """Span id number `number` as 16 hex digits."""
    return f"{number:016x}"


def value(raw: Any) -> dict[str, Any]:
    """A Python value as an OTLP AnyValue."""
    if isinstance(raw, bool):
        return {"boolValue": raw}
    if isinstance(raw, int):
        return {"intValue": str(raw)}
    if isinstance(raw, float):
        return {"doubleValue": raw}
    if isinstance(raw, str):
        return {"stringValue": raw}
    if isinstance(raw, list):
        return {"arrayValue": {"values": [value(item) for item in raw]}}
    if isinstance(raw, dict):
        pairs = [{"key": key, "value": value(item)} for key, item in raw.items()]
        return {"kvlistValue": {"values": pairs}}
    raise TypeError(type(raw))


def attrs(data: dict[str, Any]) -> list[dict[str, Any]]:
    """A dict as OTLP attributes (list values stay lists; dicts become JSON text, as span
    attributes cannot hold maps)."""
    return [
        {"key": key, "value": value(json.dumps(item) if isinstance(item, dict) else item)}
        for key, item in data.items()
    ]


def span(
    trace: str,
    number: int,
    name: str,
    at: float,
    attributes: dict[str, Any],
    *,
    parent: int | None = None,
    events: list[dict[str, Any]] | None = None,
    seconds: float = 0.5,
) -> dict[str, Any]:
    """An OTLP span starting `at` seconds after BASE."""
    start = BASE + int(at * 1e9)
    data: dict[str, Any] = {
        "traceId": trace,
        "spanId": sid(number),
        "name": name,
        "kind": 3,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + int(seconds * 1e9)),
        "attributes": attrs(attributes),
        "status": {},
    }
    if parent is not None:
        data["parentSpanId"] = sid(parent)
    if events:
        data["events"] = events
    return data


def event(name: str, at: float, attributes: dict[str, Any]) -> dict[str, Any]:
    """A span event."""
    return {
        "timeUnixNano": str(BASE + int(at * 1e9)),
        "name": name,
        "attributes": [{"key": k, "value": value(v)} for k, v in attributes.items()],
    }


def log(trace: str, number: int, name: str, at: float, body: Any) -> dict[str, Any]:
    """A log record that is an event of span `number` (body as an AnyValue)."""
    return {
        "timeUnixNano": str(BASE + int(at * 1e9)),
        "eventName": name,
        "traceId": trace,
        "spanId": sid(number),
        "body": value(body),
    }


def request(*spans: dict[str, Any], service: str = "bot") -> dict[str, Any]:
    """An ExportTraceServiceRequest holding the spans."""
    resource = {"attributes": attrs({"service.name": service})}
    scope = {"scope": {"name": "test"}, "spans": list(spans)}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [scope]}]}


def logs_request(*records: dict[str, Any]) -> dict[str, Any]:
    """An ExportLogsServiceRequest holding the log records."""
    scope = {"scope": {"name": "test"}, "logRecords": list(records)}
    return {"resourceLogs": [{"resource": {"attributes": []}, "scopeLogs": [scope]}]}


def write_lines(path: Path, *values: Any) -> Path:
    """A JSONL file with one value per line (strings are written as they are)."""
    lines = [item if isinstance(item, str) else json.dumps(item) for item in values]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def parts(role: str, *items: Any, **extra: Any) -> dict[str, Any]:
    """A GenAI message: text parts from strings, other parts as given."""
    made = [{"type": "text", "content": i} if isinstance(i, str) else i for i in items]
    return {"role": role, "parts": made, **extra}


def tool_call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    """A GenAI `tool_call` part."""
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": args}


def tool_response(call_id: str, response: Any) -> dict[str, Any]:
    """A GenAI `tool_call_response` part."""
    return {"type": "tool_call_response", "id": call_id, "response": response}


def chat(
    trace: str,
    number: int,
    at: float,
    sent: list[dict[str, Any]],
    returned: list[dict[str, Any]],
    extra: dict[str, Any] | None = None,
    *,
    parent: int | None = None,
) -> dict[str, Any]:
    """A GenAI chat span with its messages in attributes (semantic conventions v1.37+)."""
    data = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-test",
        "gen_ai.input.messages": json.dumps(sent),
        "gen_ai.output.messages": json.dumps(returned),
    }
    data.update(extra or {})
    return span(trace, number, "chat gpt-test", at, data, parent=parent)
