"""DeepEval's metric habits (issue 34 §2), ported from DeepEval's documented usage with the
imports switched: TopicAdherenceMetric(relevant_topics=), GoalAccuracyMetric, assert_test,
TurnParams/MultiTurnParams for ConversationalGEval, the config objects evaluate() takes, and
measure()/a_measure() on every DeepEval-named metric. Judged offline or by the local fake
server (real sockets)."""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING

import pytest

import convoeval
from convoeval import (
    AsyncConfig,
    CacheConfig,
    ConversationalGEval,
    ConversationalTestCase,
    DisplayConfig,
    ErrorConfig,
    GoalAccuracyMetric,
    MultiTurnParams,
    MultiTurnSample,
    TopicAdherenceMetric,
    Turn,
    TurnParams,
    UsageError,
    assert_test,
    evaluate,
)
from convoeval.judges import OpenAIJudge
from convoeval.metrics._facade import DeepEvalFacade
from convoeval.runner._evaluate import RunOptions
from convoeval.runner._options import check_options

if TYPE_CHECKING:
    from conftest import FaultServer

GOAL = {"user_goal": "a refund", "end_state": "refund promised", "achieved": True, "reason": "ok"}
MISSED = {**GOAL, "achieved": False, "reason": "the refund was never promised"}


def _case() -> ConversationalTestCase:
    return ConversationalTestCase(
        turns=[
            Turn(role="user", content="Can I get a refund for order A1?"),
            Turn(role="assistant", content="Yes, your refund for order A1 is on its way."),
        ]
    )


def _judge(server: FaultServer) -> OpenAIJudge:
    return OpenAIJudge("fault-model", base_url=server.url, api_key="sk-test", cache=False)


def test_topic_adherence_takes_the_relevant_topics_on_the_metric() -> None:
    metric = TopicAdherenceMetric(relevant_topics=["refunds", "orders"], model="offline")
    score = metric.measure(_case())
    assert score is not None and metric.score == score and metric.reason
    assert metric.relevant_topics == ["refunds", "orders"] and metric.name == "topic_adherence"
    # evaluate() runs the core, which carries the topics into every case
    result = evaluate(test_cases=[_case()], metrics=[metric], judge="offline")
    assert result["topic_adherence"] == [score]


def test_topic_adherence_refuses_no_topics() -> None:
    with pytest.raises(ValueError, match="relevant_topics is empty"):
        TopicAdherenceMetric(relevant_topics=[])
    with pytest.raises(ValueError, match="list of non-empty strings"):
        TopicAdherenceMetric(relevant_topics="refunds")


def test_goal_accuracy_measures_and_a_measures(fault_server: FaultServer) -> None:
    fault_server.reply(GOAL).reply(MISSED)
    metric = GoalAccuracyMetric(model=_judge(fault_server))
    assert metric.measure(_case()) == 1.0 and metric.success is True
    assert asyncio.run(metric.a_measure(_case())) == 0.0
    assert metric.success is False and metric.reason == "the refund was never promised"
    assert metric.threshold == 0.5 and metric.name == "agent_goal_accuracy"


def test_assert_test_lists_the_failing_metrics_with_scores_and_reasons(
    fault_server: FaultServer,
) -> None:
    fault_server.reply(MISSED)
    goal = GoalAccuracyMetric(model=_judge(fault_server))
    topics = TopicAdherenceMetric(relevant_topics=["refunds"], model="offline", threshold=0.0)
    with pytest.raises(AssertionError) as failed:
        assert_test(_case(), [goal, topics])
    text = str(failed.value)
    assert "failed 1 of 2 metrics" in text
    assert "agent_goal_accuracy: score 0 < threshold 0.5" in text
    assert "the refund was never promised" in text and "topic_adherence" not in text


def test_assert_test_passes_silently(fault_server: FaultServer) -> None:
    fault_server.reply(GOAL)
    assert assert_test(_case(), [GoalAccuracyMetric(model=_judge(fault_server))]) is None


def test_turn_params_and_multi_turn_params_name_evaluation_params() -> None:
    assert MultiTurnParams.CONTENT is TurnParams.CONTENT
    metric = ConversationalGEval(
        name="Professionalism",
        criteria="The assistant is professional.",
        evaluation_params=[
            TurnParams.CONTENT,
            MultiTurnParams.ROLE,
            TurnParams.SCENARIO,
            TurnParams.MCP_TOOLS,
        ],
    )
    assert metric.core.evaluation_params == ["content", "role", "scenario", "mcp_tools_called"]


def test_config_objects_map_onto_our_options() -> None:
    options = {
        "async_config": AsyncConfig(max_concurrent=3),
        "display_config": DisplayConfig(show_indicator=False),
        "error_config": ErrorConfig(ignore_errors=True, skip_on_missing_params=True),
        "cache_config": CacheConfig(use_cache=False, write_cache=False),
    }
    check_options(options, RunOptions.__annotations__)
    assert options == {
        "max_concurrency": 3,
        "show_progress": False,
        "raise_exceptions": False,
        "skip_invalid": True,
        "cache": False,
    }
    serial = {"async_config": AsyncConfig(run_async=False), "error_config": ErrorConfig()}
    check_options(serial, RunOptions.__annotations__)
    assert serial == {"max_concurrency": 1, "raise_exceptions": True, "skip_invalid": False}


def test_a_config_and_its_option_with_other_values_are_refused() -> None:
    with pytest.raises(UsageError, match="two spellings of one option"):
        evaluate(
            test_cases=[_case()],
            metrics=["turn_relevancy"],
            judge="offline",
            max_concurrency=2,
            async_config=AsyncConfig(max_concurrent=5),
        )


def test_error_config_skip_on_missing_params_skips_cases_a_metric_cannot_score() -> None:
    missing = MultiTurnSample.model_validate(
        {"user_input": [{"type": "human", "content": "hi"}, {"type": "ai", "content": "hey"}]}
    )
    good = missing.model_copy(update={"reference_topics": ["greetings"]})
    result = evaluate(
        [good, missing],
        metrics=["topic_adherence"],
        judge="offline",
        error_config=ErrorConfig(ignore_errors=True, skip_on_missing_params=True),
        display_config=DisplayConfig(show_indicator=False),
        cache_config=CacheConfig(),
    )
    assert len(result["topic_adherence"]) == 1 and result.meta["invalid"]


def test_every_deepeval_named_metric_has_measure_and_a_measure() -> None:
    facades = [
        getattr(convoeval, name)
        for name in convoeval.__all__
        if isinstance(getattr(convoeval, name), type)
        and issubclass(getattr(convoeval, name), DeepEvalFacade)
    ]
    assert {"TopicAdherenceMetric", "GoalAccuracyMetric", "TurnRelevancyMetric"} <= {
        f.__name__ for f in facades
    }
    for facade in facades:
        assert callable(facade.measure) and inspect.iscoroutinefunction(facade.a_measure)
