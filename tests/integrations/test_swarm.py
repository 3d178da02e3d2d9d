"""Swarm response messages <-> MultiTurnSample: null tool_calls, senders, real agent runs."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from _shared_data import TAU_BENCH, shared_file
from convoeval import AIMessage, ToolCall, ToolMessage
from convoeval.integrations._errors import ConversionError
from convoeval.integrations.swarm import from_swarm_messages, to_swarm_messages


def _swarm_messages() -> list[dict[str, Any]]:
    """What `Swarm.run(...).messages` holds: dumped ChatCompletionMessages plus Swarm's keys."""
    return [
        {"role": "user", "content": "Transfer me to sales, then check order 7."},
        {
            "content": None,
            "refusal": None,
            "role": "assistant",
            "audio": None,
            "function_call": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "function": {"arguments": "{}", "name": "transfer_to_sales"},
                    "type": "function",
                },
                {
                    "id": "call_b",
                    "function": {"arguments": '{"order":7}', "name": "order_status"},
                    "type": "function",
                },
            ],
            "sender": "Triage",
        },
        {
            "role": "tool",
            "tool_call_id": "call_a",
            "tool_name": "transfer_to_sales",
            "content": '{"assistant": "Sales"}',
        },
        {
            "role": "tool",
            "tool_call_id": "call_b",
            "tool_name": "order_status",
            "content": "shipped",
        },
        {
            "content": "Order 7 has shipped.",
            "refusal": None,
            "role": "assistant",
            "audio": None,
            "function_call": None,
            "tool_calls": None,
            "sender": "Sales",
        },
    ]


def test_round_trip_is_exact() -> None:
    """Exact for compact argument strings (openai_chat re-serialises arguments compactly)."""
    messages = _swarm_messages()
    sample = from_swarm_messages(copy.deepcopy(messages), id="s1")
    assert to_swarm_messages(sample) == messages


def test_senders_tool_names_and_null_tool_calls() -> None:
    sample = from_swarm_messages(_swarm_messages())
    assert [m.type for m in sample.user_input] == ["human", "ai", "tool", "tool", "ai"]
    assert sample.predicted_tool_calls() == [
        ToolCall(name="transfer_to_sales", args={}, id="call_a"),
        ToolCall(name="order_status", args={"order": 7}, id="call_b"),
    ]
    last = sample.user_input[4]
    assert isinstance(last, AIMessage) and last.tool_calls is None
    assert last.metadata is not None and last.metadata["swarm_message"] == {"sender": "Sales"}
    tool = sample.user_input[2]
    assert isinstance(tool, ToolMessage) and tool.tool_call_id == "call_a"
    assert tool.metadata == {"swarm_message": {"tool_name": "transfer_to_sales"}}


def test_a_response_object_brings_context_and_agent() -> None:
    @dataclass
    class Agent:
        name: str

    @dataclass
    class Response:  # the shape of swarm.types.Response
        messages: list[dict[str, Any]]
        agent: Agent | None = None
        context_variables: dict[str, Any] = field(default_factory=dict)

    response = Response(_swarm_messages(), Agent("Sales"), {"user_id": 42})
    sample = from_swarm_messages(response)
    assert sample.metadata == {
        "swarm_response": {"context_variables": {"user_id": 42}, "agent": "Sales"}
    }
    assert len(sample.user_input) == 5


def test_errors_name_the_message_and_why() -> None:
    messages = _swarm_messages()
    messages[1]["tool_calls"][0]["function"]["arguments"] = "{bad"
    messages[4]["metadata"] = "nope"
    with pytest.raises(ConversionError) as caught:
        from_swarm_messages(messages)
    assert caught.value.problems == ["messages[4].metadata: must be an object"]
    del messages[4]["metadata"]
    with pytest.raises(ConversionError) as caught:
        from_swarm_messages(messages)
    assert caught.value.problems == [
        "messages[1].tool_calls[0].function.arguments: not valid JSON (Expecting property name "
        "enclosed in double quotes at line 1 column 2)"
    ]


def test_tau_bench_runs_as_swarm_messages_keep_every_tool_call() -> None:
    """200 real GPT-4o runs (their assistant messages carry `tool_calls: null`, as Swarm's do)."""
    runs = json.loads(shared_file(TAU_BENCH).read_text(encoding="utf-8"))
    calls = results = 0
    for run in runs:
        messages = []
        for message in run["traj"]:
            message = dict(message)
            if message["role"] == "assistant":
                message["sender"] = "Airline Agent"
            if message["role"] == "tool":
                message["tool_name"] = message.pop("name")
            messages.append(message)
        sample = from_swarm_messages(copy.deepcopy(messages))
        expected_calls = sum(len(m.get("tool_calls") or []) for m in messages)
        expected_results = sum(m["role"] == "tool" for m in messages)
        tool_messages = [m for m in sample.user_input if isinstance(m, ToolMessage)]
        assert len(sample.predicted_tool_calls()) == expected_calls
        assert len(tool_messages) == expected_results
        back = to_swarm_messages(sample)
        for left, right in zip(back, messages, strict=True):
            for call in left.get("tool_calls") or []:
                call["function"]["arguments"] = json.loads(call["function"]["arguments"])
            for call in right.get("tool_calls") or []:
                call["function"]["arguments"] = json.loads(call["function"]["arguments"])
        assert back == messages
        calls += expected_calls
        results += expected_results
    assert calls > 1000 and results > 1000
    print(f"tau-bench via Swarm: {len(runs)} runs, {calls} tool calls, {results} tool results")
