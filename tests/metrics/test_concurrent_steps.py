"""Issue 11 item 4: when one of a metric's concurrent judge steps fails, the others are cancelled
(their connections closed) and every request sent is counted, over real sockets."""

from __future__ import annotations

from typing import TYPE_CHECKING

from convoeval import AIMessage, HumanMessage, MultiTurnSample
from convoeval.judges import OpenAIJudge
from convoeval.metrics import ConversationRelevancy, TopicAdherenceScore
from convoeval.metrics.conversation_relevancy import CHUNK

if TYPE_CHECKING:
    from conftest import FaultServer

TOPICS = {"topics": [{"topic": "parcel", "message_index": 0, "quote": "parcel"}]}


def _conversation(exchanges: int) -> MultiTurnSample:
    messages: list[HumanMessage | AIMessage] = []
    for i in range(exchanges):
        messages += [HumanMessage(content=f"question {i}"), AIMessage(content=f"answer {i}")]
    return MultiTurnSample(user_input=messages, reference_topics=["orders"])


def _judge(server: FaultServer) -> OpenAIJudge:
    return OpenAIJudge("fault-model", base_url=server.url, api_key="sk-test", cache=False)


async def test_relevancy_chunks_a_failure_cancels_the_other_chunk(
    fault_server: FaultServer,
) -> None:
    # The first request to arrive stalls; the second (so both were sent) is refused for good.
    fault_server.stall(60).error(404, "no such model")
    judge = _judge(fault_server)
    result = await ConversationRelevancy().score(_conversation(CHUNK + 5), judge=judge)
    assert result.failed and "404" in (result.reason or "")
    assert result.usage.requests == 2  # the cancelled request was sent: it is counted
    assert fault_server.wait_until_idle(timeout=20)  # its connection was closed, not left open
    assert (fault_server.attempts, fault_server.abandoned) == (2, 1)
    await judge.aclose()


async def test_topic_adherence_answered_and_scope_cancel_each_other(
    fault_server: FaultServer,
) -> None:
    fault_server.reply(TOPICS).stall(60).error(404, "no such model")
    judge = _judge(fault_server)
    result = await TopicAdherenceScore().score(_conversation(2), judge=judge)
    assert result.failed and result.usage.requests == 3
    assert fault_server.wait_until_idle(timeout=20)
    assert (fault_server.attempts, fault_server.abandoned) == (3, 1)
    await judge.aclose()
