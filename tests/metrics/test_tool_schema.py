"""ToolSchemaCheck: hallucinated tools, invalid arguments with the validator's messages, and
hostile schemas and arguments (deep nesting, huge enums, invalid schemas, unresolvable refs)."""

from __future__ import annotations

from typing import Any

import pytest

from convoeval import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolMessage
from convoeval.metrics import ToolSchemaCheck, get_metric
from convoeval.metrics._base import MissingFieldsError

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "units": {"type": "string", "enum": ["c", "f"]},
                "address": {
                    "type": "object",
                    "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                },
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
NO_ARGS = {"name": "now"}  # the flat form, no parameters: the tool takes no arguments


def sample(calls: list[ToolCall], tools: list[Any]) -> MultiTurnSample:
    messages: list[Any] = [HumanMessage(content="hi")]
    for call in calls:
        messages += [AIMessage(content="", tool_calls=[call]), ToolMessage(content="ok")]
    return MultiTurnSample(user_input=messages, available_tools=tools)


def check(calls: list[ToolCall], tools: list[Any]) -> Any:
    return ToolSchemaCheck().score_sync(sample(calls, tools))


def test_valid_calls_score_one() -> None:
    calls = [ToolCall(name="get_weather", args={"city": "Paris", "units": "c"})]
    result = check([*calls, ToolCall(name="now")], [WEATHER, NO_ARGS])
    assert result.value == 1.0
    assert result.details["valid"] == 2


def test_hallucinated_tool_and_invalid_arguments_are_named() -> None:
    calls = [
        ToolCall(name="get_wether", args={"city": "Paris"}),
        ToolCall(name="get_weather", args={"units": "k", "address": {"zip": "9410"}, "x": 1}),
        ToolCall(name="get_weather", args={"city": "Oslo"}),
        ToolCall(name="now", args={"tz": "UTC"}),
    ]
    result = check(calls, [WEATHER, NO_ARGS])
    assert result.value == 0.25
    assert [c["name"] for c in result.details["hallucinated"]] == ["get_wether"]
    (weather, now) = result.details["invalid"]
    by_keyword = {e["keyword"]: e for e in weather["errors"]}
    assert by_keyword["required"]["message"] == "'city' is a required property"
    assert by_keyword["enum"]["path"] == "units"
    assert "'k' is not one of ['c', 'f']" in by_keyword["enum"]["message"]
    assert by_keyword["pattern"]["path"] == "address.zip"
    assert by_keyword["additionalProperties"]["path"] == "(arguments)"
    assert now["errors"][0]["keyword"] == "maxProperties"
    assert "Not an available tool: get_wether (#1)." in (result.reason or "")


def test_no_call_scores_one_and_available_tools_is_required() -> None:
    assert check([], [WEATHER]).value == 1.0
    bare = MultiTurnSample(user_input=[HumanMessage(content="hi")])
    with pytest.raises(MissingFieldsError, match="available_tools"):
        ToolSchemaCheck().score_sync(bare)
    assert get_metric("tool_schema_check").config() == {}


def test_invalid_schema_is_reported_as_such_and_its_calls_unchecked() -> None:
    broken = {"name": "broken", "parameters": {"type": "objekt"}}
    result = check([ToolCall(name="broken", args={"a": 1})], [broken])
    assert result.value is None and result.error is None  # unscored, with a reason
    assert result.details["invalid_schemas"]["broken"].startswith("invalid schema: ")
    assert "objekt" in result.details["invalid_schemas"]["broken"]
    assert "No call could be checked" in (result.reason or "")
    # Other calls are still checked.
    mixed = check(
        [ToolCall(name="broken"), ToolCall(name="get_weather", args={"city": "x"})],
        [broken, WEATHER],
    )
    assert mixed.value == 1.0 and len(mixed.details["unchecked"]) == 1


def test_huge_enum_gives_a_short_message() -> None:
    tool = {
        "name": "pick",
        "parameters": {
            "type": "object",
            "properties": {"code": {"enum": [f"code-{i}" for i in range(100_000)]}},
        },
    }
    result = check([ToolCall(name="pick", args={"code": "nope"})], [tool])
    assert result.value == 0.0
    message = result.details["invalid"][0]["errors"][0]["message"]
    assert len(message) <= 300 and message.endswith("...")


def test_deep_nesting_in_schema_and_arguments() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(5000):
        schema = {"type": "object", "properties": {"a": schema}}
    deep_schema = {"name": "deep", "parameters": schema}
    result = check([ToolCall(name="deep", args={})], [deep_schema])
    assert result.value is None  # the schema cannot even be checked: reported, nothing raised
    assert "deep" in result.details["invalid_schemas"]
    args: dict[str, Any] = {}
    for _ in range(5000):
        args = {"a": args}
    loose = {"name": "loose", "parameters": {"type": "object"}}
    nested = {"name": "nested", "parameters": {"$ref": "#/$defs/n", "$defs": {"n": {
        "type": "object", "additionalProperties": {"$ref": "#/$defs/n"}}}}}  # fmt: skip
    result = check(
        [ToolCall(name="loose", args=args), ToolCall(name="nested", args=args)], [loose, nested]
    )
    assert result.value == 1.0  # "loose" validates at the top; "nested" could not be checked
    assert [c["name"] for c in result.details["unchecked"]] == ["nested"]


def test_unresolvable_remote_ref_is_not_fetched() -> None:
    tool = {"name": "remote", "parameters": {"$ref": "http://127.0.0.1:9/never.json"}}
    result = check([ToolCall(name="remote", args={"a": 1})], [tool])
    assert result.value == 0.0
    assert result.details["invalid"][0]["errors"][0]["message"].startswith("cannot check: ")
