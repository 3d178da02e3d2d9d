"""DeepEval-style cases (`ConversationalTestCase` of `ModelTestCase` exchanges or `Turn`s) and their
lossless conversion to and from `MultiTurnSample`.

`Turn`s map one-to-one onto messages. `ModelTestCase` exchanges keep their tool calls and tool
results in `steps`; their other per-exchange fields ride in the user message's metadata, so a round
trip through `MultiTurnSample` gives the same case back. The case fields (`chatbot_role`, ...,
`available_tools`) are the sample's fields of the same name.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from convoeval.errors import ConvoevalError
from convoeval.schema.exchanges import split_exchanges
from convoeval.schema.messages import (
    AIMessage,
    HumanMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from convoeval.schema.render import TURN_KEY
from convoeval.schema.sample import MultiTurnSample
from convoeval.schema.tools import ToolSpec

_METADATA = AliasChoices("metadata", "additional_metadata", "additionalMetadata")


def _camel(name: str, camel: str) -> Any:
    """A field that DeepEval users may also write in camelCase (`retrievalContext`)."""
    return Field(default=None, validation_alias=AliasChoices(name, camel))


#: Keys under which fields without a home on the other side are kept in metadata: exchange fields
#: in the user message's, sample fields in the case's (`CASE_KEY`: case fields, older versions).
CASE_KEY = "conversational_test_case"
EXCHANGE_KEY = "model_test_case"
SAMPLE_KEY = "multi_turn_sample"
TURN_ONLY = (
    "user_id",
    "retrieval_context",
    "mcp_tools_called",
    "mcp_resources_called",
    "mcp_prompts_called",
)
#: DeepEval case fields a sample has no place for (kept in its metadata under `CASE_KEY`).
CASE_ONLY = ("comments", "tags", "flaky", "mcp_servers", "multimodal")
#: Fields a case and a sample share by name; and the sample's fields a case has no place for.
SHARED_FIELDS = (
    "chatbot_role",
    "scenario",
    "expected_outcome",
    "user_description",
    "context",
    "available_tools",
)
SAMPLE_ONLY = ("reference", "reference_tool_calls", "reference_topics", "rubrics")


class TurnParams(Enum):
    """DeepEval's names of the case and turn fields, e.g. for `evaluation_params=`."""

    ROLE = "role"
    CONTENT = "content"
    SCENARIO = "scenario"
    EXPECTED_OUTCOME = "expected_outcome"
    CONTEXT = "context"
    USER_DESCRIPTION = "user_description"
    RETRIEVAL_CONTEXT = "retrieval_context"
    CHATBOT_ROLE = "chatbot_role"
    TOOLS_CALLED = "tools_called"
    MCP_TOOLS = "mcp_tools_called"
    MCP_RESOURCES = "mcp_resources_called"
    MCP_PROMPTS = "mcp_prompts_called"


#: DeepEval's newer name for `TurnParams`: the same members.
MultiTurnParams = TurnParams


class CaseTypeError(ConvoevalError, TypeError, ValueError):
    """A test case built from the wrong types: a `TypeError` as in DeepEval, and a `ValueError`
    (and a `ConvoevalError`) as our other input errors are."""


class _Case(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_assignment=True)

    @property
    def additional_metadata(self) -> dict[str, Any] | None:
        """DeepEval's name for `metadata`."""
        return self.metadata

    @additional_metadata.setter
    def additional_metadata(self, value: dict[str, Any] | None) -> None:
        self.metadata = value


class ModelTestCase(_Case):
    """One exchange: the user's `input`, the assistant's `actual_output`, optional references.

    `steps` holds the assistant's intermediate messages (tool calls, tool results) so that a
    conversion keeps them; when only `tools_called` is given, the calls become one tool-calling
    assistant message.
    """

    input: str
    actual_output: str | None = None
    expected_output: str | None = None
    context: list[str] | None = None
    retrieval_context: list[str] | None = None
    tools_called: list[ToolCall] | None = None
    expected_tools: list[ToolCall] | None = None
    steps: list[AIMessage | ToolMessage] | None = None
    name: str | None = None
    metadata: dict[str, Any] | None = Field(default=None, validation_alias=_METADATA)

    def to_messages(self) -> list[Message]:
        """The exchange as messages: user input, steps (or tool calls), final reply."""
        extra = self.model_dump(
            exclude={"input", "actual_output", "tools_called", "steps"}, exclude_none=True
        )
        meta = {EXCHANGE_KEY: extra} if extra else None
        messages: list[Message] = [HumanMessage(content=self.input, metadata=meta)]
        if self.steps is not None:
            messages.extend(self.steps)
        elif self.tools_called is not None:
            messages.append(AIMessage(content="", tool_calls=self.tools_called))
        if self.actual_output is not None:
            messages.append(AIMessage(content=self.actual_output))
        return messages


LLMTestCase = ModelTestCase


class Turn(_Case):
    """One message in DeepEval's turn style: `role` is user, assistant, tool or system.

    DeepEval's per-turn fields a message has no place for (`user_id`, `retrieval_context`, the
    MCP calls) ride in the message's metadata under `TURN_KEY`, and come back from it.
    """

    role: Literal["user", "assistant", "tool", "system"]
    content: str
    user_id: str | None = _camel("user_id", "userId")
    retrieval_context: list[str] | None = _camel("retrieval_context", "retrievalContext")
    tools_called: list[ToolCall] | None = _camel("tools_called", "toolsCalled")
    mcp_tools_called: list[Any] | None = _camel("mcp_tools_called", "mcpToolsCalled")
    mcp_resources_called: list[Any] | None = _camel("mcp_resources_called", "mcpResourcesCalled")
    mcp_prompts_called: list[Any] | None = _camel("mcp_prompts_called", "mcpPromptsCalled")
    tool_call_id: str | None = None
    metadata: dict[str, Any] | None = Field(default=None, validation_alias=_METADATA)

    def to_message(self) -> Message:
        """The equivalent typed message."""
        extra = {k: getattr(self, k) for k in TURN_ONLY if getattr(self, k) is not None}
        meta = {**(self.metadata or {}), TURN_KEY: extra} if extra else self.metadata
        if self.role == "assistant":
            return AIMessage(content=self.content, tool_calls=self.tools_called, metadata=meta)
        if self.tools_called is not None:
            raise ValueError(f"a {self.role} turn cannot call tools")
        if self.role == "tool":
            return ToolMessage(content=self.content, tool_call_id=self.tool_call_id, metadata=meta)
        if self.tool_call_id is not None:
            raise ValueError(f"a {self.role} turn has no tool_call_id")
        kind = HumanMessage if self.role == "user" else SystemMessage
        return kind(content=self.content, metadata=meta)

    @classmethod
    def from_message(cls, message: Message) -> Turn:
        """The turn for a typed message."""
        role = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}[
            message.type
        ]
        metadata = dict(message.metadata or {})
        extra = metadata.pop(TURN_KEY, None) or {}
        return cls(
            role=role,
            content=message.content,
            tools_called=message.tool_calls if isinstance(message, AIMessage) else None,
            tool_call_id=message.tool_call_id if isinstance(message, ToolMessage) else None,
            metadata=metadata or (None if extra else message.metadata),
            **extra,
        )


class ConversationalTestCase(_Case):
    """A whole conversation as DeepEval users write it; `to_sample()` gives the MultiTurnSample."""

    turns: list[ModelTestCase] | list[Turn]
    chatbot_role: str | None = _camel("chatbot_role", "chatbotRole")
    scenario: str | None = None
    expected_outcome: str | None = _camel("expected_outcome", "expectedOutcome")
    user_description: str | None = _camel("user_description", "userDescription")
    context: list[str] | None = None
    available_tools: list[ToolSpec] | None = None
    name: str | None = None
    metadata: dict[str, Any] | None = Field(default=None, validation_alias=_METADATA)
    comments: str | None = None
    tags: list[str] | None = None
    flaky: bool = False
    mcp_servers: list[Any] | None = _camel("mcp_servers", "mcpServers")
    multimodal: bool = False

    def __init__(self, /, **data: Any) -> None:
        _check_turns(data.get("turns"))
        super().__init__(**data)

    @field_validator("turns")
    @classmethod
    def _not_empty(cls, turns: list[Any]) -> list[Any]:
        if not turns:
            raise ValueError(EMPTY_TURNS)
        return turns

    def to_sample(self) -> MultiTurnSample:
        """The same conversation as a `MultiTurnSample`; nothing is lost.

        `expected_outcome` also becomes the sample's `reference` (what the goal metrics compare
        with), unless the case came from a sample whose reference differed.
        """
        messages: list[Message] = []
        for turn in self.turns:
            if isinstance(turn, Turn):
                messages.append(turn.to_message())
            else:
                messages.extend(turn.to_messages())
        metadata = dict(self.metadata or {})
        kept = metadata.pop(SAMPLE_KEY, None) or {}
        own = self.model_dump(include=set(CASE_ONLY), exclude_defaults=True)
        if own:
            metadata[CASE_KEY] = own
        shared = self.model_dump(include=set(SHARED_FIELDS), exclude_none=True)
        fields = {"reference": self.expected_outcome, **shared, **kept}
        return MultiTurnSample(
            user_input=messages, id=self.name, metadata=metadata or None, **fields
        )

    @classmethod
    def from_sample(
        cls, sample: MultiTurnSample, style: Literal["turns", "exchanges"] = "turns"
    ) -> ConversationalTestCase:
        """The case for a sample, as `Turn`s (always possible) or `ModelTestCase` exchanges.

        Sample fields a case has no place for (references, topics, rubrics) ride in its metadata
        under `SAMPLE_KEY`, so `to_sample()` gives the same sample back.
        """
        metadata = dict(sample.metadata or {})
        fields = dict(metadata.pop(CASE_KEY, {}))  # written by older versions
        fields.update(sample.model_dump(include=set(SHARED_FIELDS), exclude_none=True))
        outcome = (
            sample.expected_outcome if sample.expected_outcome is not None else sample.reference
        )
        kept = sample.model_dump(mode="json", include=set(SAMPLE_ONLY), exclude_none=True)
        kept.pop("reference", None)
        if sample.reference != outcome:
            kept["reference"] = sample.reference
        if sample.expected_outcome is None and outcome is not None:
            kept["expected_outcome"] = None
        if kept:
            metadata[SAMPLE_KEY] = kept
        turns: list[Any]
        if style == "turns":
            turns = [Turn.from_message(m) for m in sample.user_input]
        else:
            turns = _exchanges_of(sample)
        fields["expected_outcome"] = outcome
        return cls(turns=turns, name=sample.id, metadata=metadata or None, **fields)


EMPTY_TURNS = "turns is empty: a conversation needs at least one turn"


def _check_turns(turns: object) -> None:
    """DeepEval's `TypeError`s for an empty `turns` or one that is not a turn, said precisely."""
    if isinstance(turns, list | tuple):
        if not turns:
            raise CaseTypeError(EMPTY_TURNS)
        for i, turn in enumerate(turns):
            if not isinstance(turn, Turn | ModelTestCase | dict):
                raise CaseTypeError(
                    f"turns[{i}]: a {type(turn).__name__}, not a Turn (nor a ModelTestCase, "
                    "nor a dict of a Turn's fields)"
                )


def _exchanges_of(sample: MultiTurnSample) -> list[ModelTestCase]:
    leading, exchanges = split_exchanges(sample.user_input)
    if leading:
        raise ValueError(
            f"user_input[0]: a {leading[0].type} message comes before the first user message; "
            "exchanges cannot hold it, use style='turns'"
        )
    cases = []
    for exchange in exchanges:
        if len(exchange.inputs) != 1:
            raise ValueError(
                f"user_input[{exchange.first}]: {len(exchange.inputs)} user messages in a row; "
                "exchanges cannot hold them, use style='turns'"
            )
        human = exchange.inputs[0]
        meta = dict(human.metadata or {})
        fields = meta.pop(EXCHANGE_KEY, {})
        if meta:
            raise ValueError(
                f"user_input[{exchange.first}].metadata: exchanges cannot hold user-message "
                "metadata, use style='turns'"
            )
        steps = [s for s in exchange.steps if not isinstance(s, SystemMessage)]
        if len(steps) != len(exchange.steps):
            raise ValueError(
                f"user_input[{exchange.first}]: a system message inside an exchange; "
                "use style='turns'"
            )
        reply = exchange.reply
        if reply is not None and reply.metadata:
            raise ValueError(
                f"user_input[{exchange.last}].metadata: exchanges cannot hold reply metadata, "
                "use style='turns'"
            )
        calls = [c for s in steps if isinstance(s, AIMessage) for c in s.tool_calls or []]
        cases.append(
            ModelTestCase(
                input=human.content,
                actual_output=reply.content if reply is not None else None,
                tools_called=calls or None,
                steps=steps or None,
                **fields,
            )
        )
    return cases
