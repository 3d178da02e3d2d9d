"""What docs/traces.md promises beyond the conventions: compressed and snake_case exports, spans
that are not conversations, error statuses, a tool result the model saw differently, the gaps
that `convoeval validate` prints."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from _otlp import T1, T2, chat, parts, request, sid, span, tool_call, tool_response, write_lines
from test_otel_conventions import flat, only

from _cli import convoeval
from convoeval.io import read_records

HELLO = [("human", "hi"), ("ai", "hello")]


def _hello(trace: str = T1, number: int = 1) -> dict:
    return chat(trace, number, 0, [parts("user", "hi")], [parts("assistant", "hello")])


def _snake(value: object) -> object:
    """Field names as protobuf writes them with `preserving_proto_field_name=True`."""
    if isinstance(value, dict):
        return {re.sub(r"(?<!^)([A-Z])", r"_\1", k).lower(): _snake(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_snake(item) for item in value]
    return value


def test_a_gzipped_export_with_snake_case_field_names(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl.gz"
    with gzip.open(path, "wt") as handle:
        handle.write(json.dumps(_snake(request(_hello()))) + "\n")
    assert flat(only(path, "auto")) == HELLO


def test_traces_without_model_calls_are_no_conversations(tmp_path: Path) -> None:
    health = span(T2, 5, "GET /health", 0, {"http.route": "/health"})
    path = write_lines(tmp_path / "t.jsonl", request(health), request(_hello()))
    records = list(read_records(path))
    assert [r.where.rsplit(":", 1)[1] for r in records] == ["2"]
    assert flat(records[0]) == HELLO


def test_an_agent_span_alone_gives_its_messages_and_error_statuses_are_kept(tmp_path: Path) -> None:
    agent = span(
        T1,
        1,
        "invoke_agent bot",
        0,
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.input.messages": json.dumps([parts("user", "hi")]),
            "gen_ai.output.messages": json.dumps([parts("assistant", "hello")]),
        },
    )
    agent["status"] = {"code": 2, "message": "rate limited once"}
    record = only(write_lines(tmp_path / "t.jsonl", request(agent)))
    assert flat(record) == HELLO
    assert record.sample is not None
    assert (record.sample.metadata or {})["otel"]["spans"][0]["error"] == "rate limited once"


def test_the_tool_result_the_model_saw_wins(tmp_path: Path) -> None:
    asked = chat(T1, 1, 0, [parts("user", "a")], [parts("assistant", tool_call("c1", "f"))])
    run = span(
        T1,
        2,
        "execute_tool f",
        1,
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "f",
            "gen_ai.tool.call.id": "c1",
            "gen_ai.tool.call.result": '{"raw": 1}',
        },
    )
    history = [
        parts("user", "a"),
        parts("assistant", tool_call("c1", "f")),
        parts("tool", tool_response("c1", "raw is 1")),
    ]
    answered = chat(T1, 3, 2, history, [parts("assistant", "one")])
    record = only(write_lines(tmp_path / "t.jsonl", request(asked, run, answered)))
    assert flat(record)[2] == ("tool", "raw is 1", "c1")
    assert record.sample is not None
    meta = record.sample.user_input[2].metadata or {}
    assert meta["otel"] == {
        "trace_id": T1,
        "span_id": sid(2),
        "name": "f",
        "tool_span_result": '{"raw": 1}',
    }


def test_validate_prints_the_gaps_and_passes(tmp_path: Path) -> None:
    blind = span(T1, 2, "chat", 5, {"gen_ai.operation.name": "chat"})
    write_lines(tmp_path / "traces.jsonl", request(_hello(), blind))
    done = convoeval("validate", "traces.jsonl", cwd=tmp_path, timeout=120)
    assert (done.returncode, done.stdout) == (0, "1 record, all valid\n")
    assert done.stderr == (
        f"traces.jsonl:1: gap: trace {T1}, span {sid(2)} (line 1): a model call with no "
        "recorded messages (was message content capture off?)\n"
    )


def test_a_span_with_both_conventions_is_read_by_the_one_that_recorded_messages(
    tmp_path: Path,
) -> None:
    """GenAI attributes without content next to OpenInference messages (instrumentations that
    write both): the messages are read, not reported missing."""
    both = span(
        T1,
        1,
        "ChatCompletion",
        0,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-test",
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "hi",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "hello",
        },
    )
    record = only(write_lines(tmp_path / "t.jsonl", request(both)))
    assert flat(record) == HELLO
    assert record.notes == []
