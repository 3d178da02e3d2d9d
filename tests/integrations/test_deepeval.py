"""DeepEval interop: its ConversationalTestCase JSON (both turn styles) in, Turn style out."""

from __future__ import annotations

import copy
import json
from typing import Any, Literal

import pytest
from _peers import peer
from pydantic import BaseModel

from _shared_data import TAU_BENCH, shared_file
from convoeval import (
    AIMessage,
    HumanMessage,
    MultiTurnSample,
    SystemMessage,
    ToolCall,
    ToolMessage,
    evaluate,
)
from convoeval.integrations._errors import ConversionError
from convoeval.integrations.deepeval import from_deepeval, to_deepeval_dict
from convoeval.integrations.openai_chat import from_openai_messages

#: A `ConversationalTestCase` in DeepEval's JSON layout (`Turn`s with `tools_called`).
CASE: dict[str, Any] = {
    "scenario": "A customer asks for a refund.",
    "expected_outcome": "The order is refunded.",
    "chatbot_role": "a support agent",
    "name": "refund-7",
    "turns": [
        {"role": "user", "content": "Refund order 7 please.", "user_id": "u-1"},
        {
            "role": "assistant",
            "content": "Order 7 is refunded.",
            "tools_called": [
                {
                    "name": "lookup_order",
                    "input_parameters": {"order_id": 7},
                    "output": {"status": "paid", "total": 12.5},
                    "description": "Finds an order",
                },
                {
                    "name": "refund",
                    "input_parameters": {"order_id": 7},
                    "output": "ok",
                    "reasoning": "The order was paid.",
                },
            ],
            "retrieval_context": ["Refunds within 30 days."],
        },
        {"role": "user", "content": "Thanks!"},
        {"role": "assistant", "content": "You're welcome."},
    ],
}


#: Everything DeepEval has no field for: system messages, ids, two tool rounds, sample fields.
ANY_SAMPLE = MultiTurnSample(
    user_input=[
        SystemMessage(content="Policy: be brief."),
        HumanMessage(content="Weather in Oslo and Rome?"),
        AIMessage(
            content="Checking.",
            tool_calls=[
                ToolCall(name="weather", args={"city": "Oslo"}, id="a"),
                ToolCall(name="weather", args={"city": "Rome"}, id="b"),
            ],
        ),
        ToolMessage(content="rain", tool_call_id="b"),
        ToolMessage(content="snow", tool_call_id="a"),
        AIMessage(content="", tool_calls=[ToolCall(name="advice", args={}, id="c")]),
        ToolMessage(content="umbrella", tool_call_id="c"),
        AIMessage(content="Oslo snow, Rome rain: take an umbrella.", metadata={"ms": 5}),
    ],
    reference_topics=["weather"],
    rubrics={"score1_description": "bad"},
    metadata={"source": "test"},
    id="w1",
)


def test_turn_style_case_converts() -> None:
    sample = from_deepeval(CASE)
    kinds = [type(m) for m in sample.user_input]
    assert kinds == [
        HumanMessage,
        AIMessage,
        ToolMessage,
        ToolMessage,
        AIMessage,
        HumanMessage,
        AIMessage,
    ]
    assert sample.predicted_tool_calls() == [
        ToolCall(name="lookup_order", args={"order_id": 7}),
        ToolCall(name="refund", args={"order_id": 7}),
    ]
    assert [m.content for m in sample.user_input[2:5]] == [
        '{"status": "paid", "total": 12.5}',
        "ok",
        "Order 7 is refunded.",
    ]
    assert sample.user_input[2].metadata == {
        "deepeval_tool_output": {"status": "paid", "total": 12.5}
    }
    assert sample.user_input[1].metadata == {
        "deepeval_turn": {"retrieval_context": ["Refunds within 30 days."]},
        "deepeval_tools": [{"description": "Finds an order"}, {"reasoning": "The order was paid."}],
    }
    assert sample.id == "refund-7" and sample.reference == "The order is refunded."
    assert sample.expected_outcome == "The order is refunded."
    assert sample.scenario == "A customer asks for a refund."
    assert sample.chatbot_role == "a support agent" and sample.metadata is None


def _field_variants() -> list[MultiTurnSample]:
    """The case fields set, with each combination of `reference` and `expected_outcome`."""
    base = MultiTurnSample(
        user_input=[HumanMessage(content="hi"), AIMessage(content="hello")],
        user_description="A new customer.",
        context=["Opening hours: 9-17."],
        available_tools=[{"name": "lookup", "parameters": {"type": "object", "properties": {}}}],
        metadata={"comments": "kept"},
    )
    return [
        base,
        base.model_copy(update={"reference": "Greets."}),
        base.model_copy(update={"expected_outcome": "Greets."}),
        base.model_copy(update={"reference": "Greets.", "expected_outcome": "Says hello."}),
    ]


def test_case_fields_and_references_survive_both_ways() -> None:
    """`expected_outcome` is also the reference; a differing one, tools and the rest are hints."""
    for sample in _field_variants():
        case = to_deepeval_dict(sample)
        assert case["user_description"] == "A new customer."
        assert case["context"] == ["Opening hours: 9-17."]
        assert case.get("expected_outcome") == (sample.expected_outcome or sample.reference)
        assert from_deepeval(json.loads(json.dumps(case))) == sample


def test_turn_style_case_round_trips_exactly() -> None:
    assert to_deepeval_dict(from_deepeval(copy.deepcopy(CASE))) == CASE


def test_a_call_without_parameters_keeps_none() -> None:
    """DeepEval's `input_parameters` may be absent (None), which is not `{}`."""
    case = {
        "turns": [
            {"role": "user", "content": "Time?"},
            {"role": "assistant", "content": "Noon.", "tools_called": [{"name": "now"}]},
        ]
    }
    sample = from_deepeval(copy.deepcopy(case))
    assert sample.predicted_tool_calls() == [ToolCall(name="now", args={})]
    assert to_deepeval_dict(sample) == case


def test_llm_test_case_turns_convert() -> None:
    case = {
        "turns": [
            {
                "input": "What's 2+2?",
                "actual_output": "4",
                "expected_output": "4",
                "tools_called": [
                    {"name": "calc", "input_parameters": {"expr": "2+2"}, "output": 4}
                ],
                "context": ["math"],
            },
            {"input": "Bye", "actual_output": "Goodbye"},
            {"input": "Still there?"},
        ]
    }
    sample = from_deepeval(case)
    assert [m.type for m in sample.user_input] == [
        "human",
        "ai",
        "tool",
        "ai",
        "human",
        "ai",
        "human",
    ]
    assert sample.user_input[0].metadata == {
        "deepeval_turn": {"expected_output": "4", "context": ["math"]}
    }
    assert sample.user_input[2].content == "4"
    assert sample.predicted_tool_calls() == [ToolCall(name="calc", args={"expr": "2+2"})]
    # Written as Turns: an exchange's fields that a Turn has no place for ride in the hints.
    written = to_deepeval_dict(sample)
    assert written["turns"][0] == {
        "role": "user",
        "content": "What's 2+2?",
        "additional_metadata": {
            "convoeval": {"turn": {"expected_output": "4", "context": ["math"]}}
        },
    }
    assert from_deepeval(json.loads(json.dumps(written))) == sample


def test_duck_typed_deepeval_objects() -> None:
    class ToolCallLike(BaseModel):  # the fields of deepeval.test_case.ToolCall
        name: str
        description: str | None = None
        reasoning: str | None = None
        output: Any = None
        input_parameters: dict[str, Any] | None = None

    class TurnLike(BaseModel):  # the fields of deepeval.test_case.Turn
        role: Literal["user", "assistant"]
        content: str
        user_id: str | None = None
        retrieval_context: list[str] | None = None
        tools_called: list[ToolCallLike] | None = None
        additional_metadata: dict[str, Any] | None = None

    class CaseLike(BaseModel):  # the fields of deepeval.test_case.ConversationalTestCase
        turns: list[TurnLike]
        scenario: str | None = None
        expected_outcome: str | None = None
        chatbot_role: str | None = None
        name: str | None = None
        additional_metadata: dict[str, Any] | None = None

    assert from_deepeval(CaseLike.model_validate(CASE)) == from_deepeval(CASE)


def test_any_sample_survives_deepeval_layout() -> None:
    sample = ANY_SAMPLE
    case = to_deepeval_dict(sample)
    assert [t["role"] for t in case["turns"]] == ["user", "assistant"]
    assistant = case["turns"][1]
    assert assistant["content"] == "Oslo snow, Rome rain: take an umbrella."
    assert [
        (t["name"], t["input_parameters"], t.get("output")) for t in assistant["tools_called"]
    ] == [
        ("weather", {"city": "Oslo"}, "snow"),
        ("weather", {"city": "Rome"}, "rain"),
        ("advice", {}, "umbrella"),
    ]
    assert from_deepeval(json.loads(json.dumps(case))) == sample


def test_tau_bench_runs_survive_deepeval_layout() -> None:
    """200 real runs: every tool call shows up in DeepEval's tools_called, and comes back."""
    runs = json.loads(shared_file(TAU_BENCH).read_text(encoding="utf-8"))
    total = 0
    for run in runs:
        sample = from_openai_messages(run["traj"], id=str(run["task_id"]))
        case = to_deepeval_dict(sample)
        shown = [t for turn in case["turns"] for t in turn.get("tools_called", [])]
        calls = sample.predicted_tool_calls()
        assert [(t["name"], t["input_parameters"]) for t in shown] == [
            (c.name, c.args) for c in calls
        ]
        assert from_deepeval(case) == sample
        total += len(calls)
    assert total > 1000
    print(f"tau-bench via DeepEval layout: {len(runs)} runs, {total} tool calls")


def test_errors_name_the_turn_and_why() -> None:
    bad = {
        "turns": [
            {"role": "user", "content": "hi", "tools_called": [{"name": "f"}]},
            {"role": "robot", "content": "x"},
            {"role": "assistant", "content": 3},
            {"role": "assistant", "content": "", "tools_called": [{"input_parameters": {}}]},
            {
                "role": "assistant",
                "content": "",
                "tools_called": [{"name": "f", "input_parameters": [1]}],
            },
            {"foo": "bar"},
        ]
    }
    with pytest.raises(ConversionError) as caught:
        from_deepeval(bad)
    assert caught.value.problems == [
        "turns[0].tools_called: a user turn cannot call tools",
        "turns[1].role: must be 'user' or 'assistant', got 'robot'",
        "turns[2].content: must be a string, got a number",
        "turns[3].tools_called[0].name: a tool call needs a string 'name'",
        "turns[4].tools_called[0].input_parameters: must be an object, got a list",
        "turns[5]: expected a Turn with 'role' and 'content', or an LLMTestCase with 'input'",
    ]
    with pytest.raises(ConversionError, match=r"^turns: is empty"):
        from_deepeval({"turns": []})
    with pytest.raises(ConversionError, match=r"^case: must be a ConversationalTestCase"):
        from_deepeval({"messages": []})


def _deepeval() -> Any:
    return peer("deepeval.test_case", "deepeval is not installed (optional, heavy)")


def test_real_deepeval_objects() -> None:
    """DeepEval's defaults (`flaky`, `multimodal`, `voice`, a tool's `type`) are no data."""
    test_case = _deepeval()
    theirs = test_case.ConversationalTestCase(**to_deepeval_dict(from_deepeval(CASE)))
    assert from_deepeval(theirs) == from_deepeval(CASE)
    assert to_deepeval_dict(from_deepeval(theirs)) == CASE


def test_any_sample_survives_real_deepeval_objects() -> None:
    """The hints ride in `additional_metadata`, which DeepEval 4 renames `metadata`."""
    test_case = _deepeval()
    for sample in [ANY_SAMPLE, *_field_variants()]:
        theirs = test_case.ConversationalTestCase(**to_deepeval_dict(sample))
        assert from_deepeval(theirs) == sample


def test_real_objects_with_every_field_convert_as_their_dicts() -> None:
    test_case = _deepeval()
    tool = {
        "name": "refund",
        "description": "Refunds an order",
        "reasoning": "It was paid.",
        "output": {"ok": True},
        "input_parameters": {"order_id": 7},
    }
    case: dict[str, Any] = {
        "turns": [
            {
                "role": "user",
                "content": "Refund order 7.",
                "user_id": "u-1",
                "latency_ms": 12.5,
                "interrupted": True,
                "provider_transcript": "refund order seven",
                "metadata": {"channel": "voice"},
            },
            {
                "role": "assistant",
                "content": "Done.",
                "retrieval_context": ["Refunds within 30 days."],
                "tools_called": [tool, {"name": "notify"}],
                "metadata": {"model": "m1"},
            },
        ],
        "scenario": "A refund.",
        "context": ["Shop policy."],
        "name": "case-1",
        "user_description": "A regular customer.",
        "expected_outcome": "Refunded.",
        "chatbot_role": "support agent",
        "metadata": {"team": "a"},
        "comments": "checked by hand",
        "tags": ["refunds"],
        "flaky": True,
        "expected_labels": {"tone": "polite"},
        "multimodal": True,
    }
    theirs = test_case.ConversationalTestCase(
        **{k: v for k, v in case.items() if k != "turns"},
        turns=[
            test_case.Turn(
                **{k: v for k, v in turn.items() if k != "tools_called"},
                tools_called=[test_case.ToolCall(**t) for t in turn.get("tools_called", [])]
                or None,
            )
            for turn in case["turns"]
        ],
    )
    sample = from_deepeval(theirs)
    assert sample == from_deepeval(case)
    assert sample.metadata is not None and sample.metadata["deepeval_case"]["flaky"] is True
    back = test_case.ConversationalTestCase(**to_deepeval_dict(sample))
    assert back.model_dump() == theirs.model_dump()


def test_real_llm_test_case_turns_convert_as_their_dicts() -> None:
    test_case = _deepeval()
    exchange: dict[str, Any] = {
        "input": "What's 2+2?",
        "actual_output": "4",
        "expected_output": "4",
        "context": ["math"],
        "retrieval_context": ["2+2=4"],
        "tools_called": [{"name": "calc", "input_parameters": {"expr": "2+2"}, "output": 4}],
        "expected_tools": [{"name": "calc", "input_parameters": {"expr": "2+2"}}],
        "token_cost": 0.5,
        "completion_time": 1.5,
    }
    objects = {
        **exchange,
        "tools_called": [test_case.ToolCall(**t) for t in exchange["tools_called"]],
        "expected_tools": [test_case.ToolCall(**t) for t in exchange["expected_tools"]],
    }
    turns = [test_case.LLMTestCase(**objects), test_case.LLMTestCase(input="Bye")]
    sample = from_deepeval({"turns": turns})
    assert sample == from_deepeval({"turns": [exchange, {"input": "Bye"}]})
    assert sample.user_input[0].metadata == {
        "deepeval_turn": {
            k: v for k, v in exchange.items() if k not in ("input", "actual_output", "tools_called")
        }
    }
    theirs = test_case.ConversationalTestCase(**to_deepeval_dict(sample))
    assert from_deepeval(theirs) == sample  # DeepEval's Turn has no `expected_output`, ...


def test_deepeval_habits_take_real_deepeval_objects() -> None:
    """`evaluate(test_cases=[ConversationalTestCase(...)])` reads DeepEval's own objects."""
    test_case = _deepeval()
    case = test_case.ConversationalTestCase(
        turns=[
            test_case.Turn(role="user", content="Hi there"),
            test_case.Turn(role="assistant", content="Hello! How can I help?"),
        ],
        scenario="A greeting.",
        expected_outcome="The user is greeted.",
    )
    result = evaluate(
        test_cases=[case],
        metrics=["topic_adherence"],
        reference_topics=["greetings"],
        show_progress=False,
    )
    row = next(iter(result.rows()))
    assert row["errors"] == {} and "topic_adherence" in row["scores"]
    assert row["sample"]["scenario"] == "A greeting."
    assert row["sample"]["reference"] == "The user is greeted."
