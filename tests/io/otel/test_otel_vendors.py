"""MLflow and Langfuse traces in the JSON shapes their exports document, written by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _otlp import T1, T2, request, span, write_lines
from test_otel_conventions import ANSWER, ARGS, ASK, EXPECTED, SYSTEM, WEATHER, flat, only

from convoeval.io import read_records

CALL = {
    "id": "c1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": json.dumps(ARGS)},
}
FIRST = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": ASK},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
]
SECOND = [*FIRST, {"role": "tool", "tool_call_id": "c1", "content": WEATHER}]
SECOND.append({"role": "assistant", "content": ANSWER})
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]


def _mlflow_span(number: int, name: str, at: int, attributes: dict[str, Any]) -> dict[str, Any]:
    """A span in MLflow 3's dict form: every attribute value JSON-encoded."""
    start = 1_700_000_000_000_000_000 + at * 10**9
    return {
        "trace_id": "tr-" + T1,
        "span_id": f"{number:016x}",
        "parent_span_id": None,
        "name": name,
        "start_time_unix_nano": start,
        "end_time_unix_nano": start + 10**8,
        "events": [],
        "status": {"code": "STATUS_CODE_OK", "message": ""},
        "attributes": {key: json.dumps(value) for key, value in attributes.items()},
    }


def test_mlflow_trace_json(tmp_path: Path) -> None:
    """`Trace.to_json()`: chat spans with `mlflow.chat.messages` (the reply included), a TOOL
    span matched to its call by name, the session from the trace metadata."""
    chat = {"mlflow.spanType": "CHAT_MODEL", "mlflow.chat.tools": TOOLS}
    spans = [
        _mlflow_span(1, "Completions", 0, {**chat, "mlflow.chat.messages": FIRST}),
        _mlflow_span(2, "get_weather", 1, {"mlflow.spanType": "TOOL", "mlflow.spanInputs": ARGS}),
        _mlflow_span(3, "Completions", 2, {**chat, "mlflow.chat.messages": SECOND}),
    ]
    spans[1]["attributes"]["mlflow.spanOutputs"] = json.dumps(WEATHER)
    spans[1]["attributes"]["plain.text"] = "not json"
    trace = {
        "info": {
            "trace_id": "tr-" + T1,
            "state": "OK",
            "trace_metadata": {"mlflow.trace.session": "ml-1"},
        },
        "data": {"spans": spans},
    }
    record = only(write_lines(tmp_path / "traces.jsonl", trace), "auto")
    assert flat(record) == EXPECTED
    assert record.sample is not None and record.sample.id == "ml-1"
    assert [t.name for t in record.sample.available_tools or []] == ["get_weather"]
    otel = (record.sample.metadata or {})["otel"]
    assert otel["grouped_by"] == "mlflow.trace.session"
    assert [s["convention"] for s in otel["spans"]] == ["mlflow", "mlflow TOOL", "mlflow"]


def _observation(number: int, kind: str, name: str, at: int, **fields: Any) -> dict[str, Any]:
    return {
        "id": f"obs-{number}",
        "traceId": T2,
        "type": kind,
        "name": name,
        "startTime": f"2024-05-01T10:00:0{at}.000Z",
        "endTime": f"2024-05-01T10:00:0{at}.500Z",
        **fields,
    }


def test_langfuse_session_download(tmp_path: Path) -> None:
    """A session download: its traces' observations; GENERATION input as `{"messages",
    "tools"}` or a message list, output a message or a text; a TOOL observation."""
    observations = [
        _observation(
            1,
            "GENERATION",
            "chat",
            0,
            model="gpt-test",
            input={"messages": FIRST[:2], "tools": TOOLS},
            output={"role": "assistant", "content": None, "tool_calls": [CALL]},
            usageDetails={"input": 10, "output": 3},
        ),
        _observation(2, "TOOL", "get_weather", 1, input=ARGS, output=WEATHER),
        _observation(3, "GENERATION", "chat", 2, input=SECOND[:-1], output=ANSWER),
    ]
    session = {"id": "lf-1", "traces": [{"id": T2, "observations": observations}]}
    path = tmp_path / "session-lf-1.json"
    path.write_text(json.dumps(session, indent=2))
    record = only(path, "auto")
    assert flat(record) == EXPECTED
    assert record.sample is not None and record.sample.id == "lf-1"
    otel = (record.sample.metadata or {})["otel"]
    assert otel["usage"] == {"input_tokens": 10, "output_tokens": 3}
    assert record.where == f"{path}: traces[0].observations[0]"


def test_langfuse_attributes_on_otlp_spans(tmp_path: Path) -> None:
    """Spans from the Langfuse SDK: `langfuse.observation.*` attributes holding JSON text."""
    generation = span(
        T1,
        1,
        "chat",
        0,
        {
            "langfuse.observation.type": "generation",
            "langfuse.session.id": "lf-2",
            "langfuse.observation.input": json.dumps([{"role": "user", "content": "hi"}]),
            "langfuse.observation.output": json.dumps({"role": "assistant", "content": "hello"}),
        },
    )
    record = only(write_lines(tmp_path / "t.jsonl", request(generation)))
    assert flat(record) == [("human", "hi"), ("ai", "hello")]
    assert record.sample is not None and record.sample.id == "lf-2"


def test_a_bad_mlflow_message_list_is_named(tmp_path: Path) -> None:
    bad = _mlflow_span(1, "Completions", 0, {"mlflow.spanType": "CHAT_MODEL"})
    bad["attributes"]["mlflow.chat.messages"] = "[{"
    trace = {"info": {"trace_id": "tr-" + T1}, "data": {"spans": [bad]}}
    path = write_lines(tmp_path / "t.jsonl", trace)
    assert [r.problems() for r in read_records(path)] == [
        [
            f"{path}:1: trace {T1}, span {1:016x} (line 1): mlflow.chat.messages: not valid "
            "JSON (Expecting property name enclosed in double quotes at line 1 column 3)"
        ]
    ]
