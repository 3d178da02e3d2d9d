"""Typed conversation messages with Ragas's field names, plus tool-call ids and a system role.

The `type` field is the JSON discriminator (`human`, `ai`, `tool`, `system`), as in Ragas's JSONL.
Unknown fields are rejected rather than silently dropped.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ToolCall(_Strict):
    """A call of a tool by name with keyword arguments; `id` links it to its ToolMessage."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


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
