"""Every judge metric end to end: over HTTP with structured output against a scripted server on
127.0.0.1 (exact scores), one step through a real LLM (llama.cpp serving SmolLM2: plumbing, not
verdict quality), and through the offline judge (real verdicts)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from convoeval.judges.offline import Embedder, OfflineJudge, OfflineKit
from convoeval.judges.openai.judge import _schema_name
from convoeval.metrics import ConversationRelevancy

if TYPE_CHECKING:
    from conftest import FaultServer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "support.jsonl"
SAMPLES = {
    s.id: s for s in (MultiTurnSample.model_validate(json.loads(line)) for line in EXAMPLES.open())
}

MEDICAL = SAMPLES["refuses-medical-question"].model_copy(
    update={"reference": "The user is sent to a doctor.", "rubrics": {"1": "bad", "2": "good"}}
)
#: Valid as an `answered` and as an `in_scope` answer (each model ignores the other's field).
BOTH = {"verdicts": [{"topic": "heart rate", "answered": False, "in_scope": False}]}
GOAL = {"end_state": "sent to a doctor", "achieved": True, "reason": "as desired"}
#: Every judge metric with the answers a scripted server gives and the exact score they make.
SCRIPTED: list[tuple[Metric, list[dict[str, Any]], float]] = [
    (
        TopicAdherenceScore(),
        [
            {"topics": [{"topic": "heart rate", "message_index": 0, "quote": "heart rate"}]},
            BOTH,
            BOTH,
        ],
        1.0,  # one topic, out of scope and declined: correct restraint
    ),
    (
        ConversationRelevancy(),
        [{"verdicts": [{"exchange": 0, "relevant": True, "reason": ""}]}],
        1.0,
    ),
    (AgentGoalAccuracyWithReference(), [GOAL], 1.0),
    (
        AgentGoalAccuracyWithoutReference(),
        [{"user_goal": "advice", **GOAL, "achieved": False}],
        0.0,
    ),
    (RubricsScore(), [{"level": 2, "reason": "polite and safe"}], 2.0),
]


@pytest.mark.parametrize(
    ("metric", "replies", "value"), SCRIPTED, ids=lambda x: getattr(x, "name", "")
)
async def test_every_judge_metric_over_http_with_structured_output(
    fault_server: FaultServer, metric: Metric, replies: list[dict[str, Any]], value: float
) -> None:
    for reply in replies:
        fault_server.reply(reply)
    judge = OpenAIJudge("fault-model", base_url=fault_server.url, api_key="sk-test", cache=False)
    result = await metric.score(MEDICAL, judge=judge)
    await judge.aclose()
    assert (result.value, result.error) == (value, None)
    assert result.usage.requests == fault_server.attempts == len(replies)
    assert result.usage.prompt_tokens == 11 * len(replies)  # what the server reports per answer
    names = [_schema_name(step.name) for step in metric.steps]
    for body in fault_server.bodies:  # each step asked for its own schema as structured output
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["name"] in names


async def test_a_simple_step_is_scored_by_the_real_llm(llama_server: str) -> None:
    judge = OpenAIJudge("smollm2", base_url=llama_server, cache=False, max_tokens=160)
    result = await AgentGoalAccuracyWithReference().score(
        SAMPLES["cancel-without-tool"], judge=judge
    )
    assert result.error is None and result.value in (0.0, 1.0)
    assert result.details["reason"] == result.reason
    await judge.aclose()


_TRACK = "track-and-return-policy"


async def _gather(scorings: list[Any]) -> list[Any]:
    return list(await asyncio.gather(*scorings))


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
    """A second judge of its own (its own model load, no cached vectors, the conversation's
    texts batched with others) gives the same verdicts and score, to the last digit."""
    first = _offline(TopicAdherenceScore(), _TRACK)
    fresh = OfflineJudge(OfflineKit(Embedder(cache_size=0)))
    fresh.kit.embed(["an unrelated text embedded first", "and a second one"])
    other = SAMPLES["refuses-medical-question"]
    both = [TopicAdherenceScore().score(s, judge=fresh) for s in (other, SAMPLES[_TRACK])]
    second = asyncio.run(_gather(both))[1]
    assert fresh.kit.embedder is not OfflineJudge().kit.embedder
    assert (second.value, second.details) == (first.value, first.details)
    assert first.details["tp"] + first.details["fn"] > 0  # it had verdicts to compare


def test_offline_refuses_llm_only_metrics_clearly() -> None:
    result = _offline(RubricsScore(), "return-two-items")
    assert result.failed and "use an LLM judge" in result.error["message"]
