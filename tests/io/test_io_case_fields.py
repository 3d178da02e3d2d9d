"""The wave-two sample fields (DeepEval's case fields, `available_tools`) survive every file format,
every layout and pandas, and each layout reads them where its own users put them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _io_samples import TRICKY

from convoeval import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolMessage
from convoeval.io import (
    DataError,
    from_pandas,
    read_records,
    read_samples,
    record_to_sample,
    sample_to_record,
    to_pandas,
    write_samples,
)

BOOK: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "book_flight",
        "description": "Book a seat; " + TRICKY,
        "parameters": {
            "type": "object",
            "properties": {
                "flight": {"type": "string", "pattern": "^[A-Z]{2}\\d+$"},
                "passengers": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"age": {"type": "integer"}}},
                    "minItems": 1,
                },
                "note": {"type": ["string", "null"], "default": None},
            },
            "required": ["flight"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}
PING: dict[str, Any] = {"type": "function", "function": {"name": "ping"}}


def _conversation() -> list[Any]:
    return [
        HumanMessage(content="Book AF12 for me"),
        AIMessage(content="", tool_calls=[ToolCall(name="book_flight", args={"flight": "AF12"})]),
        ToolMessage(content="booked"),
        AIMessage(content="Done."),
    ]


def wave_two_samples() -> list[MultiTurnSample]:
    """Every new field, and each way `reference` and `expected_outcome` can relate."""
    full = MultiTurnSample(
        id="w-1",
        user_input=_conversation(),
        chatbot_role="A polite airline agent; " + TRICKY,
        scenario="a user books a flight",
        expected_outcome="the flight is booked",
        reference="the flight is booked",
        user_description="frequent flyer\nimpatient",
        context=["AF12 leaves at 9:00", TRICKY],
        available_tools=[BOOK, PING],
        reference_topics=["flights"],
    )
    return [
        full,
        MultiTurnSample(user_input=_conversation(), reference="R only"),
        MultiTurnSample(user_input=_conversation(), expected_outcome="E only"),
        MultiTurnSample(user_input=_conversation(), reference="R", expected_outcome="E"),
        MultiTurnSample(user_input=_conversation(), available_tools=[], context=[]),
    ]


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv", ".parquet", ".jsonl.gz"])
def test_every_format_keeps_the_fields(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"data{suffix}"
    original = wave_two_samples()
    assert write_samples(original, path) == len(original)
    back = list(read_samples(path))
    assert back == original
    assert back[0].available_tools is not None
    assert back[0].available_tools[0].parameters == BOOK["function"]["parameters"]


@pytest.mark.parametrize("layout", ["ragas", "openai", "deepeval"])
@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_every_layout_keeps_the_fields(tmp_path: Path, layout: str, suffix: str) -> None:
    path = tmp_path / f"data{suffix}"
    original = wave_two_samples()
    write_samples(original, path, layout=layout)
    records = list(read_records(path))
    assert [r.layout for r in records] == [layout] * len(original)
    assert [r.sample for r in records] == original


def test_pandas_keeps_the_fields() -> None:
    original = wave_two_samples()
    frame = to_pandas(original)
    assert json.loads(frame["available_tools"].iloc[0]) == [BOOK, PING]
    assert frame["chatbot_role"].iloc[0].startswith("A polite")
    assert list(from_pandas(frame)) == original


def test_pandas_native_cells_are_read() -> None:
    import pandas as pd

    frame = pd.DataFrame(
        {
            "user_input": [[{"type": "human", "content": "hi"}]],
            "context": [["c1", "c2"]],
            "available_tools": [[{"name": "ping", "parameters": {"type": "object"}}]],
            "chatbot_role": ["agent"],
        }
    )
    (sample,) = from_pandas(frame)
    assert sample.context == ["c1", "c2"] and sample.chatbot_role == "agent"
    assert sample.available_tools is not None and sample.available_tools[0].name == "ping"


def test_openai_layout_tools_are_the_request_tools() -> None:
    sample = wave_two_samples()[0]
    record = sample_to_record(sample, "openai")
    assert record["tools"] == [BOOK, PING] and "available_tools" not in record
    assert record["chatbot_role"] == sample.chatbot_role
    request = {
        "model": "x",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [BOOK],
        "parallel_tool_calls": False,
    }
    read = record_to_sample({k: v for k, v in request.items() if k != "model"})
    assert [t.name for t in read.available_tools or []] == ["book_flight"]
    assert read.metadata == {"openai_record": {"parallel_tool_calls": False}}
    assert sample_to_record(read, "openai") == {k: v for k, v in request.items() if k != "model"}


def test_openai_layout_names_a_bad_tool_by_its_request_path() -> None:
    record = {"messages": [{"role": "user", "content": "hi"}], "tools": [PING, {"name": "f"}]}
    record["tools"][1] = {"type": "function", "function": {"name": "f", "parameters": [1]}}
    with pytest.raises(DataError) as caught:
        record_to_sample(record)
    assert caught.value.problems == [
        "tools[1].function.parameters: must be an object (a JSON dict), got list"
    ]
    both = {**record, "tools": [PING], "available_tools": [PING]}
    with pytest.raises(DataError, match="available_tools: the tools are given as `tools`"):
        record_to_sample(both)


def test_deepeval_layout_reads_the_case_fields() -> None:
    record = {
        "turns": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        "chatbot_role": "greeter",
        "scenario": "greeting",
        "expected_outcome": "the user is greeted",
        "user_description": "new user",
        "context": ["be brief"],
        "available_tools": [{"name": "ping"}],
    }
    sample = record_to_sample(record)
    assert sample.chatbot_role == "greeter" and sample.context == ["be brief"]
    assert sample.expected_outcome == sample.reference == "the user is greeted"
    assert [tool.model_dump() for tool in sample.available_tools or []] == [PING]
    assert sample_to_record(sample, "deepeval") == {**record, "available_tools": [PING]}


def test_deepeval_layout_reference_is_the_samples_own() -> None:
    turns = [{"role": "user", "content": "hi"}]
    both = record_to_sample({"turns": turns, "reference": "R", "expected_outcome": "E"})
    assert (both.reference, both.expected_outcome) == ("R", "E")
    only = record_to_sample({"turns": turns, "reference": "R"})
    assert (only.reference, only.expected_outcome) == ("R", None)


def test_ragas_layout_bad_tool_is_named() -> None:
    record = {
        "user_input": [{"type": "human", "content": "hi"}],
        "available_tools": [{"description": "nameless"}],
    }
    with pytest.raises(DataError) as caught:
        record_to_sample(record)
    assert caught.value.problems == ["available_tools[0].function.name: required field is missing"]


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def test_deep_tool_parameters_are_refused_like_deep_metadata(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    tool = {"name": "f", "parameters": {"type": "object", "properties": _nested(300)}}
    record = {"user_input": [{"type": "human", "content": "hi"}], "available_tools": [tool]}
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    (read,) = read_records(path)
    assert read.errors == ["available_tools[0].function.parameters: nesting deeper than 64"]
