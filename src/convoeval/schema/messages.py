"""Typed conversation messages with Ragas's field names, plus tool-call ids and a system role.

The `type` field is the JSON discriminator (`human`, `ai`, `tool`, `system`), as in Ragas's JSONL.
Unknown fields are rejected rather than silently dropped.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


#: DeepEval's optional ToolCall fields, dumped only when set.
_DEEPEVAL_EXTRAS = ("description", "reasoning", "output")


class ToolCall(_Strict):
    """A call of a tool by name with keyword arguments; `id` links it to its ToolMessage.

    DeepEval's spelling is accepted too (`input_parameters` for `args`, and its `description`,
    `reasoning` and `output`), kept, and shown back in the spelling it was written in.
    """

    name: str
    args: dict[str, Any] = Field(
        default_factory=dict,
        validation_alias=AliasChoices("args", "input_parameters", "inputParameters"),
    )
    id: str | None = None
    description: str | None = None
    reasoning: str | None = None
    output: Any = None
    _spelling: str = PrivateAttr(default="args")

    @model_validator(mode="wrap")
    @classmethod
    def _remember_spelling(
        cls, data: Any, handler: ModelWrapValidatorHandler[ToolCall]
    ) -> ToolCall:
        given = (
            [k for k in ("args", "input_parameters", "inputParameters") if k in data]
            if (isinstance(data, dict))
            else []
        )
        if len(given) > 1:
            raise ValueError(f"give the arguments once, not as {' and '.join(given)}")
        call = handler(data)
        if given and given[0] != "args":
            call._spelling = "input_parameters"
        return call

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key in _DEEPEVAL_EXTRAS:
            if data.get(key) is None:
                data.pop(key, None)
        if self._spelling == "input_parameters":
            data = {("input_parameters" if k == "args" else k): v for k, v in data.items()}
        return data

    @property
    def input_parameters(self) -> dict[str, Any]:
        """DeepEval's name for `args`."""
        return self.args


class _Message(_Strict):
    content: str
    metadata: dict[str, Any] | None = None


class HumanMessage(_Message):
    """What the user said."""

    type: Literal["human"] = "human"


class AIMessage(_Message):
    """What the assistant said, with the tools it called (None: no tools; [] still counts as a
    tool-calling turn for Ragas's rendering)."""

    content: str = ""
    tool_calls: list[ToolCall] | None = None
    type: Literal["ai"] = "ai"


class ToolMessage(_Message):
    """A tool's output; `tool_call_id` names the call it answers, when ids are used."""

    tool_call_id: str | None = None
    type: Literal["tool"] = "tool"


class SystemMessage(_Message):
    """Instructions given to the assistant (not part of Ragas's schema)."""

    type: Literal["system"] = "system"


Message = Annotated[
    HumanMessage | AIMessage | ToolMessage | SystemMessage, Field(discriminator="type")
]
MESSAGE_TYPES = ("human", "ai", "tool", "system")
