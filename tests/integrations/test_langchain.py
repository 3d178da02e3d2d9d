"""LangChain / LangGraph messages <-> MultiTurnSample, with real langchain-core objects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _shared_data import TAU_BENCH, shared_file
from convoeval import AIMessage, HumanMessage, MultiTurnSample, SystemMessage, ToolCall, ToolMessage
from convoeval.integrations._errors import ConversionError
from convoeval.integrations.langchain import (
    from_langchain_messages,
    to_langchain_dicts,
    to_langchain_messages,
)
from convoeval.integrations.openai_chat import from_openai_messages
from convoeval.io import read_records, record_to_sample

lc = pytest.importorskip("langchain_core.messages", reason="langchain-core is not installed")


def _conversation() -> list[Any]:
    """Every message kind, list content, ids, statuses, artifacts and usage metadata."""
    return [
        lc.SystemMessage("You book flights.", id="sys-1"),
        lc.HumanMessage("Book me LHR to JFK on 2024-05-20", name="alice"),
        lc.AIMessage(
            content=[
                {"type": "text", "text": "Searching "},
                {"type": "text", "text": "now."},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
            tool_calls=[
                {"name": "search", "args": {"from": "LHR", "to": "JFK"}, "id": "call_1"},
                {"name": "prices", "args": {"legs": [{"n": 1, "x": None}]}, "id": "call_2"},
            ],
            usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
            response_metadata={"model_name": "some-model"},
            id="run-1",
        ),
        lc.ToolMessage('["BA117"]', tool_call_id="call_1", name="search"),
        lc.ToolMessage("no prices", tool_call_id="call_2", status="error", artifact={"code": 7}),
        lc.AIMessage("BA117 is available.", id="run-2"),
    ]


def test_round_trip_gives_equal_messages() -> None:
    original = _conversation()
    sample = from_langchain_messages(original, id="trip", reference_topics=["flights"])
    back = to_langchain_messages(sample)
    assert [type(m) for m in back] == [type(m) for m in original]
    assert lc.messages_to_dict(back) == lc.messages_to_dict(original)
    assert sample.id == "trip" and sample.reference_topics == ["flights"]


def test_messages_map_to_typed_messages() -> None:
    sample = from_langchain_messages(_conversation())
    kinds = [type(m) for m in sample.user_input]
    assert kinds == [SystemMessage, HumanMessage, AIMessage, ToolMessage, ToolMessage, AIMessage]
    ai = sample.user_input[2]
    assert isinstance(ai, AIMessage)
    assert ai.content == "Searching now."  # joined like LangChain's `.text`
    assert ai.tool_calls == [
        ToolCall(name="search", args={"from": "LHR", "to": "JFK"}, id="call_1"),
        ToolCall(name="prices", args={"legs": [{"n": 1, "x": None}]}, id="call_2"),
    ]
    assert [m.tool_call_id for m in sample.user_input[3:5]] == ["call_1", "call_2"]  # type: ignore[union-attr]
    assert ai.metadata is not None and ai.metadata["langchain_message"]["id"] == "run-1"
    assert sample.user_input[4].metadata == {
        "langchain_message": {"status": "error", "artifact": {"code": 7}}
    }
    assert sample.user_input[5].metadata == {"langchain_message": {"id": "run-2"}}


def test_tool_calls_from_any_provider_shape() -> None:
    """Anthropic-style content blocks carry the call; `.tool_calls` is what counts."""
    ai = lc.AIMessage(
        content=[
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x"}},
        ],
        tool_calls=[{"name": "lookup", "args": {"q": "x"}, "id": "toolu_1"}],
    )
    sample = from_langchain_messages(
        [lc.HumanMessage("hi"), ai, lc.ToolMessage("found", tool_call_id="toolu_1")]
    )
    assert sample.predicted_tool_calls() == [ToolCall(name="lookup", args={"q": "x"}, id="toolu_1")]
    assert sample.user_input[1].content == "Let me look."
    assert lc.messages_to_dict(to_langchain_messages(sample))[1] == lc.messages_to_dict([ai])[0]


def test_old_openai_style_additional_kwargs_calls_are_read() -> None:
    """A serialised message whose calls are only in `additional_kwargs` (older LangChain)."""
    openai_calls = [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    ]
    record = [
        {"type": "human", "data": {"content": "go"}},
        {
            "type": "ai",
            "data": {
                "content": "",
                "tool_calls": [],
                "additional_kwargs": {"tool_calls": openai_calls},
            },
        },
        {"type": "tool", "data": {"content": "ok", "tool_call_id": "c1"}},
    ]
    sample = from_langchain_messages(record)
    assert sample.predicted_tool_calls() == [ToolCall(name="f", args={"a": 1}, id="c1")]
    loaded = lc.messages_from_dict(record)  # LangChain itself reads them the same way
    assert [c["args"] for c in loaded[1].tool_calls] == [{"a": 1}]
    assert lc.messages_to_dict(to_langchain_messages(sample)) == lc.messages_to_dict(loaded)


def test_chunks_are_merged_like_a_stream() -> None:
    chunks = [
        lc.AIMessageChunk(
            content="Sure",
            id="run-9",
            tool_call_chunks=[{"name": "f", "args": '{"city": ', "id": "c9", "index": 0}],
        ),
        lc.AIMessageChunk(
            content=", checking.",
            id="run-9",
            tool_call_chunks=[{"name": None, "args": '"Oslo"}', "id": None, "index": 0}],
        ),
    ]
    messages = [lc.HumanMessage("weather?"), *chunks, lc.ToolMessage("rain", tool_call_id="c9")]
    sample = from_langchain_messages(messages)
    assert len(sample.user_input) == 3
    assert sample.user_input[1].content == "Sure, checking."
    assert sample.predicted_tool_calls() == [ToolCall(name="f", args={"city": "Oslo"}, id="c9")]
    back = to_langchain_messages(sample)
    assert isinstance(back[1], lc.AIMessageChunk)
    assert back[1] == chunks[0] + chunks[1]


def test_a_single_chunk_is_a_message_and_different_streams_stay_apart() -> None:
    messages = [
        lc.HumanMessage("a"),
        lc.AIMessageChunk(content="one", id="run-1"),
        lc.AIMessageChunk(content="two", id="run-2"),
    ]
    sample = from_langchain_messages(messages)
    assert [m.content for m in sample.user_input] == ["a", "one", "two"]


def test_langgraph_state_dict() -> None:
    state = {"messages": _conversation(), "remaining_steps": 24, "user": {"tier": "gold"}}
    sample = from_langchain_messages(state, id="graph-run")
    assert len(sample.user_input) == 6
    assert sample.metadata == {"langgraph_state": {"remaining_steps": 24, "user": {"tier": "gold"}}}
    assert sample.id == "graph-run"


def test_serialised_forms_give_the_same_sample() -> None:
    original = _conversation()
    from_objects = from_langchain_messages(original)
    as_dicts = json.loads(json.dumps(lc.messages_to_dict(original)))
    assert from_langchain_messages(as_dicts) == from_objects
    as_lc = [m.to_json() for m in original]
    assert from_langchain_messages(as_lc).predicted_tool_calls() == (
        from_objects.predicted_tool_calls()
    )
    loaded = lc.messages_from_dict(to_langchain_dicts(from_objects))
    assert lc.messages_to_dict(loaded) == lc.messages_to_dict(original)


def test_chat_and_function_messages() -> None:
    messages = [
        lc.ChatMessage(role="user", content="hi"),
        lc.AIMessage(
            content="",
            additional_kwargs={"function_call": {"name": "now", "arguments": "{}"}},
        ),
        lc.FunctionMessage(name="now", content="12:00"),
    ]
    sample = from_langchain_messages(messages)
    assert [m.type for m in sample.user_input] == ["human", "ai", "tool"]
    assert sample.predicted_tool_calls() == [ToolCall(name="now", args={}, id=None)]
    assert lc.messages_to_dict(to_langchain_messages(sample)) == lc.messages_to_dict(messages)


def test_sample_from_elsewhere_becomes_plain_langchain_messages() -> None:
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="hi", metadata={"lang": "en"}),
            AIMessage(content="", tool_calls=[ToolCall(name="f", args={"x": 1}, id="c1")]),
            ToolMessage(content="done", tool_call_id="c1"),
            AIMessage(content="ok"),
        ]
    )
    back = to_langchain_messages(sample)
    assert isinstance(back[1], lc.AIMessage)
    assert back[1].tool_calls == [{"name": "f", "args": {"x": 1}, "id": "c1", "type": "tool_call"}]
    assert isinstance(back[2], lc.ToolMessage) and back[2].tool_call_id == "c1"
    assert from_langchain_messages(back) == sample  # our metadata rides in additional_kwargs


def test_tool_message_without_id_cannot_become_langchain() -> None:
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="hi"),
            AIMessage(content="", tool_calls=[ToolCall(name="f")]),
            ToolMessage(content="done"),
        ]
    )
    with pytest.raises(ConversionError) as caught:
        to_langchain_messages(sample)
    assert caught.value.problems == [
        "user_input[2]: a LangChain ToolMessage needs a tool_call_id; this tool message has "
        "none (give the tool calls and tool messages ids)"
    ]


def test_errors_name_the_item_and_why() -> None:
    bad: list[Any] = [
        lc.HumanMessage("hi"),
        {"type": "robot", "data": {"content": "x"}},
        {"type": "ai", "data": {"content": 7}},
        {"type": "ai", "data": {"content": "", "tool_calls": [{"name": "f", "args": "{oops"}]}},
        {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "Document"], "kwargs": {}},
        42,
        {"type": "chat", "data": {"content": "x", "role": "narrator"}},
    ]
    with pytest.raises(ConversionError) as caught:
        from_langchain_messages(bad)
    assert caught.value.problems == [
        "messages[1].type: unknown LangChain message type 'robot' (expected one of human, "
        "HumanMessageChunk, ai, AIMessageChunk, tool, ToolMessageChunk, system, "
        "SystemMessageChunk, function, FunctionMessageChunk, chat)",
        "messages[2].content: must be a string or a list, got a number",
        "messages[3].tool_calls[0].args: not valid JSON (Expecting property name enclosed in "
        "double quotes at line 1 column 2)",
        "messages[4].id: 'Document' is not a LangChain message class",
        "messages[5]: must be a LangChain message, a {'type', 'data'} dict or an lc dict, "
        "got a number",
        "messages[6].role: a ChatMessage role must be one of user, human, assistant, ai, "
        "system, got 'narrator'",
    ]
    assert isinstance(caught.value, ValueError)


def test_conversation_rules_name_the_input_item() -> None:
    messages = [lc.HumanMessage("hi"), lc.ToolMessage("orphan", tool_call_id="c1")]
    with pytest.raises(ConversionError) as caught:
        from_langchain_messages(messages)
    assert caught.value.problems == [
        "messages[1]: ToolMessage must be preceded by an AIMessage somewhere in the conversation."
    ]
    wrong_id = [
        lc.HumanMessage("hi"),
        lc.AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1"}]),
        lc.ToolMessage("x", tool_call_id="c2"),
    ]
    with pytest.raises(ConversionError, match=r"messages\[2\]\.tool_call_id: 'c2' names no"):
        from_langchain_messages(wrong_id)
    with pytest.raises(ConversionError, match=r"^messages: must be a list, got a string$"):
        from_langchain_messages("hello")


def test_tau_bench_through_langchain_keeps_every_tool_call() -> None:
    """200 real agent runs, converted to LangChain by LangChain itself, then to samples."""
    runs = json.loads(shared_file(TAU_BENCH).read_text(encoding="utf-8"))
    calls = results = 0
    for run in runs:
        messages = lc.convert_to_messages(run["traj"])
        sample = from_langchain_messages(messages)
        direct = from_openai_messages(run["traj"])
        assert sample.predicted_tool_calls() == direct.predicted_tool_calls()
        ours = [m.tool_call_id for m in sample.user_input if isinstance(m, ToolMessage)]
        theirs = [m.tool_call_id for m in direct.user_input if isinstance(m, ToolMessage)]
        assert ours == theirs
        assert lc.messages_to_dict(to_langchain_messages(sample)) == lc.messages_to_dict(messages)
        calls += len(sample.predicted_tool_calls())
        results += len(ours)
    assert calls > 1000 and results > 1000
    print(f"tau-bench via LangChain: {len(runs)} runs, {calls} tool calls, {results} results")


def test_io_reads_langchain_records(tmp_path: Path) -> None:
    messages = _conversation()
    record = {"messages": lc.messages_to_dict(messages), "reference_topics": ["flights"]}
    lc_record = {"messages": [m.to_json() for m in messages[:2]]}
    openai_record = {"messages": [{"role": "user", "content": "hi"}]}
    path = tmp_path / "runs.jsonl"
    lines = [
        record,
        lc_record,
        openai_record,
        {"messages": [{"type": "ai", "data": {"content": 3}}]},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    got = list(read_records(path))
    assert [r.layout for r in got] == ["langchain", "langchain", "openai", "langchain"]
    assert got[0].sample == from_langchain_messages(messages, reference_topics=["flights"])
    assert got[3].errors == ["messages[0].content: must be a string or a list, got a number"]
    forced = list(read_records(path, format="langchain"))
    assert [r.ok for r in forced] == [True, True, False, False]
    assert forced[2].errors == [
        "messages[0].type: required field is missing (a LangChain message dict has 'type' "
        "and 'data')"
    ]
    assert record_to_sample(record, format="langchain") == got[0].sample


def test_cli_validate_reads_langchain_files(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from convoeval.cli import main

    good = {"messages": lc.messages_to_dict(_conversation())}
    bad = {
        "messages": [
            {"type": "human", "data": {"content": "hi"}},
            {"type": "tool", "data": {"content": "x", "tool_call_id": "c"}},
        ]
    }
    path = tmp_path / "lc.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    for layout in ("auto", "langchain"):
        done = CliRunner().invoke(main, ["validate", "--format", layout, str(path)])
        assert done.exit_code == 1, done.output
        assert done.stdout.strip() == "2 records, 1 invalid"
        assert done.stderr.strip() == (
            f"{path}:2: messages[1]: ToolMessage must be preceded by an AIMessage somewhere in "
            "the conversation."
        )
