"""Converters fill `available_tools` from each framework's own tool objects (real packages)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from convoeval import MultiTurnSample
from convoeval.integrations._errors import ConversionError
from convoeval.integrations.openai_chat import OpenAIMessagesError, from_openai_messages

SEARCH: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search flights.",
        "parameters": {
            "type": "object",
            "properties": {"q": {"type": "string"}, "limit": {"default": 3, "type": "integer"}},
            "required": ["q"],
        },
    },
}


def _specs(sample: MultiTurnSample) -> list[dict[str, Any]]:
    return [tool.model_dump() for tool in sample.available_tools or []]


def test_openai_chat_tools_keyword_takes_dicts_typed_dicts_and_sdk_models() -> None:
    from openai.types.chat import ChatCompletionFunctionTool, ChatCompletionFunctionToolParam

    typed: ChatCompletionFunctionToolParam = {
        "type": "function",
        "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}},
    }
    model = ChatCompletionFunctionTool.model_validate(SEARCH)
    sample = from_openai_messages(
        [{"role": "user", "content": "hi"}], tools=[SEARCH, typed, model], id="c1"
    )
    assert _specs(sample) == [SEARCH, dict(typed), SEARCH]
    assert sample.id == "c1"


def test_openai_chat_bad_tool_is_named_by_its_request_path() -> None:
    with pytest.raises(OpenAIMessagesError) as caught:
        from_openai_messages(
            [{"role": "user", "content": "hi"}],
            tools=[SEARCH, {"type": "function", "function": {"parameters": {"type": "object"}}}],
        )
    assert caught.value.problems == ["tools[1].function.name: required field is missing"]


class _Agents:
    """A real `Runner.run` with a scripted model (no network, no key)."""

    def __init__(self) -> None:
        self.sdk = pytest.importorskip("agents", reason="openai-agents is not installed")
        self.sdk.set_tracing_disabled(True)

    def run(self, tools: list[Any]) -> Any:
        from openai.types.responses import (
            ResponseFunctionToolCall,
            ResponseOutputMessage,
            ResponseOutputText,
        )

        sdk = self.sdk
        outputs = [
            [
                ResponseFunctionToolCall(
                    type="function_call", call_id="c1", name="weather", arguments='{"city":"Oslo"}'
                )
            ],
            [
                ResponseOutputMessage(
                    id="m1",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[ResponseOutputText(type="output_text", text="Sunny.", annotations=[])],
                )
            ],
        ]

        class Scripted(sdk.Model):  # type: ignore[misc,name-defined]
            async def get_response(self, *args: Any, **kwargs: Any) -> Any:
                return sdk.ModelResponse(output=outputs.pop(0), usage=sdk.Usage(), response_id=None)

            def stream_response(self, *args: Any, **kwargs: Any) -> Any:
                raise NotImplementedError

        agent = sdk.Agent(name="forecaster", model=Scripted(), tools=tools)
        return agent, sdk.Runner.run_sync(agent, "Weather in Oslo?")

    def weather_tool(self) -> Any:
        @self.sdk.function_tool
        def weather(city: str) -> str:
            """The weather of a city."""
            return f"sunny in {city}"

        return weather


def test_agents_run_result_gives_the_agents_function_tools() -> None:
    from convoeval.integrations.openai_agents import from_agents_items

    runner = _Agents()
    weather = runner.weather_tool()
    agent, result = runner.run([weather, runner.sdk.WebSearchTool()])
    sample = from_agents_items(result)
    assert _specs(sample) == [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "The weather of a city.",
                "parameters": weather.params_json_schema,
                "strict": True,
            },
        }
    ]
    assert sample.available_tools is not None
    assert sample.available_tools[0].parameters == {
        "properties": {"city": {"title": "City", "type": "string"}},
        "required": ["city"],
        "title": "weather_args",
        "type": "object",
        "additionalProperties": False,
    }
    # explicit tools win; a hosted tool given explicitly is named, not dropped
    assert _specs(from_agents_items(result, tools=[SEARCH])) == [SEARCH]
    with pytest.raises(
        ConversionError, match=r"tools\[1\]: a WebSearchTool is not a function tool"
    ):
        from_agents_items(result, tools=agent.tools)
    # plain items carry no agent: no tools unless given
    assert from_agents_items(result.to_input_list()).available_tools is None


def test_langchain_tools_functions_classes_and_bound_models() -> None:
    pytest.importorskip("langchain_core", reason="langchain-core is not installed")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from convoeval.integrations.langchain import from_langchain_messages

    @tool
    def search(q: str, limit: int = 3) -> str:
        """Search flights."""
        return q

    def cancel(booking: str) -> str:
        """Cancel a booking."""
        return booking

    class Rebook(BaseModel):
        """Move a booking to another flight."""

        booking: str = Field(description="the booking code")

    messages = [HumanMessage("find LHR-JFK"), AIMessage("Searching.")]
    sample = from_langchain_messages(messages, tools=[search, cancel, Rebook])
    assert _specs(sample)[0] == SEARCH
    assert [t.name for t in sample.available_tools or []] == ["search", "cancel", "Rebook"]
    assert _specs(sample)[2] == convert_to_openai_tool(Rebook)
    bound = GenericFakeChatModel(messages=iter([])).bind(tools=[convert_to_openai_tool(search)])
    assert _specs(from_langchain_messages(messages, tools=bound)) == [SEARCH]
    state = {"messages": messages, "step": 2}
    from_state = from_langchain_messages(state, tools=[search])
    assert _specs(from_state) == [SEARCH] and from_state.metadata == {
        "langgraph_state": {"step": 2}
    }
    with pytest.raises(ConversionError, match=r"tools\[0\]: a int is not a function tool"):
        from_langchain_messages(messages, tools=[42])


def test_llama_index_tool_metadata() -> None:
    llms = pytest.importorskip("llama_index.core.llms", reason="llama-index-core is not installed")
    from llama_index.core.tools import FunctionTool

    from convoeval.integrations.llama_index import (
        from_llama_index_events,
        from_llama_index_messages,
    )

    def multiply(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    tool = FunctionTool.from_defaults(fn=multiply)
    messages = [llms.ChatMessage(role="user", content="6 x 7?")]
    sample = from_llama_index_messages(messages, tools=[tool])
    assert _specs(sample) == [tool.metadata.to_openai_tool()]
    assert sample.available_tools is not None
    assert sample.available_tools[0].name == "multiply"
    assert sample.available_tools[0].parameters is not None
    assert sample.available_tools[0].parameters["required"] == ["a", "b"]
    assert _specs(from_llama_index_events(messages, tools=[tool.metadata])) == _specs(sample)


def test_tools_and_available_tools_together_are_refused() -> None:
    pytest.importorskip("langchain_core", reason="langchain-core is not installed")
    from langchain_core.messages import HumanMessage

    from convoeval.integrations.langchain import from_langchain_messages

    with pytest.raises(ConversionError, match="available_tools: the tools are given as `tools`"):
        from_langchain_messages([HumanMessage("hi")], tools=[SEARCH], available_tools=[SEARCH])
