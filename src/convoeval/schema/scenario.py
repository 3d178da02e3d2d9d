"""`Scenario`: one conversation to simulate, with DeepEval's golden fields (`scenario`,
`user_description`, `expected_outcome`, ...) plus what a simulation needs: the user's first
message when it is fixed, and a turn cap of its own.

The simulator (`convoeval.simulate`) plays a scenario against the bot under test and writes the
conversation as a `MultiTurnSample` that carries the scenario's fields (`sample_fields()`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: The fields a scenario shares with `MultiTurnSample` (copied onto each conversation).
SAMPLE_FIELDS = (
    "scenario",
    "user_description",
    "expected_outcome",
    "chatbot_role",
    "reference_topics",
    "context",
)


class Scenario(BaseModel):
    """What the simulated user wants (`scenario`), who they are (`user_description`), what should
    happen (`expected_outcome`: when it does, the user stops with goal_reached), and optionally
    the bot's role, the topics it may discuss, context, metadata, a fixed first user message and
    a turn cap overriding the run's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario: str = Field(min_length=1)
    id: str | None = None
    user_description: str | None = None
    expected_outcome: str | None = None
    chatbot_role: str | None = None
    reference_topics: list[str] | None = None
    context: list[str] | None = None
    metadata: dict[str, Any] | None = None
    #: Sent as the user's first message as it is (the simulated user writes it otherwise).
    first_user_message: str | None = Field(default=None, min_length=1)
    #: This scenario's turn cap (user messages), instead of the run's `max_turns`.
    max_turns: int | None = Field(default=None, ge=1)

    @field_validator("scenario")
    @classmethod
    def _said(cls, text: str) -> str:
        if not text.strip():
            raise ValueError("must say what the user wants (it is blank)")
        return text

    def sample_fields(self) -> dict[str, Any]:
        """The fields every conversation of this scenario carries (unset ones left out)."""
        return {
            name: getattr(self, name) for name in SAMPLE_FIELDS if getattr(self, name) is not None
        }
