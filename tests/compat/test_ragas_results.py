"""Ragas habits on results: `ascore` / `score(**fields)` / `multi_turn_ascore` give a float that
also carries `.value`, `.reason` and the failure state (issue 34 §1), as Ragas's collections
`MetricResult` is printed in its documentation; our own `await metric.score(sample)` still gives
a `MetricResult`."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from convoeval import AIMessage, HumanMessage, MultiTurnSample, ToolCall
from convoeval.metrics import MetricResult, ScoreResult, ToolCallAccuracy, ToolCallF1

CALLS = [ToolCall(name="weather", args={"city": "Paris"}), ToolCall(name="news", args={})]
CONVERSATION = [
    HumanMessage(content="Weather and news?"),
    AIMessage(content="", tool_calls=[CALLS[0]]),
]


def test_ascore_with_keywords_gives_a_float_that_has_value_and_reason() -> None:
    """Ported from the Ragas collections ToolCallAccuracy example: `result.value` printed."""
    result = asyncio.run(
        ToolCallAccuracy().ascore(user_input=CONVERSATION, reference_tool_calls=CALLS)
    )
    assert isinstance(result, float) and isinstance(result, ScoreResult)
    assert result.value == 0.5 == result and float(result) == 0.5
    assert isinstance(result.reason, str) and result.reason
    assert result + 0.5 == 1.0 and result < 0.6 and round(result, 1) == 0.5
    assert not result.failed and result.scored and result.error is None
    assert isinstance(result.result, MetricResult) and result.result.value == 0.5


def test_a_result_is_a_number_in_json() -> None:
    result = asyncio.run(ToolCallF1().ascore(user_input=CONVERSATION, reference_tool_calls=CALLS))
    assert json.loads(json.dumps({"f1": result})) == {"f1": pytest.approx(2 / 3)}
    assert json.dumps(result) == json.dumps(float(result))


def test_sync_score_with_keywords_is_ragas_score() -> None:
    result = ToolCallAccuracy().score(user_input=CONVERSATION, reference_tool_calls=CALLS)
    assert isinstance(result, ScoreResult) and result.value == 0.5


def test_own_score_contract_is_kept() -> None:
    sample = MultiTurnSample(user_input=CONVERSATION, reference_tool_calls=CALLS)
    result = asyncio.run(ToolCallAccuracy().score(sample))
    assert type(result) is MetricResult and result.value == 0.5


def test_legacy_multi_turn_ascore_carries_value_and_reason() -> None:
    sample = MultiTurnSample(user_input=CONVERSATION, reference_tool_calls=CALLS)
    result = asyncio.run(ToolCallAccuracy().multi_turn_ascore(sample))
    assert isinstance(result, ScoreResult) and result.value == 0.5 and result.reason
    sync = ToolCallAccuracy().multi_turn_score(sample)
    assert isinstance(sync, ScoreResult) and sync == 0.5


def test_a_score_result_rejects_a_result_without_a_number() -> None:
    with pytest.raises(ValueError, match="no number"):
        ScoreResult.of(MetricResult.unscored("nothing to judge"))
    assert math.isclose(ScoreResult.of(MetricResult(0.25, "r")), 0.25)
    assert repr(ScoreResult.of(MetricResult(0.25, "r"))) == "0.25"
