"""DeepEval's `ToolCall(name=, input_parameters=, output=, description=, reasoning=)` (issue 34
§2): accepted on input, kept losslessly, shown back the way it was written."""

from __future__ import annotations

import json

import pytest

from convoeval import ConversationalTestCase, ToolCall, Turn


def test_deepeval_field_names_are_accepted_and_kept() -> None:
    """Ported from DeepEval's agent examples: a turn whose tools_called use input_parameters."""
    call = ToolCall(
        name="WebSearch",
        description="Searches the web",
        reasoning="the user asked for news",
        input_parameters={"query": "today's news"},
        output=["headline"],
    )
    assert call.args == {"query": "today's news"} == call.input_parameters
    assert call.output == ["headline"] and call.reasoning == "the user asked for news"
    dumped = call.model_dump()
    assert dumped["input_parameters"] == {"query": "today's news"} and "args" not in dumped
    assert ToolCall.model_validate(json.loads(call.model_dump_json())) == call
    case = ConversationalTestCase(
        turns=[
            Turn(role="user", content="news?"),
            Turn(role="assistant", content="", tools_called=[call]),
        ]
    )
    assert case.to_sample().user_input[1].tool_calls == [call]  # type: ignore[union-attr]


def test_ragas_names_are_shown_back_as_ragas_names() -> None:
    call = ToolCall(name="weather", args={"city": "Paris"})
    assert call.model_dump() == {"name": "weather", "args": {"city": "Paris"}, "id": None}


def test_both_spellings_at_once_are_refused() -> None:
    with pytest.raises(ValueError, match="input_parameters"):
        ToolCall(name="x", args={"a": 1}, input_parameters={"a": 2})  # type: ignore[call-arg]
