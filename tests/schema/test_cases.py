"""DeepEval-style cases convert to and from MultiTurnSample without losing anything."""

from __future__ import annotations

import pytest

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
    with pytest.raises(ValueError, match="turns is empty"):
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


_TOOL = {"type": "function", "function": {"name": "refund", "parameters": {"type": "object"}}}


def test_case_fields_land_on_the_sample_fields_and_come_back() -> None:
    case = ConversationalTestCase(
        turns=[Turn(role="user", content="refund?"), Turn(role="assistant", content="done")],
        chatbot_role="airline agent",
        scenario="refund request",
        expected_outcome="refund issued",
        user_description="impatient",
        context=["policy: 24h"],
        available_tools=[_TOOL],
        name="c1",
    )
    sample = case.to_sample()
    assert sample.chatbot_role == "airline agent" and sample.scenario == "refund request"
    assert sample.expected_outcome == sample.reference == "refund issued"
    assert sample.user_description == "impatient" and sample.context == ["policy: 24h"]
    assert [t.name for t in sample.available_tools or []] == ["refund"]
    assert sample.metadata is None
    assert ConversationalTestCase.from_sample(sample) == case


@pytest.mark.parametrize("style", ["turns", "exchanges"])
@pytest.mark.parametrize(
    "fields",
    [
        {"reference": "R"},
        {"expected_outcome": "E"},
        {"reference": "R", "expected_outcome": "E"},
        {"reference": "same", "expected_outcome": "same"},
        {
            "chatbot_role": "agent",
            "context": ["a", "b"],
            "available_tools": [_TOOL],
            "reference_topics": ["refunds"],
            "rubrics": {"score1": "bad"},
            "reference_tool_calls": [ToolCall(name="refund", args={"id": 7, "x": {"y": [1]}})],
        },
    ],
)
def test_every_sample_field_survives_a_case_round_trip(
    style: str, fields: dict[str, object]
) -> None:
    base = _agent_sample().model_dump(exclude={"reference"})
    sample = MultiTurnSample.model_validate({**base, **fields})
    case = ConversationalTestCase.from_sample(sample, style=style)  # type: ignore[arg-type]
    assert case.to_sample() == sample
    # and through the case's JSON form, as a DeepEval-layout file stores it
    again = ConversationalTestCase.model_validate_json(case.model_dump_json())
    assert again.to_sample() == sample


def test_case_fields_kept_in_metadata_by_older_versions_are_still_read() -> None:
    sample = MultiTurnSample(
        user_input=[HumanMessage(content="hi")],
        metadata={"conversational_test_case": {"chatbot_role": "agent", "context": ["c"]}},
    )
    case = ConversationalTestCase.from_sample(sample)
    assert case.chatbot_role == "agent" and case.context == ["c"] and case.metadata is None
