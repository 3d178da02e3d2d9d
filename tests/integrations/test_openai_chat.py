"""OpenAI chat messages <-> MultiTurnSample: lossless both ways, precise errors, real agent runs."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from _shared_data import TAU_BENCH, shared_file
from convoeval import AIMessage, HumanMessage, MultiTurnSample, SystemMessage, ToolCall, ToolMessage
from convoeval.integrations.openai_chat import (
    OpenAIMessagesError,
    from_openai_messages,
    to_openai_messages,
)


def _parsed(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages with tool-call arguments parsed, so JSON formatting does not matter."""
    out = copy.deepcopy(messages)
    for message in out:
        for call in message.get("tool_calls") or []:
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
        if message.get("function_call"):
            function = message["function_call"]
            function["arguments"] = json.loads(function["arguments"])
    return out


def _round_trip(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return to_openai_messages(from_openai_messages(messages))


EVERY_FEATURE: list[dict[str, Any]] = [
    {"role": "developer", "content": "Be brief."},
    {
        "role": "system",
        "content": [{"type": "text", "text": "Policy A"}, {"type": "text", "text": "Policy B"}],
    },
    {
        "role": "user",
        "name": "alice",
        "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {
                    "name": "lookup",
                    "arguments": '{"q": {"list": [1, {"x": null}]}, "n": 2}',
                },
            },
            {"id": "call_b", "type": "function", "function": {"name": "now", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_a", "name": "lookup", "content": 'found, "it"\n'},
    {"role": "tool", "tool_call_id": "call_b", "content": [{"type": "text", "text": "noon"}]},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call_c", "type": "function", "function": {"name": "noop", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_c", "content": "ok"},
    {
        "role": "assistant",
        "content": "A cat.",
        "refusal": None,
        "annotations": [],
        "audio": None,
        "function_call": None,
        "tool_calls": None,
    },
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "function_call": {"name": "weather", "arguments": '{"city": "Köln"}'}},
    {"role": "function", "name": "weather", "content": "rain"},
    {"role": "assistant", "content": None, "refusal": "I can't help with that."},
    {"role": "assistant", "content": "thinking", "tool_calls": []},
]


def test_every_feature_round_trips_exactly() -> None:
    assert _parsed(_round_trip(EVERY_FEATURE)) == _parsed(EVERY_FEATURE)


def test_every_feature_maps_to_typed_messages() -> None:
    sample = from_openai_messages(EVERY_FEATURE, id="x", reference_topics=["pets"])
    types = [m.type for m in sample.user_input]
    assert types == [
        "system",
        "system",
        "human",
        "ai",
        "tool",
        "tool",
        "ai",
        "tool",
        "ai",
        "human",
        "ai",
        "tool",
        "ai",
        "ai",
    ]
    assert sample.id == "x" and sample.reference_topics == ["pets"]
    assert sample.user_input[1].content == "Policy A\nPolicy B"
    assert sample.user_input[2].content == "What is in this picture?"
    calls = sample.user_input[3].tool_calls  # type: ignore[union-attr]
    assert calls == [
        ToolCall(name="lookup", args={"q": {"list": [1, {"x": None}]}, "n": 2}, id="call_a"),
        ToolCall(name="now", args={}, id="call_b"),
    ]
    assert sample.user_input[3].content == ""
    assert sample.user_input[4] == ToolMessage(
        content='found, "it"\n',
        tool_call_id="call_a",
        metadata={"openai_message": {"name": "lookup"}},
    )
    assert sample.user_input[10].tool_calls == [  # type: ignore[union-attr]
        ToolCall(name="weather", args={"city": "Köln"})
    ]
    assert sample.user_input[13].tool_calls == []  # type: ignore[union-attr]


def test_plain_sample_gives_plain_openai_messages() -> None:
    sample = MultiTurnSample(
        user_input=[
            SystemMessage(content="sys"),
            HumanMessage(content="hi"),
            AIMessage(content="", tool_calls=[ToolCall(name="f", args={"a": [1]}, id="c1")]),
            ToolMessage(content="r", tool_call_id="c1"),
            AIMessage(content="done"),
        ]
    )
    assert to_openai_messages(sample) == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"a":[1]}'},
                }
            ],
        },
        {"role": "tool", "content": "r", "tool_call_id": "c1"},
        {"role": "assistant", "content": "done"},
    ]
    assert from_openai_messages(to_openai_messages(sample)) == sample


def test_edited_text_wins_over_the_kept_part_list() -> None:
    sample = from_openai_messages([{"role": "user", "content": [{"type": "text", "text": "a"}]}])
    sample.user_input[0].content = "b"
    assert to_openai_messages(sample) == [{"role": "user", "content": "b"}]


def test_every_problem_is_reported_with_its_path() -> None:
    messages: list[Any] = [
        {"role": "user", "content": "hi", "mood": "happy"},
        {"role": "robot", "content": "x"},
        {"role": "user", "content": None},
        {"role": "user", "content": [{"type": "video", "url": "x"}, {"type": "text"}]},
        {"role": "user", "content": "x", "tool_calls": []},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "custom", "function": {"name": "f", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "nope"}},
                {"id": "c3", "type": "function", "function": {"name": "h", "arguments": '"s"'}},
                {"id": "c4", "type": "function", "function": {"arguments": "{}", "strict": True}},
                {"id": "c5", "extra": 1, "function": {"name": "k", "arguments": 3}},
            ],
        },
        "just text",
        {"content": "no role"},
    ]
    with pytest.raises(OpenAIMessagesError) as caught:
        from_openai_messages(messages)
    assert caught.value.problems == [
        "messages[0].mood: unknown field (not an OpenAI chat message field)",
        "messages[1].role: unknown role 'robot' (expected one of system, developer, user, "
        "assistant, tool, function)",
        "messages[2].content: must be a string or a list of parts, got null (only an assistant "
        "message may have null content)",
        "messages[3].content[0].type: unknown content part type 'video' (expected one of text, "
        "image_url, input_audio, file, refusal)",
        "messages[3].content[1].text: must be a string, got null",
        "messages[4].tool_calls: only an assistant message calls tools",
        "messages[5].tool_calls[0].type: only 'function' tool calls are supported, got 'custom'",
        "messages[5].tool_calls[1].function.arguments: not valid JSON (Expecting value at line 1 "
        "column 1)",
        "messages[5].tool_calls[2].function.arguments: must be a JSON object, got a string",
        "messages[5].tool_calls[3].function.strict: unknown field (not an OpenAI function field)",
        "messages[5].tool_calls[3].function.name: required field is missing",
        "messages[5].tool_calls[4].extra: unknown field (not an OpenAI tool call field)",
        "messages[5].tool_calls[4].function.arguments: must be an object or a JSON string, "
        "got a number",
        "messages[6]: must be an object with 'role' and 'content', got a string",
        "messages[7].role: required field is missing (expected one of system, developer, user, "
        "assistant, tool, function)",
    ]


def test_conversation_rules_name_the_message_index() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c9", "content": "x"},
    ]
    with pytest.raises(OpenAIMessagesError) as caught:
        from_openai_messages(messages)
    assert caught.value.problems == [
        "messages[2].tool_call_id: 'c9' names no tool call of the AIMessage before it "
        "(ids there: 'c1')."
    ]
    with pytest.raises(OpenAIMessagesError) as caught:
        from_openai_messages(messages[:2], topics=["x"])
    assert caught.value.problems == ["topics: unknown field (not part of the schema)"]
    with pytest.raises(OpenAIMessagesError) as caught:
        from_openai_messages([{"role": "user", "content": "a"}, {"role": "tool", "content": "b"}])
    assert caught.value.problems == [
        "messages[1]: ToolMessage must be preceded by an AIMessage somewhere in the conversation."
    ]
    with pytest.raises(OpenAIMessagesError, match="messages: must be a list of messages, got a"):
        from_openai_messages("hello")  # type: ignore[arg-type]


def test_openai_sdk_message_objects_are_accepted() -> None:
    from openai.types.chat import ChatCompletionMessage

    reply = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
            ],
        }
    )
    sample = from_openai_messages([{"role": "user", "content": "hi"}, reply])
    assert sample.predicted_tool_calls() == [ToolCall(name="f", args={"a": 1}, id="c1")]


def _count(messages: list[dict[str, Any]]) -> tuple[int, int]:
    calls = sum(len(m.get("tool_calls") or []) for m in messages)
    return calls, sum(1 for m in messages if m["role"] == "tool")


def test_tau_bench_trajectories_convert_without_losing_tool_traffic() -> None:
    """200 real GPT-4o airline agent runs: every tool call and tool result survives, both ways."""
    runs = json.loads(shared_file(TAU_BENCH).read_text(encoding="utf-8"))
    assert len(runs) == 200
    totals = [0, 0]
    for run in runs:
        trajectory = run["traj"]
        sample = from_openai_messages(trajectory, id=str(run["task_id"]))
        calls = sample.predicted_tool_calls()
        tool_messages = [m for m in sample.user_input if isinstance(m, ToolMessage)]
        assert (len(calls), len(tool_messages)) == _count(trajectory)
        assert {m.tool_call_id for m in tool_messages} <= {c.id for c in calls}
        back = to_openai_messages(sample)
        assert _count(back) == _count(trajectory)
        assert _parsed(back) == _parsed(trajectory)
        totals[0] += len(calls)
        totals[1] += len(tool_messages)
    assert totals[0] > 0 and totals[1] > 0
    print(f"tau-bench: 200 runs, {totals[0]} tool calls, {totals[1]} tool messages kept")
