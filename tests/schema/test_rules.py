"""The conversation rules of DESIGN §3: Ragas's three tool-message rules, ids, empties, unknowns."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from convoeval import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolMessage
from convoeval.schema.errors import describe_errors


def _problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as info:
        MultiTurnSample.model_validate(data)
    return describe_errors(info.value)


def _msgs(*spec: Any) -> dict[str, Any]:
    return {"user_input": list(spec)}


H = {"type": "human", "content": "hi"}
A = {"type": "ai", "content": "hello"}
A_CALL = {"type": "ai", "content": "", "tool_calls": [{"name": "lookup", "args": {"q": 1}}]}
T = {"type": "tool", "content": "result"}


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        pytest.param(
            [H, T],
            "user_input[1]: ToolMessage must be preceded by an AIMessage somewhere in the "
            "conversation.",
            id="rule1-no-ai-before",
        ),
        pytest.param(
            [H, A, H, T],
            "user_input[3]: ToolMessage must follow an AIMessage or another ToolMessage.",
            id="rule2-human-between",
        ),
        pytest.param(
            [H, A, T],
            "user_input[2]: ToolMessage must follow an AIMessage where tools were called.",
            id="rule3-ai-without-calls",
        ),
        pytest.param(
            [H, A, H, {"type": "ai", "content": "x", "tool_calls": []}, T],
            "user_input[4]: ToolMessage must follow an AIMessage where tools were called.",
            id="rule3-empty-tool-calls",
        ),
        pytest.param(
            [],
            "user_input: the conversation is empty: it needs at least one message.",
            id="empty",
        ),
    ],
)
def test_rule_messages_name_the_index(messages: list[Any], expected: str) -> None:
    assert _problems(_msgs(*messages)) == [expected]


def test_tool_blocks_and_several_results_per_call_are_valid() -> None:
    sample = MultiTurnSample.model_validate(_msgs(H, A_CALL, T, T, A, H, A_CALL, T))
    assert len(sample.user_input) == 8


def test_tool_call_id_must_name_a_call_of_the_ai_message() -> None:
    call = {"type": "ai", "content": "", "tool_calls": [{"name": "f", "id": "c1"}]}
    ok = {"type": "tool", "content": "r", "tool_call_id": "c1"}
    bad = {"type": "tool", "content": "r", "tool_call_id": "c9"}
    MultiTurnSample.model_validate(_msgs(H, call, ok))
    assert _problems(_msgs(H, call, ok, bad)) == [
        "user_input[3].tool_call_id: 'c9' names no tool call of the AIMessage before it "
        "(ids there: 'c1')."
    ]
    assert _problems(_msgs(H, A_CALL, bad)) == [
        "user_input[2].tool_call_id: 'c9' names no tool call of the AIMessage before it "
        "(ids there: none (its tool calls have no ids))."
    ]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(
            _msgs({"type": "robot", "content": "x"}),
            [
                "user_input[0]: unknown message type 'robot' "
                "(expected one of human, ai, tool, system)"
            ],
            id="unknown-type",
        ),
        pytest.param(
            _msgs({"content": "x"}),
            [
                "user_input[0]: message has no 'type' field "
                "(expected one of human, ai, tool, system)"
            ],
            id="no-type",
        ),
        pytest.param(
            _msgs(H, {"type": "user", "content": "x"}, {"type": "Assistant", "content": "y"}),
            [
                "user_input[1]: unknown message type 'user' (expected one of human, ai, tool, "
                "system); did you mean 'human'?",
                "user_input[2]: unknown message type 'Assistant' (expected one of human, ai, "
                "tool, system); did you mean 'ai'?",
            ],
            id="type-hints",
        ),
        pytest.param(
            _msgs({"role": "user", "content": "x"}),
            [
                "user_input[0]: message has no 'type' field (expected one of human, ai, tool, "
                "system); it has a 'role': OpenAI chat messages go under 'messages', not "
                "'user_input'"
            ],
            id="role-instead-of-type",
        ),
        pytest.param(
            _msgs({"type": "human", "content": "x", "colour": "red"}),
            ["user_input[0].colour: unknown field (not part of the schema)"],
            id="unknown-message-field",
        ),
        pytest.param(
            {**_msgs(H), "reference_topic": ["typo"]},
            ["reference_topic: unknown field (not part of the schema)"],
            id="unknown-sample-field",
        ),
        pytest.param(
            _msgs({"type": "human", "content": None}),
            ["user_input[0].content: must be a string, got NoneType"],
            id="content-none",
        ),
        pytest.param(
            _msgs({"type": "human"}),
            ["user_input[0].content: required field is missing"],
            id="content-missing",
        ),
        pytest.param(
            _msgs(H, {"type": "ai", "content": "", "tool_calls": [{"name": "f", "args": [1]}]}),
            ["user_input[1].tool_calls[0].args: must be an object (a JSON dict), got list"],
            id="args-not-dict",
        ),
        pytest.param(
            {**_msgs(H), "reference_topics": "billing"},
            ["reference_topics: must be a list, got str"],
            id="topics-not-list",
        ),
        pytest.param(
            {"reference": "x"},
            ["user_input: required field is missing"],
            id="no-user-input",
        ),
    ],
)
def test_schema_errors_name_the_field(data: dict[str, Any], expected: list[str]) -> None:
    assert _problems(data) == expected


def test_typed_construction_is_validated_too() -> None:
    with pytest.raises(ValidationError, match=r"user_input\[1\]: ToolMessage must be preceded"):
        MultiTurnSample(user_input=[HumanMessage(content="a"), ToolMessage(content="b")])
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="a"),
            AIMessage(tool_calls=[ToolCall(name="f", args={"x": {"y": [1, None]}})]),
            ToolMessage(content="b"),
        ]
    )
    assert sample.predicted_tool_calls() == [ToolCall(name="f", args={"x": {"y": [1, None]}})]
