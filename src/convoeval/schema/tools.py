"""`ToolSpec`: a tool the agent could call, as an OpenAI function-tool spec.

Stored and written in the OpenAI form (`{"type": "function", "function": {"name", "description",
"parameters"}}`, as in a chat-completions request); the flat `{"name", "description", "parameters"}`
form used by other frameworks is accepted and normalised, so every layout reads one shape.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator
from pydantic_core import PydanticCustomError


class FunctionSpec(BaseModel):
    """The `function` part of a tool spec: a name, what it does, its JSON-schema parameters."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolSpec(BaseModel):
    """One available tool; `name`, `description` and `parameters` read through to `function`."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    type: Literal["function"] = "function"
    function: FunctionSpec

    @model_validator(mode="before")
    @classmethod
    def _nest_flat_form(cls, data: Any) -> Any:
        """The flat form (`{"name", "parameters", ...}`, `"type"` optional) -> the nested form."""
        if not isinstance(data, dict):
            return data
        kind = data.get("type", "function")
        if kind != "function":
            raise PydanticCustomError(
                "not_a_function_tool",
                'a {kind} tool is not a function tool: only tools with "type": "function" '
                "have a name and JSON-schema parameters",
                {"kind": repr(kind)},
            )
        if "function" not in data:
            flat = {key: value for key, value in data.items() if key != "type"}
            return {"type": "function", "function": flat}
        return data

    @property
    def name(self) -> str:
        """The tool's name, as the agent calls it."""
        return self.function.name

    @property
    def description(self) -> str | None:
        """What the tool does, for the model choosing it."""
        return self.function.description

    @property
    def parameters(self) -> dict[str, Any] | None:
        """The JSON schema of the tool's arguments (None: the tool takes none)."""
        return self.function.parameters

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler: Any) -> dict[str, Any]:
        """Write the OpenAI form without null `description`/`parameters`/`strict` (lossless)."""
        data: dict[str, Any] = handler(self)
        function = data.get("function")
        if isinstance(function, dict):
            data["function"] = {k: v for k, v in function.items() if v is not None}
        return data
