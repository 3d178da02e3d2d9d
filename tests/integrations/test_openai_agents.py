"""OpenAI Agents SDK items <-> MultiTurnSample, with the SDK's and openai's own types, offline."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from openai.types.responses import (
    EasyInputMessageParam,
    ResponseFunctionToolCall,
    ResponseFunctionToolCallParam,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_input_item_param import FunctionCallOutput
from openai.types.responses.response_reasoning_item import Summary

from convoeval import AIMessage, HumanMessage, MultiTurnSample, SystemMessage, ToolCall, ToolMessage
from convoeval.integrations._errors import ConversionError
from convoeval.integrations.openai_agents import from_agents_items, to_agents_items

agents = pytest.importorskip("agents", reason="openai-agents is not installed")


def _items() -> list[Any]:
    """A run's input list: messages (string and part lists), reasoning, calls and outputs."""
    return [
        EasyInputMessageParam(role="developer", content="Answer in one line."),
        EasyInputMessageParam(
            role="user",
            content=[
                {"type": "input_text", "text": "Weather in Paris "},
                {"type": "input_text", "text": "and Rome?"},
                {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "low"},
            ],
        ),
        {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "two"}]},
        ResponseFunctionToolCallParam(
            type="function_call",
            call_id="call_1",
            name="weather",
            arguments='{"city": "Paris"}',
            id="fc_1",
            status="completed",
        ),
        ResponseFunctionToolCallParam(
            type="function_call", call_id="call_2", name="weather", arguments='{"city":"Rome"}'
        ),
        FunctionCallOutput(type="function_call_output", call_id="call_1", output="sunny"),
        FunctionCallOutput(
            type="function_call_output",
            call_id="call_2",
            output=[{"type": "input_text", "text": "rain"}],
        ),
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [
                {"type": "output_text", "text": "Paris sunny, Rome rain.", "annotations": []}
            ],
        },
    ]


def test_items_round_trip_exactly() -> None:
    items = _items()
    sample = from_agents_items(copy.deepcopy(items), id="run-1", reference_topics=["weather"])
    assert to_agents_items(sample) == items
    assert sample.id == "run-1"


def test_items_map_to_typed_messages() -> None:
    sample = from_agents_items(_items())
    kinds = [type(m) for m in sample.user_input]
    assert kinds == [SystemMessage, HumanMessage, AIMessage, ToolMessage, ToolMessage, AIMessage]
    assert sample.user_input[1].content == "Weather in Paris and Rome?"
    assert sample.predicted_tool_calls() == [
        ToolCall(name="weather", args={"city": "Paris"}, id="call_1"),
        ToolCall(name="weather", args={"city": "Rome"}, id="call_2"),
    ]
    assert [m.content for m in sample.user_input[3:]] == [
        "sunny",
        "rain",
        "Paris sunny, Rome rain.",
    ]
    calls = sample.user_input[2]
    assert calls.metadata is not None
    reasoning = calls.metadata["agents_item"]["reasoning"]
    assert reasoning == [{"at": 0, "item": _items()[2]}]


def test_a_real_offline_run_converts_and_round_trips() -> None:
    """`Runner.run` with a scripted model (no network, no key) and a real function tool."""
    agents.set_tracing_disabled(True)

    class ScriptedModel(agents.Model):  # type: ignore[misc]
        """A model that answers from a script: the SDK runs everything else for real."""

        def __init__(self, outputs: list[list[Any]]) -> None:
            self.outputs = outputs

        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            return agents.ModelResponse(
                output=self.outputs.pop(0), usage=agents.Usage(), response_id=None
            )

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    @agents.function_tool
    def weather(city: str) -> str:
        """The weather of a city."""
        return f"sunny in {city}"

    model = ScriptedModel(
        [
            [
                ResponseReasoningItem(
                    id="rs_1",
                    type="reasoning",
                    summary=[Summary(text="look up", type="summary_text")],
                ),
                ResponseFunctionToolCall(
                    type="function_call", call_id="c1", name="weather", arguments='{"city":"Oslo"}'
                ),
            ],
            [
                ResponseOutputMessage(
                    id="msg_1",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[ResponseOutputText(type="output_text", text="Sunny.", annotations=[])],
                )
            ],
        ]
    )
    agent = agents.Agent(name="forecaster", model=model, tools=[weather])
    result = agents.Runner.run_sync(agent, "Weather in Oslo?")
    sample = from_agents_items(result)
    assert [m.type for m in sample.user_input] == ["human", "ai", "tool", "ai"]
    assert sample.predicted_tool_calls() == [
        ToolCall(name="weather", args={"city": "Oslo"}, id="c1")
    ]
    assert sample.user_input[2].content == "sunny in Oslo"  # the tool really ran
    assert sample.user_input[3].content == "Sunny."
    assert to_agents_items(sample) == result.to_input_list()


def test_pydantic_output_items_are_accepted() -> None:
    items = [
        {"role": "user", "content": "hi"},
        ResponseFunctionToolCall(type="function_call", call_id="c1", name="f", arguments="{}"),
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
    ]
    sample = from_agents_items(items)
    assert sample.predicted_tool_calls() == [ToolCall(name="f", args={}, id="c1")]
    assert to_agents_items(sample)[1] == {
        "type": "function_call",
        "call_id": "c1",
        "name": "f",
        "arguments": "{}",
    }


def test_plain_string_input_and_sequential_calls() -> None:
    assert from_agents_items("hello").user_input == [HumanMessage(content="hello")]
    items = [
        {"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "a", "output": "1"},
        {"type": "function_call", "call_id": "b", "name": "g", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "b", "output": "2"},
        {"role": "assistant", "content": "done"},
    ]
    sample = from_agents_items(copy.deepcopy(items))
    assert [m.type for m in sample.user_input] == ["human", "ai", "tool", "ai", "tool", "ai"]
    assert to_agents_items(sample) == items


def test_trailing_reasoning_is_kept() -> None:
    items = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"type": "reasoning", "id": "rs_9", "summary": []},
    ]
    sample = from_agents_items(copy.deepcopy(items))
    assert len(sample.user_input) == 2
    assert to_agents_items(sample) == items


def test_sample_from_elsewhere_becomes_input_items() -> None:
    sample = MultiTurnSample(
        user_input=[
            SystemMessage(content="be brief"),
            HumanMessage(content="hi"),
            AIMessage(
                content="Let me see.", tool_calls=[ToolCall(name="f", args={"x": 1}, id="c1")]
            ),
            ToolMessage(content="r", tool_call_id="c1"),
            AIMessage(content="done"),
        ]
    )
    assert to_agents_items(sample) == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Let me see."},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"x":1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "r"},
        {"role": "assistant", "content": "done"},
    ]
    back = from_agents_items(to_agents_items(sample))
    assert back.predicted_tool_calls() == sample.predicted_tool_calls()


def test_missing_ids_cannot_become_items() -> None:
    no_call_id = MultiTurnSample(
        user_input=[
            HumanMessage(content="hi"),
            AIMessage(content="", tool_calls=[ToolCall(name="f")]),
        ]
    )
    with pytest.raises(ConversionError) as caught:
        to_agents_items(no_call_id)
    assert caught.value.problems == [
        "user_input[1].tool_calls: a function_call item needs a call_id; the call of 'f' has no id"
    ]
    no_answer_id = MultiTurnSample(
        user_input=[
            HumanMessage(content="hi"),
            AIMessage(content="", tool_calls=[ToolCall(name="f", id="c1")]),
            ToolMessage(content="r"),
        ]
    )
    with pytest.raises(ConversionError, match=r"^user_input\[2\]: a function_call_output item"):
        to_agents_items(no_answer_id)


def test_errors_name_the_item_and_why() -> None:
    items: list[Any] = [
        {"role": "user", "content": "hi"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        {"type": "function_call", "call_id": 5, "name": "f", "arguments": "[1]"},
        {"role": "critic", "content": "x"},
        {"type": "function_call_output", "output": "x"},
        {"role": "user", "content": [{"type": "input_text", "text": 3}]},
        "text",
        {"content": "no role or type"},
    ]
    with pytest.raises(ConversionError) as caught:
        from_agents_items(items)
    assert caught.value.problems == [
        "items[1].type: 'web_search_call' items are not supported (supported: message, "
        "function_call, function_call_output, reasoning)",
        "items[2].call_id: must be a string, got a number",
        "items[2].arguments: must be a JSON object, got a list",
        "items[3].role: unknown role 'critic' (expected one of user, system, developer, assistant)",
        "items[4].call_id: must be a string, got null",
        "items[5].content[0].text: must be a string, got a number",
        "items[6]: must be an object (an input item), got a string",
        "items[7]: an item needs a 'type' or a 'role'",
    ]


def test_conversation_rules_name_the_item() -> None:
    items = [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "zzz", "output": "1"},
    ]
    with pytest.raises(ConversionError, match=r"^items\[2\]\.tool_call_id: 'zzz' names no tool"):
        from_agents_items(items)
