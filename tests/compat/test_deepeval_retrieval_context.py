"""A DeepEval turn's `retrieval_context` reaches the judge as that turn's context (issue 34 §2):
turn relevancy and knowledge retention show it under the turn; other metrics do not. Over real
sockets to the local fault server, which records every request body."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from convoeval import ConversationalTestCase, KnowledgeRetentionMetric, Turn, TurnRelevancyMetric
from convoeval.judges import OpenAIJudge

if TYPE_CHECKING:
    from conftest import FaultServer

DOC = "Refunds take 5 business days."


def _case() -> ConversationalTestCase:
    return ConversationalTestCase(
        turns=[
            Turn(role="user", content="My name is Ada. Where is my refund?"),
            Turn(role="assistant", content="It takes 5 days, Ada.", retrieval_context=[DOC]),
        ]
    )


def _judge(server: FaultServer) -> OpenAIJudge:
    return OpenAIJudge("fault-model", base_url=server.url, api_key="sk-test", cache=False)


def _prompt(body: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in body["messages"])


def test_turn_relevancy_shows_the_judge_the_turn_retrieval_context(
    fault_server: FaultServer,
) -> None:
    fault_server.reply({"verdicts": [{"exchange": 0, "relevant": True, "reason": ""}]})
    metric = TurnRelevancyMetric(model=_judge(fault_server))
    assert metric.measure(_case()) == 1.0
    prompt = _prompt(fault_server.bodies[0])
    assert "[1] Assistant: It takes 5 days, Ada.\n    retrieved context: " in prompt
    assert json.dumps([DOC]) in prompt


def test_knowledge_retention_shows_the_judge_the_turn_retrieval_context(
    fault_server: FaultServer,
) -> None:
    fault_server.reply({"facts": [{"message": 0, "fact": "the user is Ada"}]})
    fault_server.reply({"verdicts": [{"message": 1, "retained": True, "reason": ""}]})
    metric = KnowledgeRetentionMetric(model=_judge(fault_server))
    assert metric.measure(_case()) == 1.0
    facts, verdicts = (_prompt(b) for b in fault_server.bodies)
    assert "retrieved context" in verdicts and DOC in verdicts
    assert "retrieved context" not in facts  # the facts step reads what the user said


def test_without_retrieval_context_the_prompt_is_unchanged(fault_server: FaultServer) -> None:
    fault_server.reply({"verdicts": [{"exchange": 0, "relevant": True, "reason": ""}]})
    case = ConversationalTestCase(
        turns=[Turn(role="user", content="hi"), Turn(role="assistant", content="hello")]
    )
    TurnRelevancyMetric(model=_judge(fault_server)).measure(case)
    assert "retrieved context" not in _prompt(fault_server.bodies[0])
