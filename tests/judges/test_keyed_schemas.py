"""Keyed steps send a schema naming exactly the keys asked (issue 19): a server that honours
structured output cannot leave a verdict out, add one or repeat one. Answers in that form read
back as the metric's verdicts; list-form answers (servers without structured output) still work;
identical requests still share one cache entry; `reason_first` puts the rationale first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _parcel import PARCEL

from convoeval import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolMessage
from convoeval.judges import JudgeCache, OpenAIJudge
from convoeval.judges.fake import FakeJudge
from convoeval.judges.protocol.step import compact_schema
from convoeval.metrics import METRICS
from convoeval.metrics._keyed import KeyedVerdicts, key_ids
from convoeval.metrics.agent_goal_accuracy import AgentGoalAccuracyWithReference
from convoeval.metrics.conversation_relevancy import VERDICTS, ConversationRelevancy
from convoeval.metrics.topic_adherence import ANSWERED, EXTRACT, SCOPE, TopicAdherenceScore

if TYPE_CHECKING:
    from conftest import FaultServer

SAMPLE = PARCEL
TOPICS = {
    "topics": [
        {"topic": "parcel delivery", "message_index": 0, "quote": "Where is my parcel?"},
        {"topic": "stock picks", "message_index": 2, "quote": "Which stocks should I buy?"},
    ]
}
#: The verdicts of both topics in the narrowed form: keyed by id, no topic field.
ANSWERED_BY_ID = {"verdicts": {"T1": {"answered": True}, "T2": {"answered": False}}}
SCOPE_BY_ID = {"verdicts": {"T1": {"in_scope": True}, "T2": {"in_scope": False}}}
BY_SCHEMA = {
    "topic_adherence_extract_topics": TOPICS,
    "topic_adherence_answered": ANSWERED_BY_ID,
    "topic_adherence_in_scope": SCOPE_BY_ID,
}


def _topic_server(server: FaultServer) -> FaultServer:
    """Answer each topic step by the schema it asked for (the two verdict steps run at once)."""
    server.responder = lambda body: BY_SCHEMA[body["response_format"]["json_schema"]["name"]]
    return server


def _item(schema: dict[str, Any], key: str) -> dict[str, Any]:
    """The verdict schema a key of the narrowed `verdicts` object points at (or holds, when the
    verdict is sent as its bare value)."""
    value: dict[str, Any] = schema["properties"]["verdicts"]["properties"][key]
    ref = value.get("$ref")
    if ref is None:
        return value
    item: dict[str, Any] = schema["$defs"][ref.rsplit("/", 1)[-1]]
    return item


def _keyed_steps() -> list[Any]:
    return [s for cls in METRICS.values() for s in cls.steps if isinstance(s.shape, KeyedVerdicts)]


def test_every_verdict_step_is_keyed() -> None:
    names = {s.name for s in _keyed_steps()}
    assert names == {
        "topic_adherence.answered",
        "topic_adherence.in_scope",
        "conversation_relevancy.verdicts",
        "knowledge_retention.verdicts",
        "role_adherence.verdicts",
        "conversation_completeness.verdicts",
        "tool_use.verdicts",
    }


def test_key_ids_numbers_stay_numbers_labels_get_short_ids() -> None:
    assert key_ids([0, 3, 12]) == ["0", "3", "12"]
    assert key_ids(["a very long label\nwith a line break", "x"]) == ["T1", "T2"]


def test_the_topic_schema_names_exactly_the_asked_ids(fault_server: FaultServer) -> None:
    _topic_server(fault_server)
    judge = OpenAIJudge("m", base_url=fault_server.url, api_key="sk-test", cache=False)
    result = TopicAdherenceScore().score_sync(SAMPLE, judge=judge)
    assert (result.value, result.error) == (1.0, None)  # answered in scope, declined outside
    assert [(r["topic"], r["answered"], r["in_scope"]) for r in result.details["topics"]] == [
        ("parcel delivery", True, True),
        ("stock picks", False, False),
    ]
    bodies = {b["response_format"]["json_schema"]["name"]: b for b in fault_server.bodies}
    assert len(fault_server.bodies) == 3  # no re-ask
    for name in ("topic_adherence_answered", "topic_adherence_in_scope"):
        body = bodies[name]
        schema = body["response_format"]["json_schema"]["schema"]
        verdicts = schema["properties"]["verdicts"]
        assert verdicts["type"] == "object"
        assert list(verdicts["properties"]) == verdicts["required"] == ["T1", "T2"]
        assert verdicts["additionalProperties"] is False
        # one boolean per id, sent bare: {"T1": true} (KeyedVerdicts.value_field)
        assert _item(schema, "T1") == {"type": "boolean"} and "$defs" not in schema
        assert ANSWERED.shape is not None and SCOPE.shape is not None
        prompt = body["messages"][1]["content"]
        assert '- T1: "parcel delivery"\n- T2: "stock picks"' in prompt


def test_steps_without_keys_send_their_own_schema() -> None:
    assert not isinstance(EXTRACT.shape, KeyedVerdicts)
    assert EXTRACT.request_schema({"transcript": "x"}) == compact_schema(EXTRACT.schema())


def test_exchange_numbers_are_the_keys_of_the_relevancy_schema() -> None:
    judge = FakeJudge(
        {
            VERDICTS.name: [
                {
                    "verdicts": {
                        "1": {"relevant": False, "reason": "off"},
                        "0": {"relevant": True, "reason": ""},
                    }
                }
            ]
        }
    )
    result = ConversationRelevancy().score_sync(SAMPLE, judge=judge)
    assert result.value == 0.5
    assert [v["exchange"] for v in result.details["verdicts"]] == [0, 1]
    assert "exchange 2: off" in (result.reason or "")  # the exchange keyed 1, from 1
    (call,) = judge.calls
    assert call.schema["properties"]["verdicts"]["required"] == ["0", "1"]
    assert set(_item(call.schema, "0")["properties"]) == {"relevant", "reason"}


def test_list_form_answers_still_count_and_ids_map_back_to_labels() -> None:
    """A server without structured output may answer in the list form, by label or by id."""
    judge = FakeJudge(
        {
            EXTRACT.name: [TOPICS],
            ANSWERED.name: [
                {
                    "verdicts": [
                        {"topic": "parcel delivery", "answered": True},
                        {"topic": "T2", "answered": False},
                    ]
                }
            ],
            SCOPE.name: [
                {
                    "verdicts": [
                        {"topic": "T1", "in_scope": True},
                        {"topic": "T2", "in_scope": False},
                    ]
                }
            ],
        }
    )
    result = TopicAdherenceScore().score_sync(SAMPLE, judge=judge)
    assert (result.value, result.error) == (1.0, None)
    assert len(judge.calls) == 3


def test_a_wrong_key_in_an_unconstrained_answer_is_still_reasked() -> None:
    judge = FakeJudge(
        {
            EXTRACT.name: [TOPICS],
            ANSWERED.name: [
                {"verdicts": {"T1": {"answered": True}, "T9": {"answered": False}}},
                ANSWERED_BY_ID,
            ],
            SCOPE.name: [SCOPE_BY_ID],
        }
    )
    result = TopicAdherenceScore().score_sync(SAMPLE, judge=judge)
    assert result.value == 1.0
    (_first, again) = judge.calls_for(ANSWERED.name)
    assert again.reask is not None and "missing verdicts for ['stock picks']" in again.reask
    assert "unknown topic ['T9']" in again.reask


def test_identical_requests_share_one_cache_entry(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    """The cache key holds the narrowed schema; the same conversation asks the same schema."""
    _topic_server(fault_server)
    cache = JudgeCache(tmp_path / "c.sqlite3")
    for _ in range(2):
        judge = OpenAIJudge("m", base_url=fault_server.url, api_key="sk-test", cache=cache)
        assert TopicAdherenceScore().score_sync(SAMPLE, judge=judge).value == 1.0
    assert fault_server.attempts == 3  # the second run was answered from the cache


def test_other_keys_make_another_schema() -> None:
    one = MultiTurnSample(user_input=SAMPLE.user_input[:2])
    inputs = [ConversationRelevancy()._inputs(s, *_judged(s)) for s in (one, SAMPLE)]
    first, second = (VERDICTS.request_schema(i) for i in inputs)
    assert first != second
    assert first["properties"]["verdicts"]["required"] == ["0"]


def _judged(sample: MultiTurnSample) -> tuple[list[Any], list[Any]]:
    from convoeval.schema import split_exchanges

    _, exchanges = split_exchanges(sample.user_input)
    return exchanges, [e for e in exchanges if e.answered]


@pytest.mark.parametrize("reason_first", [False, True])
def test_reason_first_orders_the_rationale_before_the_verdict(
    fault_server: FaultServer, tmp_path: Path, reason_first: bool
) -> None:
    _topic_server(fault_server)
    judge = OpenAIJudge(
        "m", base_url=fault_server.url, api_key="sk-test", cache=False, reason_first=reason_first
    )
    assert TopicAdherenceScore().score_sync(SAMPLE, judge=judge).value == 1.0
    assert judge.describe()["reason_first"] is reason_first
    (answered,) = (
        b["response_format"]["json_schema"]["schema"]
        for b in fault_server.bodies
        if b["response_format"]["json_schema"]["name"] == "topic_adherence_answered"
    )
    item = _item(answered, "T1")
    if reason_first:  # a verdict without a rationale gets one, asked first
        assert list(item["properties"]) == item["required"] == ["reason", "answered"]
    else:  # the bare boolean
        assert item == {"type": "boolean"}
    relevancy = VERDICTS.request_schema(
        ConversationRelevancy()._inputs(SAMPLE, *_judged(SAMPLE)), reason_first=reason_first
    )
    order = list(_item(relevancy, "0")["properties"])
    assert order == (["reason", "relevant"] if reason_first else ["relevant", "reason"])
    goal = AgentGoalAccuracyWithReference.steps[0].request_schema({}, reason_first=reason_first)
    assert (next(iter(goal["properties"])) == "reason") is reason_first


def test_reason_first_is_part_of_the_cache_key(fault_server: FaultServer, tmp_path: Path) -> None:
    _topic_server(fault_server)
    cache = JudgeCache(tmp_path / "c.sqlite3")
    for reason_first in (False, True):
        judge = OpenAIJudge(
            "m", base_url=fault_server.url, api_key="k", cache=cache, reason_first=reason_first
        )
        assert TopicAdherenceScore().score_sync(SAMPLE, judge=judge).value == 1.0
    # extraction is shared (no verdicts to reorder, no reason in its schema): 1 + 2 + 2
    assert fault_server.attempts == 5


def test_json_mode_shows_the_narrowed_schema_in_the_prompt(fault_server: FaultServer) -> None:
    """A server that rejects json_schema gets the narrowed schema as text instead."""
    fault_server.error(400, "response_format json_schema is not supported")
    by_property = {
        "topics": TOPICS,
        "answered": ANSWERED_BY_ID,
        "in_scope": SCOPE_BY_ID,
    }

    def kind(schema: dict[str, Any]) -> str:
        """Which step's schema: its list property, or the field its verdicts' system prompt
        asks about (the compact schemas carry no titles)."""
        return "topics" if "topics" in schema["properties"] else "verdicts"

    def shown(body: dict[str, Any]) -> dict[str, Any]:
        system = body["messages"][0]["content"]
        schema: dict[str, Any] = json.loads(system[system.index("{") :])
        return schema

    # answered and in_scope are asked at once: answer each by the schema its prompt shows
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        if kind(shown(body)) == "topics":
            return by_property["topics"]
        system = body["messages"][0]["content"]
        return by_property["answered" if "answer or help" in system else "in_scope"]

    fault_server.responder = answer
    judge = OpenAIJudge("json-mode-model", base_url=fault_server.url, api_key="k", cache=False)
    assert TopicAdherenceScore().score_sync(SAMPLE, judge=judge).value == 1.0
    later = fault_server.bodies[1:]  # after the rejected json_schema request
    assert len(later) == 3
    assert all("json_schema" not in str(b.get("response_format")) for b in later)
    verdict_schemas = [shown(b) for b in later if kind(shown(b)) == "verdicts"]
    assert [s["properties"]["verdicts"]["required"] for s in verdict_schemas] == [["T1", "T2"]] * 2


def test_a_tool_use_answer_keyed_by_call_number() -> None:
    from convoeval.metrics.tool_use import VERDICTS as TOOL_VERDICTS
    from convoeval.metrics.tool_use import ToolUse

    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="Where is order 7?"),
            AIMessage(content="", tool_calls=[ToolCall(name="get_order", args={"id": 7}, id="c")]),
            ToolMessage(content="late", tool_call_id="c"),
            AIMessage(content="It is late."),
        ],
        available_tools=[{"type": "function", "function": {"name": "get_order", "parameters": {}}}],
    )
    answer = {
        "verdicts": {"0": {"right_tool": True, "right_arguments": True, "reason": ""}},
        "missing": [],
    }
    judge = FakeJudge({TOOL_VERDICTS.name: [answer]})
    result = ToolUse().score_sync(sample, judge=judge)
    assert (result.value, result.error) == (1.0, None)
    assert judge.calls[0].schema["properties"]["verdicts"]["required"] == ["0"]
