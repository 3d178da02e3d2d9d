"""ToolUseMetric on scripted verdicts: one judge call per conversation, verdicts keyed by call
number (a missing one is re-asked), scores from tool selection and arguments, DeepEval habits."""

from __future__ import annotations

from typing import Any

import pytest

from convoeval import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolMessage
from convoeval.judges.fake import FakeJudge
from convoeval.metrics import ToolUse, ToolUseMetric, as_metric, get_metric
from convoeval.metrics.tool_use import VERDICTS

TOOLS = [
    {"name": "get_weather", "description": "Weather for a city", "parameters": {"type": "object"}},
    {"name": "book_table", "description": "Book a restaurant table"},
]


def weather(city: str) -> ToolCall:
    return ToolCall(name="get_weather", args={"city": city})


def conversation(tools: list[Any] | None = TOOLS) -> MultiTurnSample:
    return MultiTurnSample(
        user_input=[
            HumanMessage(content="Weather in Paris, then book a table for 2"),
            AIMessage(content="", tool_calls=[ToolCall(name="get_weather", args={"city": "Pari"})]),
            ToolMessage(content="sunny"),
            AIMessage(
                content="", tool_calls=[ToolCall(name="get_weather", args={"city": "Paris"})]
            ),
            ToolMessage(content="sunny"),
            AIMessage(content="Sunny. Booked!"),
        ],
        available_tools=tools,
    )


def verdict(call: int, tool: bool = True, args: bool = True, reason: str = "") -> dict[str, Any]:
    return {"call": call, "right_tool": tool, "right_arguments": args, "reason": reason}


def missing(tool: str = "book_table") -> dict[str, Any]:
    return {"after_message": 4, "tool": tool, "reason": "the user asked to book"}


@pytest.mark.parametrize(
    ("answer", "value", "selection", "arguments"),
    [
        ({"verdicts": [verdict(0), verdict(1)], "missing": []}, 1.0, 1.0, 1.0),
        ({"verdicts": [verdict(0, args=False), verdict(1)], "missing": []}, 0.5, 1.0, 0.5),
        ({"verdicts": [verdict(0), verdict(1)], "missing": [missing()]}, 2 / 3, 2 / 3, 1.0),
        ({"verdicts": [verdict(0, tool=False), verdict(1)], "missing": []}, 0.5, 0.5, 1.0),
        ({"verdicts": [verdict(0, tool=False), verdict(1, False)], "missing": []}, 0.0, 0.0, 1.0),
    ],
)
def test_scores(answer: dict[str, Any], value: float, selection: float, arguments: float) -> None:
    judge = FakeJudge({VERDICTS.name: [answer]})
    result = ToolUse().score_sync(conversation(), judge=judge)
    assert result.value == pytest.approx(value)
    assert result.details["tool_selection"] == pytest.approx(selection)
    assert result.details["argument_correctness"] == pytest.approx(arguments)
    assert len(judge.calls) == 1


def test_prompt_lists_tools_and_calls_and_reason_names_problems() -> None:
    answer = {
        "verdicts": [verdict(0, args=False, reason="city misspelt"), verdict(1)],
        "missing": [missing()],
    }
    judge = FakeJudge({VERDICTS.name: [answer]})
    result = ToolUse().score_sync(conversation(), judge=judge)
    (call,) = judge.calls
    assert '- "get_weather": "Weather for a city", arguments {"type": "object"}' in call.prompt
    assert '- call 0: "get_weather" in message 1' in call.prompt
    assert '- call 1: "get_weather" in message 3' in call.prompt
    assert call.inputs.calls == [0, 1]
    assert result.reason == (
        "2 of 2 calls used a right tool. Wrong arguments: call 1: city misspelt. "
        "Missing: book_table after message 5: the user asked to book."
    )


def test_a_missing_verdict_is_reasked_not_padded() -> None:
    judge = FakeJudge(
        {
            VERDICTS.name: [
                {"verdicts": [verdict(0)], "missing": []},
                {"verdicts": [verdict(0), verdict(1, args=False)], "missing": []},
            ]
        }
    )
    result = ToolUse().score_sync(conversation(), judge=judge)
    assert result.value == 0.5
    assert len(judge.calls) == 2
    assert "missing verdicts for [1]" in (judge.calls[1].reask or "")


def test_no_call_and_none_missing_scores_one_and_tools_fall_back() -> None:
    sample = MultiTurnSample(user_input=[HumanMessage(content="hi"), AIMessage(content="hello")])
    judge = FakeJudge({VERDICTS.name: [{"verdicts": [], "missing": []}]})
    result = ToolUse(available_tools=TOOLS).score_sync(sample, judge=judge)
    assert result.value == 1.0
    assert "(none: the agent made no tool call)" in judge.calls[0].prompt
    assert '"book_table"' in judge.calls[0].prompt  # the metric's own list, the sample has none
    assert ToolUse().config()["available_tools"] == []


def test_deepeval_facade_and_registry() -> None:
    judge = FakeJudge({VERDICTS.name: [{"verdicts": [verdict(0), verdict(1)], "missing": []}]})
    metric = ToolUseMetric(available_tools=TOOLS, threshold=0.7, model=judge)
    assert metric.measure(conversation(tools=None)) == 1.0
    assert metric.is_successful() and metric.score == 1.0
    assert len(metric.verdicts) == 2
    assert isinstance(as_metric(metric), ToolUse)
    assert get_metric("ToolUseMetric").name == "tool_use"
    assert ToolUse.needs_llm and ToolUse.uses_judge


def test_offline_judge_refuses_with_a_clear_message() -> None:
    result = ToolUse().score_sync(conversation(), judge="offline")
    assert result.error is not None and result.error["type"] == "StepUnsupported"
    assert "use an LLM judge" in result.error["message"]
