"""A framework's tools as OpenAI function-tool specs, for a sample's `available_tools`.

Accepted: spec dicts (OpenAI or flat form), OpenAI SDK tool models, OpenAI Agents SDK
`FunctionTool`s (`name`, `description`, `params_json_schema`, `strict_json_schema`), LlamaIndex
tools (`metadata.to_openai_tool()`), and LangChain tools, functions and pydantic classes (through
`langchain_core`'s `convert_to_openai_tool`); a LangChain model with bound tools gives its tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from convoeval.io._convert import as_list
from convoeval.io.errors import ConversionError


def tool_specs(tools: Any, where: str = "tools") -> list[Any]:
    """Each tool as a spec dict; `ConversionError` names every tool that has no function spec."""
    bound = getattr(tools, "kwargs", None)  # a LangChain `model.bind_tools(...)` binding
    if isinstance(bound, Mapping) and "tools" in bound:
        tools = bound["tools"]
    specs: list[Any] = []
    problems: list[str] = []
    for index, tool in enumerate(as_list(where, tools)):
        spec = _spec_of(tool)
        if spec is None:
            problems.append(
                f"{where}[{index}]: a {type(tool).__name__} is not a function tool (a name and "
                "JSON-schema parameters); give function tools or their spec dicts"
            )
        else:
            specs.append(spec)
    if problems:
        raise ConversionError(problems)
    return specs


def with_tools(sample_fields: Mapping[str, Any], tools: Any) -> dict[str, Any]:
    """The sample fields plus `available_tools` from a converter's `tools=` (when given)."""
    if tools is None:
        return dict(sample_fields)
    if "available_tools" in sample_fields:
        raise ConversionError(["available_tools: the tools are given as `tools`; give only one"])
    return {**sample_fields, "available_tools": tool_specs(tools)}


def function_tools(tools: Any) -> list[Any]:
    """The function tools among an agent's tools (hosted tools have no function spec)."""
    return [_spec_of(t) for t in tools or [] if hasattr(t, "params_json_schema")]


def _spec_of(tool: Any) -> Any:
    """The spec of one tool, or None when it is none of the known kinds."""
    if isinstance(tool, Mapping):
        return dict(tool)
    if hasattr(tool, "params_json_schema"):  # OpenAI Agents SDK FunctionTool
        function = {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.params_json_schema,
            "strict": getattr(tool, "strict_json_schema", None),
        }
        return {"type": "function", "function": function}
    metadata: Any = getattr(tool, "metadata", None)
    if hasattr(metadata, "to_openai_tool"):  # LlamaIndex BaseTool
        return metadata.to_openai_tool()
    if hasattr(tool, "to_openai_tool"):  # LlamaIndex ToolMetadata
        return tool.to_openai_tool()
    if type(tool).__module__.startswith("openai.") and hasattr(tool, "model_dump"):
        return tool.model_dump(mode="json", exclude_none=True)
    return _langchain_spec(tool)


def _langchain_spec(tool: Any) -> Any:
    """A LangChain tool, function or pydantic class through `convert_to_openai_tool`."""
    try:
        from langchain_core.utils.function_calling import convert_to_openai_tool
    except ImportError:
        return None
    try:
        return convert_to_openai_tool(tool)
    except (ValueError, TypeError):
        return None
