"""LlamaIndex chat messages and agent events <-> MultiTurnSample, with llama-index-core objects."""

from __future__ import annotations

from typing import Any

import pytest

from convoeval import AIMessage, HumanMessage, MultiTurnSample, SystemMessage, ToolCall, ToolMessage
from convoeval.integrations._errors import ConversionError
from convoeval.integrations.llama_index import (
    from_llama_index_events,
    from_llama_index_messages,
    to_llama_index_messages,
)

llms = pytest.importorskip("llama_index.core.llms", reason="llama-index-core is not installed")
workflow = pytest.importorskip("llama_index.core.agent.workflow", reason="needs llama-index-core")
types = pytest.importorskip("llama_index.core.base.llms.types", reason="needs llama-index-core")
tools = pytest.importorskip("llama_index.core.tools", reason="needs llama-index-core")


def _messages() -> list[Any]:
    """Roles, text and image blocks, OpenAI-style kwargs calls and ToolCallBlock calls."""
    chat = llms.ChatMessage
    return [
        chat(role="system", content="You are a travel agent."),
        chat(
            role="user",
            blocks=[
                types.TextBlock(text="Is this Paris?"),
                types.ImageBlock(url="https://example.com/photo.png"),
            ],
        ),
        chat(
            role="assistant",
            content="",
            additional_kwargs={
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "locate", "arguments": '{"image": 1}'},
                    }
                ]
            },
        ),
        chat(
            role="tool",
            content="Paris, France",
            additional_kwargs={"tool_call_id": "call_1", "name": "locate"},
        ),
        chat(
            role="assistant",
            blocks=[
                types.TextBlock(text="Yes. Checking weather."),
                types.ToolCallBlock(
                    tool_call_id="call_2", tool_name="weather", tool_kwargs={"city": "Paris"}
                ),
            ],
        ),
        chat(role="tool", content="sunny", additional_kwargs={"tool_call_id": "call_2"}),
        chat(role="chatbot", content="It is Paris, and sunny."),
    ]


def test_round_trip_gives_equal_messages() -> None:
    original = _messages()
    sample = from_llama_index_messages(original, id="trip")
    back = to_llama_index_messages(sample)
    assert back == original
    assert sample.id == "trip"


def test_messages_map_to_typed_messages() -> None:
    sample = from_llama_index_messages(_messages())
    kinds = [type(m) for m in sample.user_input]
    assert kinds == [
        SystemMessage,
        HumanMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
    ]
    assert sample.user_input[1].content == "Is this Paris?"
    assert sample.predicted_tool_calls() == [
        ToolCall(name="locate", args={"image": 1}, id="call_1"),
        ToolCall(name="weather", args={"city": "Paris"}, id="call_2"),
    ]
    assert [m.tool_call_id for m in sample.user_input if isinstance(m, ToolMessage)] == [
        "call_1",
        "call_2",
    ]
    assert sample.user_input[6].metadata == {"llama_index_message": {"role": "chatbot"}}
    sample.model_dump_json()  # the kept blocks are JSON-ready


def test_sample_from_elsewhere_becomes_chat_messages() -> None:
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="hi", metadata={"channel": "web"}),
            AIMessage(content="", tool_calls=[ToolCall(name="f", args={"x": [1]}, id="c1")]),
            ToolMessage(content="r", tool_call_id="c1"),
            AIMessage(content="done"),
        ]
    )
    back = to_llama_index_messages(sample)
    assert back[1].role == llms.MessageRole.ASSISTANT
    assert back[1].additional_kwargs["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x":[1]}'}}
    ]
    assert back[2].additional_kwargs == {"tool_call_id": "c1"}
    assert back[3].content == "done"
    assert from_llama_index_messages(back) == sample


def test_edited_sample_writes_its_own_calls() -> None:
    sample = from_llama_index_messages(_messages())
    calls_message = sample.user_input[4]
    assert isinstance(calls_message, AIMessage)
    calls_message.tool_calls = [ToolCall(name="weather", args={"city": "Lyon"}, id="call_2")]
    back = to_llama_index_messages(sample)
    tool_blocks = [b for b in back[4].blocks if isinstance(b, types.ToolCallBlock)]
    assert [(b.tool_name, b.tool_kwargs) for b in tool_blocks] == [("weather", {"city": "Lyon"})]


def _events() -> list[Any]:
    """What a FunctionAgent streams for one tool-using answer (built with the event classes)."""
    chat = llms.ChatMessage
    history = [chat(role="system", content="be brief"), chat(role="user", content="2+3*4?")]
    selection = tools.ToolSelection(tool_id="t1", tool_name="calc", tool_kwargs={"expr": "3*4"})
    return [
        workflow.AgentInput(input=history, current_agent_name="math"),
        workflow.AgentStream(delta="", response="", current_agent_name="math", tool_calls=[]),
        workflow.AgentOutput(
            response=chat(role="assistant", content=""),
            tool_calls=[selection],
            current_agent_name="math",
        ),
        workflow.ToolCall(tool_name="calc", tool_kwargs={"expr": "3*4"}, tool_id="t1"),
        workflow.ToolCallResult(
            tool_name="calc",
            tool_kwargs={"expr": "3*4"},
            tool_id="t1",
            tool_output=tools.ToolOutput(
                content="12", tool_name="calc", raw_input={}, raw_output=12
            ),
            return_direct=False,
        ),
        workflow.ToolCall(tool_name="add", tool_kwargs={"a": 2, "b": 12}, tool_id="t2"),
        workflow.ToolCallResult(
            tool_name="add",
            tool_kwargs={"a": 2, "b": 12},
            tool_id="t2",
            tool_output=tools.ToolOutput(
                content="14", tool_name="add", raw_input={}, raw_output=14, is_error=True
            ),
            return_direct=True,
        ),
        workflow.AgentInput(
            input=[*history, chat(role="tool", content="12")], current_agent_name="math"
        ),
        workflow.AgentOutput(
            response=chat(role="assistant", content="14"), tool_calls=[], current_agent_name="math"
        ),
    ]


def test_agent_events_give_the_conversation() -> None:
    sample = from_llama_index_events(_events(), id="agent-run")
    assert [m.type for m in sample.user_input] == [
        "system",
        "human",
        "ai",
        "tool",
        "ai",
        "tool",
        "ai",
    ]
    assert sample.predicted_tool_calls() == [
        ToolCall(name="calc", args={"expr": "3*4"}, id="t1"),
        ToolCall(name="add", args={"a": 2, "b": 12}, id="t2"),
    ]
    results = [m for m in sample.user_input if isinstance(m, ToolMessage)]
    assert [(m.content, m.tool_call_id) for m in results] == [("12", "t1"), ("14", "t2")]
    assert results[1].metadata == {
        "llama_index_tool_result": {"tool_name": "add", "is_error": True, "return_direct": True}
    }
    assert sample.user_input[-1].content == "14"
    assert sample.user_input[-1].metadata == {"llama_index_agent": {"current_agent_name": "math"}}


def test_errors_name_the_item_and_why() -> None:
    bad: list[Any] = [
        {"role": "narrator", "blocks": []},
        {
            "role": "assistant",
            "blocks": [],
            "additional_kwargs": {
                "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "[]"}}]
            },
        },
        {
            "role": "user",
            "blocks": [{"block_type": "tool_call", "tool_name": "f", "tool_kwargs": {}}],
        },
        7,
    ]
    with pytest.raises(ConversionError) as caught:
        from_llama_index_messages(bad)
    assert caught.value.problems == [
        "messages[0].role: unknown role 'narrator' (expected one of system, developer, user, "
        "assistant, chatbot, model, tool, function)",
        "messages[1].additional_kwargs.tool_calls[0].arguments: must be a JSON object, got a list",
        "messages[2]: only an assistant message calls tools",
        "messages[3]: must be a LlamaIndex ChatMessage, got a number",
    ]
    orphan = [
        llms.ChatMessage(role="user", content="hi"),
        llms.ChatMessage(role="tool", content="x"),
    ]
    with pytest.raises(ConversionError, match=r"^messages\[1\]: ToolMessage must be preceded"):
        from_llama_index_messages(orphan)
