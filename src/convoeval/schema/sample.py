"""`MultiTurnSample`: one conversation with the references the metrics compare it against.

It enforces Ragas's three tool-message rules (with Ragas's wording plus the offending index), checks
`tool_call_id`s when they are given, and rejects empty conversations and unknown fields.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from convoeval.schema.messages import AIMessage, Message, ToolCall, ToolMessage
from convoeval.schema.render import pretty_repr, render_transcript
from convoeval.schema.tools import ToolSpec

PRECEDED = "ToolMessage must be preceded by an AIMessage somewhere in the conversation."
FOLLOW_AI_OR_TOOL = "ToolMessage must follow an AIMessage or another ToolMessage."
FOLLOW_TOOL_CALLS = "ToolMessage must follow an AIMessage where tools were called."
EMPTY = "the conversation is empty: it needs at least one message."


def _rule(index: int, message: str) -> PydanticCustomError:
    return PydanticCustomError(
        "conversation_rule", "user_input[{index}]: " + message, {"index": index}
    )


def check_conversation(messages: list[Any]) -> None:
    """Raise the first broken tool-message rule, naming the offending message's index."""
    seen_ai = False
    calling: AIMessage | None = None  # the AIMessage that opened the current tool block
    previous: Any = None
    for index, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            if not seen_ai:
                raise _rule(index, PRECEDED)
            if isinstance(previous, AIMessage):
                if not previous.tool_calls:
                    raise _rule(index, FOLLOW_TOOL_CALLS)
                calling = previous
            elif not isinstance(previous, ToolMessage):
                raise _rule(index, FOLLOW_AI_OR_TOOL)
            _check_call_id(index, message, calling)
        elif isinstance(message, AIMessage):
            seen_ai = True
        previous = message


def _check_call_id(index: int, message: ToolMessage, calling: AIMessage | None) -> None:
    if message.tool_call_id is None or calling is None:
        return
    ids = [call.id for call in calling.tool_calls or [] if call.id is not None]
    if message.tool_call_id not in ids:
        known = ", ".join(repr(i) for i in ids) or "none (its tool calls have no ids)"
        raise PydanticCustomError(
            "tool_call_id",
            "user_input[{index}].tool_call_id: {id} names no tool call of the AIMessage "
            "before it (ids there: {known}).",
            {"index": index, "id": repr(message.tool_call_id), "known": known},
        )


class MultiTurnSample(BaseModel):
    """A whole conversation (`user_input`) plus optional references for the metrics.

    `chatbot_role`, `scenario`, `expected_outcome`, `user_description` and `context` are DeepEval's
    case fields; `available_tools` lists the tools the agent could call (OpenAI function specs).
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    user_input: list[Message]
    reference: str | None = None
    reference_tool_calls: list[ToolCall] | None = None
    reference_topics: list[str] | None = None
    rubrics: dict[str, str] | None = None
    id: str | None = None
    metadata: dict[str, Any] | None = None
    chatbot_role: str | None = None
    scenario: str | None = None
    expected_outcome: str | None = None
    user_description: str | None = None
    context: list[str] | None = None
    available_tools: list[ToolSpec] | None = None

    @model_validator(mode="after")
    def _check_rules(self) -> MultiTurnSample:
        if not self.user_input:
            raise PydanticCustomError("empty_conversation", "user_input: " + EMPTY)
        check_conversation(self.user_input)
        return self

    def pretty_repr(self) -> str:
        """The conversation rendered exactly as Ragas renders it (for Ragas-style prompts)."""
        return pretty_repr(self.user_input)

    def to_transcript(self) -> str:
        """The conversation rendered for judges: indexed, with tool-call ids and JSON arguments."""
        return render_transcript(self.user_input)

    def predicted_tool_calls(self) -> list[ToolCall]:
        """Every tool call the assistant made, in order."""
        return [
            call
            for message in self.user_input
            if isinstance(message, AIMessage)
            for call in message.tool_calls or []
        ]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict in Ragas layout that omits unset fields (round-trips losslessly)."""
        data = _without_nones(self.model_dump(mode="json"))
        data["user_input"] = [_without_nones(m) for m in data["user_input"]]
        for message in data["user_input"]:
            if message.get("tool_calls"):
                message["tool_calls"] = [_without_nones(c) for c in message["tool_calls"]]
        if data.get("reference_tool_calls"):
            data["reference_tool_calls"] = [_without_nones(c) for c in data["reference_tool_calls"]]
        return data


def _without_nones(fields: dict[str, Any]) -> dict[str, Any]:
    """Drop unset (None) fields at this level only; None inside tool arguments is data."""
    return {key: value for key, value in fields.items() if value is not None}
