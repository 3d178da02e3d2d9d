"""Extraction steps enumerate the user messages they may cite (issue 35 §3).

Knowledge retention's facts, completeness's intentions and topic adherence's topics each name the
user message they come from. Each request's schema lists exactly the user-message numbers of its
part of the conversation (an `enum`), as the keyed verdict steps list their keys, so a judge that
follows the schema cannot cite an assistant message. The server here is such a judge: it answers
every step with values the schema allows, citing the last message number an `enum` offers, or
message 1 (an assistant reply) when the schema allows any integer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from convoeval import AIMessage, HumanMessage, MultiTurnSample
from convoeval.judges import OpenAIJudge
from convoeval.metrics import ConversationCompleteness, KnowledgeRetention, TopicAdherenceScore
from convoeval.metrics._base import Metric
from convoeval.metrics.conversation_completeness import INTENTIONS
from convoeval.metrics.knowledge_retention import FACTS
from convoeval.metrics.topic_adherence import EXTRACT

if TYPE_CHECKING:
    from conftest import FaultServer

#: Users at 0, 2, 4; assistant replies at 1, 3, 5.
SAMPLE = MultiTurnSample(
    user_input=[
        HumanMessage(content="My name is Ana and my order number is 7."),
        AIMessage(content="Thanks Ana, I see order 7."),
        HumanMessage(content="Please ship it to Porto, not Lisbon."),
        AIMessage(content="Done: order 7 goes to Porto."),
        HumanMessage(content="When does it arrive?"),
        AIMessage(content="Order 7 arrives in Porto on Friday."),
    ],
    reference_topics=["orders and shipping"],
)
USERS = [0, 2, 4]
#: The list each extraction step answers, and the field in its items that cites a message.
CITING = {"facts": "message", "intentions": "message", "topics": "message_index"}


def _cited_field(schema: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(list name, schema of the citing field) of an extraction step's request schema."""
    (name,) = (n for n in CITING if n in schema["properties"])
    ref = schema["properties"][name]["items"]["$ref"]
    item = schema["$defs"][ref.rsplit("/", 1)[-1]]
    return name, item["properties"][CITING[name]]


def _follow(body: dict[str, Any]) -> dict[str, Any]:
    """An answer a schema-following judge may give: any value the schema allows."""
    schema = body["response_format"]["json_schema"]["schema"]
    props = schema["properties"]
    if "verdicts" in props:
        keys = props["verdicts"]["required"]
        system = body["messages"][0]["content"]
        if "answer or help" in system:
            return {"verdicts": {k: True for k in keys}}
        if "allowed topics" in system:
            return {"verdicts": {k: True for k in keys}}
        field = "retained" if "keeps in mind" in system else "satisfied"
        return {"verdicts": {k: {field: True, "reason": ""} for k in keys}}
    name, cited = _cited_field(schema)
    message = cited["enum"][-1] if "enum" in cited else 1  # 1: an assistant reply
    item: dict[str, Any] = {CITING[name]: message}
    item |= {"fact": "ships to Porto"} if name == "facts" else {}
    item |= {"intention": "ship order 7 to Porto"} if name == "intentions" else {}
    item |= {"topic": "shipping", "quote": "ship it"} if name == "topics" else {}
    return {name: [item]}


@pytest.mark.parametrize(
    ("metric", "step"),
    [
        (KnowledgeRetention(), FACTS),
        (ConversationCompleteness(), INTENTIONS),
        (TopicAdherenceScore(), EXTRACT),
    ],
    ids=["facts", "intentions", "topics"],
)
def test_the_schema_lists_exactly_the_user_messages(
    fault_server: FaultServer, metric: Metric, step: Any
) -> None:
    fault_server.responder = _follow
    judge = OpenAIJudge("m", base_url=fault_server.url, api_key="k", cache=False)
    result = metric.score_sync(SAMPLE, judge=judge)
    # a judge free to pick any integer cites message 1 and the metric fails after its re-ask
    assert (result.error, isinstance(result.value, float)) == (None, True)
    asked = [
        b
        for b in fault_server.bodies
        if b["response_format"]["json_schema"]["name"] == step.name.replace(".", "_")
    ]
    assert len(asked) == 1  # answered at once, no re-ask
    _, cited = _cited_field(asked[0]["response_format"]["json_schema"]["schema"])
    assert cited == {"type": "integer", "enum": USERS}


def test_each_part_of_a_long_conversation_lists_its_own_user_messages() -> None:
    """Facts are extracted 20 user messages a call: each call may cite only its own 20."""
    from convoeval.metrics._conversation import chunks, users
    from convoeval.metrics.knowledge_retention import _facts_input

    long = MultiTurnSample(
        user_input=[
            message
            for n in range(25)
            for message in (HumanMessage(content=f"fact {n}"), AIMessage(content="noted"))
        ]
    )
    parts = chunks(users(long))
    schemas = [FACTS.request_schema(_facts_input(long, part)) for part in parts]
    assert [_cited_field(s)[1]["enum"] for s in schemas] == [
        list(range(0, 40, 2)),
        list(range(40, 50, 2)),
    ]
