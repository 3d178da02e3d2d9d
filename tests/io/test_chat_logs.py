"""Chat-completions request/response logs (`{"request": {"messages", "tools"}, "response":
{"choices": [{"message"}]}}`) read as conversations with the response appended, detected per
record; JSON files that wrap their records (`{"data": [...]}`) read as those records, or an
error that says the file is a wrapper and how to name the list. Trace files keep working."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _cli import convoeval
from convoeval.io import read_records, record_to_sample
from convoeval.schema import AIMessage, HumanMessage, SystemMessage, ToolMessage

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_order",
            "description": "Look an order up.",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    }
]


def _log(i: int, **extra: Any) -> dict[str, Any]:
    """One logged chat-completions call: the request as sent, the response as received."""
    return {
        "request": {
            "model": "gpt-4o-mini",
            "temperature": 0,
            "messages": [
                {"role": "system", "content": "You are the store's support agent."},
                {"role": "user", "content": f"Where is order VB-{i}?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {
                                "name": "get_order",
                                "arguments": json.dumps({"order_id": f"VB-{i}"}),
                            },
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": f"call_{i}", "content": '{"status": "shipped"}'},
            ],
            "tools": TOOLS,
        },
        "response": {
            "id": f"chatcmpl-{i}",
            "model": "gpt-4o-mini-2024-07-18",
            "usage": {"prompt_tokens": 90, "completion_tokens": 12},
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": f"Order VB-{i} has shipped."},
                }
            ],
        },
        **extra,
    }


def _jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_logged_call_is_a_conversation_with_its_response_appended(tmp_path: Path) -> None:
    ragas = {"user_input": [{"type": "human", "content": "hi"}, {"type": "ai", "content": "hey"}]}
    path = _jsonl(tmp_path / "logs.jsonl", [_log(1, id="one"), ragas, _log(2)])
    records = list(read_records(path))
    assert [r.ok for r in records] == [True, True, True], [r.problems() for r in records]
    assert [r.layout for r in records] == ["openai", "ragas", "openai"]
    sample = records[0].sample
    assert sample is not None and sample.id == "one"
    kinds = [type(m) for m in sample.user_input]
    assert kinds == [SystemMessage, HumanMessage, AIMessage, ToolMessage, AIMessage]
    assert sample.user_input[-1].content == "Order VB-1 has shipped."
    assert sample.user_input[2].tool_calls[0].args == {"order_id": "VB-1"}  # type: ignore[union-attr]
    assert [t.name for t in sample.available_tools or []] == ["get_order"]
    logged = sample.metadata["chat_completion"]
    assert logged["request"] == {"model": "gpt-4o-mini", "temperature": 0}
    assert logged["response"]["id"] == "chatcmpl-1" and logged["finish_reason"] == "stop"
    # The same record given as a dict, and with the layout forced.
    assert record_to_sample(_log(1, id="one")) == sample
    assert record_to_sample(_log(1, id="one"), format="openai") == sample


def test_a_bad_log_says_where_in_the_request_or_the_response(tmp_path: Path) -> None:
    two = _log(1)
    two["response"]["choices"].append(two["response"]["choices"][0])
    bad_reply = _log(2)
    bad_reply["response"]["choices"][0]["message"] = {"role": "robot", "content": "x"}
    bad_request = _log(3)
    bad_request["request"]["messages"][1]["role"] = "customer"
    no_response = _log(4)
    del no_response["response"]
    path = _jsonl(tmp_path / "bad.jsonl", [two, bad_reply, bad_request, no_response])
    problems = [r.problems() for r in read_records(path)]
    assert problems[0] == [
        f"{path}:1: response.choices: a logged call must hold one choice (the reply that "
        "continues the conversation), got 2"
    ]
    assert problems[1][0].startswith(f"{path}:2: response.choices[0].message.role: ")
    assert problems[2][0].startswith(f"{path}:3: request.messages[1].role: ")
    assert problems[3] == [
        f"{path}:4: response: required in a chat-completions log (the reply that ends the "
        'conversation, {"choices": [{"message": ...}]})'
    ]


@pytest.mark.parametrize("key", ["data", "records", "conversations", "samples"])
def test_a_json_file_that_wraps_its_records_is_read_as_those_records(
    tmp_path: Path, key: str
) -> None:
    ragas = {"user_input": [{"type": "human", "content": "hi"}], "id": "r"}
    bad = {"user_input": []}
    path = tmp_path / "wrapped.json"
    path.write_text(json.dumps({key: [_log(1), ragas, bad], "meta": {"page": 1}}))
    records = list(read_records(path))
    assert [r.ok for r in records] == [True, True, False]
    assert records[1].sample is not None and records[1].sample.id == "r"
    assert records[2].where == f"{path}: {key}[2]"  # where the record is inside the wrapper
    assert records[2].problems()[0].startswith(f"{path}: {key}[2]: user_input")


def test_a_wrapper_under_another_key_is_named_in_the_error(tmp_path: Path) -> None:
    path = tmp_path / "items.json"
    path.write_text(json.dumps({"items": [_log(1), _log(2)], "count": 2}))
    (record,) = list(read_records(path))
    assert record.problems() == [
        f"{path}: [0]: this file is one JSON object whose 'items' holds a list of 2 objects, "
        "not a conversation: name that list 'data', 'records', 'conversations' or 'samples' "
        "to read its objects as the records, or save the list alone as a JSON array"
    ]


def test_validate_reads_logs_and_wrapped_files(tmp_path: Path) -> None:
    (tmp_path / "w.json").write_text(json.dumps({"data": [_log(1), _log(2)]}))
    _jsonl(tmp_path / "logs.jsonl", [_log(1), _log(2), _log(3)])
    for name, count in (("w.json", 2), ("logs.jsonl", 3)):
        done = convoeval("validate", name, cwd=tmp_path, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"{count} records, all valid" in done.stdout
