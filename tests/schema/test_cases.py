"""DeepEval-style cases convert to and from MultiTurnSample without losing anything."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from convoeval import (
    AIMessage,
    ConversationalTestCase,
    HumanMessage,
    LLMTestCase,
    ModelTestCase,
    MultiTurnSample,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Turn,
)
from convoeval.schema import split_exchanges


def _agent_sample() -> MultiTurnSample:
    return MultiTurnSample(
        id="conv-1",
        reference="The refund is issued.",
        metadata={"channel": "chat"},
        user_input=[
            HumanMessage(content="Refund order 7 please"),
            AIMessage(
                content="Checking.",
                tool_calls=[
                    ToolCall(name="get_order", args={"id": 7, "opts": {"a": [1]}}, id="c1")
                ],
            ),
            ToolMessage(content="paid", tool_call_id="c1"),
            AIMessage(content="", tool_calls=[ToolCall(name="refund", args={"id": 7}, id="c2")]),
            ToolMessage(content="ok", tool_call_id="c2"),
            AIMessage(content="Refund issued."),
            HumanMessage(content="Thanks"),
            AIMessage(content="You're welcome."),
        ],
    )


@pytest.mark.parametrize("style", ["turns", "exchanges"])
def test_sample_to_case_and_back_is_lossless(style: str) -> None:
    sample = _agent_sample()
    case = ConversationalTestCase.from_sample(sample, style=style)  # type: ignore[arg-type]
    assert case.to_sample() == sample


def test_exchange_keeps_its_tool_calls() -> None:
    case = ConversationalTestCase.from_sample(_agent_sample(), style="exchanges")
    first = case.turns[0]
    assert isinstance(first, ModelTestCase)
    assert first.input == "Refund order 7 please"
    assert first.actual_output == "Refund issued."
    assert [c.name for c in first.tools_called or []] == ["get_order", "refund"]


def test_model_test_case_with_only_tools_called_becomes_a_tool_calling_message() -> None:
    case = ConversationalTestCase(
        turns=[
            LLMTestCase(
                input="weather?",
                actual_output="Sunny.",
                tools_called=[ToolCall(name="weather", args={"city": "Oslo"})],
                expected_output="Sunny",
                retrieval_context=["forecast"],
            )
        ],
        scenario="small talk",
        expected_outcome="user knows the weather",
        additional_metadata={"team": "a"},
    )
    sample = case.to_sample()
    assert (
        sample.pretty_repr() == "Human: weather?\nTools:\n  weather: {'city': 'Oslo'}\nAI: Sunny."
    )
    assert sample.reference == "user knows the weather"
    back = ConversationalTestCase.from_sample(sample, style="exchanges")
    assert back.scenario == "small talk" and back.metadata == {"team": "a"}
    turn = back.turns[0]
    assert isinstance(turn, ModelTestCase)
    assert turn.expected_output == "Sunny" and turn.retrieval_context == ["forecast"]
    assert turn.tools_called == [ToolCall(name="weather", args={"city": "Oslo"})]
    assert back.to_sample() == sample


def test_turn_style_maps_one_to_one() -> None:
    case = ConversationalTestCase(
        turns=[
            Turn(role="system", content="be nice"),
            Turn(role="user", content="hi"),
            Turn(role="assistant", content="", tools_called=[ToolCall(name="f", id="x")]),
            Turn(role="tool", content="r", tool_call_id="x"),
            Turn(role="assistant", content="hello", additional_metadata={"lat": 3}),
        ]
    )
    sample = case.to_sample()
    assert [m.type for m in sample.user_input] == ["system", "human", "ai", "tool", "ai"]
    assert sample.user_input[4].metadata == {"lat": 3}
    assert ConversationalTestCase.from_sample(sample) == case


def test_exchange_style_refuses_what_it_cannot_hold() -> None:
    sample = MultiTurnSample(
        user_input=[SystemMessage(content="s"), HumanMessage(content="a"), AIMessage(content="b")]
    )
    with pytest.raises(ValueError, match=r"user_input\[0\]: a system message comes before"):
        ConversationalTestCase.from_sample(sample, style="exchanges")


def test_empty_turns_is_a_clear_error() -> None:
    with pytest.raises(ValidationError, match="turns is empty"):
        ConversationalTestCase(turns=[])


def test_split_exchanges_groups_tool_steps_with_the_final_reply() -> None:
    leading, exchanges = split_exchanges(_agent_sample().user_input)
    assert leading == []
    assert [(e.input, e.reply.content if e.reply else None) for e in exchanges] == [
        ("Refund order 7 please", "Refund issued."),
        ("Thanks", "You're welcome."),
    ]
    assert [len(e.steps) for e in exchanges] == [4, 0]
    assert [(e.first, e.last) for e in exchanges] == [(0, 5), (6, 7)]


def test_split_exchanges_merges_consecutive_user_messages_and_keeps_unanswered() -> None:
    _, exchanges = split_exchanges(
        [
            HumanMessage(content="a"),
            HumanMessage(content="b"),
            AIMessage(content="c"),
            HumanMessage(content="d"),
        ]
    )
    assert [e.input for e in exchanges] == ["a\nb", "d"]
    assert exchanges[1].reply is None and not exchanges[1].answered
