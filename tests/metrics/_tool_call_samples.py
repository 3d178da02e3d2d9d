"""Small builders for tool-call test samples (shared by the metric tests)."""

from __future__ import annotations

from typing import Any

from convoeval import AIMessage, HumanMessage, MultiTurnSample, ToolCall


def tc(name: str, **args: Any) -> ToolCall:
    """A tool call with keyword arguments."""
    return ToolCall(name=name, args=args)


def sample(
    predicted: list[ToolCall], reference: list[ToolCall] | None, sample_id: str | None = None
) -> MultiTurnSample:
    """A two-message conversation whose AI turn makes the predicted calls (none: plain reply)."""
    ai = AIMessage(content="", tool_calls=predicted) if predicted else AIMessage(content="done")
    return MultiTurnSample(
        user_input=[HumanMessage(content="please help"), ai],
        reference_tool_calls=reference,
        id=sample_id,
    )
