"""`convoeval.testing.assert_conversation`: gating one conversation in a user's test suite."""

from __future__ import annotations

from typing import Any

import pytest

from convoeval import (
    AIMessage,
    ConversationalTestCase,
    ConversationRelevancyMetric,
    HumanMessage,
    ModelTestCase,
    MultiTurnSample,
    ToolCall,
    ToolCallAccuracy,
    TopicAdherenceScore,
)
from convoeval.judges import FakeJudge, JudgeError
from convoeval.metrics import MissingFieldsError
from convoeval.metrics.conversation_relevancy import VERDICTS
from convoeval.runner import OfflineJudgeError
from convoeval.testing import assert_conversation


def _sample(arg: int, topics: list[str] | None = None) -> MultiTurnSample:
    return MultiTurnSample(
        user_input=[
            HumanMessage(content="book a table"),
            AIMessage(content="", tool_calls=[ToolCall(name="book", args={"people": arg})]),
            AIMessage(content="booked"),
        ],
        reference_tool_calls=[ToolCall(name="book", args={"people": 2})],
        reference_topics=topics,
        id="booking",
    )


def _verdicts(relevant: bool) -> Any:
    def answer(inputs: Any) -> dict[str, Any]:
        return {
            "verdicts": [
                {"exchange": i, "relevant": relevant, "reason": "" if relevant else "ignored it"}
                for i, _ in inputs["windows"]
            ]
        }

    return answer


def test_passing_conversation_returns_the_results() -> None:
    results = assert_conversation(_sample(2), [ToolCallAccuracy(), "tool_call_f1"])
    assert {name: r.value for name, r in results.items()} == {
        "tool_call_accuracy": 1.0,
        "tool_call_f1": 1.0,
    }


def test_failure_lists_every_failing_metric_with_score_threshold_and_reason() -> None:
    judge = FakeJudge({VERDICTS.name: _verdicts(False)})
    with pytest.raises(AssertionError) as caught:
        assert_conversation(
            _sample(3, topics=[]),
            [ToolCallAccuracy(), ConversationRelevancyMetric(), TopicAdherenceScore()],
            judge,
        )
    text = str(caught.value)
    assert text.startswith("conversation 'booking' failed 3 of 3 metrics:")
    assert "tool_call_accuracy: score 0 < threshold 1; reason:" in text
    assert "wrong value for people" in text
    assert "conversation_relevancy: score 0 < threshold 0.5; reason: 0 of 1 replies" in text
    assert "ignored it" in text
    assert "topic_adherence: not scored (reference_topics is empty" in text


def test_failed_metric_counts_as_failing_and_case_input_works() -> None:
    case = ConversationalTestCase(turns=[ModelTestCase(input="hi", actual_output="hello")])
    judge = FakeJudge({VERDICTS.name: [JudgeError(VERDICTS.name, "judge down")]})
    with pytest.raises(
        AssertionError, match=r"conversation_relevancy: failed \(JudgeError: .*judge down"
    ):
        assert_conversation(case, ConversationRelevancyMetric(), judge)
    ok = FakeJudge({VERDICTS.name: _verdicts(True)})
    assert assert_conversation(case, "conversation_relevancy", ok)["conversation_relevancy"].value


def test_thresholds_by_name_and_up_front_errors() -> None:
    assert_conversation(_sample(3), ["tool_call_f1"], thresholds={"tool_call_f1": 0.0})
    with pytest.raises(MissingFieldsError, match="reference_topics"):
        assert_conversation(_sample(2), [TopicAdherenceScore()], FakeJudge({}))
    with pytest.raises(OfflineJudgeError, match="--judge openai/MODEL"):
        assert_conversation(_sample(2), ["agent_goal_accuracy"])
