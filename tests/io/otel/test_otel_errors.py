"""Bad trace input: each problem names the file, the line (or JSON path), the trace and span ids
and what is wrong; the other conversations of the file are still read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _otlp import T1, T2, chat, log, logs_request, parts, request, sid, span, write_lines

from convoeval.io import DataFileError, read_records, record_to_sample
from convoeval.io.errors import OptionError

GOOD = chat(T2, 9, 0, [parts("user", "hi")], [parts("assistant", "hello")])


def _problems(path: Path) -> list[list[str]]:
    """Every record's problems, in order (an empty list for a valid record)."""
    return [record.problems() for record in read_records(path, format="otel")]


def _label(trace: str, number: int, where: str = "line 1") -> str:
    return f"trace {trace}, span {sid(number)} ({where})"


def test_a_bad_span_names_file_line_trace_and_span_and_the_rest_is_read(tmp_path: Path) -> None:
    bad = chat(T1, 1, 0, [parts("user", "hi")], [parts("assistant", "x")])
    bad["attributes"][2]["value"]["stringValue"] = '[{"role": "user", "parts": [}'
    path = write_lines(tmp_path / "t.jsonl", request(bad), request(GOOD))
    assert _problems(path) == [
        [
            f"{path}:1: {_label(T1, 1)}: gen_ai.input.messages: not valid JSON (Expecting value "
            "at line 1 column 29)"
        ],
        [],
    ]


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        (
            [{"role": "narrator", "parts": []}],
            "gen_ai.input.messages[0].role: unknown role 'narrator' (expected system, "
            "developer, user, human, assistant, model, ai, tool, function, ipython)",
        ),
        (
            [{"role": "user", "parts": "hi"}],
            "gen_ai.input.messages[0].parts: must be a list, got a string",
        ),
        (
            [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1"}]}],
            "gen_ai.input.messages[0].parts[0].name: a tool call needs the name of its tool",
        ),
        (
            [
                {
                    "role": "assistant",
                    "parts": [{"type": "tool_call", "name": "f", "arguments": "{"}],
                }
            ],
            "gen_ai.input.messages[0].parts[0].arguments: not valid JSON (Expecting property "
            "name enclosed in double quotes at line 1 column 2)",
        ),
        (
            {"role": "user"},
            "gen_ai.input.messages: must be a list of messages, got an object",
        ),
    ],
)
def test_each_malformed_message_is_named(tmp_path: Path, messages: object, problem: str) -> None:
    bad = chat(T1, 1, 0, [], [parts("assistant", "x")])
    bad["attributes"][2]["value"]["stringValue"] = json.dumps(messages)
    path = write_lines(tmp_path / "t.jsonl", request(bad))
    assert _problems(path) == [[f"{path}:1: {_label(T1, 1)}: {problem}"]]


def test_values_that_are_not_otlp(tmp_path: Path) -> None:
    no_trace = {"spanId": sid(1), "name": "x"}
    bad_id = span(T1, 2, "chat", 0, {"gen_ai.operation.name": "chat"})
    bad_id["traceId"] = "not-an-id"
    bad_value = chat(T1, 3, 0, [parts("user", "a")], [parts("assistant", "b")])
    bad_value["attributes"].append({"key": "gen_ai.usage.input_tokens", "value": {"intValue": "x"}})
    twice = chat(T1, 4, 1, [parts("user", "a")], [parts("assistant", "b")])
    path = write_lines(
        tmp_path / "t.jsonl",
        "{not json",
        json.dumps(["a", "list"]),
        json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [no_trace, bad_id]}]}]}),
        request(bad_value, twice),
        request(twice),
    )
    assert _problems(path) == [
        [f"{path}:1: invalid JSON: Expecting property name enclosed in double quotes (column 2)"],
        [f"{path}:2: expected a trace export object, got a list"],
        [
            f"{path}:3: span: traceId: missing",
            f"{path}:3: span: traceId: 'not-an-id' is not a valid id (16 bytes, as hex or base64)",
        ],
        [
            f"{path}:4: {_label(T1, 3, 'line 4')}: attributes['gen_ai.usage.input_tokens']: "
            "not a valid OTLP value",
            f"{path}:4: {_label(T1, 4, 'line 5')}: the same span is in the file twice (also at "
            "line 4); keep one",
        ],
    ]


def test_a_log_record_whose_span_is_missing(tmp_path: Path) -> None:
    orphan = log(T1, 7, "gen_ai.user.message", 0, {"content": "hi"})
    path = write_lines(tmp_path / "t.jsonl", request(GOOD), logs_request(orphan))
    assert _problems(path) == [
        [],
        [
            f"{path}:2: log record gen_ai.user.message: it belongs to trace {T1}, span "
            f"{sid(7)}, which is not in the file (export the spans together with their log "
            "records)"
        ],
    ]


def test_a_conversation_without_any_recorded_message(tmp_path: Path) -> None:
    blind = span(T1, 1, "chat", 0, {"gen_ai.operation.name": "chat"})
    path = write_lines(tmp_path / "t.jsonl", request(blind))
    assert _problems(path) == [
        [
            f"{path}:1: no messages: its 1 model calls and 0 tool executions record no "
            "message content (was content capture off?)"
        ]
    ]


def test_broken_tool_rules_name_the_span_of_the_message(tmp_path: Path) -> None:
    stray = chat(
        T1, 1, 0, [parts("user", "a"), parts("tool", "x", id="c9")], [parts("assistant", "b")]
    )
    path = write_lines(tmp_path / "t.jsonl", request(stray))
    assert _problems(path) == [
        [
            f"{path}:1: {_label(T1, 1)}: message 2: ToolMessage must be preceded by an "
            "AIMessage somewhere in the conversation."
        ]
    ]


def test_a_file_without_any_model_call(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "t.jsonl", request(span(T1, 1, "GET /", 0, {"http.method": "GET"}))
    )
    with pytest.raises(DataFileError) as caught:
        list(read_records(path, format="otel"))
    assert str(caught.value) == (
        f"{path}: no conversations: none of its spans is a model call or tool execution of the "
        "GenAI or OpenInference conventions"
    )


def test_not_a_trace_export_with_format_otel(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.jsonl", {"messages": [{"role": "user", "content": "hi"}]})
    assert _problems(path) == [
        [
            f"{path}:1: not a trace export: expected an OTLP export request ('resourceSpans' "
            "or 'resourceLogs') or a span ('traceId' and 'spanId'); it has: 'messages'"
        ]
    ]


def test_options_that_do_not_apply(tmp_path: Path) -> None:
    csv = tmp_path / "t.csv"
    csv.write_text("user_input\n")
    with pytest.raises(DataFileError, match="--format otel reads trace exports as OTLP JSON"):
        read_records(csv, format="otel")
    path = write_lines(tmp_path / "t.jsonl", request(GOOD))
    with pytest.raises(OptionError, match="do not apply to --format otel"):
        read_records(path, format="otel", messages_field="a.b")
    with pytest.raises(ValueError, match="format 'otel' reads trace export files"):
        record_to_sample(request(GOOD), format="otel")


def test_a_json_file_names_the_json_path(tmp_path: Path) -> None:
    bad = chat(T1, 1, 0, [{"role": "x", "parts": []}], [parts("assistant", "b")])
    path = tmp_path / "t.json"
    path.write_text(json.dumps([request(GOOD), request(bad)], indent=1))
    records = list(read_records(path))
    assert [r.where for r in records] == [
        f"{path}: [0].resourceSpans[0].scopeSpans[0].spans[0]",
        f"{path}: [1].resourceSpans[0].scopeSpans[0].spans[0]",
    ]
    assert records[1].problems() == [
        f"{path}: [1].resourceSpans[0].scopeSpans[0].spans[0]: "
        f"{_label(T1, 1, '[1].resourceSpans[0].scopeSpans[0].spans[0]')}: "
        "gen_ai.input.messages[0].role: unknown role 'x' (expected system, developer, user, "
        "human, assistant, model, ai, tool, function, ipython)"
    ]
