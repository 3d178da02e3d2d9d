"""Every judge metric end to end: through a real LLM over HTTP (llama.cpp serving SmolLM2 on
127.0.0.1: plumbing, not verdict quality) and through the offline judge (real verdicts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from convoeval import (
    AgentGoalAccuracyWithoutReference,
    AgentGoalAccuracyWithReference,
    Metric,
    MultiTurnSample,
    RubricsScore,
    TopicAdherenceScore,
)
from convoeval.judges import OpenAIJudge
from convoeval.judges.retry import RetryPolicy
from convoeval.metrics import ConversationRelevancy

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "support.jsonl"
SAMPLES = {
    s.id: s for s in (MultiTurnSample.model_validate(json.loads(line)) for line in EXAMPLES.open())
}

LLM_METRICS: list[Metric] = [
    TopicAdherenceScore(),
    ConversationRelevancy(),
    AgentGoalAccuracyWithReference(),
    AgentGoalAccuracyWithoutReference(),
    RubricsScore(),
]


@pytest.mark.parametrize("metric", LLM_METRICS, ids=lambda m: m.name)
async def test_judge_metrics_through_a_real_llm_server(llama_server: str, metric: Metric) -> None:
    judge = OpenAIJudge(
        "smollm2",
        base_url=llama_server,
        cache=False,
        max_tokens=160,
        retry=RetryPolicy(max_retries=1, base_delay_s=0.05, max_total_s=90),
        timeout=90,
    )
    sample = SAMPLES["refuses-medical-question"].model_copy(
        update={"reference": "The user is sent to a doctor.", "rubrics": {"1": "bad", "2": "good"}}
    )
    result = await metric.score(sample, judge=judge)
    assert result.usage.requests >= 1
    if result.failed:
        # A 135M model may not follow the keyed-verdict rules: that must end in a clean,
        # recorded failure that names the step, never in a crash or a made-up score.
        assert result.value is None
        assert result.error is not None and "step '" in result.error["message"]
    else:
        assert result.value is not None and result.usage.prompt_tokens > 0
        low, high = (1.0, 5.0) if isinstance(metric, RubricsScore) else (0.0, 1.0)
        assert low <= result.value <= high
    await judge.aclose()


async def test_a_simple_step_is_scored_by_the_real_llm(llama_server: str) -> None:
    judge = OpenAIJudge("smollm2", base_url=llama_server, cache=False, max_tokens=160)
    result = await AgentGoalAccuracyWithReference().score(
        SAMPLES["cancel-without-tool"], judge=judge
    )
    assert result.error is None and result.value in (0.0, 1.0)
    assert result.details["reason"] == result.reason
    await judge.aclose()


def _offline(metric: Metric, sample_id: str) -> Any:
    return metric.score_sync(SAMPLES[sample_id], judge="offline")


def test_offline_topic_adherence_counts_a_correct_refusal_as_restraint() -> None:
    result = _offline(TopicAdherenceScore(), "refuses-medical-question")
    assert result.value == 1.0
    assert result.details["tn"] == 1 and result.details["tp"] == 0
    assert result.usage.requests == 0


def test_offline_topic_adherence_catches_an_answered_off_topic_request() -> None:
    result = _offline(TopicAdherenceScore(mode="precision"), "answers-off-topic-recipe")
    assert result.details["fp"] >= 1
    assert result.value is not None and result.value < 1.0


def test_offline_relevancy_flags_the_irrelevant_reply() -> None:
    result = _offline(ConversationRelevancy(), "irrelevant-warranty-reply")
    assert [v["relevant"] for v in result.details["verdicts"]] == [False, True]
    assert result.value == 0.5


def test_offline_relevancy_passes_on_topic_replies() -> None:
    result = _offline(ConversationRelevancy(), "order-status")
    assert result.value == 1.0


def test_offline_judge_is_deterministic() -> None:
    first = _offline(TopicAdherenceScore(), "track-and-return-policy")
    second = _offline(TopicAdherenceScore(), "track-and-return-policy")
    assert first.details == second.details


def test_offline_refuses_llm_only_metrics_clearly() -> None:
    result = _offline(RubricsScore(), "return-two-items")
    assert result.failed and "use an LLM judge" in result.error["message"]
