"""Samples that stress every lossless-round-trip corner of the data formats."""

from __future__ import annotations

from convoeval import (
    AIMessage,
    HumanMessage,
    MultiTurnSample,
    SystemMessage,
    ToolCall,
    ToolMessage,
)

TRICKY = 'Hé, "quoted", comma, newline\nsecond line; café — 日本語 🚀 \\ backslash'

NESTED_ARGS = {
    "query": {"cities": [{"name": "Zürich", "tags": ["a", None]}, {"code": 1, "alt": None}]},
    "limit": 3,
    "flag": False,
    "ratio": 0.25,
    "empty": {},
    "none": None,
}
# same content, other key orders at every level
NESTED_ARGS_REORDERED = {
    "none": None,
    "empty": {},
    "ratio": 0.25,
    "flag": False,
    "limit": 3,
    "query": {"cities": [{"tags": ["a", None], "name": "Zürich"}, {"alt": None, "code": 1}]},
}


def samples() -> list[MultiTurnSample]:
    """Three samples: tool calls with ids, system messages, metadata, a field only in the 3rd."""
    first = MultiTurnSample(
        id="conv-1",
        user_input=[
            SystemMessage(content="You are a travel agent. Use tools."),
            HumanMessage(content=TRICKY),
            AIMessage(
                content="",
                tool_calls=[
                    ToolCall(name="search", args=NESTED_ARGS, id="call_1"),
                    ToolCall(name="weather", args={"city": "Zürich, CH"}, id="call_2"),
                ],
            ),
            ToolMessage(content='{"hits": 2}', tool_call_id="call_1"),
            ToolMessage(content="sunny,\n22°C", tool_call_id="call_2"),
            AIMessage(content=TRICKY),
        ],
        reference_topics=["travel", "weather"],
        reference_tool_calls=[ToolCall(name="search", args=NESTED_ARGS_REORDERED)],
    )
    second = MultiTurnSample(
        id="conv-2",
        user_input=[
            HumanMessage(content="hello", metadata={"channel": "web", "score": [1, None]}),
            AIMessage(content="thinking", tool_calls=[]),
            AIMessage(content="no tools", tool_calls=None, metadata={}),
            HumanMessage(content="call it"),
            AIMessage(content="ok", tool_calls=[ToolCall(name="noop", args={})]),
            ToolMessage(content=""),
        ],
        metadata={"source": "unit test", "nested": {"k": [{"x": None}]}},
    )
    third = MultiTurnSample(
        user_input=[
            HumanMessage(content="Rate my trip"),
            AIMessage(content="It was 5/5."),
        ],
        reference='The agent rates the trip.\nWith two lines, and "quotes".',
        rubrics={"score1_description": "bad", "score5_description": 'great, "really"'},
        reference_topics=[],
    )
    return [first, second, third]
