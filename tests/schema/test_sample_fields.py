"""The wave-two fields of MultiTurnSample: DeepEval's case fields and `available_tools`."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from convoeval import HumanMessage, MultiTurnSample
from convoeval.schema import ToolSpec
from convoeval.schema.errors import describe_errors

WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
        "strict": True,
    },
}


def _sample(**fields: Any) -> MultiTurnSample:
    return MultiTurnSample(user_input=[HumanMessage(content="hi")], **fields)


def test_new_fields_are_optional_and_omitted_when_unset() -> None:
    sample = _sample()
    assert (sample.chatbot_role, sample.scenario, sample.expected_outcome) == (None, None, None)
    assert (sample.user_description, sample.context, sample.available_tools) == (None, None, None)
    assert sample.to_dict() == {"user_input": [{"type": "human", "content": "hi"}]}


def test_every_new_field_round_trips_through_to_dict() -> None:
    sample = _sample(
        chatbot_role="a polite airline agent",
        scenario="a user wants a refund",
        expected_outcome="the refund is issued",
        user_description="frequent flyer, impatient",
        context=["refunds within 24h", "no fees"],
        available_tools=[WEATHER, {"name": "noop"}],
    )
    data = sample.to_dict()
    assert data["available_tools"] == [WEATHER, {"type": "function", "function": {"name": "noop"}}]
    assert MultiTurnSample.model_validate(data) == sample


def test_flat_and_nested_tool_specs_normalise_to_the_same_tool() -> None:
    flat = dict(WEATHER["function"])
    tagged_flat = {"type": "function", **flat}
    specs = [ToolSpec.model_validate(s) for s in (WEATHER, flat, tagged_flat)]
    assert specs[0] == specs[1] == specs[2]
    tool = specs[0]
    assert tool.name == "get_weather" and tool.description == "Weather for a city."
    assert tool.parameters == WEATHER["function"]["parameters"]
    assert ToolSpec(name="f").model_dump() == {"type": "function", "function": {"name": "f"}}


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        (
            [{"description": "no name"}],
            "available_tools[0].function.name: required field is missing",
        ),
        (
            [WEATHER, {"name": "f", "parameters": ["city"]}],
            "available_tools[1].function.parameters: must be an object (a JSON dict), got list",
        ),
        (
            [{"type": "function", "function": {"name": "f", "parameters": "{}"}}],
            "available_tools[0].function.parameters: must be an object (a JSON dict), got str",
        ),
        (
            [{"name": "f", "colour": "red"}],
            "available_tools[0].function.colour: unknown field (not part of the schema)",
        ),
        ([{"name": ""}], "available_tools[0].function.name: String should have at least 1"),
        (
            [{"type": "web_search"}],
            "available_tools[0]: a 'web_search' tool is not a function tool: only tools with "
            '"type": "function" have a name and JSON-schema parameters',
        ),
    ],
)
def test_bad_tool_specs_name_the_field(tools: list[Any], expected: str) -> None:
    with pytest.raises(ValidationError) as caught:
        _sample(available_tools=tools)
    assert describe_errors(caught.value)[0].startswith(expected)
    assert len(describe_errors(caught.value)) == 1


def test_unknown_field_is_still_an_error_naming_it() -> None:
    with pytest.raises(ValidationError) as caught:
        MultiTurnSample.model_validate(
            {"user_input": [{"type": "human", "content": "hi"}], "chatbot_rol": "x"}
        )
    assert describe_errors(caught.value) == ["chatbot_rol: unknown field (not part of the schema)"]


def test_context_must_be_a_list_of_strings() -> None:
    with pytest.raises(ValidationError) as caught:
        _sample(context="just one string")
    assert describe_errors(caught.value) == ["context: must be a list, got str"]
