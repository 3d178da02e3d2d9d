"""Each convention variant, written by hand in its documented shape, read into one conversation."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _otlp import (
    T1,
    T2,
    chat,
    event,
    log,
    logs_request,
    parts,
    request,
    sid,
    span,
    tool_call,
    tool_response,
    write_lines,
)

from convoeval.io import Record, read_records
from convoeval.schema import AIMessage, ToolMessage

ASK = "Weather in Paris?"
SYSTEM = "Be brief."
ARGS = {"city": "Paris"}
WEATHER = "sunny, 21C"
ANSWER = "Sunny, 21C."
#: The conversation every variant below records.
EXPECTED = [
    ("system", SYSTEM),
    ("human", ASK),
    ("ai", "", [("get_weather", ARGS, "c1")]),
    ("tool", WEATHER, "c1"),
    ("ai", ANSWER),
]


def flat(record: Record) -> list[tuple[Any, ...]]:
    """The record's conversation as tuples: (type, content[, tool calls | call id])."""
    assert record.ok, record.problems()
    assert record.sample is not None
    out: list[tuple[Any, ...]] = []
    for message in record.sample.user_input:
        if isinstance(message, AIMessage) and message.tool_calls:
            calls = [(c.name, c.args, c.id) for c in message.tool_calls]
            out.append(("ai", message.content, calls))
        elif isinstance(message, ToolMessage):
            out.append(("tool", message.content, message.tool_call_id))
        else:
            out.append((message.type, message.content))
    return out


def only(path: Path, format: str = "otel") -> Record:
    records = list(read_records(path, format=format))
    assert len(records) == 1, [r.problems() for r in records]
    return records[0]


def test_genai_attributes_with_execute_tool_span_and_tool_definitions(tmp_path: Path) -> None:
    system = json.dumps([{"type": "text", "content": SYSTEM}])
    weather_tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    first = chat(
        T1,
        1,
        0,
        [parts("user", ASK)],
        [parts("assistant", tool_call("c1", "get_weather", **ARGS), finish_reason="tool_call")],
        {
            "gen_ai.system_instructions": system,
            "gen_ai.tool.definitions": json.dumps([weather_tool]),
            "gen_ai.usage.input_tokens": 30,
            "gen_ai.usage.output_tokens": 4,
            "gen_ai.response.model": "gpt-test-0613",
            "gen_ai.conversation.id": "conv-1",
        },
    )
    run = span(
        T1,
        2,
        "execute_tool get_weather",
        1,
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "c1",
            "gen_ai.tool.call.arguments": json.dumps(ARGS),
            "gen_ai.tool.call.result": WEATHER,
        },
    )
    history = [
        parts("user", ASK),
        parts("assistant", tool_call("c1", "get_weather", **ARGS)),
        parts("tool", tool_response("c1", WEATHER)),
    ]
    reasoning = {"type": "reasoning", "content": "The tool said sunny."}
    second = chat(
        T1,
        3,
        2,
        history,
        [parts("assistant", reasoning, ANSWER, finish_reason="stop")],
        {"gen_ai.system_instructions": system, "gen_ai.usage.input_tokens": 50},
    )
    record = only(write_lines(tmp_path / "t.jsonl", request(first, run, second)))
    assert flat(record) == EXPECTED
    sample = record.sample
    assert sample is not None and sample.id == "conv-1"
    assert [t.name for t in sample.available_tools or []] == ["get_weather"]
    otel = (sample.metadata or {})["otel"]
    assert otel["grouped_by"] == "gen_ai.conversation.id"
    assert otel["conversation_id"] == "conv-1"
    assert otel["trace_ids"] == [T1]
    assert otel["usage"] == {"input_tokens": 80, "output_tokens": 4}
    assert otel["models"] == ["gpt-test-0613", "gpt-test"]
    assert otel["service_name"] == "bot"
    assert otel["duration_ms"] == 2500.0
    assert [(s["span_id"], s["type"]) for s in otel["spans"]] == [
        (sid(1), "llm"),
        (sid(2), "tool"),
        (sid(3), "llm"),
    ]
    assert otel["spans"][1]["tool_call_id"] == "c1"
    assert "gaps" not in otel
    last = sample.user_input[-1]
    assert last.metadata == {
        "otel": {
            "trace_id": T1,
            "span_id": sid(3),
            "finish_reason": "stop",
            "parts": [reasoning],
        }
    }
    assert record.where.endswith("t.jsonl:1") and record.layout == "otel"


def _choice_body(message: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return {"index": index, "finish_reason": "stop", "message": message}


CALL_BODY = {
    "content": "",
    "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": ARGS}}
    ],
}


def test_genai_span_events_with_event_content(tmp_path: Path) -> None:
    """v1.28-v1.36 events recorded on the span, body in `gen_ai.event.content` (as Semantic
    Kernel and Azure AI Inference write them)."""

    def content(name: str, at: float, body: dict[str, Any]) -> dict[str, Any]:
        return event(
            name, at, {"gen_ai.system": "openai", "gen_ai.event.content": json.dumps(body)}
        )

    first = span(
        T1,
        1,
        "chat",
        0,
        {"gen_ai.operation.name": "chat", "session.id": "s-1"},
        events=[
            content("gen_ai.system.message", 0.1, {"content": SYSTEM}),
            content("gen_ai.user.message", 0.2, {"content": ASK}),
            content("gen_ai.choice", 0.3, _choice_body(CALL_BODY)),
        ],
    )
    second = span(
        T1,
        2,
        "chat",
        1,
        {"gen_ai.operation.name": "chat"},
        events=[
            content("gen_ai.system.message", 1.1, {"content": SYSTEM}),
            content("gen_ai.user.message", 1.2, {"content": ASK}),
            content("gen_ai.assistant.message", 1.3, CALL_BODY),
            content("gen_ai.tool.message", 1.4, {"content": WEATHER, "id": "c1"}),
            content("gen_ai.choice", 1.6, _choice_body({"content": "Other."}, index=1)),
            content("gen_ai.choice", 1.5, _choice_body({"role": "assistant", "content": ANSWER})),
        ],
    )
    record = only(write_lines(tmp_path / "t.jsonl", request(first, second)))
    assert flat(record) == EXPECTED
    assert record.sample is not None and record.sample.id == "s-1"
    last = record.sample.user_input[-1]
    assert (last.metadata or {})["otel"]["other_choices"] == [{"content": "Other."}]


def test_genai_events_as_attributes_and_as_log_records(tmp_path: Path) -> None:
    """Event bodies as the event's own attributes, and as log records linked to the span."""
    first = span(
        T1,
        1,
        "chat",
        0,
        {"gen_ai.operation.name": "chat"},
        events=[
            event("gen_ai.system.message", 0.1, {"content": SYSTEM}),
            event("gen_ai.user.message", 0.2, {"content": ASK}),
            event(
                "gen_ai.choice",
                0.3,
                {"index": 0, "finish_reason": "tool_calls", "message": json.dumps(CALL_BODY)},
            ),
        ],
    )
    second = span(T1, 2, "chat", 1, {"gen_ai.operation.name": "chat"})
    logs = [
        log(T1, 2, "gen_ai.system.message", 1.1, {"content": SYSTEM}),
        log(T1, 2, "gen_ai.user.message", 1.2, {"content": ASK}),
        log(T1, 2, "gen_ai.assistant.message", 1.3, CALL_BODY),
        log(T1, 2, "gen_ai.tool.message", 1.4, {"content": WEATHER, "id": "c1"}),
        log(T1, 2, "gen_ai.choice", 1.5, _choice_body({"content": ANSWER})),
    ]
    path = write_lines(tmp_path / "t.jsonl", request(first, second), logs_request(*logs))
    assert flat(only(path)) == EXPECTED


def test_genai_content_events_of_v1_26(tmp_path: Path) -> None:
    prompt = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": ASK}]
    first = span(
        T1,
        1,
        "chat",
        0,
        {"gen_ai.system": "openai"},
        events=[
            event("gen_ai.content.prompt", 0.1, {"gen_ai.prompt": json.dumps(prompt)}),
            event("gen_ai.content.completion", 0.2, {"gen_ai.completion": json.dumps([CALL_BODY])}),
        ],
    )
    history = [*prompt, {"role": "assistant", **CALL_BODY}]
    history.append({"role": "tool", "tool_call_id": "c1", "content": WEATHER})
    second = span(
        T1,
        2,
        "chat",
        1,
        {"gen_ai.system": "openai"},
        events=[
            event("gen_ai.content.prompt", 1.1, {"gen_ai.prompt": json.dumps(history)}),
            event(
                "gen_ai.content.completion",
                1.2,
                {"gen_ai.completion": json.dumps([{"content": ANSWER}])},
            ),
        ],
    )
    assert flat(only(write_lines(tmp_path / "t.jsonl", request(first, second)))) == EXPECTED


def test_openllmetry_indexed_attributes(tmp_path: Path) -> None:
    common = {
        "gen_ai.prompt.0.role": "system",
        "gen_ai.prompt.0.content": SYSTEM,
        "gen_ai.prompt.1.role": "user",
        "gen_ai.prompt.1.content": ASK,
        "llm.request.functions.0.name": "get_weather",
        "llm.request.functions.0.parameters": json.dumps({"type": "object"}),
        "traceloop.association.properties.session_id": "tl-1",
    }
    call = {"id": "c1", "name": "get_weather", "arguments": json.dumps(ARGS)}
    first = span(
        T1,
        1,
        "openai.chat",
        0,
        {
            **common,
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.finish_reason": "tool_calls",
            **{f"gen_ai.completion.0.tool_calls.0.{k}": v for k, v in call.items()},
        },
    )
    second = span(
        T1,
        2,
        "openai.chat",
        1,
        {
            **common,
            "gen_ai.prompt.2.role": "assistant",
            **{f"gen_ai.prompt.2.tool_calls.0.{k}": v for k, v in call.items()},
            "gen_ai.prompt.3.role": "tool",
            "gen_ai.prompt.3.tool_call_id": "c1",
            "gen_ai.prompt.3.content": WEATHER,
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": ANSWER,
        },
    )
    record = only(write_lines(tmp_path / "t.jsonl", request(first, second)))
    assert flat(record) == EXPECTED
    assert record.sample is not None and record.sample.id == "tl-1"
    assert [t.name for t in record.sample.available_tools or []] == ["get_weather"]


def _oi_messages(prefix: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, message in enumerate(messages):
        for key, item in message.items():
            if key == "tool_calls":
                for j, call in enumerate(item):
                    base = f"{prefix}.{i}.message.tool_calls.{j}.tool_call"
                    out[f"{base}.function.name"] = call["name"]
                    out[f"{base}.function.arguments"] = json.dumps(call["args"])
                    if "id" in call:
                        out[f"{base}.id"] = call["id"]
            else:
                out[f"{prefix}.{i}.message.{key}"] = item
    return out


def test_openinference_llm_and_tool_spans(tmp_path: Path) -> None:
    """LLM spans with flattened messages and tools; a TOOL span without a call id is matched to
    the call by its tool name; content given as `message.contents` items."""
    schema = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
    system = {"role": "system", "content": SYSTEM}
    user = {"role": "user", "contents.0.message_content.type": "text"}
    user["contents.0.message_content.text"] = ASK
    calling = {
        "role": "assistant",
        "tool_calls": [{"name": "get_weather", "args": ARGS, "id": "c1"}],
    }
    common = {"openinference.span.kind": "LLM", "llm.tools.0.tool.json_schema": json.dumps(schema)}
    first = span(
        T1,
        1,
        "ChatCompletion",
        0,
        {
            **common,
            "session.id": "oi-1",
            "llm.model_name": "gpt-test",
            "llm.token_count.prompt": 9,
            **_oi_messages("llm.input_messages", [system, user]),
            **_oi_messages("llm.output_messages", [calling]),
        },
    )
    tool = span(
        T1,
        2,
        "get_weather",
        1,
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "get_weather",
            "input.value": json.dumps(ARGS),
            "output.value": WEATHER,
        },
    )
    answered = {"role": "tool", "tool_call_id": "c1", "content": WEATHER}
    second = span(
        T1,
        3,
        "ChatCompletion",
        2,
        {
            **common,
            **_oi_messages("llm.input_messages", [system, user, calling, answered]),
            **_oi_messages("llm.output_messages", [{"role": "assistant", "content": ANSWER}]),
        },
    )
    record = only(write_lines(tmp_path / "t.jsonl", request(first, tool, second)))
    assert flat(record) == EXPECTED
    assert record.sample is not None and record.sample.id == "oi-1"
    assert [t.name for t in record.sample.available_tools or []] == ["get_weather"]
    otel = (record.sample.metadata or {})["otel"]
    assert otel["spans"][1] == {
        "trace_id": T1,
        "span_id": sid(2),
        "name": "get_weather",
        "type": "tool",
        "convention": "openinference TOOL",
        "start_unix_nano": otel["spans"][1]["start_unix_nano"],
        "duration_ms": 500.0,
        "tool": "get_weather",
        "arguments": json.dumps(ARGS),
        "result": WEATHER,
    }


def _iso(nanos: str) -> str:
    moment = datetime.fromtimestamp(int(nanos) / 1e9, UTC)
    return moment.isoformat().replace("+00:00", "Z")


def _sdk_span(data: dict[str, Any]) -> dict[str, Any]:
    """An OTLP span in the SDK's `span.to_json()` form."""
    attributes = {a["key"]: next(iter(a["value"].values())) for a in data["attributes"]}
    return {
        "name": data["name"],
        "context": {"trace_id": "0x" + data["traceId"], "span_id": "0x" + data["spanId"]},
        "kind": "SpanKind.CLIENT",
        "parent_id": None,
        "start_time": _iso(data["startTimeUnixNano"]),
        "end_time": _iso(data["endTimeUnixNano"]),
        "status": {"status_code": "UNSET"},
        "attributes": attributes,
        "events": [],
        "resource": {"attributes": {"service.name": "sdk-bot"}, "schema_url": ""},
    }


def test_flat_span_lines_otlp_and_sdk_to_json(tmp_path: Path) -> None:
    """One span per line: OTLP span objects, and the SDK's to_json() with ISO times."""
    first = chat(T1, 1, 0, [parts("user", ASK)], [parts("assistant", "Hi.")])
    second = chat(
        T1,
        2,
        1,
        [parts("user", ASK), parts("assistant", "Hi."), parts("user", "More?")],
        [parts("assistant", "No.")],
    )
    expected = [("human", ASK), ("ai", "Hi."), ("human", "More?"), ("ai", "No.")]
    assert flat(only(write_lines(tmp_path / "otlp.jsonl", second, first), "auto")) == expected
    sdk = write_lines(tmp_path / "sdk.jsonl", _sdk_span(first), _sdk_span(second))
    record = only(sdk, "auto")
    assert flat(record) == expected
    assert record.sample is not None
    assert (record.sample.metadata or {})["otel"]["service_name"] == "sdk-bot"


def test_base64_ids_and_a_pretty_printed_json_file(tmp_path: Path) -> None:
    """protobuf's MessageToJson writes ids in base64 and one indented object per file."""
    first = chat(T2, 1, 0, [parts("user", ASK)], [parts("assistant", "Hi.")])
    first["traceId"] = base64.b64encode(bytes.fromhex(T2)).decode()
    first["spanId"] = base64.b64encode(bytes.fromhex(sid(1))).decode()
    path = tmp_path / "export.json"
    path.write_text(json.dumps(request(first), indent=2))
    record = only(path, "auto")
    assert flat(record) == [("human", ASK), ("ai", "Hi.")]
    assert record.sample is not None and record.sample.id == T2
    assert record.where == f"{path}: resourceSpans[0].scopeSpans[0].spans[0]"
