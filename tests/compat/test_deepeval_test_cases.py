"""DeepEval's `Turn` and `ConversationalTestCase` fields (issue 34 §2), ported from DeepEval's
documented multi-turn test cases with the imports switched to convoeval."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from convoeval import ConversationalTestCase, MultiTurnSample, ToolCall, Turn


def _case() -> ConversationalTestCase:
    return ConversationalTestCase(
        scenario="A user asks about a refund.",
        context=["Refunds take 5 days."],
        name="refund-1",
        user_description="A customer with an order id.",
        expected_outcome="The user learns the refund takes 5 days.",
        chatbot_role="A polite support agent.",
        additional_metadata={"team": "support"},
        comments="checked by hand",
        tags=["refunds", "smoke"],
        flaky=True,
        turns=[
            Turn(role="user", content="Where is my refund?", user_id="u-7"),
            Turn(
                role="assistant",
                content="It takes 5 days.",
                retrieval_context=["Refunds take 5 days."],
                tools_called=[ToolCall(name="lookup", input_parameters={"order": "A1"})],
                mcp_tools_called=[{"name": "orders", "args": {"id": "A1"}}],
                mcp_resources_called=[{"uri": "file:///policy"}],
                mcp_prompts_called=[{"name": "refund"}],
                additional_metadata={"latency_ms": 120},
            ),
        ],
    )


def test_every_deepeval_field_is_an_attribute_with_deepeval_name() -> None:
    case = _case()
    assert case.comments == "checked by hand" and case.tags == ["refunds", "smoke"]
    assert case.flaky is True and case.additional_metadata == {"team": "support"}
    turn = case.turns[1]
    assert isinstance(turn, Turn)
    assert turn.retrieval_context == ["Refunds take 5 days."]
    assert turn.mcp_prompts_called == [{"name": "refund"}]
    assert turn.additional_metadata == {"latency_ms": 120}
    assert case.turns[0].user_id == "u-7"  # type: ignore[union-attr]


def test_round_trip_through_multi_turn_sample_is_lossless() -> None:
    case = _case()
    sample = case.to_sample()
    assert isinstance(sample, MultiTurnSample)
    assert sample.reference == case.expected_outcome and sample.id == "refund-1"
    assert ConversationalTestCase.from_sample(sample) == case
    # through JSON too (the way results files keep it)
    again = MultiTurnSample.model_validate_json(sample.model_dump_json())
    assert ConversationalTestCase.from_sample(again) == case


def test_camel_case_aliases_are_accepted_on_input() -> None:
    case = ConversationalTestCase.model_validate(
        {
            "turns": [
                {"role": "user", "content": "hi", "userId": "u-1"},
                {
                    "role": "assistant",
                    "content": "hello",
                    "retrievalContext": ["greeting doc"],
                    "toolsCalled": [{"name": "t", "inputParameters": {}}],
                    "additionalMetadata": {"k": 1},
                },
            ],
            "userDescription": "a user",
            "expectedOutcome": "greeted",
            "chatbotRole": "greeter",
            "additionalMetadata": {"run": 2},
        }
    )
    assert case.user_description == "a user" and case.expected_outcome == "greeted"
    assert case.chatbot_role == "greeter" and case.additional_metadata == {"run": 2}
    turn = case.turns[1]
    assert isinstance(turn, Turn) and turn.retrieval_context == ["greeting doc"]
    assert turn.additional_metadata == {"k": 1} and turn.tools_called is not None
    assert case.turns[0].user_id == "u-1"  # type: ignore[union-attr]


def test_empty_turns_is_a_type_error_as_in_deepeval() -> None:
    with pytest.raises(TypeError, match="turns is empty: a conversation needs at least one turn"):
        ConversationalTestCase(turns=[])
    with pytest.raises(ValueError, match="turns is empty"):  # and still a ValueError
        ConversationalTestCase(turns=[])


def test_a_non_turn_object_is_a_type_error_that_says_where() -> None:
    with pytest.raises(TypeError, match=r"turns\[1\]: a str, not a Turn"):
        ConversationalTestCase(turns=[Turn(role="user", content="hi"), "hello"])  # type: ignore[list-item]


def test_wrong_field_type_is_still_a_precise_validation_error() -> None:
    with pytest.raises(ValidationError, match="tags"):
        ConversationalTestCase(turns=[Turn(role="user", content="hi")], tags="x")  # type: ignore[arg-type]


def test_the_migration_guide_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every `from convoeval` example in docs/migrating-from-deepeval.md runs as written
    (without OPENAI_API_KEY: nothing leaves this machine)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "migrating-from-deepeval.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    ours = [b for b in blocks if "from convoeval" in b]
    assert ours
    for block in ours:
        exec(compile(block, "migrating-from-deepeval.md", "exec"), {})
